//! The providers against loopback servers speaking their real wire formats: streamed
//! text, tool calls split across chunks, errors with their codes, bounded retries.

use std::sync::Arc;

use evo_host::llm::anthropic::AnthropicProvider;
use evo_host::llm::openai::OpenAiProvider;
use evo_host::llm::scripted::ScriptedProvider;
use evo_host::llm::{ChatOptions, LlmEvent, LlmProvider, Message, ProviderLlm, Role, collect};
use evo_host::skill::kernel::table::ToolDefinition;
use evo_tests::http::{Reply, serve_replies};
use serde_json::{Value, json};

fn calculate_tool() -> ToolDefinition {
    ToolDefinition {
        name: "calculate".into(),
        description: "Evaluates arithmetic.".into(),
        parameters: json!({ "type": "object", "properties": { "expression": { "type": "string" } } }),
    }
}

fn openai_chunk(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({ "id": "c1", "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
    )
}

async fn events(stream: evo_host::llm::EventStream) -> Vec<LlmEvent> {
    let mut stream = stream;
    let mut all = Vec::new();
    while let Some(e) = stream.recv().await {
        all.push(e);
    }
    all
}

#[tokio::test]
async fn openai_streams_tokens_and_sends_the_request_it_should() {
    let (base, requests) = serve_replies(|_| {
        Reply::sse([
            openai_chunk(json!({ "role": "assistant", "content": "" })),
            openai_chunk(json!({ "content": "Hel" })),
            openai_chunk(json!({ "content": "lo!" })),
            ": keep-alive\n\n".to_owned(),
            "data: [DONE]\n\n".to_owned(),
        ])
    });
    let provider = OpenAiProvider::new(&base, "gpt-test", Some("sk-test".into()));
    let messages = vec![
        Message::text(Role::System, "Be brief."),
        Message::text(Role::User, "Hi"),
    ];
    let options = ChatOptions {
        temperature: Some(0.3),
        tools: vec![calculate_tool()],
        ..ChatOptions::default()
    };
    let mut tokens = Vec::new();
    let answer = collect(provider.chat(messages, options), |t| {
        tokens.push(t.to_owned())
    })
    .await
    .unwrap();
    assert_eq!(tokens, ["Hel", "lo!"]);
    assert_eq!(answer.text, "Hello!");
    assert!(answer.tool_calls.is_empty());

    let request = requests.lock().unwrap()[0].clone();
    assert_eq!(request.line, "POST /v1/chat/completions HTTP/1.1");
    assert!(
        request
            .headers
            .contains(&("authorization".into(), "Bearer sk-test".into()))
    );
    let body: Value = serde_json::from_str(&request.body).unwrap();
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"],
        json!([{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "Hi" }])
    );
    assert_eq!(body["tools"][0]["function"]["name"], "calculate");
    assert_eq!(body["tools"][0]["type"], "function");
}

#[tokio::test]
async fn openai_tool_calls_split_across_chunks_are_joined() {
    let (base, requests) = serve_replies(|_| {
        Reply::sse([
            openai_chunk(
                json!({ "tool_calls": [{ "index": 0, "id": "call_a", "type": "function", "function": { "name": "calculate", "arguments": "" } }] }),
            ),
            openai_chunk(
                json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"expre" } }] }),
            ),
            openai_chunk(
                json!({ "tool_calls": [{ "index": 1, "id": "call_b", "type": "function", "function": { "name": "calculate", "arguments": "{\"expression\":" } }] }),
            ),
            openai_chunk(
                json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "ssion\":\"1+1\"}" } }] }),
            ),
            openai_chunk(
                json!({ "tool_calls": [{ "index": 1, "function": { "arguments": "\"2*3\"}" } }] }),
            ),
            format!(
                "data: {}\n\n",
                json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] })
            ),
            "data: [DONE]\n\n".to_owned(),
        ])
    });
    let provider = OpenAiProvider::new(&base, "gpt-test", None);
    // The history carries an earlier call and its result, in OpenAI's shape.
    let history = vec![
        Message::text(Role::User, "add"),
        Message {
            role: Role::Assistant,
            content: vec![evo_host::llm::ContentBlock::ToolUse {
                id: "call_0".into(),
                name: "calculate".into(),
                input: json!({ "expression": "0" }),
            }],
        },
        Message {
            role: Role::User,
            content: vec![evo_host::llm::ContentBlock::ToolResult {
                tool_use_id: "call_0".into(),
                content: "{\"result\":0}".into(),
                is_error: false,
            }],
        },
    ];
    let answer = collect(provider.chat(history, ChatOptions::default()), |_| {})
        .await
        .unwrap();
    let calls: Vec<(&str, &Value)> = answer
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), &c.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", &json!({ "expression": "1+1" })),
            ("call_b", &json!({ "expression": "2*3" }))
        ]
    );
    let body: Value = serde_json::from_str(&requests.lock().unwrap()[0].body).unwrap();
    assert_eq!(
        body["messages"][1]["tool_calls"][0]["function"]["arguments"],
        "{\"expression\":\"0\"}"
    );
    assert_eq!(
        body["messages"][2],
        json!({ "role": "tool", "tool_call_id": "call_0", "content": "{\"result\":0}" })
    );
}

