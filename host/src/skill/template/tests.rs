use serde_json::json;

use super::*;

fn eval(template: &str, scope: &Value) -> Value {
    Template::parse(template)
        .unwrap_or_else(|e| panic!("{e}"))
        .evaluate(scope)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn scope() -> Value {
    json!({
        "input": { "topic": "rust", "limit": 10, "empty": "", "tags": ["a", "b", "c"],
                   "skills": [{ "name": "calc", "description": "Adds." }, { "name": "echo" }] },
        "steps": { "search": { "count": 2, "results": [
            { "snippet": "one", "score": 0.9 }, { "snippet": "two", "score": 0.5 } ] } },
        "item": { "content": "fn main() {}" },
        "memory": { "longTerm": "likes tea" }
    })
}

#[test]
fn single_expressions_keep_their_json_type() {
    let s = scope();
    assert_eq!(eval("{{input.limit}}", &s), json!(10));
    assert_eq!(eval("  {{ input.tags }}\n", &s), json!(["a", "b", "c"]));
    assert_eq!(
        eval("{{steps.search.results[1]}}", &s),
        json!({ "snippet": "two", "score": 0.5 })
    );
    assert_eq!(eval("{{steps.search.results[0].score}}", &s), json!(0.9));
    assert_eq!(eval("{{input.missing}}", &s), Value::Null);
    assert_eq!(eval("limit={{input.limit}}", &s), json!("limit=10"));
    assert_eq!(eval("{{input.tags}}!", &s), json!("[\"a\",\"b\",\"c\"]!"));
    assert_eq!(eval("{{item.content}}", &s), json!("fn main() {}"));
    assert_eq!(eval("{{memory.longTerm}}", &s), json!("likes tea"));
}

#[test]
fn pipes_transform_values() {
    let s = scope();
    // A pipeline written in JSON, with the `\\n\\n` of its JSON source.
    assert_eq!(
        eval(r"{{steps.search.results | pluck:snippet | join:\n\n}}", &s),
        json!("one\n\ntwo")
    );
    assert_eq!(eval("{{input.tags | join}}", &s), json!("a,b,c"));
    assert_eq!(eval("{{input.tags | join:' | '}}", &s), json!("a | b | c"));
    assert_eq!(eval("{{input.tags | slice:0:2}}", &s), json!(["a", "b"]));
    assert_eq!(eval("{{input.tags | slice:-1}}", &s), json!(["c"]));
    assert_eq!(eval("{{input.topic | slice:1:3}}", &s), json!("us"));
    assert_eq!(eval("{{input.missing | default:5}}", &s), json!(5));
    assert_eq!(eval("{{input.empty | default:'none'}}", &s), json!("none"));
    assert_eq!(eval("{{input.limit | default:5}}", &s), json!(10));
    assert_eq!(
        eval("{{input.tags | json}}", &s),
        json!("[\"a\",\"b\",\"c\"]")
    );
    assert_eq!(
        eval("{{input.skills | format_skills}}", &s),
        json!("- calc: Adds.\n- echo")
    );
}

#[test]
fn fallbacks_and_comparisons() {
    let s = scope();
    assert_eq!(
        eval("{{steps.summarize.summary || '未找到相关内容'}}", &s),
        json!("未找到相关内容")
    );
    assert_eq!(eval("{{input.topic || 'x'}}", &s), json!("rust"));
    assert_eq!(eval("{{input.empty || input.missing || 3}}", &s), json!(3));
    assert_eq!(eval("{{steps.search.count > 0}}", &s), json!(true));
    assert_eq!(eval("{{steps.search.count < 2}}", &s), json!(false));
    assert_eq!(eval("{{steps.search.count >= 2}}", &s), json!(true));
    assert_eq!(eval("{{steps.search.count <= 1}}", &s), json!(false));
    assert_eq!(eval("{{input.topic == 'rust'}}", &s), json!(true));
    assert_eq!(eval("{{input.topic != 'rust'}}", &s), json!(false));
    assert_eq!(
        eval("{{input.tags | slice:0:1 | join == 'a'}}", &s),
        json!(true)
    );
    assert_eq!(eval("{{input.missing > 0}}", &s), json!(false));
}

#[test]
fn if_blocks_render_one_branch_and_leave_no_blank_lines() {
    let s = scope();
    let template = "Topic: {{input.topic}}\n{{#if input.missing}}\nmissing!\n{{else}}\nall there\n{{/if}}\nend";
    assert_eq!(eval(template, &s), json!("Topic: rust\nall there\nend"));
    assert_eq!(
        eval("{{#if steps.search.count > 1}}many{{/if}}", &s),
        json!("many")
    );
    assert_eq!(
        eval(
            "{{#if input.tags}}{{#if input.empty}}x{{else}}y{{/if}}{{/if}}",
            &s
        ),
        json!("y")
    );
}

#[test]
fn errors_point_at_the_template_and_offset() {
    let err = Template::parse("Hello {{input.name").unwrap_err();
    assert_eq!(err.offset, 6);
    assert_eq!(err.message, "`{{` is never closed; add `}}`");
    let err = Template::parse("{{inptu.name}}").unwrap_err();
    assert_eq!(err.offset, 2);
    assert!(err.message.starts_with("unknown variable `inptu`"), "{err}");
    let err = Template::parse("ab {{input.x | shout}}").unwrap_err();
    assert_eq!(err.offset, 14);
    assert!(err.message.starts_with("unknown pipe `shout`"), "{err}");
    let err = Template::parse("{{#if input.x}}never closed").unwrap_err();
    assert_eq!(
        (err.offset, err.message.as_str()),
        (0, "`{{#if}}` is never closed; add `{{/if}}`")
    );
    let err = Template::parse("x {{/if}}").unwrap_err();
    assert_eq!(err.offset, 2);
    let err = Template::parse("{{input.topic | pluck:x}}")
        .unwrap()
        .evaluate(&scope())
        .unwrap_err();
    assert_eq!(err.message, "pluck needs an array, got a string");
    assert_eq!(
        err.to_string(),
        "template error at offset 15 of \"{{input.topic | pluck:x}}\": pluck needs an array, got a string"
    );
}

#[test]
fn render_value_walks_json() {
    let input = json!({ "query": "{{input.topic}}", "limit": "{{input.limit}}",
                        "list": ["{{input.tags | slice:0:1}}", 3], "plain": "no braces" });
    assert_eq!(
        render_value(&input, &scope()).unwrap(),
        json!({ "query": "rust", "limit": 10, "list": [["a"], 3], "plain": "no braces" })
    );
    assert!(
        parse_expression("steps.search.count > 0")
            .unwrap()
            .test(&scope())
            .unwrap()
    );
    assert!(
        !parse_expression("{{input.empty}}")
            .unwrap()
            .test(&scope())
            .unwrap()
    );
}

#[test]
fn names_outside_ascii_work_with_filters_and_operators() {
    // Found by the property tests: splitting at `|` sliced a `str` inside a
    // multi-byte character and panicked the host.
    let s = json!({ "input": { "名前": "Ada", "x": [1, 2] } });
    assert_eq!(eval("{{input.名前 | json}}", &s), json!("\"Ada\""));
    assert_eq!(eval("{{input.名前 || 'none'}}", &s), json!("Ada"));
    assert_eq!(eval("{{input.名字 || 'ninguno'}}", &s), json!("ninguno"));
    assert!(Template::parse("{{𑃰{{#each input.x}}").is_err());
}
