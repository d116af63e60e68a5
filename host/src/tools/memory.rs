//! The memory tools `memory_search`, `memory_store` and `memory_forget`, with the
//! contracts of the memory kernel's specification. They reach memory through
//! `ctx.memory()`, as any skill does, so a host without memory answers `denied`.

use serde_json::{Value, json};

use super::{BoxFuture, Tool};
use crate::error::{Error, FailureKind, Result};
use crate::skill::context::MemoryFilter;
use crate::skill::kernel::SkillContext;

/// The manifests of the three tools. The descriptions are in English like the rest of
/// the host; their Chinese originals are in `docs/decisions.md`.
fn manifests() -> [Value; 3] {
    let day = json!({ "type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" });
    [
        json!({
            "name": "memory_search",
            "description": "Search the user's long-term memory and daily logs. Use it when the user asks about something discussed before.",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "query": { "type": "string", "description": "What to look for (natural language)" },
                "limit": { "type": "number", "default": 5, "description": "Most results to return" },
                "sources": { "type": "array", "items": { "type": "string", "enum": ["user", "capture", "skill", "file", "log"] },
                    "description": "Only these sources: stored entries (user, capture, skill), MEMORY.md (file), the daily logs (log); all when absent" },
                "since": { "description": "Only entries from this day on (YYYY-MM-DD)", "allOf": [day] },
                "until": { "description": "Only entries up to this day (YYYY-MM-DD)", "allOf": [day] },
                "includeSuperseded": { "type": "boolean", "default": false,
                    "description": "Also return old versions of facts that were updated; each says what replaced it" } },
                "required": ["query"] },
            "output": { "type": "object", "properties": {
                "results": { "type": "array", "items": { "type": "object", "properties": {
                    "id": { "type": "string" }, "text": { "type": "string" },
                    "score": { "type": "number" }, "category": { "type": "string" },
                    "source": { "type": "string" },
                    "supersededBy": { "type": "string" } } } },
                "count": { "type": "number" } } },
            "mode": "code", "calls": [], "version": "1.1.0", "tags": ["memory", "search", "builtin"],
            "notes": [
                "Hybrid search: keywords (FTS5) and vectors, fused. The default embedder matches words, not meaning; `evo memory reindex --embedder minilm` adds meaning, offline.",
                "Entries, MEMORY.md and the daily logs are searched together; `sources`, `since` and `until` narrow it.",
                "Needs memory: a host without it answers denied."
            ],
            "examples": [
                { "description": "What the user said about their editor", "input": { "query": "which editor does the user prefer" } },
                { "description": "The three best matches only", "input": { "query": "deployment decisions", "limit": 3 } },
                { "description": "What was said in conversations in one week", "input": { "query": "release plan", "sources": ["log"], "since": "2026-11-16", "until": "2026-11-22" } }
            ]
        }),
        json!({
            "name": "memory_store",
            "permission": "read_write",
            "description": "Save important information to long-term memory. Use it only when the user explicitly asks to remember something or the information really matters.",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "text": { "type": "string", "description": "What to remember" },
                "category": { "type": "string", "enum": ["preference", "fact", "decision", "entity", "other"] } },
                "required": ["text"] },
            "output": { "type": "object", "properties": {
                "stored": { "type": "boolean" }, "reason": { "type": "string" } } },
            "mode": "code", "calls": [], "version": "1.1.0", "tags": ["memory", "store", "builtin"],
            "notes": [
                "A restatement of a stored fact is not stored again; a new value of the same fact (a new phone number) supersedes the old one, which stays in the fact's history; facts of one shape about different things all stay. The reason says which.",
                "Writes long-term memory: needs read_write."
            ],
            "examples": [
                { "description": "A preference", "input": { "text": "The user prefers dark mode", "category": "preference" } },
                { "description": "A decision", "input": { "text": "We deploy on Fridays only after the release review", "category": "decision" } },
                { "description": "A fact without a category", "input": { "text": "The staging server is staging.example.com" } }
            ]
        }),
        json!({
            "name": "memory_forget",
            "permission": "read_write",
            "description": "Delete specific content from memory. Use it when the user explicitly asks to forget or delete some information.",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "query": { "type": "string", "description": "What to delete (an id, or a description matched loosely)" } },
                "required": ["query"] },
            "output": { "type": "object", "properties": { "deleted": { "type": "number" } } },
            "mode": "code", "calls": [], "version": "1.1.0", "tags": ["memory", "delete", "builtin"],
            "notes": [
                "Matches by id or by search; the older versions of a forgotten fact go with it; the answer counts what was deleted.",
                "MEMORY.md and the daily logs are files: edit them to remove what they say.",
                "Writes long-term memory: needs read_write."
            ],
            "examples": [
                { "description": "Forget a preference", "input": { "query": "dark mode" } },
                { "description": "Forget what was stored about a server", "input": { "query": "staging server" } },
                { "description": "Forget a name", "input": { "query": "Alice" } }
            ]
        }),
    ]
}

/// The three memory tools.
pub fn tools() -> [MemoryTool; 3] {
    [
        MemoryTool(Op::Search),
        MemoryTool(Op::Store),
        MemoryTool(Op::Forget),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Search,
    Store,
    Forget,
}

/// One of the memory tools.
#[derive(Debug)]
pub struct MemoryTool(Op);

impl Tool for MemoryTool {
    fn manifest(&self) -> Value {
        let [search, store, forget] = manifests();
        match self.0 {
            Op::Search => search,
            Op::Store => store,
            Op::Forget => forget,
        }
    }

    fn call(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<Value>> {
        Box::pin(async move {
            let Some(memory) = ctx.memory().cloned() else {
                return Err(Error::Skill {
                    skill: ctx.parent_skill().unwrap_or("memory").to_owned(),
                    kind: FailureKind::Denied,
                    message: "no memory is attached to this host".into(),
                });
            };
            let text = |key: &str| {
                input
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let output = match self.0 {
                Op::Search => {
                    let limit = input
                        .get("limit")
                        .and_then(Value::as_f64)
                        .unwrap_or(5.0)
                        .max(1.0) as u32;
                    let filter = MemoryFilter {
                        sources: input
                            .get("sources")
                            .and_then(Value::as_array)
                            .map(|list| {
                                list.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        since: input
                            .get("since")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        until: input
                            .get("until")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        include_superseded: input
                            .get("includeSuperseded")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    };
                    let results = memory.search_filtered(text("query"), limit, filter).await?;
                    let results: Vec<Value> = results
                        .into_iter()
                        .map(|hit| {
                            let mut item = json!({ "id": hit.id, "text": hit.text, "score": hit.score, "category": hit.category, "source": hit.source });
                            if let Some(newer) = hit.superseded_by {
                                item["supersededBy"] = newer.into();
                            }
                            item
                        })
                        .collect();
                    json!({ "count": results.len(), "results": results })
                }
                Op::Store => {
                    let category = input
                        .get("category")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    let outcome = memory.store(text("text"), category).await?;
                    json!({ "stored": outcome.stored, "reason": outcome.reason })
                }
                Op::Forget => json!({ "deleted": memory.forget(text("query")).await? }),
            };
            Ok(output)
        })
    }
}
