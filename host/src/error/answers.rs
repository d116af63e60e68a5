//! How every front end answers a failure: `evo`'s exit status and the HTTP API's
//! status, decided here once for each error code, so that the CLI, the HTTP API and MCP
//! (which carries the code in its error result) never disagree about one failure.
//!
//! The rule is the code's alone. One code names one failure, with one exception:
//! `SKILL_VALIDATION_FAILED` is the caller's input failing the skill's schema, or the
//! skill's output failing its own; each has its row.

use super::{Direction, Error};

/// How a failure is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// `evo`'s exit status: 1 the skill or the host failed, 2 the request was wrong (a
    /// flag, an input, a name that is not there, a grant that does not allow it), 3
    /// refused before it ran (a profile, a confirmation not given).
    pub exit: u8,
    /// The HTTP API's status.
    pub http: u16,
}

/// Every error code Evo answers with, and what it means: what `docs/errors.md` lists.
pub const CODES: &[(&str, &str)] = &[
    (
        "ADMIN_REQUIRED",
        "a route that changes the server was called without the admin token",
    ),
    (
        "ARTIFACT_INVALID",
        "what the registry holds is not a skill Evo can install",
    ),
    (
        "ARTIFACT_NOT_FOUND",
        "the registry has no such repository, tag or digest",
    ),
    (
        "ARTIFACT_TOO_LARGE",
        "an artifact or upload is over the install size caps",
    ),
    (
        "BIND_FAILED",
        "`evo serve --http` could not listen on the address given",
    ),
    (
        "BUILD_FAILED",
        "the project's toolchain failed to build the skill",
    ),
    (
        "CAPABILITIES_CHANGED",
        "an update asks for more than the installed version was granted",
    ),
    (
        "CAPABILITY_DENIED",
        "a grant asked for on the command line or in evo.toml is not allowed",
    ),
    (
        "COMPONENT_LIMIT",
        "a component is over the size cap, or compiling it passed the compile deadline",
    ),
    (
        "CONFIG_INVALID",
        "evo.toml (or a variable) holds an unknown key or a bad value",
    ),
    (
        "DATABASE_ERROR",
        "the database could not be read or written",
    ),
    (
        "DIGEST_MISMATCH",
        "bytes from a registry do not have the digest they were asked by",
    ),
    ("EMBEDDING_ERROR", "the embeddings endpoint failed"),
    ("ENGINE_ERROR", "the Wasm engine failed (not the skill)"),
    ("ENOENT", "no native script skill of that name is installed"),
    (
        "FEATURE_NOT_BUILT",
        "this build of Evo was made without the feature asked for",
    ),
    (
        "FUEL_EXHAUSTED",
        "the skill used up its fuel (instructions)",
    ),
    (
        "FUNCTION_NOT_CHOSEN",
        "a plain component with several functions was run without naming one",
    ),
    ("GRANT_INVALID", "a grant that does not parse"),
    (
        "GRANT_OUTSIDE",
        "a directory granted over the wire is outside [serve] grant_dirs",
    ),
    (
        "HOST_REFUSED",
        "a request to a loopback server names another host (DNS rebinding)",
    ),
    (
        "INCOMPATIBLE_API_VERSION",
        "the component was built against a WIT contract this host does not run",
    ),
    ("INTERNAL_ERROR", "Evo itself failed (a bug: report it)"),
    ("INVALID_ARGUMENT", "a flag or argument of `evo` is wrong"),
    (
        "INVALID_COMPONENT",
        "the file is not a WebAssembly component (a core module, another file)",
    ),
    (
        "INVALID_INPUT",
        "the input is not acceptable (not JSON, or refused by the skill)",
    ),
    (
        "INVALID_MANIFEST",
        "the skill's manifest has problems, each named with its fix",
    ),
    (
        "INVALID_OUTPUT",
        "the skill answered something that is not JSON",
    ),
    (
        "INVALID_REFERENCE",
        "a registry reference that does not parse",
    ),
    (
        "INVALID_REQUEST",
        "an HTTP request the API cannot read (its body, a parameter)",
    ),
    (
        "INVALID_SKILL_NAME",
        "a skill name with characters a name cannot hold",
    ),
    (
        "INVALID_SKILL_STRUCTURE",
        "a directory or archive that holds no skill",
    ),
    (
        "INVALID_TEST_CASE",
        "a case in a project's tests/ that does not parse",
    ),
    ("IO_ERROR", "a file could not be read or written"),
    ("KEY_INVALID", "a signing or trust key that does not parse"),
    ("LLM_AUTH", "the model provider refused the API key"),
    ("LLM_BAD_REQUEST", "the model provider refused the request"),
    (
        "LLM_BAD_RESPONSE",
        "the model provider answered something that is not its API",
    ),
    ("LLM_ERROR", "the model failed to answer"),
    (
        "LLM_MODEL_NOT_FOUND",
        "the model provider has no such model",
    ),
    ("LLM_NOT_CONFIGURED", "no language model is set up"),
    ("LLM_RATE_LIMITED", "the model provider asks to slow down"),
    (
        "LLM_SCRIPT_EXHAUSTED",
        "the scripted test model has no answer left",
    ),
    ("LLM_TIMEOUT", "the model did not answer in time"),
    ("LLM_UNAVAILABLE", "the model provider cannot be reached"),
    (
        "LOCAL_MODEL_UNUSABLE",
        "the installed local model is missing or damaged",
    ),
    ("MEMORY_ENTRY_NOT_FOUND", "no memory entry has that id"),
    (
        "MEMORY_LIMIT_EXCEEDED",
        "the skill used more memory than its limit",
    ),
    (
        "MESSAGE_TOO_LARGE",
        "a request body over `serve.max_message_kb`",
    ),
    (
        "METHOD_NOT_ALLOWED",
        "an API route called with a method it does not take",
    ),
    (
        "MODEL_NOT_ALLOWED",
        "the model asked for is not among those allowed",
    ),
    (
        "NOT_A_SKILL",
        "a component that is neither an Evo skill nor a component with callable functions",
    ),
    (
        "NOT_A_SKILL_PROJECT",
        "the directory holds no skill project",
    ),
    ("NOT_BUILT", "the project has no skill.wasm yet"),
    (
        "NOT_FOUND",
        "something named does not exist: what a skill's input named (it says so), or an API route",
    ),
    (
        "NOT_FROM_REGISTRY",
        "the skill was not installed from a registry: there is no tag to follow",
    ),
    (
        "NOT_GRANTED",
        "a revoke names something the skill was not granted",
    ),
    (
        "NOT_LOCKED",
        "`--locked` and the lock file does not pin the skill",
    ),
    (
        "NO_REGISTRIES",
        "a registry search with no registry configured",
    ),
    (
        "NO_TEST_CASES",
        "`evo skill test` found no cases in the project's tests/",
    ),
    ("ORIGIN_REFUSED", "a request from a page of another origin"),
    (
        "OUTPUT_LIMIT_EXCEEDED",
        "the skill returned (or printed) more than its output limit",
    ),
    (
        "PERMISSION_DENIED",
        "the sandbox refused what the skill asked for (a file, a host, a secret)",
    ),
    (
        "PREPROCESSOR_FAILED",
        "a skill that cleans a request first failed",
    ),
    ("PROJECT_EXISTS", "`evo new` would overwrite a directory"),
    ("REGISTRY_AUTH", "the registry refused the credentials"),
    ("REGISTRY_ERROR", "the registry answered with an error"),
    ("REGISTRY_UNREACHABLE", "the registry cannot be reached"),
    (
        "REMOTE_ERROR",
        "another node failed with a code this one does not know",
    ),
    (
        "REMOTE_NOT_FOUND",
        "no remote node of that name is configured",
    ),
    ("REMOTE_UNAVAILABLE", "another node cannot be reached"),
    ("RUNTIME_ERROR", "`evo` could not start its async runtime"),
    (
        "SECRET_INVALID",
        "a secret's name or value is not acceptable",
    ),
    ("SECRET_NOT_FOUND", "no secret of that name is set"),
    ("SERVER_BUSY", "the server's call queue is full"),
    (
        "SERVICE_UNAVAILABLE",
        "a service the skill calls is busy or down",
    ),
    (
        "SHUTTING_DOWN",
        "the server is stopping and takes no new calls",
    ),
    (
        "SIGNATURE_MISMATCH",
        "a trusted key's signature beside the artifact was made for another one",
    ),
    (
        "SIGNATURE_REQUIRED",
        "[trust] requires a signature and the artifact has none Evo trusts",
    ),
    (
        "SIGNATURE_UNTRUSTED",
        "the artifact's signature is by a key [trust] does not hold",
    ),
    (
        "SKILL_ALREADY_EXISTS",
        "a skill of that name is installed (`--overwrite` replaces it)",
    ),
    (
        "SKILL_DEPTH_EXCEEDED",
        "skills called each other deeper than the host allows",
    ),
    ("SKILL_FAILED", "the skill reported a failure"),
    (
        "SKILL_NAME_TAKEN",
        "a built-in tool already has the skill's name",
    ),
    (
        "SKILL_NOT_FOUND",
        "no skill of that name is loaded or installed",
    ),
    ("SKILL_TIMEOUT", "the call passed its deadline"),
    ("SKILL_TRAPPED", "the skill crashed (a trap)"),
    (
        "SKILL_VALIDATION_FAILED",
        "the input, or the skill's output, does not match its schema",
    ),
    (
        "TAG_MOVED",
        "`--locked` and the tag names another digest than the lock file",
    ),
    ("TEMPLATE_ERROR", "a skill's template does not render"),
    (
        "TIMEOUT",
        "the local model did not finish within its deadline",
    ),
    (
        "TOKEN_REQUIRED",
        "`evo serve --http` on an address other than loopback without a token",
    ),
    (
        "TOKEN_WEAK",
        "`evo serve --http` with a token of fewer than 128 bits, short or plain enough to guess",
    ),
    (
        "TOOLCHAIN_MISSING",
        "the language's toolchain is not installed",
    ),
    (
        "TOOL_BLOCKED",
        "refused before it ran: the profile's level, a confirmation not given, a path or command outside the allowlist",
    ),
    (
        "TOOL_NOT_FOUND",
        "no built-in tool of that name (`BuiltIn tool not found`)",
    ),
    (
        "TOOL_UNAVAILABLE",
        "a program the tool needs is not installed",
    ),
    (
        "UNAUTHORIZED",
        "an API call without the server's bearer token",
    ),
];