/// "hi" to model `m` of the OpenAI-compatible server at `base`, the answer collected.
async fn say_hi(base: &str) -> evo_host::Result<evo_host::llm::Answer> {
    collect(
        OpenAiProvider::new(base, "m", None).chat(
            vec![Message::text(Role::User, "hi")],
            ChatOptions::default(),
        ),
        |_| {},
    )
    .await
}

/// `all` is one error event with `code` whose message contains `text`.
fn assert_fails_once(all: &[LlmEvent], code: &str, text: &str) {
    let [LlmEvent::Error { error, code: got }] = all else {
        panic!("{all:?}")
    };
    assert_eq!(*got, code);
    assert!(error.contains(text), "{error}");
}

#[tokio::test]
async fn openai_errors_carry_codes_and_retries_are_bounded() {
    let cases: [(u16, &str, &str); 3] = [
        (
            401,
            "LLM_AUTH",
            "the API key was refused; set OPENAI_API_KEY",
        ),
        (404, "LLM_MODEL_NOT_FOUND", "model or endpoint not found"),
        (
            400,
            "LLM_BAD_REQUEST",
            "the server refused the request: bad things",
        ),
    ];
    for (status, code, text) in cases {
        let (base, requests) = serve_replies(move |_| {
            Reply::json(
                status,
                json!({ "error": { "message": "bad things" } }).to_string(),
            )
        });
        let all = events(OpenAiProvider::new(&base, "m", None).chat(
            vec![Message::text(Role::User, "hi")],
            ChatOptions::default(),
        ))
        .await;
        assert_fails_once(&all, code, &format!("HTTP {status}: {text}"));
        assert_eq!(requests.lock().unwrap().len(), 1, "{status} is not retried");
    }

    // A rate limit that clears: retried, then answered.
    let attempts = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = attempts.clone();
    let (base, _) = serve_replies(move |_| {
        if counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
            Reply {
                headers: vec![("Retry-After", "0".into())],
                ..Reply::json(429, r#"{"error":{"message":"slow down"}}"#)
            }
        } else {
            Reply::sse([
                openai_chunk(json!({ "content": "ok" })),
                "data: [DONE]\n\n".to_owned(),
            ])
        }
    });
    let answer = say_hi(&base).await.unwrap();
    assert_eq!(
        (
            answer.text.as_str(),
            attempts.load(std::sync::atomic::Ordering::SeqCst)
        ),
        ("ok", 3)
    );

    // A server that keeps failing: three attempts, then a transient error.
    let (base, requests) = serve_replies(|_| Reply::json(503, "upstream down"));
    let err = say_hi(&base).await.unwrap_err();
    assert_eq!(requests.lock().unwrap().len(), 3);
    assert!(
        err.is_transient() && err.to_string().contains("[LLM_UNAVAILABLE]"),
        "{err}"
    );

    // A rate limit that never clears: three attempts, then LLM_RATE_LIMITED with the
    // server's reason.
    let (base, requests) = serve_replies(|_| Reply {
        headers: vec![("Retry-After", "0".into())],
        ..Reply::json(429, r#"{"error":{"message":"slow down"}}"#)
    });
    let err = say_hi(&base).await.unwrap_err();
    assert_eq!(requests.lock().unwrap().len(), 3);
    assert!(err.is_transient(), "{err}");
    assert!(
        err.to_string().contains("[LLM_RATE_LIMITED]")
            && err.to_string().contains(
                "HTTP 429: rate limited; try again later or lower the request rate: slow down"
            ),
        "{err}"
    );

    // Nothing listening: a clear, transient error (after the same bounded retries).
    let err = say_hi("http://127.0.0.1:9/v1").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("is the server running and the base URL right?"),
        "{err}"
    );
}

