//! The Anthropic Messages API with streaming and tool use.
//!
//! Text arrives as `text_delta`s; a tool call is a `tool_use` content block whose input
//! arrives as `input_json_delta` fragments, joined and parsed at `content_block_stop`.

use std::io::BufReader;

use serde_json::{Value, json};

use super::http::{self, Failure};
use super::sse::read_events;
use super::turn::{Turn, bad_response, broke_off};
use super::{ChatOptions, ContentBlock, EventStream, LlmEvent, LlmProvider, Message, Role};

/// Anthropic's API base (without `/v1`, as `ANTHROPIC_BASE_URL` is written).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this default fits a long answer.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A Messages API endpoint.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    base_url: String,
    api_key: String,
    model: String,
}

impl AnthropicProvider {
    /// A provider for `model` at `base_url` with `api_key`.
    pub fn new(base_url: &str, model: &str, api_key: String) -> Self {
        Self {
            base_url: base_url
                .trim_end_matches('/')
                .trim_end_matches("/v1")
                .to_owned(),
            api_key,
            model: model.to_owned(),
        }
    }

    fn body(&self, messages: &[Message], options: &ChatOptions) -> Value {
        let model = if options.model.is_empty() {
            &self.model
        } else {
            &options.model
        };
        let system: Vec<String> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(Message::joined_text)
            .collect();
        let wire: Vec<Value> =
            messages
                .iter()
                .filter(|m| m.role != Role::System)
                .map(|m| {
                    let content: Vec<Value> = m
                    .content
                    .iter()
                    .map(|block| match block {
                        ContentBlock::Text { text } => json!({ "type": "text", "text": text }),
                        ContentBlock::ToolUse { id, name, input } => {
                            json!({ "type": "tool_use", "id": id, "name": name, "input": input })
                        }
                        ContentBlock::ToolResult { tool_use_id, content, is_error } => json!({
                            "type": "tool_result", "tool_use_id": tool_use_id,
                            "content": content, "is_error": is_error }),
                    })
                    .collect();
                    let role = if m.role == Role::Assistant {
                        "assistant"
                    } else {
                        "user"
                    };
                    json!({ "role": role, "content": content })
                })
                .collect();
        let mut body = json!({
            "model": model,
            "max_tokens": options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": wire,
            "stream": true,
        });
        if !system.is_empty() {
            // A cache breakpoint after the system prompt: with the tools before it, the
            // prefix that repeats across a skill's calls (an llm skill's instructions
            // and schema) is billed at the cache rate. A prefix shorter than the
            // model's minimum is simply not cached.
            body["system"] = json!([{
                "type": "text",
                "text": system.join("\n\n"),
                "cache_control": { "type": "ephemeral" },
            }]);
        }
        if let Some(t) = options.temperature {
            body["temperature"] = json!(t);
        }
        if !options.stop.is_empty() {
            body["stop_sequences"] = json!(options.stop);
        }
        if !options.tools.is_empty() {
            body["tools"] = options
                .tools
                .iter()
                .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
                .collect();
        }
        body
    }

    fn run(
        &self,
        messages: &[Message],
        options: &ChatOptions,
        send: &dyn Fn(LlmEvent) -> bool,
    ) -> Result<(), Failure> {
        let url = format!("{}/v1/messages", self.base_url);
        let headers = [
            ("x-api-key", self.api_key.clone()),
            ("anthropic-version", API_VERSION.to_owned()),
        ];
        let hint = "set ANTHROPIC_API_KEY";
        let response = http::post(&url, &headers, &self.body(messages, options), hint)?;
        let mut turn = Turn::new(send);
        let mut outcome: Option<Result<(), String>> = None;
        let reader = BufReader::new(response.into_body().into_reader());
        read_events(reader, |event| {
            let data: Value = match serde_json::from_str(&event.data) {
                Ok(data) => data,
                Err(e) => {
                    outcome = Some(Err(format!(
                        "a stream event is not JSON ({e}): {}",
                        event.data
                    )));
                    return false;
                }
            };
            let kind = data
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(&event.event);
            let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
            let text = |pointer: &str| data.pointer(pointer).and_then(Value::as_str);
            match kind {
                "content_block_start" if text("/content_block/type") == Some("tool_use") => {
                    turn.call(
                        index,
                        Some(text("/content_block/id").unwrap_or_default()),
                        text("/content_block/name"),
                        "",
                    );
                }
                "content_block_delta" => match text("/delta/type") {
                    Some("text_delta") if !turn.token(text("/delta/text").unwrap_or_default()) => {
                        outcome = Some(Ok(()));
                        return false;
                    }
                    Some("input_json_delta") => {
                        turn.call(
                            index,
                            None,
                            None,
                            text("/delta/partial_json").unwrap_or_default(),
                        );
                    }
                    _ => {}
                },
                "message_stop" => {
                    outcome = Some(Ok(()));
                    return false;
                }
                "error" => {
                    let message = text("/error/message").unwrap_or("unknown error");
                    outcome = Some(Err(message.to_owned()));
                    return false;
                }
                _ => {}
            }
            true
        })
        .map_err(|e| broke_off(&url, &e))?;
        match outcome {
            Some(Ok(())) => turn.finish(),
            Some(Err(message)) => Err(bad_response(&url, &message)),
            None => Err(Failure {
                code: "LLM_UNAVAILABLE",
                message: format!("{url}: the stream ended before message_stop"),
            }),
        }
    }
}

impl LlmProvider for AnthropicProvider {
    fn describe(&self) -> String {
        format!("anthropic:{}", self.model)
    }

    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream {
        let provider = self.clone();
        http::spawn_stream(move |send| provider.run(&messages, &options, send))
    }
}
