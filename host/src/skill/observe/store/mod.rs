//! Where call statistics and the call history (with the security log's `blocked` rows)
//! are kept: what [`Stats`](super::stats::Stats) and [`History`](super::history::History)
//! flush to, in SQLite (`evo.db`) or PostgreSQL, and the rows they are made of.

#[cfg(feature = "postgres")]
mod pg;
mod sqlite;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::error::Result;
use crate::storage::Storage;

#[cfg(feature = "postgres")]
pub use pg::PgCalls;
pub use sqlite::SqliteCalls;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It returned a valid result.
    Success,
    /// It failed.
    Error,
    /// It was refused before it ran (permission, confirmation, allowlist, path).
    Blocked,
}

impl Status {
    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Blocked => "blocked",
        }
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Success, Self::Error, Self::Blocked]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// One call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// Row id (0 until stored).
    pub id: i64,
    /// When it started, Unix milliseconds.
    pub at_ms: i64,
    /// Who called: the agent or front end (`cli`, `agent`, `mcp`, …) for a run's own
    /// calls, the calling skill for nested ones.
    pub caller: String,
    /// The run.
    pub task_id: String,
    /// The tool (canonical name).
    pub tool: String,
    /// The arguments, redacted and cut at `MAX_ARGUMENT_CHARS`.
    pub arguments: String,
    /// How it ended.
    pub status: Status,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// The error code and message, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What to do about the error, when it has a hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The node that made the call (`evo serve`'s `host:port`, else the machine's
    /// name); empty for calls recorded before nodes were named.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node: String,
}

impl Record {
    /// The error's code and message apart (`[CODE] message` as recorded); the whole
    /// text as the message when it has no code; nothing when the call succeeded.
    pub fn error_parts(&self) -> (Option<&str>, Option<&str>) {
        match self.error.as_deref() {
            Some(error) => match error.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                Some((code, message)) => (Some(code), Some(message)),
                None => (None, Some(error)),
            },
            None => (None, None),
        }
    }
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this tool.
    pub tool: Option<String>,
    /// Only calls by this caller (`cli`, `mcp`, `http`, an agent, a calling skill).
    pub caller: Option<String>,
    /// Only calls that ended so.
    pub status: Option<Status>,
    /// Only calls at or after this time (Unix milliseconds).
    pub since_ms: Option<i64>,
    /// Only calls that failed with this error code (`PERMISSION_DENIED`, …).
    pub code: Option<String>,
    /// At most this many (newest first); all when `None`.
    pub limit: Option<u64>,
}

/// The figures of one skill.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillStats {
    /// The skill.
    pub tool_name: String,
    /// Calls that found the skill.
    pub call_count: u64,
    /// Calls that returned a valid result.
    pub success_count: u64,
    /// Sum of durations, in milliseconds.
    pub total_duration: f64,
    /// `total_duration / call_count`.
    pub average_duration: f64,
    /// `success_count / call_count`, in [0, 1].
    pub success_rate: f64,
    /// Longest call, in milliseconds.
    pub max_duration: f64,
}

impl SkillStats {
    pub(crate) fn add(&mut self, other: &Self) {
        self.call_count += other.call_count;
        self.success_count += other.success_count;
        self.total_duration += other.total_duration;
        self.max_duration = self.max_duration.max(other.max_duration);
        self.derive();
    }

    pub(crate) fn derive(&mut self) {
        if self.call_count > 0 {
            let calls = self.call_count as f64;
            self.average_duration = self.total_duration / calls;
            self.success_rate = self.success_count as f64 / calls;
        }
    }
}

/// The call store `storage` keeps: `evo.db` in the data directory, or the shared
/// database.
pub fn store_for(storage: &Storage) -> Arc<dyn CallStore> {
    match storage {
        Storage::Local(dir) => Arc::new(SqliteCalls::new(dir)),
        #[cfg(feature = "postgres")]
        Storage::Shared(pg) => Arc::new(PgCalls::new(pg.clone())),
    }
}

/// One tool's call: `(tool, duration in ms, whether it failed or was blocked)`.
pub type Duration = (String, f64, bool);

/// Where statistics and the call history are kept. Every method is one transaction: a
/// failed write leaves nothing half-written, and the caller keeps what it could not
/// write for the next flush.
pub trait CallStore: Send + Sync + std::fmt::Debug {
    /// Adds `counts` (one entry per skill, named by `tool_name`) to the stored figures.
    fn add_stats(&self, counts: &[SkillStats]) -> Result<()>;
    /// Every skill's stored figures (all nodes, all time), by name.
    fn stats(&self) -> Result<BTreeMap<String, SkillStats>>;
    /// Appends `calls`, then keeps only the newest `cap`.
    fn append_calls(&self, calls: &[Record], cap: u64) -> Result<()>;
    /// The stored calls `filter` selects, newest first.
    fn calls(&self, filter: &Filter) -> Result<Vec<Record>>;
    /// Every stored call's duration (those since `since_ms`, when given), ordered by
    /// tool, then duration.
    fn durations(&self, since_ms: Option<i64>) -> Result<Vec<Duration>>;
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn limit(filter: &Filter) -> i64 {
    filter.limit.map_or(i64::MAX, count)
}

fn stats_row(name: String, calls: i64, successes: i64, total: f64, max: f64) -> SkillStats {
    let mut s = SkillStats {
        tool_name: name,
        call_count: u64::try_from(calls).unwrap_or(0),
        success_count: u64::try_from(successes).unwrap_or(0),
        total_duration: total,
        max_duration: max,
        ..SkillStats::default()
    };
    s.derive();
    s
}
