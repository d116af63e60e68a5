//! The memory tools `memory_search`, `memory_store` and `memory_forget`, with the
//! contracts of the memory kernel's specification. They reach memory through
//! `ctx.memory()`, as any skill does, so a host without memory answers `denied`.
//! The descriptions are in English like the rest of the host; their Chinese originals
//! are in `docs/decisions.md`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::confirm::{Confirmation, Risk};
use super::{BoxFuture, TypedTool};
use crate::error::{Error, FailureKind, Result};
use crate::memory::{Category, Source};
use crate::skill::exchange::{MemoryFilter, StoreOutcome};
use crate::skill::kernel::Memory;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::table::SkillTable;

/// Registers the three memory tools in `registry`.
pub fn register(registry: &SkillTable) -> Result<()> {
    super::register(registry, Arc::new(MemorySearch))?;
    super::register(registry, Arc::new(MemoryStore))?;
    super::register(registry, Arc::new(MemoryForget))
}

/// The memory `ctx` may use; `denied` for a host without memory.
fn memory(ctx: &SkillContext) -> Result<Arc<dyn Memory>> {
    ctx.memory().cloned().ok_or_else(|| Error::Skill {
        skill: ctx.parent_skill().unwrap_or("memory").to_owned(),
        kind: FailureKind::Denied,
        message: "no memory is attached to this host".into(),
    })
}

/// `memory_search`: hybrid search over entries, MEMORY.md and the daily logs.
#[derive(Debug, Clone, Copy)]
pub struct MemorySearch;

/// `memory_search`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchInput {
    /// What to look for (natural language)
    pub query: String,
    /// Most results to return
    #[serde(default = "five")]
    pub limit: f64,
    /// Only these sources: stored entries (user, capture, skill), MEMORY.md (file), the daily logs (log); all when absent
    #[serde(default)]
    pub sources: Option<Vec<Source>>,
    /// Only entries from this day on (YYYY-MM-DD)
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
    pub since: Option<String>,
    /// Only entries up to this day (YYYY-MM-DD)
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
    pub until: Option<String>,
    /// Also return old versions of facts that were updated; each says what replaced it
    #[serde(default)]
    pub include_superseded: bool,
}

fn five() -> f64 {
    5.0
}

/// `memory_search`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// the entries found, best first
    pub results: Vec<Found>,
    /// how many
    #[schemars(with = "f64")]
    pub count: usize,
}

/// One entry `memory_search` found.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    /// its id
    pub id: String,
    /// its text
    pub text: String,
    /// relevance in [0, 1]
    pub score: f32,
    /// its category, if known
    pub category: Option<String>,
    /// where it came from, if known
    pub source: Option<String>,
    /// the entry that replaced it (only with includeSuperseded)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

impl TypedTool for MemorySearch {
    const NAME: &'static str = "memory_search";
    type Input = SearchInput;
    type Output = SearchOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Search the user's long-term memory and daily logs. Use it when the user asks about something discussed before.",
            "category": "memory",
            "mode": "code", "calls": [], "version": "1.1.0", "tags": ["memory", "search", "builtin"],
            "requests": [
                "what did I tell you about my favourite editor?",
                "do you remember what we decided about the release?",
                "what did we talk about yesterday?",
                "what is my dentist called again?",
                "have I mentioned my sister's birthday before?",
                "what was the plan we discussed last week?"
            ],
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
        })
    }

    fn run(&self, input: SearchInput, ctx: SkillContext) -> BoxFuture<'_, Result<SearchOutput>> {
        Box::pin(async move {
            let memory = memory(&ctx)?;
            let filter = MemoryFilter {
                sources: input
                    .sources
                    .unwrap_or_default()
                    .into_iter()
                    .map(|s| s.as_str().to_owned())
                    .collect(),
                since: input.since,
                until: input.until,
                include_superseded: input.include_superseded,
            };
            let limit = input.limit.max(1.0) as u32;
            let results: Vec<Found> = memory
                .search_filtered(input.query, limit, filter)
                .await?
                .into_iter()
                .map(|hit| Found {
                    id: hit.id,
                    text: hit.text,
                    score: hit.score,
                    category: hit.category,
                    source: hit.source,
                    superseded_by: hit.superseded_by,
                })
                .collect();
            Ok(SearchOutput {
                count: results.len(),
                results,
            })
        })
    }
}