fn anthropic_event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

#[tokio::test]
async fn anthropic_streams_text_and_tool_use_with_split_input() {
    let (base, requests) = serve_replies(|_| {
        Reply::sse([
            anthropic_event(
                "message_start",
                json!({ "type": "message_start", "message": { "id": "msg_1", "role": "assistant", "content": [] } }),
            ),
            anthropic_event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
            ),
            anthropic_event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": "Let me " } }),
            ),
            anthropic_event("ping", json!({ "type": "ping" })),
            anthropic_event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": "compute." } }),
            ),
            anthropic_event(
                "content_block_stop",
                json!({ "type": "content_block_stop", "index": 0 }),
            ),
            anthropic_event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": 1, "content_block": { "type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {} } }),
            ),
            anthropic_event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 1, "delta": { "type": "input_json_delta", "partial_json": "{\"expression\": \"sq" } }),
            ),
            anthropic_event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 1, "delta": { "type": "input_json_delta", "partial_json": "rt(144) + 10\"}" } }),
            ),
            anthropic_event(
                "content_block_stop",
                json!({ "type": "content_block_stop", "index": 1 }),
            ),
            anthropic_event(
                "message_delta",
                json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" } }),
            ),
            anthropic_event("message_stop", json!({ "type": "message_stop" })),
        ])
    });
    let provider = AnthropicProvider::new(&base, "claude-test", "sk-ant".into());
    let messages = vec![
        Message::text(Role::System, "Use tools."),
        Message::text(Role::User, "sqrt(144)+10?"),
    ];
    let options = ChatOptions {
        tools: vec![calculate_tool()],
        ..ChatOptions::default()
    };
    let answer = collect(provider.chat(messages, options), |_| {})
        .await
        .unwrap();
    assert_eq!(answer.text, "Let me compute.");
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(
        (
            answer.tool_calls[0].id.as_str(),
            answer.tool_calls[0].name.as_str()
        ),
        ("toolu_1", "calculate")
    );
    assert_eq!(
        answer.tool_calls[0].arguments,
        json!({ "expression": "sqrt(144) + 10" })
    );

    let request = requests.lock().unwrap()[0].clone();
    assert_eq!(request.line, "POST /v1/messages HTTP/1.1");
    assert!(
        request
            .headers
            .contains(&("x-api-key".into(), "sk-ant".into()))
    );
    assert!(
        request
            .headers
            .contains(&("anthropic-version".into(), "2023-06-01".into()))
    );
    let body: Value = serde_json::from_str(&request.body).unwrap();
    // The system prompt ends the prefix Anthropic caches.
    assert_eq!(
        body["system"],
        json!([{ "type": "text", "text": "Use tools.", "cache_control": { "type": "ephemeral" } }])
    );
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "sqrt(144)+10?" }] }])
    );
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test]
async fn anthropic_reports_overload_and_broken_streams() {
    // A refused key and an unknown model: their codes, the server's reason, no retry.
    let cases = [
        (
            401,
            "authentication_error",
            "invalid x-api-key",
            "LLM_AUTH",
            "the API key was refused; set ANTHROPIC_API_KEY: invalid x-api-key",
        ),
        (
            404,
            "not_found_error",
            "model: claude-nope",
            "LLM_MODEL_NOT_FOUND",
            "model or endpoint not found; check the model name and the base URL: model: claude-nope",
        ),
    ];
    for (status, kind, message, code, text) in cases {
        let body = json!({ "type": "error", "error": { "type": kind, "message": message } });
        let (base, requests) = serve_replies(move |_| Reply::json(status, body.to_string()));
        let all = events(
            AnthropicProvider::new(&base, "claude-nope", "k".into()).chat(
                vec![Message::text(Role::User, "hi")],
                ChatOptions::default(),
            ),
        )
        .await;
        assert_fails_once(&all, code, &format!("HTTP {status}: {text}"));
        assert_eq!(requests.lock().unwrap().len(), 1, "{status} is not retried");
    }

    let (base, _) = serve_replies(|_| {
        Reply::sse([
            anthropic_event("message_start", json!({ "type": "message_start" })),
            anthropic_event(
                "error",
                json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
            ),
        ])
    });
    let err = collect(
        AnthropicProvider::new(&base, "c", "k".into()).chat(
            vec![Message::text(Role::User, "hi")],
            ChatOptions::default(),
        ),
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("Overloaded"), "{err}");

    let (base, _) = serve_replies(|_| {
        Reply::sse([anthropic_event(
            "message_start",
            json!({ "type": "message_start" }),
        )])
    });
    let err = collect(
        AnthropicProvider::new(&base, "c", "k".into()).chat(
            vec![Message::text(Role::User, "hi")],
            ChatOptions::default(),
        ),
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("the stream ended before message_stop"),
        "{err}"
    );
}