/// Codes of failures the request is at fault for (exit 2): a flag, an input, a file or a
/// name that is not there, a configuration or a grant that does not allow it.
const REQUEST_AT_FAULT: &[&str] = &[
    "ADMIN_REQUIRED",
    "ARTIFACT_NOT_FOUND",
    "ARTIFACT_TOO_LARGE",
    "BIND_FAILED",
    "CAPABILITIES_CHANGED",
    "CAPABILITY_DENIED",
    "COMPONENT_LIMIT",
    "CONFIG_INVALID",
    "ENOENT",
    "FEATURE_NOT_BUILT",
    "FUNCTION_NOT_CHOSEN",
    "GRANT_INVALID",
    "GRANT_OUTSIDE",
    "HOST_REFUSED",
    "INCOMPATIBLE_API_VERSION",
    "INVALID_ARGUMENT",
    "INVALID_COMPONENT",
    "INVALID_INPUT",
    "INVALID_MANIFEST",
    "INVALID_REFERENCE",
    "INVALID_REQUEST",
    "INVALID_SKILL_NAME",
    "INVALID_SKILL_STRUCTURE",
    "INVALID_TEST_CASE",
    "IO_ERROR",
    "KEY_INVALID",
    "LLM_NOT_CONFIGURED",
    "LOCAL_MODEL_UNUSABLE",
    "MEMORY_ENTRY_NOT_FOUND",
    "MESSAGE_TOO_LARGE",
    "METHOD_NOT_ALLOWED",
    "MODEL_NOT_ALLOWED",
    "NOT_A_SKILL",
    "NOT_A_SKILL_PROJECT",
    "NOT_BUILT",
    "NOT_FROM_REGISTRY",
    "NOT_GRANTED",
    "NOT_LOCKED",
    "NO_REGISTRIES",
    "NO_TEST_CASES",
    "ORIGIN_REFUSED",
    "PROJECT_EXISTS",
    "REMOTE_NOT_FOUND",
    "SECRET_INVALID",
    "SECRET_NOT_FOUND",
    "SIGNATURE_MISMATCH",
    "SIGNATURE_REQUIRED",
    "SIGNATURE_UNTRUSTED",
    "SKILL_ALREADY_EXISTS",
    "SKILL_NAME_TAKEN",
    "SKILL_NOT_FOUND",
    "TAG_MOVED",
    "TEMPLATE_ERROR",
    "TOKEN_REQUIRED",
    "TOKEN_WEAK",
    "TOOL_NOT_FOUND",
    "TOOL_UNAVAILABLE",
    "UNAUTHORIZED",
];

