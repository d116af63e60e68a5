//! `[serve]` in `evo.toml`: what `evo serve` offers its clients. The server sits above
//! the configuration (it is a front end over the host), so its table is kept here
//! rather than beside it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::settings::{Invalid, Section, in_range};

/// Calls `evo serve` lets wait for a slot at once unless `serve.max_queue` says
/// otherwise: four rounds of the default `max_calls`.
pub const DEFAULT_MAX_SERVE_QUEUE: usize = 128;
/// Calls `evo serve` runs at once unless `serve.max_calls` says otherwise.
pub const DEFAULT_MAX_SERVE_CALLS: usize = 32;
/// The largest client message `evo serve` takes unless `serve.max_message_kb` says
/// otherwise: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_KB: usize = 4 << 10;

/// What `evo serve` offers its clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// The skills served as tools, by name; a trailing `*` matches a prefix. Empty:
    /// every skill that is not internal.
    pub tools: Vec<String>,
    /// Calls run at once across all sessions; more wait their turn.
    pub max_calls: usize,
    /// Calls that may wait for a slot at once, in each lane (quick calls, and skills
    /// whose calls run long); more are refused as busy (HTTP 503 with `Retry-After`, an
    /// MCP error) rather than queued without end.
    pub max_queue: usize,
    /// The largest message a client may send, KiB.
    pub max_message_kb: usize,
    /// Whether MCP clients get the management tools (install, uninstall, grant,
    /// revoke, search), each change confirmed by the user (`evo serve --manage`).
    pub manage: bool,
    /// Host directories below which a grant made over the wire (the HTTP API, the
    /// console, the MCP management tools) may bind a directory; none by default, so
    /// such grants bind no directory until the operator names one.
    pub grant_dirs: Vec<PathBuf>,
}

impl ServeSettings {
    /// Whether skill `name` is served, by [`ServeSettings::tools`].
    pub fn serves(&self, name: &str) -> bool {
        self.tools.is_empty()
            || self
                .tools
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => pattern == name,
                })
    }
}

impl Default for ServeSettings {
    /// Every skill that is not internal served, [`DEFAULT_MAX_SERVE_CALLS`] calls at
    /// once, [`DEFAULT_MAX_SERVE_QUEUE`] waiting, messages up to
    /// [`DEFAULT_MAX_MESSAGE_KB`], no management tools, no directory grants over the
    /// wire.
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            max_calls: DEFAULT_MAX_SERVE_CALLS,
            max_queue: DEFAULT_MAX_SERVE_QUEUE,
            max_message_kb: DEFAULT_MAX_MESSAGE_KB,
            manage: false,
            grant_dirs: Vec::new(),
        }
    }
}

impl Section for ServeSettings {
    const TABLE: &'static str = "serve";

    fn check(&mut self, base: &Path) -> Result<(), Invalid> {
        in_range("serve.max_calls", self.max_calls, 1, 4_096)?;
        in_range("serve.max_queue", self.max_queue, 0, 1 << 20)?;
        in_range("serve.max_message_kb", self.max_message_kb, 1, 1 << 20)?;
        self.grant_dirs = self
            .grant_dirs
            .iter()
            .map(|dir| grant_root(base, dir).map_err(|why| Invalid::new("serve.grant_dirs", why)))
            .collect::<Result<_, _>>()?;
        Ok(())
    }
}

/// A `[serve] grant_dirs` entry: a directory that exists (relative to the file's),
/// canonical, so that what is below it is decided on real paths.
fn grant_root(base: &Path, entry: &Path) -> Result<PathBuf, String> {
    let path = base.join(entry);
    let canonical = path
        .canonicalize()
        .map_err(|e| format!("{}: {e}; name a directory that exists", path.display()))?;
    if !canonical.is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    Ok(canonical)
}
