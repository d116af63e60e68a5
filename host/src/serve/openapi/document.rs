//! The OpenAPI document of `/v1`, generated from the request and response types.

use serde_json::{Value, json};

use super::{
    AgentRun, CallResult, CallRow, DailyLog, ErrorBody, GrantValues, Health, InstallRequest,
    LogDays, MemoryHitBody, MemorySearch, SkillDetail, SkillSummary, Stats,
};

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
    add("SkillDetail", generator.subschema_for::<SkillDetail>());
    add("Stats", generator.subschema_for::<Stats>());
    add("LogDays", generator.subschema_for::<LogDays>());
    add("DailyLog", generator.subschema_for::<DailyLog>());
    add(
        "InstallRequest",
        generator.subschema_for::<InstallRequest>(),
    );
    add("GrantValues", generator.subschema_for::<GrantValues>());
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
        ("code", "string"),
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
            "/v1/skills": {
                "get": { "summary": "The served skills", "responses": { "200": ok(json!({ "type": "array", "items": r("SkillSummary") })), "401": error("No valid token") } },
                "post": {
                    "summary": "Installs a skill (admin token): a registry reference as JSON, or a component (application/wasm) or skill ZIP (application/zip) as the body, named by ?file=NAME.wasm; ?overwrite=true replaces one of the same name. Answers what was installed: its name, digest, what it asks for, and for a registry its source and signer",
                    "parameters": [
                        { "name": "file", "in": "query", "required": false, "schema": { "type": "string" } },
                        { "name": "overwrite", "in": "query", "required": false, "schema": { "type": "boolean" } }
                    ],
                    "requestBody": { "required": true, "content": {
                        "application/json": { "schema": r("InstallRequest") },
                        "application/wasm": { "schema": { "type": "string", "format": "binary" } },
                        "application/zip": { "schema": { "type": "string", "format": "binary" } }
                    } },
                    "responses": {
                        "201": { "description": "Installed", "content": { "application/json": { "schema": { "type": "object" } } } },
                        "400": error("Bad input: INVALID_INPUT (not JSON, a component or a ZIP), INVALID_REFERENCE, INVALID_SKILL_STRUCTURE, SKILL_ALREADY_EXISTS, SKILL_NAME_TAKEN, …"),
                        "403": error("ADMIN_REQUIRED, SIGNATURE_REQUIRED, SIGNATURE_UNTRUSTED, SIGNATURE_MISMATCH"),
                        "413": error("ARTIFACT_TOO_LARGE: over the largest component the server installs")
                    }
                }
            },
            "/v1/skills/{name}": {
                "get": { "summary": "One skill", "parameters": name, "responses": { "200": ok(r("SkillDetail")), "404": error("SKILL_NOT_FOUND") } },
                "delete": { "summary": "Uninstalls a skill (admin token); with shared storage, on every node", "parameters": name, "responses": { "200": ok(json!({ "type": "object" })), "403": error("ADMIN_REQUIRED"), "404": error("SKILL_NOT_FOUND") } }
            },
            "/v1/skills/{name}/update": { "post": { "summary": "Follows the tag a skill was installed from (admin token): { name, reference, from, to, signer, moved }", "parameters": name, "responses": { "200": ok(json!({ "type": "object" })), "400": error("NOT_FROM_REGISTRY, SIGNATURE_REQUIRED, …"), "403": error("ADMIN_REQUIRED") } } },
            "/v1/skills/{name}/grants": {
                "get": { "summary": "What a skill asks for, its own entry ([grants.skill.NAME]) and what it holds (admin token)", "parameters": name, "responses": { "200": ok(json!({ "type": "object" })), "403": error("ADMIN_REQUIRED"), "404": error("SKILL_NOT_FOUND") } },
                "post": { "summary": "Grants a skill more by name (admin token), written to [grants.skill.NAME] of the server's evo.toml; its next call has it", "parameters": name, "requestBody": { "required": true, "content": { "application/json": { "schema": r("GrantValues") } } }, "responses": { "200": ok(json!({ "type": "object" })), "400": error("GRANT_INVALID, GRANT_OUTSIDE"), "403": error("ADMIN_REQUIRED"), "404": error("SKILL_NOT_FOUND") } }
            },
            "/v1/skills/{name}/grants/revoke": { "post": { "summary": "Takes away what a skill was granted by name (admin token)", "parameters": name, "requestBody": { "required": true, "content": { "application/json": { "schema": r("GrantValues") } } }, "responses": { "200": ok(json!({ "type": "object" })), "400": error("GRANT_INVALID, NOT_GRANTED"), "403": error("ADMIN_REQUIRED"), "404": error("SKILL_NOT_FOUND") } } },
            "/v1/installed": { "get": { "summary": "The installed skills with where each came from: registry reference, manifest digest, signer (admin token)", "parameters": [
                { "name": "name", "in": "query", "required": false, "schema": { "type": "string" } },
                { "name": "page", "in": "query", "required": false, "schema": { "type": "integer" } },
                { "name": "limit", "in": "query", "required": false, "schema": { "type": "integer" } }
            ], "responses": { "200": ok(json!({ "type": "object" })), "403": error("ADMIN_REQUIRED") } } },
            "/v1/skills/{name}/call": { "post": {
                "summary": "Calls a skill with its input (`?events=true` also returns what the call reported as it ran)",
                "parameters": [name[0].clone(), json!({ "name": "events", "in": "query", "required": false, "schema": { "type": "boolean" } })],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
                "responses": {
                    "200": ok(r("CallResult")),
                    "400": error("Bad input"),
                    "403": error("PERMISSION_DENIED (the sandbox refused what the skill asked for), TOOL_BLOCKED"),
                    "404": error("SKILL_NOT_FOUND; NOT_FOUND (what the input named does not exist)"),
                    "422": error("SKILL_VALIDATION_FAILED, with the report"),
                    "500": error("The skill failed"),
                    "503": error("The server is shutting down"),
                    "504": error("TIMEOUT")
                }
            } },
            "/v1/calls": { "get": {
                "summary": "The call history, newest first (skill, caller, status, since_ms, code and limit as query parameters)",
                "parameters": call_parameters,
                "responses": { "200": ok(json!({ "type": "array", "items": r("CallRow") })), "400": error("A status that is not one") }
            } },
            "/v1/calls/live": { "get": {
                "summary": "Calls as they start and finish, as Server-Sent Events: `started` { call, skill, caller, task_id, at_ms }, `finished` { call?, skill, caller, task_id, status, duration_ms, code?, error? } (a refusal has no `call`), `lagged` { missed }",
                "responses": { "200": { "description": "The events", "content": { "text/event-stream": { "schema": { "type": "string" } } } } }
            } },
            "/v1/stats": { "get": {
                "summary": "Calls per step and node, latency per skill and errors by code over a recent window (window_s, step_s), and this node's gauges",
                "parameters": [
                    { "name": "window_s", "in": "query", "required": false, "schema": { "type": "integer" } },
                    { "name": "step_s", "in": "query", "required": false, "schema": { "type": "integer" } }
                ],
                "responses": { "200": ok(r("Stats")) }
            } },
            "/v1/memory/entries/{id}": { "get": {
                "summary": "A memory entry's versions, oldest first, and the decisions that made them",
                "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } }],
                "responses": { "200": ok(json!({ "type": "object", "properties": { "versions": { "type": "array" }, "events": { "type": "array" } } })), "404": error("MEMORY_ENTRY_NOT_FOUND") }
            } },
            "/v1/memory/logs": { "get": { "summary": "The days with a daily log, newest first", "responses": { "200": ok(r("LogDays")) } } },
            "/v1/memory/logs/{day}": { "get": {
                "summary": "One day's log (YYYY-MM-DD)",
                "parameters": [{ "name": "day", "in": "path", "required": true, "schema": { "type": "string" } }],
                "responses": { "200": ok(r("DailyLog")), "400": error("Not a date") }
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
