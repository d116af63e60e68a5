//! What a running skill may ask of the host, independent of how the skill runs.
//!
//! [`RunContext`] is shared by every skill of one run: the scratch space, the event
//! sink, and the [`KernelServices`] that answer `call`, `llm` and `memory-*`. Until the
//! kernel provides those, [`Unwired`] answers each with a clear `not-found` or `denied`.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

use crate::error::FailureKind;

/// Longest scratch key, so a key cannot be used to smuggle data.
pub const MAX_SCRATCH_KEY_BYTES: usize = 256;
/// Largest scratch value; scratch is for passing results between skills, not storage.
pub const MAX_SCRATCH_VALUE_BYTES: usize = 1 << 20;
/// Most scratch entries in one run, bounding host memory whatever the skills do.
pub const MAX_SCRATCH_ENTRIES: usize = 1_024;

/// A boxed, sendable future, as returned by [`KernelServices`].
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
}

/// The outcome of a memory store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
}

/// The kernel's side of the context: skill calls, the model, memory.
///
/// The Wasm engine checks capabilities before calling these; implementations decide
/// everything else (depth limits, validation, deduplication).
pub trait KernelServices: Send + Sync + fmt::Debug {
    /// Runs skill `skill` on JSON `input` on behalf of `caller`.
    fn call(
        &self,
        caller: String,
        skill: String,
        input: String,
    ) -> BoxFuture<'_, Result<String, ContextError>>;
    /// Asks the language model.
    fn llm(&self, request: LlmRequest) -> BoxFuture<'_, Result<String, ContextError>>;
    /// Searches long-term memory.
    fn memory_search(
        &self,
        query: String,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<MemoryHit>, ContextError>>;
    /// Stores text in long-term memory.
    fn memory_store(
        &self,
        text: String,
        category: Option<String>,
    ) -> BoxFuture<'_, Result<StoreOutcome, ContextError>>;
    /// Forgets entries by id or query.
    fn memory_forget(&self, query: String) -> BoxFuture<'_, Result<u32, ContextError>>;
}

/// Services for a host with no registry, model or memory attached (for example
/// `evo skill run` on a single file). Every request fails with a message saying so.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unwired;

impl KernelServices for Unwired {
    fn call(
        &self,
        _caller: String,
        skill: String,
        _input: String,
    ) -> BoxFuture<'_, Result<String, ContextError>> {
        Box::pin(async move {
            Err(ContextError::new(
                FailureKind::NotFound,
                format!(
                    "skill {skill:?} is not available: this host runs a single skill with no skill registry attached"
                ),
            ))
        })
    }

    fn llm(&self, _request: LlmRequest) -> BoxFuture<'_, Result<String, ContextError>> {
        Box::pin(async {
            Err(ContextError::new(
                FailureKind::Denied,
                "no language model is configured for this host",
            ))
        })
    }

    fn memory_search(
        &self,
        _query: String,
        _limit: u32,
    ) -> BoxFuture<'_, Result<Vec<MemoryHit>, ContextError>> {
        Box::pin(async { Err(no_memory()) })
    }

    fn memory_store(
        &self,
        _text: String,
        _category: Option<String>,
    ) -> BoxFuture<'_, Result<StoreOutcome, ContextError>> {
        Box::pin(async { Err(no_memory()) })
    }

    fn memory_forget(&self, _query: String) -> BoxFuture<'_, Result<u32, ContextError>> {
        Box::pin(async { Err(no_memory()) })
    }
}

fn no_memory() -> ContextError {
    ContextError::new(FailureKind::Denied, "no memory is attached to this host")
}

/// An event a skill emitted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillEvent {
    /// The skill that emitted it.
    pub skill: String,
    /// The event, as the skill wrote it.
    pub event: Value,
}

/// Receives events as skills emit them.
pub type EventSink = Arc<dyn Fn(SkillEvent) + Send + Sync>;

/// The scratch space of one run: JSON values by key, shared by all skills of the run.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    values: Arc<Mutex<HashMap<String, Value>>>,
}

impl Scratch {
    /// Reads `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.lock().get(key).cloned()
    }

    /// Sets `key` to `value`, enforcing the size caps; returns why a write was refused.
    pub fn set(&self, key: &str, value: Value) -> Result<(), String> {
        if key.len() > MAX_SCRATCH_KEY_BYTES {
            return Err(format!(
                "scratch key longer than {MAX_SCRATCH_KEY_BYTES} bytes"
            ));
        }
        let mut values = self.lock();
        if values.len() >= MAX_SCRATCH_ENTRIES && !values.contains_key(key) {
            return Err(format!(
                "scratch already holds {MAX_SCRATCH_ENTRIES} entries"
            ));
        }
        values.insert(key.to_owned(), value);
        Ok(())
    }

    /// A copy of every entry.
    pub fn snapshot(&self) -> HashMap<String, Value> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Value>> {
        // A panic while holding this lock cannot leave the map half-written (each
        // operation is a single insert or read), so a poisoned lock is still usable.
        self.values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Everything the skills of one run share.
#[derive(Clone)]
pub struct RunContext {
    /// Scratch space.
    pub scratch: Scratch,
    /// Where emitted events go; dropped when `None`.
    pub events: Option<EventSink>,
    /// Skill calls, model, memory.
    pub services: Arc<dyn KernelServices>,
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("scratch", &self.scratch)
            .field("events", &self.events.is_some())
            .field("services", &self.services)
            .finish()
    }
}

impl Default for RunContext {
    fn default() -> Self {
        Self {
            scratch: Scratch::default(),
            events: None,
            services: Arc::new(Unwired),
        }
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

    #[tokio::test]
    async fn unwired_services_explain_themselves() {
        let err = Unwired
            .call("a".into(), "b".into(), "{}".into())
            .await
            .unwrap_err();
        assert_eq!(err.kind, FailureKind::NotFound);
        assert!(err.message.contains("\"b\""));
        let err = Unwired.memory_search("q".into(), 3).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "denied: no memory is attached to this host"
        );
    }
}
