//! The data a running skill exchanges with the host, whatever runs it: the run's
//! [`Scratch`] space, requests to the model, memory hits, what a run returns
//! ([`SkillOutput`]), and the expected failures ([`ContextError`]) a guest gets back. The frame itself is
//! [`SkillContext`](crate::skill::kernel::SkillContext).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::FailureKind;

/// Longest scratch key, so a key cannot be used to smuggle data.
pub const MAX_SCRATCH_KEY_BYTES: usize = 256;
/// Largest scratch value; scratch is for passing results between skills, not storage.
pub const MAX_SCRATCH_VALUE_BYTES: usize = 1 << 20;
/// Most scratch entries in one run, bounding host memory whatever the skills do.
pub const MAX_SCRATCH_ENTRIES: usize = 1_024;
/// Most bytes (keys and values as JSON) in one run's scratch: enough for any real hand-
/// over between skills, and far below what entries × value size would allow (1 GiB).
pub const MAX_SCRATCH_TOTAL_BYTES: usize = 16 << 20;

/// A memory write a skill suggests (`memoryWrites`). The kernel keeps it when the call
/// that produced it returns to whoever started the run (the CLI, an MCP or HTTP client,
/// the agent, an embedder), under the skill's memory grant and the store's
/// deduplication, and says what became of it in [`SkillOutput::memory`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemoryWrite {
    /// The text.
    pub text: String,
    /// The suggested category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

pub use crate::error::StepTrace;

/// What became of one suggested memory write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteStatus {
    /// Stored as a new entry (which may supersede an older version of the same fact).
    Kept,
    /// Not stored again: an entry already says it.
    Merged,
    /// Not stored; the reason says why and what would allow it.
    Refused,
}

impl WriteStatus {
    /// `kept`, `merged` or `refused`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kept => "kept",
            Self::Merged => "merged",
            Self::Refused => "refused",
        }
    }
}

/// A suggested memory write and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryWriteOutcome {
    /// The text the skill suggested.
    pub text: String,
    /// Kept, merged or refused.
    pub status: WriteStatus,
    /// The entry stored (kept) or the one that already says it (merged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The older entry a kept one supersedes (which stays in its history).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// Why, in a sentence.
    pub reason: String,
}

impl MemoryWriteOutcome {
    /// `write` refused for `reason`.
    pub fn refused(write: &MemoryWrite, reason: impl Into<String>) -> Self {
        Self {
            text: write.text.clone(),
            status: WriteStatus::Refused,
            id: None,
            supersedes: None,
            reason: reason.into(),
        }
    }
}

/// A skill's suggested memory writes as the kernel takes them: all of them when the
/// skill may write to memory (`allowed`, its grant's
/// [`check_suggested_writes`](crate::capabilities::Grant::check_suggested_writes)),
/// else none, each refused with the reason.
pub fn granted_writes(
    skill: &str,
    allowed: Result<(), String>,
    suggested: Vec<MemoryWrite>,
) -> (Vec<MemoryWrite>, Vec<MemoryWriteOutcome>) {
    let reason = match allowed {
        Err(reason) if !suggested.is_empty() => reason,
        _ => return (suggested, Vec::new()),
    };
    tracing::info!(
        skill,
        dropped = suggested.len(),
        "memory suggestions refused: {reason}"
    );
    let refused = suggested
        .iter()
        .map(|w| MemoryWriteOutcome::refused(w, reason.clone()))
        .collect();
    (Vec::new(), refused)
}

/// What a successful run returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillOutput {
    /// The result, matching the skill's output schema.
    pub output: Value,
    /// Memory the skill suggests keeping.
    pub memory_writes: Vec<MemoryWrite>,
    /// What became of each suggestion: kept, merged or refused. Filled in when the
    /// call returns to the run's caller; a suggestion refused for want of a grant is
    /// here (and not in `memory_writes`) from the start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryWriteOutcome>,
    /// Steps taken (composite skills fill this in).
    pub intermediate_steps: Vec<StepTrace>,
}

impl From<Value> for SkillOutput {
    fn from(output: Value) -> Self {
        Self {
            output,
            memory_writes: Vec::new(),
            memory: Vec::new(),
            intermediate_steps: Vec::new(),
        }
    }
}

/// A boxed, sendable future, as the kernel's traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An expected failure returned to the guest (the WIT `skill-error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextError {
    /// The kind, which becomes the WIT variant case.
    pub kind: FailureKind,
    /// What happened and what to do.
    pub message: String,
}

impl ContextError {
    /// A failure of `kind` with `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

/// A memory entry found for a skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryHit {
    /// Stable id.
    pub id: String,
    /// Text.
    pub text: String,
    /// Relevance in [0, 1].
    pub score: f32,
    /// Category, if known.
    pub category: Option<String>,
    /// Creation time, ms since the Unix epoch.
    pub created_at: u64,
    /// Where it came from (`user`, `capture`, `skill`, `file`, `log`), if known.
    pub source: Option<String>,
    /// The entry that superseded this one (only in searches that ask for those).
    pub superseded_by: Option<String>,
}