#[tokio::test]
async fn the_scripted_provider_replays_and_drives_llm_skills() {
    let script = ScriptedProvider::from_json(
        "test",
        r#"{ "responses": [
            "{\"summary\": \"short\"}",
            { "text": "calling", "tool_calls": [{ "name": "calculate", "arguments": { "expression": "1+1" } }] }
        ] }"#,
    )
    .unwrap();
    assert_eq!(script.describe(), "scripted:test");

    // Through the kernel: an llm skill uses the provider as its model.
    let registry = Arc::new(evo_host::skill::kernel::table::SkillTable::new());
    let meta = evo_host::skill::manifest::SkillMeta::from_json(
        &json!({ "name": "summarize", "description": "Summarises.", "mode": "llm",
                 "output": { "type": "object", "properties": { "summary": { "type": "string" } }, "required": ["summary"] } })
        .to_string(),
    )
    .unwrap();
    let executor =
        evo_host::skill::composite::llm::LlmExecutor::new(&meta, "Summarise: {{input.text}}")
            .unwrap();
    registry.register(
        evo_host::skill::kernel::table::RegisteredSkill::new(meta, Arc::new(executor)).unwrap(),
    );
    let kernel = Arc::new(
        evo_host::skill::kernel::Kernel::new(registry)
            .with_llm(Arc::new(ProviderLlm(script.clone()))),
    );
    let out = kernel
        .context(evo_host::skill::kernel::RunOptions::default())
        .call("summarize", json!({ "text": "a long text" }))
        .await
        .unwrap();
    assert_eq!(out, json!({ "summary": "short" }));
    let (messages, _) = &script.requests()[0];
    assert_eq!(messages[0].role, Role::System);
    assert!(
        messages[1]
            .joined_text()
            .starts_with("Summarise: a long text")
    );

    let answer = collect(
        script.chat(
            vec![Message::text(Role::User, "add")],
            ChatOptions::default(),
        ),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        answer.tool_calls[0].arguments,
        json!({ "expression": "1+1" })
    );
    let err = collect(script.chat(vec![], ChatOptions::default()), |_| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("[LLM_SCRIPT_EXHAUSTED] the script test has no more answers"),
        "{err}"
    );
}

#[tokio::test]
async fn openai_is_asked_for_the_output_schema_and_not_again_once_it_refuses_it() {
    let schema = json!({ "type": "object", "properties": { "sentiment": { "enum": ["positive", "negative"] } }, "required": ["sentiment"] });
    let (base, requests) = serve_replies(|request| {
        if request.body.contains("response_format") && request.body.contains("refuse") {
            return Reply::json(
                400,
                r#"{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."}}"#,
            );
        }
        Reply::sse([
            openai_chunk(json!({ "content": "{\"sentiment\":\"positive\"}" })),
            "data: [DONE]\n\n".to_owned(),
        ])
    });
    let provider = OpenAiProvider::new(&base, "gpt-test", None);
    let ask = |text: &str| {
        provider.chat(
            vec![Message::text(Role::User, text)],
            ChatOptions {
                output_schema: Some(schema.clone()),
                ..ChatOptions::default()
            },
        )
    };
    let answer = collect(ask("good"), |_| {}).await.unwrap();
    assert_eq!(answer.text, r#"{"sentiment":"positive"}"#);
    let body: Value = serde_json::from_str(&requests.lock().unwrap()[0].body).unwrap();
    assert_eq!(
        body["response_format"],
        json!({ "type": "json_schema", "json_schema": { "name": "output", "schema": schema, "strict": false } })
    );

    // A server that refuses the field: asked again without it, and never with it again.
    let answer = collect(ask("refuse"), |_| {}).await.unwrap();
    assert_eq!(answer.text, r#"{"sentiment":"positive"}"#);
    collect(ask("good"), |_| {}).await.unwrap();
    let bodies: Vec<bool> = requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.body.contains("response_format"))
        .collect();
    assert_eq!(bodies, [true, true, false, false]);
}
