//! The CPU interface: language-model providers.
//!
//! [`LlmProvider::chat`] streams [`LlmEvent`]s for one request: tokens as they arrive,
//! then tool calls (if the model asked for any), then `done` with the full text, or an
//! error. Providers:
//!
//! - `openai::OpenAiProvider`: OpenAI-compatible chat completions with SSE streaming
//!   (OpenAI, Ollama, llama.cpp's server, vLLM);
//! - `anthropic::AnthropicProvider`: the Anthropic Messages API with streaming;
//! - [`scripted::ScriptedProvider`]: replays answers from a file, for tests, demos and
//!   offline runs; it says so in every answer's model name.
//!
//! `ProviderLlm` lets skills use any provider through the kernel's one-shot
//! `Llm` interface. Nothing here knows about skills beyond
//! tool definitions.

#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod anthropic;
#[cfg(not(feature = "internals"))]
pub(crate) mod anthropic;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod config;
#[cfg(not(feature = "internals"))]
pub(crate) mod config;
#[cfg(feature = "local-llm")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod constrain;
#[cfg(feature = "local-llm")]
#[cfg(not(feature = "internals"))]
pub(crate) mod constrain;
mod http;
pub mod local;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod openai;
#[cfg(not(feature = "internals"))]
pub(crate) mod openai;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod scripted;
#[cfg(not(feature = "internals"))]
pub(crate) mod scripted;
mod sse;
mod turn;

use std::fmt;
use std::sync::Arc;

pub use config::probe;
pub use scripted::ScriptedProvider;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::skill::exchange::{BoxFuture, LlmRequest};
use crate::skill::kernel::table::ToolDefinition;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The user (and tool results).
    User,
    /// The model.
    Assistant,
}

/// A part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// The model calls a tool.
    ToolUse {
        /// The call's id, echoed by its result.
        id: String,
        /// The tool.
        name: String,
        /// The arguments.
        input: Value,
    },
    /// A tool's answer.
    ToolResult {
        /// The id of the call answered.
        tool_use_id: String,
        /// The result as text (JSON for skills).
        content: String,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A text message.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// The text blocks joined.
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Options of one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatOptions {
    /// The model; the provider's configured model when empty.
    pub model: String,
    /// Upper bound on generated tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// The JSON Schema the answer must match: a provider that can constrain its output
    /// (the local model) writes only JSON it accepts; others are checked after.
    pub output_schema: Option<Value>,
    /// Text that ends the answer where it first appears, left out of it (at most 4:
    /// what OpenAI's API takes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments (`{}` if the model sent none; a JSON string it could not parse is
    /// passed on as a string so the tool's validation reports it).
    pub arguments: Value,
}

/// What a provider reports while answering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LlmEvent {
    /// A piece of text.
    Token {
        /// The text.
        content: String,
    },
    /// The model wants these tools called before it goes on.
    ToolCall {
        /// The calls, in order.
        calls: Vec<ToolCall>,
    },
    /// The answer is complete.
    Done {
        /// All the text of the answer.
        full_response: String,
    },
    /// The request failed; nothing follows.
    Error {
        /// What went wrong and what to do.
        error: String,
        /// The stable error code.
        code: &'static str,
    },
}

/// A stream of [`LlmEvent`]s.
pub type EventStream = mpsc::Receiver<LlmEvent>;

/// Events buffered between a provider's reader and its consumer: enough to absorb a
/// burst of tokens, small enough that a stalled consumer stops the reader.
const EVENT_BUFFER: usize = 256;

/// A channel for a provider to stream into.
pub fn event_channel() -> (mpsc::Sender<LlmEvent>, EventStream) {
    mpsc::channel(EVENT_BUFFER)
}

/// What the agent adapts to in a provider's model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelTraits {
    /// The model writes only JSON that [`ChatOptions::output_schema`] accepts, and only
    /// well-formed calls to the tools offered.
    pub constrained_output: bool,
    /// A small model (a few hundred million parameters), which cannot tell skills apart
    /// by their descriptions: the agent routes each message with the skill index and
    /// asks the model only for the chosen skill's arguments and for the answer.
    pub small: bool,
}

/// A language model.
pub trait LlmProvider: Send + Sync + fmt::Debug {
    /// `provider:model`, as shown to the user.
    fn describe(&self) -> String;

    /// What the agent should know about the model; a large model that constrains
    /// nothing by default.
    fn traits(&self) -> ModelTraits {
        ModelTraits::default()
    }

    /// Streams the answer to `messages`.
    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream;

    /// Whether the model can be used at all, checked cheaply before a run starts (the
    /// local model: its file is there and unchanged since it was installed), so a
    /// model that cannot work fails with its own error and code rather than as a
    /// failed request mid-run. Ok by default.
    fn ready(&self) -> Result<()> {
        Ok(())
    }
}

/// What one finished request produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The text.
    pub text: String,
    /// Tool calls, if the model made any.
    pub tool_calls: Vec<ToolCall>,
}

/// Reads a stream to its end; `on_token` sees each token as it arrives.
pub async fn collect(mut stream: EventStream, mut on_token: impl FnMut(&str)) -> Result<Answer> {
    let mut answer = Answer::default();
    while let Some(event) = stream.recv().await {
        match event {
            LlmEvent::Token { content } => {
                on_token(&content);
                answer.text.push_str(&content);
            }
            LlmEvent::ToolCall { calls } => answer.tool_calls.extend(calls),
            LlmEvent::Done { full_response } => {
                answer.text = full_response;
                return Ok(answer);
            }
            LlmEvent::Error { error, code } => {
                return Err(Error::Llm {
                    message: format!("[{code}] {error}"),
                    transient: matches!(code, "LLM_UNAVAILABLE" | "LLM_RATE_LIMITED"),
                });
            }
        }
    }
    Err(Error::Llm {
        message: "the provider stopped without finishing its answer".into(),
        transient: true,
    })
}

internal! {
    /// A provider as the kernel's one-shot `Llm`: what llm
    /// skills and Wasm skills' `context.llm` use.
    #[derive(Debug, Clone)]
    pub struct ProviderLlm(pub Arc<dyn LlmProvider>);
}

impl crate::skill::kernel::Llm for ProviderLlm {
    fn complete(&self, request: LlmRequest) -> BoxFuture<'_, Result<String>> {
        let mut messages = Vec::new();
        if let Some(system) = request.system {
            messages.push(Message::text(Role::System, system));
        }
        messages.push(Message::text(Role::User, request.prompt));
        let options = ChatOptions {
            model: request.model.unwrap_or_default(),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            output_schema: request.output_schema,
            ..ChatOptions::default()
        };
        if let Err(e) = self.0.ready() {
            return Box::pin(std::future::ready(Err(e)));
        }
        let stream = self.0.chat(messages, options);
        Box::pin(async move { collect(stream, |_| {}).await.map(|a| a.text) })
    }
}
