//! The `/v1` API's request and response types, and the OpenAPI document generated
//! from them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::skill::kernel::executor::{MemoryWriteOutcome, StepTrace};

mod document;
pub use document::openapi_document;

/// A failed request.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The stable error code, as the CLI prints it.
    pub code: String,
    /// What went wrong.
    pub error: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// For input that failed validation: every violation, with a fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Value>,
    /// For a composite skill whose step failed: the steps that ran, with their inputs
    /// and outputs, the failed one last with its error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intermediate_steps: Vec<StepTrace>,
}

/// `POST /v1/skills` with a JSON body: install from a registry.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallRequest {
    /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
    pub reference: String,
    /// Replace an installed skill of the same name.
    #[serde(default)]
    pub overwrite: bool,
    /// Install under this name instead of the skill's own.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub as_name: Option<String>,
}

/// `POST /v1/skills` with a component or ZIP body: its query.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct InstallQuery {
    /// The file's name (`fs.wasm`): a component is named after it.
    #[serde(default)]
    pub file: Option<String>,
    /// Replace an installed skill of the same name.
    #[serde(default)]
    pub overwrite: bool,
    /// Install under this name instead of the skill's own.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub as_name: Option<String>,
}

/// `GET /v1/installed`: filters and paging.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct InstalledQuery {
    /// Names containing this.
    #[serde(default)]
    pub name: Option<String>,
    /// Page, from 1.
    #[serde(default)]
    pub page: Option<usize>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// What to grant a skill (`POST /v1/skills/{name}/grants`) or revoke from it
/// (`…/grants/revoke`), with the keys and values of `[grants]` in evo.toml.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantValues {
    /// Directories, `HOST::GUEST` or `HOST::GUEST:ro` (to revoke, the guest path is
    /// enough). A host directory must be below one of the server's `[serve] grant_dirs`.
    #[serde(default)]
    pub dirs: Vec<String>,
    /// Outbound HTTP origins, `[scheme://]host[:port]`.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Secrets by name, put into the skill's requests to its granted hosts.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Memory access: `read` or `read-write` (to revoke, any value).
    #[serde(default)]
    pub memory: Option<String>,
    /// The language model.
    #[serde(default)]
    pub llm: bool,
}

impl GrantValues {
    /// Each value, as the host takes them.
    pub fn to_values(&self) -> Vec<crate::host::GrantValue> {
        let one = |kind: &str, value: &str| crate::host::GrantValue {
            kind: kind.to_owned(),
            value: value.to_owned(),
        };
        let mut values: Vec<_> = self.dirs.iter().map(|v| one("dirs", v)).collect();
        values.extend(self.hosts.iter().map(|v| one("hosts", v)));
        values.extend(self.secrets.iter().map(|v| one("secrets", v)));
        values.extend(self.memory.iter().map(|v| one("memory", v)));
        if self.llm {
            values.push(one("llm", ""));
        }
        values
    }
}

/// `GET /v1/health`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// `ok`; `draining` (with status 503) while the server stops;
    /// `storage-unreachable` (503) when the shared database does not answer.
    pub status: String,
    /// Evo's version.
    pub version: String,
    /// How many skills are served.
    pub skills: usize,
    /// Calls running now.
    pub calls: usize,
    /// Wasm instances alive now: one per Wasm call running (nested calls included), and
    /// none when nothing runs.
    pub instances: usize,
    /// Where shared state is kept, and whether it answers.
    pub storage: StorageHealth,
}

/// The storage as `/v1/health` reports it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageHealth {
    /// `sqlite` (this node's data directory) or `postgres` (shared by the nodes).
    pub kind: String,
    /// Whether it answered just now.
    pub reachable: bool,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A served skill.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillSummary {
    /// Its name: the MCP tool name and the path segment of `/v1/skills/{name}`.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// What runs it: wasm, native, builtin, llm, composite or static.
    pub kind: String,
    /// Its version.
    pub version: String,
    /// The JSON Schema of its input.
    pub input_schema: Value,
    /// The JSON Schema of its output.
    pub output_schema: Value,
    /// MCP tool annotations: readOnlyHint, destructiveHint, openWorldHint.
    pub annotations: Value,
}

