//! The built-in memory skills with the exact contracts of the blueprint's §5.1:
//! `memory_search`, `memory_store`, `memory_forget`. They reach memory through
//! `ctx.memory()`, as any skill does.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::{Error, FailureKind, Result};
use crate::skill::context::BoxFuture;
use crate::skill::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::kernel::SkillContext;
use crate::skill::meta::SkillMeta;
use crate::skill::registry::{RegisteredSkill, SkillRegistry};

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
            "mode": "code", "calls": [], "version": "1.0.0", "tags": ["memory", "search", "builtin"]
        }),
        json!({
            "name": "memory_store",
            "description": "保存重要信息到长期记忆。只在用户明确要求记住或信息确实重要时使用。",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "text": { "type": "string", "description": "要保存的内容" },
                "category": { "type": "string", "enum": ["preference", "fact", "decision", "entity", "other"] } },
                "required": ["text"] },
            "output": { "type": "object", "properties": {
                "stored": { "type": "boolean" }, "reason": { "type": "string" } } },
            "mode": "code", "calls": [], "version": "1.0.0", "tags": ["memory", "store", "builtin"]
        }),
        json!({
            "name": "memory_forget",
            "description": "删除记忆中的指定内容。当用户明确要求遗忘或删除某些信息时使用。",
            "category": "memory",
            "input": { "type": "object", "properties": {
                "query": { "type": "string", "description": "要删除的内容（模糊匹配）" } },
                "required": ["query"] },
            "output": { "type": "object", "properties": { "deleted": { "type": "number" } } },
            "mode": "code", "calls": [], "version": "1.0.0", "tags": ["memory", "delete", "builtin"]
        }),
    ]
}

/// Registers `memory_search`, `memory_store` and `memory_forget` in `registry`. They need
/// a kernel with memory attached (`Kernel::with_memory`).
pub fn register_skills(registry: &SkillRegistry) -> Result<()> {
    for manifest in manifests() {
        let meta = SkillMeta::from_json(&manifest.to_string()).map_err(|problems| {
            Error::InvalidManifest {
                skill: manifest["name"].as_str().unwrap_or("memory").to_owned(),
                problems,
            }
        })?;
        let op = match meta.name.as_str() {
            "memory_search" => Op::Search,
            "memory_store" => Op::Store,
            _ => Op::Forget,
        };
        registry.register(RegisteredSkill::new(meta, Arc::new(MemorySkill(op)))?);
    }
    Ok(())
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Search,
    Store,
    Forget,
}

#[derive(Debug)]
struct MemorySkill(Op);

impl Executor for MemorySkill {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Builtin
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
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
            Ok(SkillOutput::from(output))
        })
    }
}