/// How a failure with `code` is answered; `output` says which of
/// `SKILL_VALIDATION_FAILED`'s two failures it is (the skill's output, not the input).
pub fn answer_for(code: &str, output: bool) -> Answer {
    let validation = code == "SKILL_VALIDATION_FAILED";
    let exit = if code == "TOOL_BLOCKED" {
        3
    } else if (validation && !output) || REQUEST_AT_FAULT.contains(&code) {
        2
    } else {
        1
    };
    let http = match code {
        "SKILL_VALIDATION_FAILED" if !output => 422,
        "UNAUTHORIZED" => 401,
        "ADMIN_REQUIRED"
        | "ORIGIN_REFUSED"
        | "HOST_REFUSED"
        | "TOOL_BLOCKED"
        | "PERMISSION_DENIED"
        | "CAPABILITY_DENIED"
        | "GRANT_OUTSIDE"
        | "MODEL_NOT_ALLOWED"
        | "SIGNATURE_REQUIRED"
        | "SIGNATURE_UNTRUSTED"
        | "SIGNATURE_MISMATCH" => 403,
        "SKILL_NOT_FOUND"
        | "TOOL_NOT_FOUND"
        | "MEMORY_ENTRY_NOT_FOUND"
        | "ARTIFACT_NOT_FOUND"
        | "NOT_FOUND"
        | "ENOENT"
        | "SECRET_NOT_FOUND"
        | "REMOTE_NOT_FOUND" => 404,
        "METHOD_NOT_ALLOWED" => 405,
        "TAG_MOVED" => 409,
        "ARTIFACT_TOO_LARGE" | "MESSAGE_TOO_LARGE" => 413,
        "SKILL_TIMEOUT" | "TIMEOUT" | "LLM_TIMEOUT" => 504,
        "REGISTRY_UNREACHABLE"
        | "REGISTRY_AUTH"
        | "REGISTRY_ERROR"
        | "DIGEST_MISMATCH"
        | "ARTIFACT_INVALID"
        | "REMOTE_UNAVAILABLE" => 502,
        "LLM_NOT_CONFIGURED" | "SERVER_BUSY" | "SHUTTING_DOWN" => 503,
        _ if exit == 2 => 400,
        _ => 500,
    };
    Answer { exit, http }
}

