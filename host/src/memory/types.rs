//! The values memory deals in: categories, sources, entries, outcomes, configuration
//! and status.

use std::path::PathBuf;

use serde::Serialize;

use super::*;

/// What kind of thing an entry remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

impl Source {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Capture => "capture",
            Self::Skill => "skill",
            Self::File => "file",
        }
    }

    pub(super) fn parse(name: &str) -> Self {
        match name {
            "capture" => Self::Capture,
            "skill" => Self::Skill,
            "file" => Self::File,
            _ => Self::User,
        }
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
}

impl From<MemoryEntry> for MemoryHit {
    fn from(entry: MemoryEntry) -> Self {
        Self {
            id: entry.id,
            text: entry.text,
            score: entry.score,
            category: Some(entry.category.as_str().to_owned()),
            created_at: u64::try_from(entry.created_at).unwrap_or(0),
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
    /// See [`DEFAULT_DEDUP_THRESHOLD`].
    pub dedup_threshold: f32,
    /// See [`DEFAULT_SUPERSEDE_THRESHOLD`].
    pub supersede_threshold: f32,
    /// Recall at the start of a run.
    pub auto_recall: bool,
    /// Capture at the end of a run.
    pub auto_capture: bool,
    /// See [`DEFAULT_RECALL_LIMIT`].
    pub recall_limit: usize,
    /// See [`DEFAULT_RECALL_MIN_SCORE`].
    pub recall_min_score: f32,
}

impl Default for MemoryConfig {
    /// Dedup at 0.92, recall and capture on.
    fn default() -> Self {
        Self {
            dedup_threshold: DEFAULT_DEDUP_THRESHOLD,
            supersede_threshold: DEFAULT_SUPERSEDE_THRESHOLD,
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
    /// The database file.
    pub database: PathBuf,
    /// The embedder's model id.
    pub embedder: String,
    /// Vector length.
    pub dimension: usize,
    /// How vectors are searched.
    pub vector_search: &'static str,
    /// Active (searchable, not superseded) entries.
    pub entries: usize,
}
