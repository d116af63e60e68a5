//! The values memory deals in: categories, sources, entries, outcomes, configuration
//! and status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;

/// What kind of thing an entry remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// How the user likes things.
    Preference,
    /// Something true.
    Fact,
    /// Something decided.
    Decision,
    /// A person, place, project or thing.
    Entity,
    /// Anything else.
    Other,
}

impl Category {
    /// Every category, in order.
    pub const ALL: [Category; 5] = [
        Self::Preference,
        Self::Fact,
        Self::Decision,
        Self::Entity,
        Self::Other,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Preference => "preference",
            Self::Fact => "fact",
            Self::Decision => "decision",
            Self::Entity => "entity",
            Self::Other => "other",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Parses a name given by a user or a skill, with an error listing the choices.
    pub fn parse_checked(name: &str) -> Result<Self> {
        Self::parse(name).ok_or_else(|| Error::InvalidInput {
            skill: "memory".into(),
            reason: format!(
                "{name:?} is not a memory category; use one of {}",
                Self::ALL.map(Self::as_str).join(", ")
            ),
        })
    }
}

/// Where an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Stored on request (`memory_store`, `evo memory store`).
    User,
    /// Captured from a conversation.
    Capture,
    /// Suggested by a skill (`memoryWrites`).
    Skill,
    /// An item of `MEMORY.md`.
    File,
    /// A line of a daily log (`memory/YYYY-MM-DD.md`).
    Log,
}

impl Source {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Capture => "capture",
            Self::Skill => "skill",
            Self::File => "file",
            Self::Log => "log",
        }
    }

    /// Every source, in order.
    pub const ALL: [Source; 5] = [
        Self::User,
        Self::Capture,
        Self::Skill,
        Self::File,
        Self::Log,
    ];

    pub(super) fn parse(name: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .unwrap_or(Self::User)
    }

    /// Parses a name given by a user or a skill, with an error listing the choices.
    pub fn parse_checked(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| Error::InvalidInput {
                skill: "memory".into(),
                reason: format!(
                    "{name:?} is not a memory source; use one of {}",
                    Self::ALL.map(Self::as_str).join(", ")
                ),
            })
    }

    /// Whether entries of this source live in a file a person edits (`MEMORY.md`, the
    /// daily logs), so `forget` leaves them to the file.
    pub fn is_file(self) -> bool {
        matches!(self, Self::File | Self::Log)
    }
}

/// One remembered thing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryEntry {
    /// Stable id; `forget` accepts it.
    pub id: String,
    /// The text.
    pub text: String,
    /// Relevance to the query, in [0, 1] (0 outside a search).
    pub score: f32,
    /// The category.
    pub category: Category,
    /// Where it came from.
    pub source: Source,
    /// Creation time, ms since the Unix epoch.
    pub created_at: i64,
    /// Last change, ms since the Unix epoch.
    pub updated_at: i64,
    /// The entry that replaced this one, when a later store updated the fact (only
    /// searches that ask for superseded entries return these).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

impl From<MemoryEntry> for MemoryHit {
    fn from(entry: MemoryEntry) -> Self {
        Self {
            id: entry.id,
            text: entry.text,
            score: entry.score,
            category: Some(entry.category.as_str().to_owned()),
            created_at: u64::try_from(entry.created_at).unwrap_or(0),
            source: Some(entry.source.as_str().to_owned()),
            superseded_by: entry.superseded_by,
        }
    }
}

/// What `forget` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForgetOutcome {
    /// How many entries.
    pub deleted: u32,
    /// Their ids.
    pub ids: Vec<String>,
}

/// What `capture` kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaptureOutcome {
    /// How many entries were stored.
    pub captured: u32,
    /// Their texts.
    pub entries: Vec<String>,
}

/// How the memory kernel behaves.
#[derive(Debug, Clone)]
pub struct MemoryConfig {
    /// Compare a new text with the entries it resembles (see `decide`): a restatement
    /// is not stored again and an update supersedes. Off, every store adds an entry.
    pub dedup: bool,
    /// See `DEFAULT_COMPARE_THRESHOLD`.
    pub compare_threshold: f32,
    /// Recall at the start of a run.
    pub auto_recall: bool,
    /// Capture at the end of a run.
    pub auto_capture: bool,
    /// See `DEFAULT_RECALL_LIMIT`.
    pub recall_limit: usize,
    /// See `DEFAULT_RECALL_MIN_SCORE`.
    pub recall_min_score: f32,
}

