//! `lsp` (alias `LSP`): a language server for the file's language, for definitions,
//! references, hover and diagnostics.
//!
//! The server is chosen by the file's extension ([`SERVERS`]) and found on `PATH`; when
//! none is installed the error names what to install. One server per language and
//! project is started on first use, kept for later calls, and shut down after
//! [`IDLE_TIMEOUT`] without one. Positions are 1-based lines and columns, as editors and
//! `read` show them.
//!
//! Needs the `dev-tools` feature of evo-host (on by default).

mod client;

use crate::lock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[cfg(any(test, feature = "internals"))]
pub use client::file_uri;
pub use client::{Server, uri_path};

use super::permission::{Locale, Permission};
use super::project::Project;
use super::{BoxFuture, TypedTool, invalid};
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;

/// A server unused this long is shut down ([`crate::tools::ProgramTools::LSP_IDLE`]).
pub const IDLE_TIMEOUT: Duration = crate::tools::ProgramTools::LSP_IDLE;
/// How long a server may take to start and initialise.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for a server to finish indexing before asking anyway.
pub const INDEX_TIMEOUT: Duration = Duration::from_secs(60);

/// A language server Evo knows how to start.
#[derive(Debug, Clone, Copy)]
pub struct ServerSpec {
    /// The LSP language id.
    pub language: &'static str,
    /// File extensions it serves.
    pub extensions: &'static [&'static str],
    /// The program and its arguments.
    pub program: &'static str,
    /// Arguments.
    pub args: &'static [&'static str],
    /// How to install it, for the error when it is missing.
    pub install: &'static str,
    /// Whether starting it may run the project's own code (build scripts, plugins).
    pub runs_project_code: bool,
}

/// The servers, by language.
pub const SERVERS: &[ServerSpec] = &[
    ServerSpec {
        language: "rust",
        extensions: &["rs"],
        program: "rust-analyzer",
        args: &[],
        install: "rustup component add rust-analyzer",
        // Build scripts and proc macros are switched off (see `settings`).
        runs_project_code: false,
    },
    ServerSpec {
        language: "typescript",
        extensions: &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
        program: "typescript-language-server",
        args: &["--stdio"],
        install: "npm install -g typescript-language-server typescript",
        runs_project_code: true,
    },
    ServerSpec {
        language: "python",
        extensions: &["py", "pyi"],
        program: "pyright-langserver",
        args: &["--stdio"],
        install: "npm install -g pyright (or pip install pyright)",
        runs_project_code: false,
    },
    ServerSpec {
        language: "go",
        extensions: &["go"],
        program: "gopls",
        args: &[],
        install: "go install golang.org/x/tools/gopls@latest",
        runs_project_code: true,
    },
    ServerSpec {
        language: "c",
        extensions: &["c", "h", "cc", "cpp", "hpp", "cxx"],
        program: "clangd",
        args: &[],
        install: "apt install clangd (or your platform's clangd package)",
        runs_project_code: false,
    },
];

/// The server for `path`, by its extension.
pub fn server_for(path: &Path) -> Option<&'static ServerSpec> {
    let extension = path.extension()?.to_str()?;
    SERVERS.iter().find(|s| s.extensions.contains(&extension))
}

/// Language servers for one project.
#[derive(Debug, Clone)]
pub struct Lsp {
    project: Project,
    idle_timeout: Duration,
    running: Arc<Mutex<HashMap<&'static str, Arc<Server>>>>,
    reaper: Arc<std::sync::Once>,
}

