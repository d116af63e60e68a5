//! A provider that replays answers from a file: for tests, demos and offline runs. It is
//! not a language model, and says so: its name is `scripted:<file>`.
//!
//! The file is JSON: `{ "responses": [ … ] }`, one entry per request, in order. An entry
//! is a string (the answer's text) or `{ "text": "…", "tool_calls": [{ "name": "…",
//! "arguments": { … } }] }`. Text is streamed word by word, like a real model's tokens.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;

use super::{ChatOptions, EventStream, LlmEvent, LlmProvider, Message, ToolCall, event_channel};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Entry {
    Text(String),
    Turn {
        #[serde(default)]
        text: String,
        #[serde(default)]
        tool_calls: Vec<ScriptedCall>,
    },
}

#[derive(Debug, Clone, Deserialize)]
struct ScriptedCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Debug, Deserialize)]
struct Script {
    responses: Vec<Entry>,
}

/// Replays a script of answers.
#[derive(Debug)]
pub struct ScriptedProvider {
    label: String,
    responses: Mutex<std::collections::VecDeque<Entry>>,
    requests: Mutex<Vec<(Vec<Message>, ChatOptions)>>,
}

impl ScriptedProvider {
    /// Reads the script at `path`.
    pub fn from_file(path: &Path) -> Result<Arc<Self>> {
        let text = std::fs::read_to_string(path).map_err(Error::io_at(path))?;
        Self::from_json(&path.display().to_string(), &text)
    }

    /// Parses a script; `label` names it in messages.
    pub fn from_json(label: &str, text: &str) -> Result<Arc<Self>> {
        let script: Script = serde_json::from_str(text).map_err(|e| Error::InvalidInput {
            skill: "scripted-llm".into(),
            reason: format!(
                "{label}: not a script ({e}); write {{ \"responses\": [\"an answer\", {{ \"text\": \"…\", \"tool_calls\": [{{ \"name\": \"…\", \"arguments\": {{}} }}] }}] }}"
            ),
        })?;
        Ok(Arc::new(Self {
            label: label.to_owned(),
            responses: Mutex::new(script.responses.into()),
            requests: Mutex::default(),
        }))
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<(Vec<Message>, ChatOptions)> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl LlmProvider for ScriptedProvider {
    fn describe(&self) -> String {
        format!("scripted:{}", self.label)
    }

    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push((messages, options));
        }
        let next = self.responses.lock().ok().and_then(|mut r| r.pop_front());
        let (tx, rx) = event_channel();
        let events = match next {
            None => vec![LlmEvent::Error {
                error: format!("the script {} has no more answers", self.label),
                code: "LLM_SCRIPT_EXHAUSTED",
            }],
            Some(entry) => {
                let (text, calls) = match entry {
                    Entry::Text(text) => (text, Vec::new()),
                    Entry::Turn { text, tool_calls } => (text, tool_calls),
                };
                let mut events: Vec<LlmEvent> = text
                    .split_inclusive(' ')
                    .map(|word| LlmEvent::Token {
                        content: word.to_owned(),
                    })
                    .collect();
                if !calls.is_empty() {
                    let calls = calls
                        .into_iter()
                        .enumerate()
                        .map(|(i, c)| ToolCall {
                            id: c.id.unwrap_or_else(|| format!("call_{i}")),
                            name: c.name,
                            arguments: if c.arguments.is_null() {
                                serde_json::json!({})
                            } else {
                                c.arguments
                            },
                        })
                        .collect();
                    events.push(LlmEvent::ToolCall { calls });
                }
                events.push(LlmEvent::Done {
                    full_response: text,
                });
                events
            }
        };
        std::thread::spawn(move || {
            for event in events {
                if tx.blocking_send(event).is_err() {
                    break;
                }
            }
        });
        rx
    }
}