impl Default for MemoryConfig {
    /// Dedup, recall and capture on.
    fn default() -> Self {
        Self {
            dedup: true,
            compare_threshold: DEFAULT_COMPARE_THRESHOLD,
            auto_recall: true,
            auto_capture: true,
            recall_limit: DEFAULT_RECALL_LIMIT,
            recall_min_score: DEFAULT_RECALL_MIN_SCORE,
        }
    }
}

/// How the memory kernel is set up, for `evo doctor` and logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStatus {
    /// The database: its file, or the shared PostgreSQL database's URL (without its
    /// password).
    pub database: String,
    /// The embedder's model id.
    pub embedder: String,
    /// Vector length.
    pub dimension: usize,
    /// How vectors are searched.
    pub vector_search: &'static str,
    /// Active (searchable, not superseded) entries, daily-log lines included.
    pub entries: usize,
    /// Of those, lines of the daily logs.
    pub log_lines: usize,
    /// Entries kept after a later store superseded them.
    pub superseded: usize,
}

/// What one store decided, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// A new entry was added.
    Add,
    /// A new entry was added and supersedes an older one (kept, see `evo memory history`).
    Update,
    /// Nothing was written: an entry already says this.
    Noop,
    /// An entry the previous dedup rule had hidden as an older version of another,
    /// which is a different fact, was made searchable again (once, on upgrade).
    Restore,
}

impl Action {
    /// Every action.
    pub const ALL: [Self; 4] = [Self::Add, Self::Update, Self::Noop, Self::Restore];

    /// The action named `name` (`add` for a name it does not know).
    pub fn parse(name: &str) -> Self {
        [Self::Update, Self::Noop, Self::Restore]
            .into_iter()
            .find(|a| a.as_str() == name)
            .unwrap_or(Self::Add)
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Add => "add",
            Self::Update => "update",
            Self::Noop => "noop",
            Self::Restore => "restore",
        }
    }
}

/// The decision of one store: what was done, to which entries, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreDecision {
    /// What was done.
    pub action: Action,
    /// The new entry (add, update), or the entry that already says it (noop).
    pub id: String,
    /// The entry the new one supersedes (update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// Why, in a sentence.
    pub reason: String,
}

impl From<StoreDecision> for StoreOutcome {
    fn from(decision: StoreDecision) -> Self {
        Self {
            stored: decision.action != Action::Noop,
            reason: decision.reason,
        }
    }
}

/// What a search looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOptions {
    /// Most results (clamped to 1..=`MAX_SEARCH_LIMIT`).
    pub limit: usize,
    /// Only entries from these sources; empty means all.
    pub sources: Vec<Source>,
    /// Only entries created on or after this day (`YYYY-MM-DD`, local time).
    pub since: Option<String>,
    /// Only entries created on or before this day (`YYYY-MM-DD`, local time).
    pub until: Option<String>,
    /// Also return entries a later store superseded (each says by what).
    pub include_superseded: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            limit: DEFAULT_RECALL_LIMIT,
            sources: Vec::new(),
            since: None,
            until: None,
            include_superseded: false,
        }
    }
}

impl SearchOptions {
    /// The default options with `limit` results.
    pub fn limit(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }
}

/// One event in the life of an entry, for `evo memory history`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    /// When, ms since the Unix epoch.
    pub at: i64,
    /// What was decided.
    pub action: Action,
    /// The entry written (or matched, for noop).
    pub id: String,
    /// The entry superseded, for an update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The text that was stored (or offered, for noop).
    pub text: String,
    /// Why.
    pub reason: String,
}

/// An entry's history: the chain of versions, oldest first, and the decisions that
/// touched them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryHistory {
    /// Every version of the fact, oldest first; the last is current unless it was
    /// forgotten.
    pub versions: Vec<MemoryEntry>,
    /// The decisions about those versions, oldest first.
    pub events: Vec<HistoryEvent>,
}
