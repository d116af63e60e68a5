//! What an [`Error`] means to its reader: its stable code, whether it is worth a retry or
//! the caller's input was wrong, and a hint saying what to do.

use super::{Direction, Error, FailureKind};

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