impl Lsp {
    /// `lsp` for the project at `root`, shutting servers down after [`IDLE_TIMEOUT`].
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            project: Project::new(root),
            idle_timeout: IDLE_TIMEOUT,
            running: Arc::default(),
            reaper: Arc::new(std::sync::Once::new()),
        }
    }

    /// Shuts servers down after `idle` without a call instead.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// The servers running now, by language.
    #[cfg(feature = "internals")]
    pub fn running(&self) -> Vec<&'static str> {
        let mut languages: Vec<_> = lock(&self.running).keys().copied().collect();
        languages.sort_unstable();
        languages
    }

    /// Shuts down every server.
    #[cfg(feature = "internals")]
    pub async fn stop_all(&self) {
        let servers: Vec<Arc<Server>> = lock(&self.running).drain().map(|(_, s)| s).collect();
        for server in servers {
            server.stop().await;
        }
    }

    async fn server(&self, spec: &'static ServerSpec, root: &Path) -> Result<Arc<Server>> {
        if let Some(server) = lock(&self.running).get(spec.language).filter(|s| s.alive()) {
            return Ok(server.clone());
        }
        let server = Server::start(spec.program, spec.args, root, settings(spec), START_TIMEOUT)
            .await
            .map_err(|e| {
                let missing =
                    e.contains("No such file") || e.contains("not found") || e.contains("stopped");
                Error::Skill {
                    skill: "lsp".into(),
                    kind: FailureKind::Failed,
                    message: if missing {
                        format!(
                            "no {} language server is available ({e}); install it: {}",
                            spec.language, spec.install
                        )
                    } else {
                        e
                    },
                }
            })?;
        lock(&self.running).insert(spec.language, server.clone());
        self.reap_idle();
        Ok(server)
    }

    /// Starts (once) the task that shuts idle servers down.
    fn reap_idle(&self) {
        let running = Arc::downgrade(&self.running);
        let idle_timeout = self.idle_timeout;
        self.reaper.call_once(|| {
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(idle_timeout / 10).await;
                    let Some(running) = running.upgrade() else {
                        return;
                    };
                    let idle: Vec<Arc<Server>> = {
                        let mut table = lock(&running);
                        let names: Vec<&'static str> = table
                            .iter()
                            .filter(|(_, s)| s.idle() >= idle_timeout || !s.alive())
                            .map(|(name, _)| *name)
                            .collect();
                        names.iter().filter_map(|n| table.remove(n)).collect()
                    };
                    for server in idle {
                        tracing::debug!("stopping idle language server {}", server.program);
                        server.stop().await;
                    }
                }
            });
        });
    }

    async fn ask(&self, input: LspInput, locale: Locale) -> Result<LspOutput> {
        let requested = input.file_path.as_str();
        let relative = self.project.relative("lsp", requested, locale)?;
        let root = self
            .project
            .root()
            .canonicalize()
            .map_err(Error::io_at(self.project.root()))?;
        let dir = self.project.open()?;
        let text = dir
            .read_to_string(&relative)
            .map_err(|e| self.project.io_error("lsp", requested, locale, e))?;
        let path = root.join(&relative);
        let spec = server_for(&path).ok_or_else(|| {
            invalid(
                "lsp",
                &format!(
                    "no language server is known for {requested}; lsp serves {}",
                    SERVERS
                        .iter()
                        .map(|s| format!("{} (.{})", s.language, s.extensions.join(", .")))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )
        })?;
        let server = self.server(spec, &root).await?;
        let _using = server.using();
        let uri = server
            .open(&path, spec.language, text.clone())
            .await
            .map_err(failed)?;
        server
            .settle(Duration::from_millis(300), INDEX_TIMEOUT)
            .await;
        let position = || -> Result<Value> {
            let line = input
                .line
                .ok_or_else(|| invalid("lsp", "`line` (1-based) is needed for this action"))?;
            let column = input.column.unwrap_or(1);
            Ok(
                json!({ "line": line.saturating_sub(1), "character": utf16_column(&text, line, column) }),
            )
        };
        let document = json!({ "uri": uri });
        let server_name = spec.program.to_owned();
        match input.action {
            action @ (Action::Definition | Action::References) => {
                let mut params = json!({ "textDocument": document, "position": position()? });
                if action == Action::References {
                    params["context"] = json!({ "includeDeclaration": true });
                }
                let method = match action {
                    Action::References => "textDocument/references",
                    _ => "textDocument/definition",
                };
                let answer = server
                    .request(method, params, REQUEST_TIMEOUT)
                    .await
                    .map_err(failed)?;
                let mut locations: Vec<Location> = match answer {
                    Value::Array(items) => items,
                    Value::Null => Vec::new(),
                    single => vec![single],
                }
                .iter()
                .filter_map(|l| location(l, &root))
                .collect();
                // Servers answer in any order; by file and position reads best.
                locations.sort_by(|a, b| {
                    (&a.file_path, a.line, a.column).cmp(&(&b.file_path, b.line, b.column))
                });
                Ok(LspOutput::Locations {
                    locations,
                    server: server_name,
                })
            }
            Action::Hover => {
                let params = json!({ "textDocument": document, "position": position()? });
                let answer = server
                    .request("textDocument/hover", params, REQUEST_TIMEOUT)
                    .await
                    .map_err(failed)?;
                Ok(LspOutput::Hover {
                    contents: hover_text(&answer["contents"]),
                    server: server_name,
                })
            }
            Action::Diagnostics => {
                let found = server
                    .diagnostics(&uri, REQUEST_TIMEOUT)
                    .await
                    .unwrap_or(Value::Array(Vec::new()));
                let diagnostics = found
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|d| Diagnostic {
                        line: d["range"]["start"]["line"].as_u64().map_or(0, |l| l + 1),
                        column: d["range"]["start"]["character"]
                            .as_u64()
                            .map_or(0, |c| c + 1),
                        severity: match d["severity"].as_u64() {
                            Some(1) => "error",
                            Some(2) => "warning",
                            Some(3) => "information",
                            _ => "hint",
                        },
                        message: d["message"].as_str().unwrap_or_default().to_owned(),
                        source: d["source"].as_str().map(str::to_owned),
                    })
                    .collect();
                Ok(LspOutput::Diagnostics {
                    diagnostics,
                    server: server_name,
                })
            }
        }
    }
}