/// What a filtered memory search looks at (see `Memory::search_filtered`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    /// Only these sources (`user`, `capture`, `skill`, `file`, `log`); empty for all.
    pub sources: Vec<String>,
    /// Only entries from this day on (`YYYY-MM-DD`, local time).
    pub since: Option<String>,
    /// Only entries up to this day (`YYYY-MM-DD`, local time).
    pub until: Option<String>,
    /// Also entries a later store superseded.
    pub include_superseded: bool,
}

/// The outcome of a memory store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct StoreOutcome {
    /// Whether a new entry was written.
    pub stored: bool,
    /// Why not, or what it superseded.
    pub reason: String,
}

/// A one-shot request to the language model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmRequest {
    /// The skill asking.
    pub caller: String,
    /// System prompt.
    pub system: Option<String>,
    /// Prompt.
    pub prompt: String,
    /// Token cap.
    pub max_tokens: Option<u32>,
    /// Temperature.
    pub temperature: Option<f32>,
    /// The model, instead of the run's or the configured one; it must be one the
    /// operator allows (`[llm] models`).
    pub model: Option<String>,
    /// The JSON Schema the answer must match, when it is JSON: a provider that can
    /// constrain its output (the local model) writes only such JSON.
    pub output_schema: Option<Value>,
}

/// The scratch space of one run: JSON values by key, shared by all skills of the run.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    values: Arc<Mutex<Entries>>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Each value with its size (key + JSON text) in bytes.
    map: HashMap<String, (Value, usize)>,
    /// The sum of the sizes.
    bytes: usize,
}

impl Scratch {
    /// Reads `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.lock().map.get(key).map(|(value, _)| value.clone())
    }

    /// Sets `key` to `value`, enforcing the caps (key length, value size, entries, total
    /// bytes); returns why a write was refused.
    pub fn set(&self, key: &str, value: Value) -> Result<(), String> {
        if key.len() > MAX_SCRATCH_KEY_BYTES {
            return Err(format!(
                "scratch key longer than {MAX_SCRATCH_KEY_BYTES} bytes"
            ));
        }
        let size = key.len() + serde_json::to_vec(&value).map_or(0, |json| json.len());
        if size > MAX_SCRATCH_VALUE_BYTES + MAX_SCRATCH_KEY_BYTES {
            return Err(format!(
                "scratch value larger than {MAX_SCRATCH_VALUE_BYTES} bytes"
            ));
        }
        let mut entries = self.lock();
        let replaced = entries.map.get(key).map_or(0, |(_, size)| *size);
        if replaced == 0 && entries.map.len() >= MAX_SCRATCH_ENTRIES {
            return Err(format!(
                "scratch already holds {MAX_SCRATCH_ENTRIES} entries"
            ));
        }
        let total = entries.bytes - replaced + size;
        if total > MAX_SCRATCH_TOTAL_BYTES {
            return Err(format!(
                "scratch would hold {total} bytes; a run keeps at most {MAX_SCRATCH_TOTAL_BYTES}"
            ));
        }
        entries.bytes = total;
        entries.map.insert(key.to_owned(), (value, size));
        Ok(())
    }

    /// A copy of every entry.
    pub fn snapshot(&self) -> HashMap<String, Value> {
        self.lock()
            .map
            .iter()
            .map(|(key, (value, _))| (key.clone(), value.clone()))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding this lock cannot leave the map half-written (each
        // operation is a single insert or read), so a poisoned lock is still usable.
        self.values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_refuses_oversized_keys_and_too_many_entries() {
        let scratch = Scratch::default();
        assert!(
            scratch
                .set(&"k".repeat(MAX_SCRATCH_KEY_BYTES + 1), Value::Null)
                .is_err()
        );
        for i in 0..MAX_SCRATCH_ENTRIES {
            scratch.set(&i.to_string(), Value::from(i)).unwrap();
        }
        assert_eq!(
            scratch.set("one-more", Value::Null).unwrap_err(),
            "scratch already holds 1024 entries"
        );
        scratch.set("0", Value::from("replaced")).unwrap();
        assert_eq!(scratch.get("0"), Some(Value::from("replaced")));
    }

    #[test]
    fn scratch_refuses_more_than_its_total_bytes_and_counts_replacements_once() {
        let scratch = Scratch::default();
        let mib = Value::from("x".repeat((1 << 20) - 300));
        for i in 0..16 {
            scratch.set(&format!("k{i}"), mib.clone()).unwrap();
        }
        let err = scratch.set("one-more", mib.clone()).unwrap_err();
        assert!(err.starts_with("scratch would hold "), "{err}");
        assert!(err.ends_with("a run keeps at most 16777216"), "{err}");
        // Replacing an entry frees what it held first.
        scratch.set("k0", mib.clone()).unwrap();
        scratch.set("k1", Value::Null).unwrap();
        scratch.set("one-more", mib).unwrap();
    }
}
