//! Typed errors with stable codes.
//!
//! Every error a user can hit carries the context needed to act on it (which skill,
//! which limit, which path) and a [`Error::code`] that scripts can match on; the codes
//! are part of Evo's interface and do not change between releases.

use std::path::PathBuf;

pub mod report;

pub use report::{Direction, Problem, ScriptRun, TemplateError, ValidationReport, Violation};

/// Result with Evo's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of expected failure a skill reported (the WIT `skill-error` cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// The input was not acceptable.
    InvalidInput,
    /// Something named does not exist.
    NotFound,
    /// A capability was not granted.
    Denied,
    /// A host call ran out of time.
    Timeout,
    /// Any other failure.
    Failed,
    /// A service was busy or down (HTTP 429, 5xx): worth trying again later.
    Unavailable,
}

impl FailureKind {
    /// The words used in messages (`invalid input`, `denied`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid input",
            Self::NotFound => "not found",
            Self::Denied => "denied",
            Self::Timeout => "timeout",
            Self::Failed => "failed",
            Self::Unavailable => "unavailable",
        }
    }
}

/// Every error the Evo host reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },

    /// The bytes are not a WebAssembly component.
    #[error(
        "{skill}: not a WebAssembly component ({reason}); build skills for wasm32-wasip2 \
         (a core module must be turned into a component first)"
    )]
    InvalidComponent {
        /// The skill (or file) name.
        skill: String,
        /// What the parser or compiler said.
        reason: String,
    },

    /// A component over the engine's size cap or compile deadline.
    #[error("{skill}: {message}")]
    ComponentLimit {
        /// The skill (or file) name.
        skill: String,
        /// Which limit, and its value.
        message: String,
    },

    /// A component that does not implement the `evo:skill` world.
    #[error("{skill}: not an Evo skill: {reason}")]
    NotASkill {
        /// The skill (or file) name.
        skill: String,
        /// What is missing or extra.
        reason: String,
    },

    /// A component built against a WIT version this host does not support.
    #[error(
        "{skill} was built for evo:skill@{found}, but this host supports evo:skill@{supported}; \
         rebuild the skill with a matching evo-guest, or use an evo release that supports {found}"
    )]
    IncompatibleApi {
        /// The skill (or file) name.
        skill: String,
        /// The version the component uses.
        found: String,
        /// The version this host implements.
        supported: String,
    },

    /// The skill's manifest has problems; all of them are listed.
    #[error("{skill}: invalid manifest:{}", format_problems(problems))]
    InvalidManifest {
        /// The skill (or file) name.
        skill: String,
        /// Every problem found, each with its field and a fix.
        problems: Vec<Problem>,
    },

    /// The input is not JSON or not an object.
    #[error("{skill}: invalid input: {reason}")]
    InvalidInput {
        /// The skill.
        skill: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The call ran past its wall-clock deadline.
    #[error("{skill}: timeout: the call did not finish within {limit_ms} ms")]
    Timeout {
        /// The skill.
        skill: String,
        /// The deadline that applied.
        limit_ms: u64,
    },

    /// The guest tried to grow its linear memory past its limit.
    #[error("{skill}: memory limit of {limit_mib} MiB exceeded")]
    MemoryLimit {
        /// The skill.
        skill: String,
        /// The limit that applied, across all of the skill's memories.
        limit_mib: u64,
    },

    /// The guest used all of its fuel.
    #[error("{skill}: fuel exhausted: the call used all {fuel} units of fuel")]
    FuelExhausted {
        /// The skill.
        skill: String,
        /// The fuel the call started with.
        fuel: u64,
    },

    /// The guest produced more output (result, stdout or stderr) than allowed.
    #[error("{skill}: {stream} exceeded {limit} bytes")]
    OutputLimit {
        /// The skill.
        skill: String,
        /// `output`, `stdout` or `stderr`.
        stream: &'static str,
        /// The limit that applied.
        limit: u64,
    },

    /// The guest trapped (a bug in the skill, such as a panic or `unreachable`).
    #[error("{skill}: trapped: {message}")]
    Trap {
        /// The skill.
        skill: String,
        /// The trap message and the top of the guest backtrace.
        message: String,
    },

    /// The skill returned an expected failure.
    #[error("{skill}: {}: {message}", kind.as_str())]
    Skill {
        /// The skill.
        skill: String,
        /// The kind of failure.
        kind: FailureKind,
        /// The skill's message.
        message: String,
    },

    /// A native script failed; what it printed and how it ended come with the error.
    #[error("{skill}: {}: {message}", kind.as_str())]
    Script {
        /// The skill.
        skill: String,
        /// The kind of failure.
        kind: FailureKind,
        /// What went wrong (`Execution timeout`, the thrown message, …).
        message: String,
        /// The run: stdout, stderr, exit code, duration.
        run: Box<ScriptRun>,
    },

    /// The skill returned something that is not JSON.
    #[error("{skill}: the skill returned output that is not valid JSON: {reason}")]
    InvalidOutput {
        /// The skill.
        skill: String,
        /// The JSON parser's message.
        reason: String,
    },

    /// A capability could not be granted as configured by the operator.
    #[error("capability: {0}")]
    Capability(String),

    /// The Wasm engine could not be set up or failed unexpectedly.
    #[error("engine: {0}")]
    Engine(String),

    /// No skill of that name is registered (or installed).
    #[error("Skills not found: {name}")]
    SkillNotFound {
        /// The name asked for.
        name: String,
    },

    /// No native script skill of that name is installed.
    #[error("Skills not found: {name}")]
    ScriptNotFound {
        /// The name asked for.
        name: String,
    },

    /// A skill archive or directory does not have the required shape.
    #[error("{0}")]
    InvalidSkillStructure(String),

    /// Installing would replace an installed skill without `overwrite`.
    #[error("Skill {name} already exists. Use overwrite:true to replace.")]
    SkillAlreadyExists {
        /// The skill.
        name: String,
    },

    /// Installing would give a skill the name of a built-in tool: clients (the agent,
    /// MCP clients) call tools by name, so every name is taken once.
    #[error("Skill {name} cannot be installed: a built-in tool is already called {name}")]
    NameTaken {
        /// The name.
        name: String,
    },

    /// An installed skill now asks for capabilities the operator did not see at install
    /// (its files changed since).
    #[error(
        "{skill}: asks for capabilities not approved at install ({}); reinstall it with `evo skill install --overwrite` to review them",
        requests.join("; ")
    )]
    CapabilitiesChanged {
        /// The skill.
        skill: String,
        /// The new requests.
        requests: Vec<String>,
    },

    /// No built-in tool of that name exists.
    #[error("BuiltIn tool not found: {name}")]
    ToolNotFound {
        /// The name asked for.
        name: String,
    },

    /// A call refused before it ran: above the run's permission level, not confirmed, a
    /// path outside the project, a command outside the allowlist. The message is the
    /// one the model and the user read (in the configured locale).
    #[error("{tool}: {message}")]
    Blocked {
        /// The tool.
        tool: String,
        /// Why, e.g. `智能体无权限调用此工具（需要 read_write，当前仅有 read_only）`.
        message: String,
    },

    /// A call would go deeper than the call depth limit.
    #[error(
        "{skill}: call depth limit reached ({depth} of {max} frames); a skill is probably calling itself in a loop"
    )]
    SkillDepth {
        /// The skill that was to be called.
        skill: String,
        /// The depth of the caller.
        depth: u32,
        /// The limit.
        max: u32,
    },

    /// An input or output does not match the skill's schema; the report lists every
    /// violation with a suggestion and is written for a model to act on.
    #[error("{0}")]
    Validation(Box<ValidationReport>),

    /// A template of the skill (pipeline, output mapping, prompt) is wrong.
    #[error("{skill}: {source}")]
    Template {
        /// The skill.
        skill: String,
        /// Where and what.
        #[source]
        source: TemplateError,
    },

    /// A step of a composite skill failed.
    #[error("{skill}: step `{step}` failed: {source}")]
    Step {
        /// The composite skill.
        skill: String,
        /// The step's label.
        step: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },

    /// The language model could not answer.
    #[error("llm: {message}")]
    Llm {
        /// What went wrong and what to do.
        message: String,
        /// Whether trying again later may work (rate limit, timeout, server error).
        transient: bool,
    },

    /// A skill on another Evo node failed there, or the node could not be reached.
    #[error("{remote}: {message}")]
    Remote {
        /// The remote (`NAME` of `evo remote add NAME URL`).
        remote: String,
        /// The code: the serving node's, or `REMOTE_UNAVAILABLE`.
        code: &'static str,
        /// What happened.
        message: String,
        /// Whether trying again may work.
        transient: bool,
    },

    /// A secret could not be set, found or used.
    #[error("secret: {message}")]
    Secret {
        /// `SECRET_INVALID` or `SECRET_NOT_FOUND`.
        code: &'static str,
        /// What is wrong and what to do.
        message: String,
    },

    /// The configuration (`evo.toml`, an `EVO_*` variable) is not valid.
    #[error("{}{}{}: {message}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default(), key.as_ref().map(|k| format!(", key {k}")).unwrap_or_default())]
    Config {
        /// The file (or the variable) at fault.
        path: PathBuf,
        /// The line, from 1, when known.
        line: Option<usize>,
        /// The dotted key (`engine.pool_slots`), when known.
        key: Option<String>,
        /// What is wrong and what to write instead.
        message: String,
    },

    /// The embeddings service could not embed.
    #[error("embeddings: {message}")]
    Embedding {
        /// The endpoint, what went wrong and what to do.
        message: String,
        /// Whether trying again later may work.
        transient: bool,
    },

    /// Creating, building, packing or testing a skill project failed.
    #[error("{message}")]
    Authoring {
        /// `INVALID_SKILL_NAME`, `PROJECT_EXISTS`, `NOT_A_SKILL_PROJECT`,
        /// `TOOLCHAIN_MISSING`, `BUILD_FAILED`, `NOT_BUILT`, `INVALID_TEST_CASE` or
        /// `IO_ERROR`.
        code: &'static str,
        /// What happened and what to do.
        message: String,
    },

    /// The host database failed.
    #[error("database: {message}")]
    Database {
        /// The file and SQLite's message.
        message: String,
        /// Whether it was busy or locked by another process (worth retrying).
        transient: bool,
    },
}