fn failed(message: String) -> Error {
    Error::Skill {
        skill: "lsp".into(),
        kind: FailureKind::Failed,
        message,
    }
}

/// What Evo tells a server at start-up: for rust-analyzer, no build scripts, proc macros
/// or `cargo check` (they run the project's code), no cache priming.
fn settings(spec: &ServerSpec) -> Value {
    match spec.language {
        "rust" => json!({
            "cargo": { "buildScripts": { "enable": false } },
            "procMacro": { "enable": false },
            "checkOnSave": false,
            "cachePriming": { "enable": false }
        }),
        _ => json!({}),
    }
}

/// LSP counts columns in UTF-16 code units; `column` is a 1-based character count.
fn utf16_column(text: &str, line: u64, column: u64) -> u64 {
    let Some(content) = text
        .lines()
        .nth(usize::try_from(line.saturating_sub(1)).unwrap_or(usize::MAX))
    else {
        return column.saturating_sub(1);
    };
    content
        .chars()
        .take(usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX))
        .map(|c| c.len_utf16() as u64)
        .sum()
}

/// A `Location` (or `LocationLink`) as `{ file_path, line, column }`, relative to the
/// project when inside it.
fn location(value: &Value, root: &Path) -> Option<Location> {
    let uri = value
        .get("uri")
        .or_else(|| value.get("targetUri"))?
        .as_str()?;
    let range = value
        .get("range")
        .or_else(|| value.get("targetSelectionRange"))?;
    let path = uri_path(uri)?;
    let shown = path
        .strip_prefix(root)
        .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
    Some(Location {
        file_path: shown,
        line: range["start"]["line"].as_u64()? + 1,
        column: range["start"]["character"].as_u64()? + 1,
    })
}

/// Hover contents (a string, `MarkedString`, a list of them, or `MarkupContent`) as text.
fn hover_text(contents: &Value) -> String {
    match contents {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(hover_text)
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::Object(o) => o
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    }
}

/// What `lsp` is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// where the symbol at line and column is defined
    Definition,
    /// where it is used
    References,
    /// its type and docs
    Hover,
    /// the file's errors and warnings
    Diagnostics,
}

/// `lsp`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspInput {
    /// what to ask
    pub action: Action,
    /// the file: relative to the project directory, or absolute inside it
    #[schemars(length(min = 1))]
    pub file_path: String,
    /// 1-based line (definition, references, hover)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u64>,
    /// 1-based column of the symbol (default 1)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub column: Option<u64>,
}

/// `lsp`'s output: one shape per action.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LspOutput {
    /// `definition` and `references`
    Locations {
        /// by file and position
        locations: Vec<Location>,
        /// the server that answered
        server: String,
    },
    /// `hover`
    Hover {
        /// the type and docs, as text
        contents: String,
        /// the server that answered
        server: String,
    },
    /// `diagnostics`
    Diagnostics {
        /// the file's errors and warnings
        diagnostics: Vec<Diagnostic>,
        /// the server that answered
        server: String,
    },
}

