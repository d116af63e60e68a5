//! `run_skill_script`: runs one of an instruction skill's helper scripts on request.
//!
//! Public Agent Skills (pdf, docx, xlsx, …) ship Python and shell helpers under
//! `scripts/` and tell the model to run them. Such a skill installs as an instruction
//! skill with its scripts listed as resources; this tool runs one of them — with
//! `python3` (`.py`), `bash` (`.sh`) or `node` (`.js`) and the given arguments — in the
//! same sandbox and limits as a native skill, and returns what it printed and its exit
//! code. Only skills the operator granted `exec` (`--allow-exec`, or `exec = true` under
//! `[grants]` / `[grants.skill.NAME]` in `evo.toml`) may have their scripts run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::capabilities::Policy;
use crate::engine::loader::StaticExecutor;
use crate::engine::native::{NativeSandbox, interpreter_for};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;
use crate::tools::{BoxFuture, TypedTool};

/// The tool's name.
pub const NAME: &str = "run_skill_script";

/// Extra time the kernel gives the tool beyond the sandbox's own timeout, so the
/// script's `Execution timeout` is what is reported.
const GRACE_MS: u64 = 2_000;

/// Runs instruction skills' helper scripts in the native sandbox.
#[derive(Debug, Clone)]
pub struct RunSkillScript {
    grants: Policy,
    sandbox: NativeSandbox,
}

impl RunSkillScript {
    /// Runs scripts of the skills `grants` gives `exec`, in `sandbox`.
    pub fn new(grants: Policy, sandbox: NativeSandbox) -> Self {
        Self { grants, sandbox }
    }

    async fn execute(&self, input: ScriptInput, ctx: SkillContext) -> Result<ScriptOutput> {
        let invalid = |reason: String| Error::InvalidInput {
            skill: NAME.into(),
            reason,
        };
        let name = input.skill.as_str();
        let script = input.script.as_str();
        let args = &input.args;
        let skill = ctx
            .kernel()
            .registry()
            .get(name)
            .ok_or_else(|| Error::SkillNotFound { name: name.into() })?;
        let Some(files) = skill
            .executor
            .as_any()
            .and_then(|any| any.downcast_ref::<StaticExecutor>())
            .map(StaticExecutor::files)
        else {
            return Err(invalid(format!(
                "{name} is not an instruction skill: only an instruction skill's helper scripts run this way (a native or Wasm skill runs with `evo skill run {name}`)"
            )));
        };
        let name = skill.meta.name.as_str();
        self.grants.check_exec(name).map_err(Error::Capability)?;
        // Only the scripts the skill lists (every file under scripts/), and only with an
        // interpreter Evo runs; `..`, absolute paths and links out are not resources.
        let mut listed: Vec<String> = files
            .instructions()?
            .resources
            .iter()
            .map(|r| r.path.clone())
            .filter(|p| p.starts_with("scripts/") && interpreter_for(p.as_ref()).is_some())
            .collect();
        listed.sort();
        if !listed.iter().any(|p| p == script) {
            return Err(invalid(format!(
                "{script:?} is not one of {name}'s scripts; it has: {}",
                if listed.is_empty() {
                    "none".to_owned()
                } else {
                    listed.join(", ")
                }
            )));
        }
        files.resource(script)?;
        let dir = files
            .dir()
            .canonicalize()
            .map_err(Error::io_at(files.dir()))?;
        let result = self
            .sandbox
            .run_helper(&dir, &dir.join(script), args)
            .await?;
        Ok(ScriptOutput {
            success: result.success,
            exit_code: result.exit_code,
            stdout: result.stdout,
            stderr: result.stderr,
            duration: result.duration,
            error: result.error,
        })
    }
}

/// `run_skill_script`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScriptInput {
    /// the instruction skill's name
    #[schemars(length(min = 1))]
    pub skill: String,
    /// the script's path inside the skill, e.g. scripts/fill_form.py
    #[schemars(length(min = 1))]
    pub script: String,
    /// its command-line arguments
    #[serde(default)]
    pub args: Vec<String>,
}

/// `run_skill_script`'s output.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptOutput {
    /// whether it exited with 0
    pub success: bool,
    /// its exit code; null when killed by a signal
    pub exit_code: Option<i32>,
    /// what it wrote to stdout
    pub stdout: String,
    /// what it wrote to stderr
    pub stderr: String,
    /// how long it ran, in milliseconds
    pub duration: u64,
    /// why the sandbox stopped it (a timeout, a limit)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TypedTool for RunSkillScript {
    const NAME: &'static str = NAME;
    type Input = ScriptInput;
    type Output = ScriptOutput;

    fn describe(&self) -> Value {
        let timeout = u64::try_from(self.sandbox.config().timeout.as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(GRACE_MS);
        json!({
            "permission": "execute",
            "description": "Runs one of an instruction skill's helper scripts (a path under its scripts/: .py with python3, .sh with bash, .js with node) with arguments, in a sandbox that sees only the skill's files and a scratch directory, and returns its stdout, stderr and exit code. Only for skills the operator allowed to run scripts.",
            "category": "skills",
            "tags": ["skills", "exec"],
            "requests": [
                "use the pdf skill's helper to fill in this form",
                "execute collect.sh from the release-notes skill",
                "call the docx skill's convert script on report.docx",
                "run the python helper that ships with the pdf skill",
                "invoke a skill's bundled script with these arguments"
            ],
            "timeout": timeout,
            "examples": [
                { "description": "A PDF skill's form filler", "input": { "skill": "pdf", "script": "scripts/fill_fillable_fields.py", "args": ["form.pdf", "values.json", "out.pdf"] } },
                { "description": "A shell helper without arguments", "input": { "skill": "release-notes", "script": "scripts/collect.sh" } },
                { "description": "A Node helper", "input": { "skill": "docx", "script": "scripts/convert.js", "args": ["in.docx"] } }
            ],
            "notes": [
                "Only for skills the operator allowed to run scripts (--allow-exec, or [grants] exec = true).",
                "The script sees only the skill's files and a scratch directory; it runs in the native sandbox with its time, memory and output limits."
            ]
        })
    }

    fn run(&self, input: ScriptInput, ctx: SkillContext) -> BoxFuture<'_, Result<ScriptOutput>> {
        Box::pin(self.execute(input, ctx))
    }
}
