//! OpenAI-compatible chat completions with streaming and tool calls: OpenAI, Ollama,
//! llama.cpp's server, vLLM.
//!
//! Tool-call arguments arrive as string fragments spread over many chunks, keyed by the
//! call's `index`; they are joined and parsed once the stream says the turn is over.
//!
//! A request with an output schema (an llm skill's) asks for it as `response_format`
//! (`json_schema`, not strict: the server's own constrained decoding where it has
//! one); a server that refuses the field with a 400 is asked again without it, and
//! not asked with it again.

use std::io::BufReader;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::http::{self, Failure};
use super::sse::read_events;
use super::turn::{Turn, bad_response, broke_off};
use super::{ChatOptions, ContentBlock, EventStream, LlmEvent, LlmProvider, Message, Role};

/// OpenAI's API base.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Ollama's OpenAI-compatible base on its default port.
pub const OLLAMA_BASE_URL: &str = "http://localhost:11434/v1";

/// A chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    base_url: String,
    api_key: Option<String>,
    model: String,
    label: &'static str,
    /// Set when the server refused `response_format`: output schemas are then checked
    /// after the answer only.
    no_response_format: Arc<AtomicBool>,
}

impl OpenAiProvider {
    /// A provider for `model` at `base_url` (ending in `/v1`), with an optional key.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: model.to_owned(),
            label: "openai",
            no_response_format: Arc::default(),
        }
    }

    /// The same provider, shown as `label` (e.g. `ollama`).
    pub fn labelled(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    fn body(&self, messages: &[Message], options: &ChatOptions) -> Value {
        let model = if options.model.is_empty() {
            &self.model
        } else {
            &options.model
        };
        let mut body = json!({
            "model": model,
            "messages": wire_messages(messages),
            "stream": true,
        });
        if let Some(max) = options.max_tokens {
            body["max_tokens"] = json!(max);
        }
        if let Some(t) = options.temperature {
            body["temperature"] = json!(t);
        }
        if !options.stop.is_empty() {
            body["stop"] = json!(options.stop);
        }
        if !options.tools.is_empty() {
            body["tools"] = options
                .tools
                .iter()
                .map(|t| {
                    json!({ "type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters } })
                })
                .collect();
        }
        if let Some(schema) = &options.output_schema
            && options.tools.is_empty()
            && !self.no_response_format.load(Ordering::Relaxed)
        {
            body["response_format"] = json!({ "type": "json_schema", "json_schema": {
                "name": "output", "schema": schema, "strict": false } });
        }
        body
    }

    fn run(
        &self,
        messages: &[Message],
        options: &ChatOptions,
        send: &dyn Fn(LlmEvent) -> bool,
    ) -> Result<(), Failure> {
        let url = format!("{}/chat/completions", self.base_url);
        let mut headers = Vec::new();
        if let Some(key) = &self.api_key {
            headers.push(("Authorization", format!("Bearer {key}")));
        }
        let hint = "set OPENAI_API_KEY (or point OPENAI_BASE_URL at a server that needs none)";
        let body = self.body(messages, options);
        let response = match http::post(&url, &headers, &body, hint) {
            // An older model or server that does not take `response_format`: the
            // schema is checked after the answer instead, as for any other provider.
            Err(failure)
                if failure.code == "LLM_BAD_REQUEST" && body.get("response_format").is_some() =>
            {
                tracing::debug!(target: "evo::llm", "{url} refused response_format ({}); asking without it", failure.message);
                self.no_response_format.store(true, Ordering::Relaxed);
                http::post(&url, &headers, &self.body(messages, options), hint)?
            }
            response => response?,
        };
        let mut turn = Turn::new(send);
        let mut bad: Option<String> = None;
        let reader = BufReader::new(response.into_body().into_reader());
        read_events(reader, |event| {
            if event.data.trim() == "[DONE]" {
                return false;
            }
            let chunk: Value = match serde_json::from_str(&event.data) {
                Ok(chunk) => chunk,
                Err(e) => {
                    bad = Some(format!("a stream chunk is not JSON ({e}): {}", event.data));
                    return false;
                }
            };
            if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
                bad = Some(message.to_owned());
                return false;
            }
            let Some(choice) = chunk.pointer("/choices/0") else {
                return true;
            };
            if let Some(content) = choice.pointer("/delta/content").and_then(Value::as_str)
                && !turn.token(content)
            {
                return false;
            }
            for call in choice
                .pointer("/delta/tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                turn.call(
                    call.get("index").and_then(Value::as_u64).unwrap_or(0),
                    call.get("id").and_then(Value::as_str),
                    call.pointer("/function/name").and_then(Value::as_str),
                    call.pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                );
            }
            true
        })
        .map_err(|e| broke_off(&url, &e))?;
        if let Some(message) = bad
            && !turn.stopped()
        {
            return Err(bad_response(&url, &message));
        }
        turn.finish()
    }
}

fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut wire = Vec::new();
    for message in messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let text = message.joined_text();
        let mut tool_calls = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::ToolUse { id, name, input } => tool_calls.push(json!({
                    "id": id, "type": "function",
                    "function": { "name": name, "arguments": input.to_string() } })),
                ContentBlock::ToolResult { tool_use_id, content, is_error } => wire.push(json!({
                    "role": "tool", "tool_call_id": tool_use_id,
                    "content": if *is_error { format!("ERROR: {content}") } else { content.clone() } })),
                ContentBlock::Text { .. } => {}
            }
        }
        if !tool_calls.is_empty() {
            wire.push(json!({ "role": role, "content": if text.is_empty() { Value::Null } else { json!(text) }, "tool_calls": tool_calls }));
        } else if !text.is_empty() {
            wire.push(json!({ "role": role, "content": text }));
        }
    }
    wire
}

impl LlmProvider for OpenAiProvider {
    fn describe(&self) -> String {
        format!("{}:{}", self.label, self.model)
    }

    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream {
        let provider = self.clone();
        http::spawn_stream(move |send| provider.run(&messages, &options, send))
    }
}