/// A place in a file.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct Location {
    /// the file, relative to the project when inside it
    pub file_path: String,
    /// 1-based line
    pub line: u64,
    /// 1-based column
    pub column: u64,
}

/// An error or warning a server reports.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Diagnostic {
    /// 1-based line
    pub line: u64,
    /// 1-based column
    pub column: u64,
    /// error, warning, information or hint
    pub severity: &'static str,
    /// what is wrong
    pub message: String,
    /// what found it (a compiler, a linter)
    pub source: Option<String>,
}

impl TypedTool for Lsp {
    const NAME: &'static str = "lsp";
    type Input = LspInput;
    type Output = LspOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Asks a language server about code: where a symbol is defined, where it is used, its type and docs (hover), or the file's diagnostics. Positions are 1-based line and column as read shows them. Servers: rust-analyzer, typescript-language-server, pyright, gopls, clangd.",
            "category": "code",
            "tags": ["code", "lsp"],
            "requests": [
                "where is the function parse_config defined?",
                "what type does this variable have on line 40?",
                "who uses the Parser::next method?",
                "are there compile errors in src/main.rs?",
                "jump to the declaration of Config",
                "find every reference to the User struct",
                "what do the docs say about the method at line 10, column 4?"
            ],
            "permission": "execute",
            "timeout": 120_000,
            "examples": [
                { "description": "Where the function called on line 3, column 5 is defined", "input": { "action": "definition", "file_path": "src/main.rs", "line": 3, "column": 5 } },
                { "description": "Every use of a symbol", "input": { "action": "references", "file_path": "src/lib.rs", "line": 1, "column": 8 } },
                { "description": "Errors and warnings in a file", "input": { "action": "diagnostics", "file_path": "src/lib.rs" } }
            ],
            "notes": [
                "The server is chosen by the file's extension and must be installed; the error names what to install.",
                "A server is started on first use (indexing can take seconds), reused by later calls, and shut down after 5 minutes unused.",
                "Language servers run as you, outside the sandbox. rust-analyzer is started without build scripts, proc macros or cargo check, so it runs none of the project's code and needs only read_only; typescript-language-server and gopls may load project code, so calls for them need execute."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["LSP", "Lsp"]
    }

    fn permission_for(&self, input: &LspInput) -> Option<Permission> {
        let spec = server_for(Path::new(&input.file_path));
        Some(if spec.is_some_and(|s| !s.runs_project_code) {
            Permission::ReadOnly
        } else {
            Permission::Execute
        })
    }

    fn run(&self, input: LspInput, ctx: SkillContext) -> BoxFuture<'_, Result<LspOutput>> {
        Box::pin(self.ask(input, ctx.locale()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_chosen_by_extension() {
        assert_eq!(
            server_for(Path::new("src/main.rs")).unwrap().program,
            "rust-analyzer"
        );
        assert_eq!(
            server_for(Path::new("a/b.tsx")).unwrap().language,
            "typescript"
        );
        assert!(server_for(Path::new("README.md")).is_none());
    }

    #[test]
    fn positions_and_uris_convert() {
        assert_eq!(
            utf16_column("a😀b\n", 1, 3),
            3,
            "the emoji is two UTF-16 units"
        );
        let uri = file_uri(Path::new("/tmp/a b/é.rs"));
        assert_eq!(uri, "file:///tmp/a%20b/%C3%A9.rs");
        assert_eq!(uri_path(&uri).unwrap(), Path::new("/tmp/a b/é.rs"));
        let found = location(
            &json!({ "uri": "file:///p/src/lib.rs", "range": { "start": { "line": 4, "character": 7 } } }),
            Path::new("/p"),
        );
        assert_eq!(
            found,
            Some(Location {
                file_path: "src/lib.rs".into(),
                line: 5,
                column: 8
            })
        );
        assert_eq!(
            hover_text(&json!({ "kind": "markdown", "value": "```rust\nfn run()\n```" })),
            "```rust\nfn run()\n```"
        );
    }
}
