//! The `/v1` API's request and response types, and the OpenAPI document generated
//! from them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::skill::executor::{MemoryWriteOutcome, StepTrace};

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
}

/// The OpenAPI 3.1 document of `/v1`, its schemas generated from the types the
/// handlers use.
pub fn openapi_document() -> Value {
    let mut generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
        })
        .into_generator();
    let mut refs = serde_json::Map::new();
    let mut add = |name: &str, schema: schemars::Schema| {
        refs.insert(name.to_owned(), schema.to_value());
    };
    add("ErrorBody", generator.subschema_for::<ErrorBody>());
    add("Health", generator.subschema_for::<Health>());
    add("SkillSummary", generator.subschema_for::<SkillSummary>());
    add("CallResult", generator.subschema_for::<CallResult>());
    add("MemorySearch", generator.subschema_for::<MemorySearch>());
    add("MemoryHit", generator.subschema_for::<MemoryHitBody>());
    add("AgentRun", generator.subschema_for::<AgentRun>());
    add("CallRow", generator.subschema_for::<CallRow>());
    let schemas = generator.take_definitions(true);
    let r = |name: &str| json!({ "$ref": format!("#/components/schemas/{name}") });
    let error = |description: &str| json!({ "description": description, "content": { "application/json": { "schema": r("ErrorBody") } } });
    let ok = |schema: Value| json!({ "description": "OK", "content": { "application/json": { "schema": schema } } });
    let name =
        json!([{ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } }]);
    let call_parameters: Vec<Value> = [
        ("skill", "string"),
        ("caller", "string"),
        ("status", "string"),
        ("since_ms", "integer"),
        ("limit", "integer"),
    ]
    .iter()
    .map(|(p, kind)| json!({ "name": p, "in": "query", "required": false, "schema": { "type": kind } }))
    .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Evo HTTP API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Evo's skills, memory and agent over HTTP. MCP clients use /mcp (streamable HTTP) instead. Errors carry the same codes as the CLI."
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
        },
        "security": [{ "bearer": [] }],
        "paths": {
            "/v1/health": { "get": { "summary": "Whether the server is up and reaches its storage", "responses": { "200": ok(r("Health")), "503": { "description": "Draining (stopping), or the shared storage does not answer", "content": { "application/json": { "schema": r("Health") } } } } } },
            "/v1/skills": { "get": { "summary": "The served skills", "responses": { "200": ok(json!({ "type": "array", "items": r("SkillSummary") })), "401": error("No valid token") } } },
            "/v1/skills/{name}": { "get": { "summary": "One skill", "parameters": name, "responses": { "200": ok(r("SkillSummary")), "404": error("SKILL_NOT_FOUND") } } },
            "/v1/skills/{name}/call": { "post": {
                "summary": "Calls a skill with its input",
                "parameters": name,
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
                "responses": {
                    "200": ok(r("CallResult")),
                    "400": error("Bad input"),
                    "404": error("SKILL_NOT_FOUND"),
                    "422": error("SKILL_VALIDATION_FAILED, with the report"),
                    "500": error("The skill failed"),
                    "503": error("The server is shutting down"),
                    "504": error("TIMEOUT")
                }
            } },
            "/v1/calls": { "get": {
                "summary": "The call history, newest first (skill, caller, status, since_ms and limit as query parameters)",
                "parameters": call_parameters,
                "responses": { "200": ok(json!({ "type": "array", "items": r("CallRow") })), "400": error("A status that is not one") }
            } },
            "/v1/calls/live": { "get": {
                "summary": "Calls as they start and finish, as Server-Sent Events: `started` { call, skill, caller, task_id, at_ms }, `finished` { call?, skill, caller, task_id, status, duration_ms, code?, error? } (a refusal has no `call`), `lagged` { missed }",
                "responses": { "200": { "description": "The events", "content": { "text/event-stream": { "schema": { "type": "string" } } } } }
            } },
            "/v1/memory/search": { "post": {
                "summary": "Searches long-term memory",
                "requestBody": { "required": true, "content": { "application/json": { "schema": r("MemorySearch") } } },
                "responses": { "200": ok(json!({ "type": "array", "items": r("MemoryHit") })), "400": error("Bad query") }
            } },
            "/v1/agent/run": { "post": {
                "summary": "Runs the agent on a message; its events as Server-Sent Events (skill_call, skill_result, token, done, error, …)",
                "requestBody": { "required": true, "content": { "application/json": { "schema": r("AgentRun") } } },
                "responses": {
                    "200": { "description": "The run's events", "content": { "text/event-stream": { "schema": { "type": "string" } } } },
                    "500": error("No model is configured (LLM_ERROR)")
                }
            } }
        }
    })
}