impl Error {
    /// How every front end answers this failure: `evo`'s exit status, the HTTP API's
    /// status.
    pub fn answer(&self) -> Answer {
        answer_for(self.code(), self.is_output_validation())
    }

    /// Whether this is the skill's output failing its own schema.
    fn is_output_validation(&self) -> bool {
        match self {
            Self::Validation(report) => report.direction == Direction::Output,
            Self::Step { source, .. } => source.is_output_validation(),
            _ => false,
        }
    }
}

/// The table `docs/errors.md` holds: every code, how it is answered, what it means.
pub fn table() -> String {
    let mut out =
        String::from("| code | exit | HTTP | what happened |\n| --- | --- | --- | --- |\n");
    for (code, means) in CODES {
        let rows: &[(bool, &str, &str)] = if *code == "SKILL_VALIDATION_FAILED" {
            &[
                (
                    false,
                    " (the input)",
                    "the input does not match the skill's input schema",
                ),
                (
                    true,
                    " (the skill's output)",
                    "the skill's output does not match its own output schema",
                ),
            ]
        } else {
            &[(false, "", means)]
        };
        for (output, case, means) in rows {
            let answer = answer_for(code, *output);
            out.push_str(&format!(
                "| `{code}`{case} | {} | {} | {means} |\n",
                answer.exit, answer.http
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_listed_once_in_order_and_every_rule_names_a_listed_code() {
        let codes: Vec<&str> = CODES.iter().map(|(c, _)| *c).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted, "CODES is sorted, each code once");
        for code in REQUEST_AT_FAULT {
            assert!(codes.contains(code), "{code} is not in CODES");
        }
    }

    #[test]
    fn a_failure_is_answered_by_its_code() {
        assert_eq!(
            answer_for("TOOL_BLOCKED", false),
            Answer { exit: 3, http: 403 }
        );
        assert_eq!(
            answer_for("PERMISSION_DENIED", false),
            Answer { exit: 1, http: 403 }
        );
        assert_eq!(
            answer_for("NOT_FOUND", false),
            Answer { exit: 1, http: 404 }
        );
        assert_eq!(
            answer_for("SKILL_NOT_FOUND", false),
            Answer { exit: 2, http: 404 }
        );
        assert_eq!(
            answer_for("SKILL_VALIDATION_FAILED", false),
            Answer { exit: 2, http: 422 }
        );
        assert_eq!(
            answer_for("SKILL_VALIDATION_FAILED", true),
            Answer { exit: 1, http: 500 }
        );
        // A code from another node this one does not know.
        assert_eq!(
            answer_for("SOMETHING_NEW", false),
            Answer { exit: 1, http: 500 }
        );
    }
}
