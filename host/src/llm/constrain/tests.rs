//! The machine against hand-written cases and fuzzed schemas.

use serde_json::json;

use super::*;

fn accepts(schema: &Value, text: &str) -> bool {
    let mut machine = Grammar::new(schema).start();
    machine.feed_str(text) && machine.complete()
}

fn prefix_ok(schema: &Value, text: &str) -> bool {
    Grammar::new(schema).start().feed_str(text)
}

#[test]
fn objects_take_their_properties_once_each_and_need_the_required_ones() {
    let schema = json!({
        "type": "object",
        "properties": {
            "strategy": { "enum": ["direct_answer", "single_skill"] },
            "note": { "type": "string" },
            "n": { "type": "integer", "minimum": 0 }
        },
        "required": ["strategy", "n"]
    });
    assert!(accepts(&schema, r#"{"strategy":"single_skill","n":3}"#));
    assert!(accepts(
        &schema,
        r#"{"strategy":"direct_answer","note":"hi \"x\"","n":0}"#
    ));
    assert!(
        !accepts(&schema, r#"{"strategy":"single_skill"}"#),
        "n is required"
    );
    assert!(!prefix_ok(&schema, r#"{"strategy":"other"#));
    assert!(
        accepts(&schema, r#"{"n":1,"strategy":"single_skill"}"#),
        "any order"
    );
    assert!(!prefix_ok(&schema, r#"{"n":1,"n""#), "each once");
    assert!(
        !prefix_ok(&schema, r#"{"strategy":"single_skill","n":-"#),
        "minimum 0"
    );
    assert!(
        !prefix_ok(&schema, r#"{"strategy":"single_skill","n":1.5"#),
        "an integer"
    );
    assert!(!prefix_ok(&schema, "{ "), "compact");
}

#[test]
fn arrays_any_values_and_alternatives() {
    let schema = json!({ "type": "array", "items": { "type": ["string", "null"] }, "maxItems": 2 });
    assert!(accepts(&schema, r#"["a",null]"#));
    assert!(accepts(&schema, "[]"));
    assert!(!prefix_ok(&schema, r#"["a",null,"#), "maxItems");
    assert!(!prefix_ok(&schema, "[1"));
    let any = json!({});
    for text in [
        r#"{"a":[1,2.5e3,{"b":null}],"c":"d"}"#,
        "true",
        "-0.5",
        r#""s""#,
    ] {
        assert!(accepts(&any, text), "{text}");
    }
    assert!(!accepts(&any, r#"{"a":}"#));
    let either = json!({ "anyOf": [
        { "type": "object", "properties": { "tool": { "const": "calculate" } }, "required": ["tool"] },
        { "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"] }
    ]});
    assert!(accepts(&either, r#"{"tool":"calculate"}"#));
    assert!(accepts(&either, r#"{"answer":"42"}"#));
    assert!(!prefix_ok(&either, r#"{"tool":"other"#));
}

#[test]
fn the_vocabulary_allows_exactly_the_tokens_that_fit() {
    let pieces: Vec<String> = ["{", "{\"", "\"a", "\":", "1", "}", " {", "", "12}"]
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    let vocabulary = Vocabulary::new(&pieces);
    let schema = json!({ "type": "object", "properties": { "a": { "type": "integer" } } });
    let mut machine = Grammar::new(&schema).start();
    let mut allowed = vocabulary.allowed(&machine);
    allowed.sort_unstable();
    assert_eq!(
        allowed,
        [0, 1],
        "an opening brace alone or with a quote; not after a space"
    );
    assert!(machine.feed_str("{\"a\":"));
    let mut allowed = vocabulary.allowed(&machine);
    allowed.sort_unstable();
    assert_eq!(allowed, [4, 8]);
    assert!(machine.feed_str("12}") && machine.complete() && machine.closed());
}

#[test]
fn a_number_at_the_end_is_complete_and_strings_keep_their_escapes() {
    let schema = json!({ "type": "number" });
    assert!(accepts(&schema, "12.5"));
    assert!(!accepts(&schema, "12."));
    let text = json!({ "type": "string", "maxLength": 3 });
    assert!(accepts(&text, r#""a\u00e9""#));
    assert!(!prefix_ok(&text, r#""abcd"#), "maxLength");
    assert!(
        !prefix_ok(&text, "\"a\nb"),
        "control characters are escaped"
    );
}

/// A small deterministic generator (xorshift), so the fuzzed cases are the same on
/// every run and a failure can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random schema of the kinds the machine enforces, at most `depth` deep.
fn schema(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth == 0 { 6 } else { 9 };
    match rng.below(kinds) {
        0 => json!({ "type": "string", "maxLength": 1 + rng.below(12) }),
        1 => json!({ "type": "integer", "minimum": 0 }),
        2 => json!({ "type": "number" }),
        3 => json!({ "type": "boolean" }),
        4 => json!({ "enum": ["a", "b c", 7, null] }),
        5 => json!({ "type": ["string", "null"], "maxLength": 5 }),
        6 => {
            let mut properties = serde_json::Map::new();
            let mut required = Vec::new();
            for i in 0..1 + rng.below(4) {
                let key = format!("k{i}");
                if rng.below(2) == 0 {
                    required.push(json!(key));
                }
                properties.insert(key, schema(rng, depth - 1));
            }
            json!({ "type": "object", "properties": properties, "required": required })
        }
        7 => json!({ "type": "array", "items": schema(rng, depth - 1), "maxItems": 3 }),
        _ => json!({ "anyOf": [schema(rng, depth - 1), schema(rng, depth - 1)] }),
    }
}

/// A vocabulary like a model's: single characters and pieces of JSON.
fn pieces() -> Vec<String> {
    let mut pieces: Vec<String> = (' '..='~').map(String::from).collect();
    for piece in [
        "{\"", "\":", "\",\"", "\"}", "},", "}]", "[{", "null", "true", "false", "k0", "k1", "k2",
        "k3", "12", "0.", "e5", "\\u00", "é", "\\n", "b c", "\"a\"", ",\"k",
    ] {
        pieces.push(piece.to_owned());
    }
    pieces
}

#[test]
fn constrained_choices_never_yield_json_the_schema_rejects() {
    let pieces = pieces();
    let vocabulary = Vocabulary::new(&pieces);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut finished = 0;
    for case in 0..300 {
        let schema = schema(&mut rng, 3);
        let check = crate::skill::validate::Schema::compile(&schema).unwrap();
        let mut machine = Grammar::new(&schema).start();
        let mut text = String::new();
        for _ in 0..400 {
            if machine.complete() && (machine.closed() || rng.below(4) == 0) {
                break;
            }
            let allowed = vocabulary.allowed(&machine);
            if allowed.is_empty() {
                // Only the end may come (a number as long as numbers go).
                assert!(
                    machine.complete(),
                    "case {case}: stuck after {text:?} for {schema}"
                );
                break;
            }
            // Prefer the pieces that close things, so most walks end.
            let closing: Vec<u32> = allowed
                .iter()
                .copied()
                .filter(|&t| pieces[t as usize].contains(['}', ']', '"']))
                .collect();
            let pick = if !closing.is_empty() && rng.below(3) == 0 {
                closing[rng.below(closing.len())]
            } else {
                allowed[rng.below(allowed.len())]
            };
            assert!(machine.feed_str(&pieces[pick as usize]));
            text.push_str(&pieces[pick as usize]);
        }
        if !machine.complete() {
            continue;
        }
        finished += 1;
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("case {case}: {text:?} is not JSON ({e}) for {schema}"));
        let violations = check.check(&value);
        assert!(
            violations.is_empty(),
            "case {case}: {text} breaks {schema}: {violations:?}"
        );
    }
    assert!(finished > 200, "only {finished} of 300 walks ended");
}
