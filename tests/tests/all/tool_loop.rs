//! The tool-calling loop with a scripted model: a self-correcting call, the
//! round limit, and a permission profile that blocks a skill.

use std::collections::BTreeSet;
use std::sync::Arc;

use evo_host::agent::tool_loop::{Permissions, Stop, chat_with_tools};
use evo_host::llm::scripted::ScriptedProvider;
use evo_host::llm::{ChatOptions, ContentBlock, Message, Role};
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::kernel::{Kernel, RunOptions};
use evo_host::tools::BuiltinTools;
use serde_json::{Value, json};

fn setup(
    script: &str,
) -> (
    Arc<ScriptedProvider>,
    evo_host::skill::kernel::SkillContext,
    ChatOptions,
) {
    let registry = Arc::new(SkillTable::new());
    BuiltinTools::default().register(&registry).unwrap();
    let options = ChatOptions {
        tools: registry.to_tool_definitions(),
        ..ChatOptions::default()
    };
    let ctx = Arc::new(Kernel::new(registry)).context(RunOptions::default());
    (
        ScriptedProvider::from_json("test", script).unwrap(),
        ctx,
        options,
    )
}

#[tokio::test]
async fn a_bad_call_gets_the_report_and_the_model_corrects_itself() {
    let (provider, ctx, options) = setup(
        r#"{ "responses": [
            { "tool_calls": [{ "name": "calculate", "arguments": { "expr": "sqrt(144) + 10" } }] },
            { "tool_calls": [{ "name": "calculate", "arguments": { "expression": "sqrt(144) + 10" } }] },
            "It is 22."
        ] }"#,
    );
    let mut streamed = String::new();
    let outcome = chat_with_tools(
        provider.as_ref(),
        vec![Message::text(Role::User, "What is sqrt(144) + 10?")],
        options,
        &ctx,
        &Permissions::All,
        10,
        |t| streamed.push_str(t),
    )
    .await
    .unwrap();
    assert_eq!(
        (outcome.stop, outcome.rounds, outcome.text.as_str()),
        (Stop::Answered, 3, "It is 22.")
    );
    assert_eq!(streamed, "It is 22.");
    assert!(outcome.tool_results[0].is_error);
    let first: Value = serde_json::from_str(&outcome.tool_results[0].content).unwrap();
    assert_eq!(first["error"], "input_validation_failed");
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("[expression] required"),
        "{first}"
    );
    assert_eq!(outcome.tool_results[1].content, r#"{"result":22}"#);

    // The second request carried the failed call and its report back to the model.
    let (second_request, _) = &provider.requests()[1];
    let Some(ContentBlock::ToolResult {
        is_error: true,
        content,
        ..
    }) = second_request.last().unwrap().content.first()
    else {
        panic!("{second_request:?}")
    };
    assert!(
        content.contains("calculate input does not match its schema"),
        "{content}"
    );
}

#[tokio::test]
async fn the_round_limit_stops_a_model_that_keeps_calling_tools() {
    let call =
        r#"{ "tool_calls": [{ "name": "calculate", "arguments": { "expression": "1+1" } }] }"#;
    let (provider, ctx, options) =
        setup(&format!(r#"{{ "responses": [{call}, {call}, {call}] }}"#));
    let outcome = chat_with_tools(
        provider.as_ref(),
        vec![Message::text(Role::User, "loop")],
        options,
        &ctx,
        &Permissions::All,
        2,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (outcome.stop, outcome.rounds, outcome.tool_results.len()),
        (Stop::RoundLimit, 2, 1)
    );
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn a_permission_profile_blocks_calls() {
    let (provider, ctx, options) = setup(
        r#"{ "responses": [
            { "tool_calls": [{ "name": "read", "arguments": { "path": "Cargo.toml" } }, { "name": "nope", "arguments": {} }] },
            "I may not read files."
        ] }"#,
    );
    let only_math = Permissions::Only(BTreeSet::from(["calculate".to_owned()]));
    let outcome = chat_with_tools(
        provider.as_ref(),
        vec![Message::text(Role::User, "read it")],
        options,
        &ctx,
        &only_math,
        10,
        |_| {},
    )
    .await
    .unwrap();
    let results: Vec<Value> = outcome
        .tool_results
        .iter()
        .map(|r| serde_json::from_str(&r.content).unwrap())
        .collect();
    assert_eq!(
        results[0],
        json!({ "error": "blocked", "message": "read: not allowed by this agent's permission profile" })
    );
    assert_eq!(results[1]["error"], "unknown_tool");
    assert_eq!(
        ctx.kernel().stats().get("read"),
        None,
        "a blocked skill never runs"
    );
}

#[tokio::test]
async fn the_model_gets_max_input_attempts_tries_at_its_arguments_then_the_run_stops() {
    let bad = r#"{ "tool_calls": [{ "name": "calculate", "arguments": { "expr": "1 + 1" } }] }"#;
    let (provider, ctx, options) = setup(&format!(
        r#"{{ "responses": [{bad}, {bad}, {bad}, "never reached"] }}"#
    ));
    let err = chat_with_tools(
        provider.as_ref(),
        vec![Message::text(Role::User, "What is 1 + 1?")],
        options,
        &ctx,
        &Permissions::All,
        10,
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "SKILL_VALIDATION_FAILED");
    assert!(
        err.to_string()
            .starts_with("calculate input does not match its schema (attempt 3 of 3):"),
        "{err}"
    );
    // The first two reports went back to the model, counting up.
    let requests = provider.requests();
    assert_eq!(requests.len(), 3, "no fourth model request");
    let reports: Vec<String> = requests[1..]
        .iter()
        .map(|(messages, _)| match &messages.last().unwrap().content[0] {
            ContentBlock::ToolResult { content, .. } => content.clone(),
            other => panic!("expected a tool result, got {other:?}"),
        })
        .collect();
    assert!(reports[0].contains("(attempt 1 of 3)"), "{}", reports[0]);
    assert!(reports[1].contains("(attempt 2 of 3)"), "{}", reports[1]);
}