/// `POST /v1/skills/{name}/call`: the skill's output.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CallResult {
    /// What the skill returned (it matches the skill's output schema).
    pub output: Value,
    /// Milliseconds the call took.
    pub duration_ms: f64,
    /// The memory writes the skill suggested and what became of each: `kept`,
    /// `merged` (memory already says it) or `refused` (with the reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryWriteOutcome>,
    /// The steps a composite skill ran, with their inputs and outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intermediate_steps: Vec<StepTrace>,
    /// With `?events=true`: what the call reported as it ran (what the skill emitted
    /// and logged, nested calls and their results), oldest first, at most 1,000.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
}

/// `POST /v1/memory/search`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MemorySearch {
    /// What to look for.
    pub query: String,
    /// The most hits (1–100, default 5).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only these sources: `user`, `capture`, `skill` (stored entries), `file`
    /// (MEMORY.md), `log` (the daily logs); all when absent.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Only entries from this day on (`YYYY-MM-DD`, the server's local time).
    #[serde(default)]
    pub since: Option<String>,
    /// Only entries up to this day (`YYYY-MM-DD`).
    #[serde(default)]
    pub until: Option<String>,
    /// Also old versions of facts that were updated.
    #[serde(default)]
    pub include_superseded: bool,
}

/// One memory search hit.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryHitBody {
    /// Stable id.
    pub id: String,
    /// The text.
    pub text: String,
    /// Relevance in [0, 1].
    pub score: f32,
    /// The category.
    pub category: String,
    /// Creation time, ms since the Unix epoch.
    pub created_at: i64,
    /// Where it came from: `user`, `capture`, `skill`, `file` or `log`.
    pub source: String,
    /// The entry that replaced this one (only with `includeSuperseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// `POST /v1/agent/run`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentRun {
    /// The user's message.
    pub message: String,
    /// The model for this run instead of the configured one: one `[llm] models` allows
    /// (else 403 `MODEL_NOT_ALLOWED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `GET /v1/calls`: which calls, newest first.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct CallsQuery {
    /// Only calls of this skill or tool.
    #[serde(default)]
    pub skill: Option<String>,
    /// Only calls by this caller (`mcp` for `evo serve`'s, `cli`, an agent run, or the
    /// calling skill).
    #[serde(default)]
    pub caller: Option<String>,
    /// Only calls that ended so: `success`, `error` or `blocked` (the security log).
    #[serde(default)]
    pub status: Option<String>,
    /// Only calls at or after this time (Unix milliseconds).
    #[serde(default)]
    pub since_ms: Option<i64>,
    /// Only calls that failed with this error code (`PERMISSION_DENIED`: what the
    /// sandbox refused from inside a skill).
    #[serde(default)]
    pub code: Option<String>,
    /// At most this many (default 100, at most 1,000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// One call of the history.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CallRow {
    /// Its row in the history.
    pub id: i64,
    /// When it started, Unix milliseconds.
    pub at_ms: i64,
    /// Who called.
    pub caller: String,
    /// The run it belongs to.
    pub task_id: String,
    /// The skill or tool.
    pub skill: String,
    /// Its arguments, with secrets redacted and long values cut.
    pub arguments: String,
    /// `success`, `error` or `blocked`.
    pub status: String,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// The error's code, when it failed or was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The error's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What to do about the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The node that made the call (`host:port` of its `evo serve`, else the machine's
    /// name); empty for calls recorded before nodes were named.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
}

/// `GET /v1/stats`: which window, in steps of how long.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct StatsQuery {
    /// Seconds back from now (default 300, 10 to 86,400).
    #[serde(default)]
    pub window_s: Option<u64>,
    /// Seconds per step (default a sixtieth of the window; at most 600 steps).
    #[serde(default)]
    pub step_s: Option<u64>,
}