fn format_problems(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("\n  - {p}")).collect()
}

impl Error {
    /// For `map_err`: an I/O failure at `path`.
    pub(crate) fn io_at(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_owned();
        move |source| Self::Io { path, source }
    }

    /// `code` as a `&'static str`, for an error code that came from elsewhere (another
    /// node): kept once per distinct code, at most 256 of them, and only codes shaped
    /// like ours (`A_Z_`, at most 48); anything else is `REMOTE_ERROR`.
    pub fn intern_code(code: &str) -> &'static str {
        static CODES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        let shaped = !code.is_empty()
            && code.len() <= 48
            && code.chars().all(|c| c.is_ascii_uppercase() || c == '_');
        if !shaped {
            return "REMOTE_ERROR";
        }
        let mut codes = CODES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(known) = codes.iter().find(|c| **c == code) {
            return known;
        }
        if codes.len() >= 256 {
            return "REMOTE_ERROR";
        }
        let kept: &'static str = Box::leak(code.to_owned().into_boxed_str());
        codes.push(kept);
        kept
    }

    /// The stable, machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "IO_ERROR",
            Self::InvalidComponent { .. } => "INVALID_COMPONENT",
            Self::ComponentLimit { .. } => "COMPONENT_LIMIT",
            Self::NotASkill { .. } => "NOT_A_SKILL",
            Self::IncompatibleApi { .. } => "INCOMPATIBLE_API_VERSION",
            Self::InvalidManifest { .. } => "INVALID_MANIFEST",
            Self::InvalidInput { .. } => "INVALID_INPUT",
            Self::Timeout { .. } => "SKILL_TIMEOUT",
            Self::MemoryLimit { .. } => "MEMORY_LIMIT_EXCEEDED",
            Self::FuelExhausted { .. } => "FUEL_EXHAUSTED",
            Self::OutputLimit { .. } => "OUTPUT_LIMIT_EXCEEDED",
            Self::Trap { .. } => "SKILL_TRAPPED",
            Self::Skill { kind, .. } | Self::Script { kind, .. } => match kind {
                FailureKind::InvalidInput => "INVALID_INPUT",
                FailureKind::NotFound => "NOT_FOUND",
                FailureKind::Denied => "PERMISSION_DENIED",
                FailureKind::Timeout => "SKILL_TIMEOUT",
                FailureKind::Unavailable => "SERVICE_UNAVAILABLE",
                FailureKind::Failed => "SKILL_FAILED",
            },
            Self::InvalidOutput { .. } => "INVALID_OUTPUT",
            Self::Capability(_) => "CAPABILITY_DENIED",
            Self::Engine(_) => "ENGINE_ERROR",
            Self::SkillNotFound { .. } => "SKILL_NOT_FOUND",
            Self::ToolNotFound { .. } => "TOOL_NOT_FOUND",
            Self::Blocked { .. } => "TOOL_BLOCKED",
            Self::ScriptNotFound { .. } => "ENOENT",
            Self::InvalidSkillStructure(_) => "INVALID_SKILL_STRUCTURE",
            Self::SkillAlreadyExists { .. } => "SKILL_ALREADY_EXISTS",
            Self::NameTaken { .. } => "SKILL_NAME_TAKEN",
            Self::CapabilitiesChanged { .. } => "CAPABILITIES_CHANGED",
            Self::SkillDepth { .. } => "SKILL_DEPTH_EXCEEDED",
            Self::Validation(_) => "SKILL_VALIDATION_FAILED",
            Self::Template { .. } => "TEMPLATE_ERROR",
            Self::Step { source, .. } => source.code(),
            Self::Llm { .. } => "LLM_ERROR",
            Self::Database { .. } => "DATABASE_ERROR",
            Self::Embedding { .. } => "EMBEDDING_ERROR",
            Self::Config { .. } => "CONFIG_INVALID",
            Self::Secret { code, .. }
            | Self::Remote { code, .. }
            | Self::Authoring { code, .. } => code,
        }
    }

    /// True for failures that may pass if tried again (timeouts, a busy database, a rate
    /// limit); the kernel retries only these. Validation and depth errors never are.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout { .. }
            | Self::Skill {
                kind: FailureKind::Timeout,
                ..
            }
            | Self::Script {
                kind: FailureKind::Timeout,
                ..
            }
            | Self::Skill {
                kind: FailureKind::Unavailable,
                ..
            } => true,
            Self::Llm { transient, .. }
            | Self::Remote { transient, .. }
            | Self::Database { transient, .. }
            | Self::Embedding { transient, .. } => *transient,
            Self::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            ),
            Self::Step { source, .. } => source.is_transient(),
            _ => false,
        }
    }

    /// True when the caller's input (a file, a manifest, a flag) is at fault rather than
    /// the skill's run; the CLI exits with 2 for these and 1 for the rest.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::Io { .. }
                | Self::InvalidComponent { .. }
                | Self::ComponentLimit { .. }
                | Self::NotASkill { .. }
                | Self::IncompatibleApi { .. }
                | Self::InvalidManifest { .. }
                | Self::InvalidInput { .. }
                | Self::Capability(_)
                | Self::SkillNotFound { .. }
                | Self::ToolNotFound { .. }
                | Self::Blocked { .. }
                | Self::ScriptNotFound { .. }
                | Self::InvalidSkillStructure(_)
                | Self::SkillAlreadyExists { .. }
                | Self::NameTaken { .. }
                | Self::Template { .. }
                | Self::Config { .. }
                | Self::Secret { .. }
                | Self::Skill {
                    kind: FailureKind::InvalidInput,
                    ..
                }
                | Self::Script {
                    kind: FailureKind::InvalidInput,
                    ..
                }
        ) || matches!(self, Self::Validation(report) if report.direction == Direction::Input)
            || matches!(
                self,
                Self::Remote { code, .. } if matches!(
                    *code,
                    "INVALID_INPUT" | "SKILL_NOT_FOUND" | "TOOL_NOT_FOUND" | "TOOL_BLOCKED" | "CAPABILITY_DENIED"
                )
            )
            || matches!(
                self,
                Self::Authoring { code, .. } if matches!(
                    *code,
                    "INVALID_SKILL_NAME" | "PROJECT_EXISTS" | "NOT_A_SKILL_PROJECT" | "NOT_BUILT" | "INVALID_TEST_CASE"
                )
            )
    }

    /// A short hint on what to do next, when there is a useful one.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Timeout { .. } => {
                Some("raise the skill's `timeout` in its manifest if the work is legitimately slow")
            }
            Self::MemoryLimit { .. } => {
                Some("raise `limits.memoryMib` in the manifest, within the host's policy")
            }
            Self::OutputLimit { .. } => Some("return less data, or raise `limits.outputBytes`"),
            Self::Skill {
                kind: FailureKind::Denied,
                ..
            } => Some(
                "grant the capability the skill asks for (e.g. `--dir HOST::GUEST`), if you trust it",
            ),
            Self::ComponentLimit { .. } => Some(
                "if you trust the component, raise `max_component_mb` or `compile_deadline_ms` under [engine] in evo.toml",
            ),
            Self::NotASkill { .. } | Self::InvalidComponent { .. } => Some(
                "skills implement the `plugin` world of wit/skill.wit; see guest-sdk/README.md",
            ),
            Self::SkillNotFound { .. } => {
                Some("`evo skill list` shows the skills available; check the name's spelling")
            }
            Self::SkillAlreadyExists { .. } => Some("`evo skill install --overwrite` replaces it"),
            Self::Remote {
                code: "REMOTE_UNAVAILABLE",
                ..
            } => Some(
                "`evo remote list` shows whether each node answers; start `evo serve --http` there, or check its address and token",
            ),
            Self::NameTaken { .. } => Some(
                "rename the skill (the `name` in its SKILL.md or skill.json, and its directory)",
            ),
            Self::Config { .. } => Some(
                "fix the value (`evo config show` prints every key, its value and where it came from)",
            ),
            Self::InvalidSkillStructure(_) => Some(
                "a skill archive holds one directory named like the skill, with a SKILL.md (name, description) inside",
            ),
            Self::Blocked { .. } => Some(
                "choose a profile that allows the call (`--profile`), confirm it when asked, or keep to the project directory and the allowed commands ([tools] in evo.toml)",
            ),
            Self::SkillDepth { .. } => {
                Some("look for a skill that calls itself, directly or through another skill")
            }
            Self::Validation(report) if report.direction == Direction::Input => {
                Some("fix the input as the report says and run again")
            }
            Self::Validation(_) => Some(
                "the skill produced output its own schema rejects: report it to the skill's author",
            ),
            Self::Llm { .. } => {
                Some("check the model's configuration (EVO_LLM, API keys, base URL)")
            }
            _ => None,
        }
    }
}
