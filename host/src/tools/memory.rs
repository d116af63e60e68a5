//! The memory tools `memory_search`, `memory_store` and `memory_forget`, with the
//! contracts of the memory kernel's specification. They reach memory through
//! `ctx.memory()`, as any skill does, so a host without memory answers `denied`.

use serde_json::{Value, json};

use super::{BoxFuture, Tool};
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;

fn manifests() -> [Value; 3] {
    [
        json!({
            "name": "memory_search",
            "description": "搜索用户的长期记忆和日志。当用户问到之前讨论过的内容时使用。",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "query": { "type": "string", "description": "搜索查询（自然语言）" },
                "limit": { "type": "number", "default": 5, "description": "最大返回数量" } },
                "required": ["query"] },
            "output": { "type": "object", "properties": {
                "results": { "type": "array", "items": { "type": "object", "properties": {
                    "id": { "type": "string" }, "text": { "type": "string" },
                    "score": { "type": "number" }, "category": { "type": "string" } } } },
                "count": { "type": "number" } } },
            "mode": "code", "calls": [], "version": "1.0.0", "tags": ["memory", "search", "builtin"],
            "notes": ["Hybrid search: keywords (FTS5) and vectors, fused; the default embedder matches words, not meaning (EVO_EMBED_MODEL for meaning).", "Needs memory: a host without it answers denied."],
            "examples": [
                { "description": "What the user said about their editor", "input": { "query": "which editor does the user prefer" } },
                { "description": "The three best matches only", "input": { "query": "deployment decisions", "limit": 3 } },
                { "description": "A name", "input": { "query": "Alice" } }
            ]
        }),
        json!({
            "name": "memory_store",
            "permission": "read_write",
            "description": "保存重要信息到长期记忆。只在用户明确要求记住或信息确实重要时使用。",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "text": { "type": "string", "description": "要保存的内容" },
                "category": { "type": "string", "enum": ["preference", "fact", "decision", "entity", "other"] } },
                "required": ["text"] },
            "output": { "type": "object", "properties": {
                "stored": { "type": "boolean" }, "reason": { "type": "string" } } },
            "mode": "code", "calls": [], "version": "1.0.0", "tags": ["memory", "store", "builtin"],
            "notes": ["Near-duplicates are not stored twice; the answer says why.", "Writes long-term memory: needs read_write."],
            "examples": [
                { "description": "A preference", "input": { "text": "The user prefers dark mode", "category": "preference" } },
                { "description": "A decision", "input": { "text": "We deploy on Fridays only after the release review", "category": "decision" } },
                { "description": "A fact without a category", "input": { "text": "The staging server is staging.example.com" } }
            ]
        }),
        json!({
            "name": "memory_forget",
            "permission": "read_write",
            "description": "删除记忆中的指定内容。当用户明确要求遗忘或删除某些信息时使用。",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "query": { "type": "string", "description": "要删除的内容（模糊匹配）" } },
                "required": ["query"] },
            "output": { "type": "object", "properties": { "deleted": { "type": "number" } } },
            "mode": "code", "calls": [], "version": "1.0.0", "tags": ["memory", "delete", "builtin"],
            "notes": ["Matches by id or by search; the answer counts what was deleted.", "Writes long-term memory: needs read_write."],
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
                    let results = memory.search(text("query"), limit).await?;
                    let results: Vec<Value> = results
                        .into_iter()
                        .map(|hit| json!({ "id": hit.id, "text": hit.text, "score": hit.score, "category": hit.category }))
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