/// `GET /v1/stats`: the calls of a recent window, per node and per skill, from the
/// call history, and this node's gauges.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Stats {
    /// The node answering (`host:port`).
    pub node: String,
    /// Now, Unix milliseconds.
    pub now_ms: i64,
    /// Where the first step starts, Unix milliseconds.
    pub start_ms: i64,
    /// The window, seconds.
    pub window_s: u64,
    /// One step, seconds.
    pub step_s: u64,
    /// Calls in the window, all nodes.
    pub total_calls: u64,
    /// Skills this server serves.
    pub skills_served: usize,
    /// More calls were in the window than were read (100,000); the oldest are left out.
    pub truncated: bool,
    /// Each node that made calls in the window (the one answering first, always).
    pub nodes: Vec<NodeStats>,
    /// Each skill called in the window, most called first.
    pub skills: Vec<SkillLatency>,
    /// Failed and refused calls by error code, most first.
    pub errors: Vec<ErrorCount>,
}

/// One node's calls in a window.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NodeStats {
    /// Its name.
    pub node: String,
    /// Calls that started in each step.
    pub calls_per_step: Vec<u64>,
    /// Of those, the ones that failed or were refused.
    pub errors_per_step: Vec<u64>,
    /// Its gauges now (only the node answering knows its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gauges: Option<Gauges>,
    /// The node answering: its gauges as sampled every 2 seconds over the window
    /// (since it started, at most the last hour), oldest first, so that a chart opened
    /// now starts with the past.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gauge_history: Vec<GaugeSample>,
}

/// A node's gauges at one moment.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub struct GaugeSample {
    /// When, Unix milliseconds.
    pub at_ms: i64,
    /// Wasm instances alive.
    pub wasm_instances: u64,
    /// Calls running (call slots in use).
    pub calls_running: u64,
    /// Calls that may run at once.
    pub call_slots: u64,
}

/// What a node is running now.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Gauges {
    /// Wasm instances alive.
    pub wasm_instances: u64,
    /// Calls running (call slots in use).
    pub calls_running: u64,
    /// Calls waiting for a slot.
    pub calls_queued: u64,
    /// Calls that may run at once (`serve.max_calls`).
    pub call_slots: u64,
}

/// One skill's calls in a window.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SkillLatency {
    /// The skill or tool.
    pub skill: String,
    /// Its calls.
    pub calls: u64,
    /// Of those, failed or refused.
    pub errors: u64,
    /// Median duration, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile duration, milliseconds.
    pub p99_ms: f64,
}

/// Failed calls with one error code.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ErrorCount {
    /// The code (`UNKNOWN` for an error recorded without one).
    pub code: String,
    /// How many.
    pub count: u64,
}

/// `GET /v1/memory/logs`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LogDays {
    /// The days with a daily log (`YYYY-MM-DD`), newest first.
    pub days: Vec<String>,
}

/// `GET /v1/memory/logs/{day}`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DailyLog {
    /// The day (`YYYY-MM-DD`).
    pub day: String,
    /// The log as written (Markdown); empty when nothing was logged that day.
    pub text: String,
}

/// `POST /v1/skills/{name}/call`'s query.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct CallOptions {
    /// Also return what the call reported as it ran (`events`).
    #[serde(default)]
    pub events: bool,
}

/// `GET /v1/skills/{name}`: a skill, with where it came from and what it may reach.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillDetail {
    /// What `GET /v1/skills` lists.
    #[serde(flatten)]
    pub summary: SkillSummary,
    /// What its manifest asks for (filesystem, network, memory, secrets, …).
    pub asked: Value,
    /// What this host grants it, for a sandboxed component; absent for other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted: Option<Value>,
    /// Its limits (fuel, memory, time, output), for a sandboxed component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Value>,
    /// Where it came from.
    pub provenance: Provenance,
}

/// Where a skill came from.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// Where its component was loaded from: the compile cache or compiled now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_from: Option<Value>,
    /// SHA-256 of its component, or of its installed files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Whether it is installed in the data directory (else built in, or from a
    /// skills directory given on the command line).
    pub installed: bool,
    /// When it was installed, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_at: Option<u64>,
    /// The registry it was installed from: reference, manifest digest, signer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<Value>,
}
