//! One streamed model turn, assembled the same way for every provider: text tokens are
//! forwarded as they arrive, tool calls are collected from their fragments (keyed by the
//! provider's index), and the turn ends with the calls and `done` — unless the consumer
//! went away, in which case nothing more is sent.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::http::Failure;
use super::{LlmEvent, ToolCall};

/// A turn being streamed.
pub(super) struct Turn<'a> {
    send: &'a dyn Fn(LlmEvent) -> bool,
    text: String,
    /// Tool calls by index: (id, name, arguments JSON so far).
    calls: BTreeMap<u64, (String, String, String)>,
    stopped: bool,
}

impl<'a> Turn<'a> {
    pub(super) fn new(send: &'a dyn Fn(LlmEvent) -> bool) -> Self {
        Self {
            send,
            text: String::new(),
            calls: BTreeMap::new(),
            stopped: false,
        }
    }

    /// Forwards a piece of text; false when the consumer is gone (stop reading).
    pub(super) fn token(&mut self, piece: &str) -> bool {
        if piece.is_empty() {
            return true;
        }
        self.text.push_str(piece);
        if !(self.send)(LlmEvent::Token {
            content: piece.to_owned(),
        }) {
            self.stopped = true;
        }
        !self.stopped
    }

    /// Adds to tool call `index`: its id and name when given, and a fragment of its
    /// arguments.
    pub(super) fn call(
        &mut self,
        index: u64,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let entry = self.calls.entry(index).or_default();
        if let Some(id) = id {
            id.clone_into(&mut entry.0);
        }
        if let Some(name) = name {
            entry.1.push_str(name);
        }
        entry.2.push_str(arguments);
    }

    /// Whether the consumer went away.
    pub(super) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Ends the turn: the tool calls, if any, then `done`.
    pub(super) fn finish(self) -> Result<(), Failure> {
        if self.stopped {
            return Ok(());
        }
        if !self.calls.is_empty() {
            let calls = self
                .calls
                .into_iter()
                .map(|(i, (id, name, arguments))| ToolCall {
                    id: if id.is_empty() {
                        format!("call_{i}")
                    } else {
                        id
                    },
                    name,
                    arguments: parse_arguments(&arguments),
                })
                .collect();
            (self.send)(LlmEvent::ToolCall { calls });
        }
        (self.send)(LlmEvent::Done {
            full_response: self.text,
        });
        Ok(())
    }
}

/// Tool arguments as JSON: `{}` when empty; the raw text when the model wrote broken
/// JSON, so validation reports it back to the model instead of the call vanishing.
pub(super) fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// The stream broke off mid-answer.
pub(super) fn broke_off(url: &str, error: &std::io::Error) -> Failure {
    Failure {
        code: "LLM_UNAVAILABLE",
        message: format!("{url}: the stream broke off: {error}"),
    }
}

/// The server sent something that is not a valid answer.
pub(super) fn bad_response(url: &str, message: &str) -> Failure {
    Failure {
        code: "LLM_BAD_RESPONSE",
        message: format!("{url}: {message}"),
    }
}