/// `memory_store`: saves a fact, unless memory already holds it.
#[derive(Debug, Clone, Copy)]
pub struct MemoryStore;

/// `memory_store`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StoreInput {
    /// What to remember
    pub text: String,
    /// what kind of fact it is
    #[serde(default)]
    pub category: Option<Category>,
}

impl TypedTool for MemoryStore {
    const NAME: &'static str = "memory_store";
    type Input = StoreInput;
    type Output = StoreOutcome;

    fn describe(&self) -> Value {
        json!({
            "permission": "read_write",
            "description": "Save important information to long-term memory. Use it only when the user explicitly asks to remember something or the information really matters.",
            "category": "memory",
            "mode": "code", "calls": [], "version": "1.1.0", "tags": ["memory", "store", "builtin"],
            "requests": [
                "remember that I prefer tabs over spaces",
                "for the future: my manager is called Priya",
                "my birthday is March 3rd, don't forget it",
                "make a note for the future: we deploy only on Tuesdays",
                "from now on, know that I'm vegetarian",
                "save the fact that the staging password rotates monthly"
            ],
            "notes": [
                "A restatement of a stored fact is not stored again; a new value of the same fact (a new phone number) supersedes the old one, which stays in the fact's history; facts of one shape about different things all stay. The reason says which.",
                "Writes long-term memory: needs read_write."
            ],
            "examples": [
                { "description": "A preference", "input": { "text": "The user prefers dark mode", "category": "preference" } },
                { "description": "A decision", "input": { "text": "We deploy on Fridays only after the release review", "category": "decision" } },
                { "description": "A fact without a category", "input": { "text": "The staging server is staging.example.com" } }
            ]
        })
    }

    fn run(&self, input: StoreInput, ctx: SkillContext) -> BoxFuture<'_, Result<StoreOutcome>> {
        Box::pin(async move {
            let category = input.category.map(|c| c.as_str().to_owned());
            memory(&ctx)?.store(input.text, category).await
        })
    }
}

/// `memory_forget`: deletes what matches, with its older versions.
#[derive(Debug, Clone, Copy)]
pub struct MemoryForget;

/// `memory_forget`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetInput {
    /// What to delete (an id, or a description matched loosely)
    pub query: String,
}

/// `memory_forget`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgetOutput {
    /// how many entries were deleted
    #[schemars(with = "f64")]
    pub deleted: u32,
}

impl TypedTool for MemoryForget {
    const NAME: &'static str = "memory_forget";
    type Input = ForgetInput;
    type Output = ForgetOutput;

    fn describe(&self) -> Value {
        json!({
            "permission": "read_write",
            "description": "Delete specific content from memory. Use it when the user explicitly asks to forget or delete some information.",
            "category": "memory",
            "mode": "code", "calls": [], "version": "1.1.0", "tags": ["memory", "delete", "builtin"],
            "requests": [
                "forget that I live in Berlin",
                "wipe your knowledge of my previous employer",
                "drop what you saved about my password hint",
                "don't keep my phone number anymore",
                "remove everything you stored about Alice"
            ],
            "notes": [
                "Matches by id or by search; the older versions of a forgotten fact go with it; the answer counts what was deleted.",
                "MEMORY.md and the daily logs are files: edit them to remove what they say.",
                "Writes long-term memory: needs read_write.",
                "Deleting asks the user first (risk high); where nobody can be asked, it is refused unless [tools] confirm = \"allow\"."
            ],
            "examples": [
                { "description": "Forget a preference", "input": { "query": "dark mode" } },
                { "description": "Forget what was stored about a server", "input": { "query": "staging server" } },
                { "description": "Forget a name", "input": { "query": "Alice" } }
            ]
        })
    }

    fn run(&self, input: ForgetInput, ctx: SkillContext) -> BoxFuture<'_, Result<ForgetOutput>> {
        Box::pin(async move {
            // Forgetting destroys the fact and its history: the user says yes first,
            // as for replacing a file.
            ctx.confirm(Confirmation {
                tool: Self::NAME.into(),
                arguments: json!({ "query": input.query }),
                risk: Risk::High,
                warning: format!(
                    "the memories matching {:?} will be deleted, with their older versions",
                    input.query
                ),
            })
            .await?;
            let deleted = memory(&ctx)?.forget(input.query).await?;
            Ok(ForgetOutput { deleted })
        })
    }
}
