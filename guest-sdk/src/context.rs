//! The host context: plain functions over the WIT `context` imports.

use std::cell::RefCell;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::__private::bindings::evo::skill::{context as host, types};
use crate::Error;

/// How important a log message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal progress.
    Info,
    /// Something unexpected that the skill handled.
    Warn,
    /// Something failed.
    Error,
}

impl From<LogLevel> for types::LogLevel {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Trace => Self::Trace,
            LogLevel::Debug => Self::Debug,
            LogLevel::Info => Self::Info,
            LogLevel::Warn => Self::Warn,
            LogLevel::Error => Self::Error,
        }
    }
}

/// One entry found by [`memory::search`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEntry {
    /// Stable id (give it to [`memory::forget`]).
    pub id: String,
    /// The remembered text.
    pub text: String,
    /// Relevance, 0–1.
    pub score: f32,
    /// Category, if known (`preference`, `fact`, `decision`, `entity`, `other`).
    pub category: Option<String>,
    /// When it was stored, ms since the Unix epoch.
    pub created_at: u64,
    /// Where it came from (`user`, `capture`, `skill`, `file`, `log`), if known.
    pub source: Option<String>,
    /// The entry that replaced this one, for an entry a later store superseded (only
    /// [`memory::query`] with [`memory::Query::include_superseded`] returns those).
    pub superseded_by: Option<String>,
}

/// What [`memory::store`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOutcome {
    /// Whether a new entry was written.
    pub stored: bool,
    /// Why not (a near-duplicate exists), or what it superseded.
    pub reason: String,
}

/// A request to the language model, for [`llm_with`].
#[derive(Debug, Clone, Default)]
pub struct LlmRequest {
    /// Optional system prompt.
    pub system: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// Upper bound on generated tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature, 0.0–2.0.
    pub temperature: Option<f32>,
    /// The model to ask instead of the run's: one the operator allows (`[llm] models`
    /// in evo.toml), else the call is denied.
    pub model: Option<String>,
}

thread_local! {
    static MEMORY_WRITES: RefCell<Vec<types::MemoryWrite>> = const { RefCell::new(Vec::new()) };
    static STEPS: RefCell<Vec<types::StepTrace>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn take_memory_writes() -> Vec<types::MemoryWrite> {
    MEMORY_WRITES.with(|writes| std::mem::take(&mut *writes.borrow_mut()))
}

pub(crate) fn take_steps() -> Vec<types::StepTrace> {
    STEPS.with(|steps| std::mem::take(&mut *steps.borrow_mut()))
}

/// Runs `work` as a named step of this call and records it — its input, its output or
/// error, and how long it took — in the call's intermediate steps, which the host
/// returns with the result (`intermediateSteps`) for debugging and observability.
///
/// ```no_run
/// let total = evo_guest::step("sum", &[1, 2, 3], || Ok::<_, evo_guest::Error>(6))?;
/// # Ok::<(), evo_guest::Error>(())
/// ```
pub fn step<I: Serialize, O: Serialize>(
    name: &str,
    input: &I,
    work: impl FnOnce() -> Result<O, Error>,
) -> Result<O, Error> {
    let started = std::time::Instant::now();
    let result = work();
    let json = |value: Result<String, serde_json::Error>| value.unwrap_or_else(|_| "null".into());
    let trace = types::StepTrace {
        step_id: String::new(),
        step_name: name.to_owned(),
        input: json(serde_json::to_string(input)),
        output: match &result {
            Ok(output) => json(serde_json::to_string(output)),
            Err(_) => "null".into(),
        },
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        error: result.as_ref().err().map(ToString::to_string),
    };
    STEPS.with(|steps| {
        let mut steps = steps.borrow_mut();
        let id = format!("step-{}", steps.len() + 1);
        steps.push(types::StepTrace {
            step_id: id,
            ..trace
        });
    });
    result
}

/// Calls another skill, which must be listed with [`crate::Manifest::calls`].
///
/// ```no_run
/// #[derive(serde::Deserialize)]
/// struct Sum { result: f64 }
///
/// let sum: Sum = evo_guest::call("calculate", &serde_json::json!({ "expression": "1 + 2" }))?;
/// # Ok::<(), evo_guest::Error>(())
/// ```
pub fn call<I: Serialize, O: DeserializeOwned>(skill: &str, input: &I) -> Result<O, Error> {
    let input = serde_json::to_string(input).map_err(|e| {
        Error::invalid_input(format!("could not encode the input for {skill}: {e}"))
    })?;
    let output = host::call(skill, &input)?;
    serde_json::from_str(&output).map_err(|e| {
        Error::failed(format!(
            "{skill} returned output this skill cannot read: {e}"
        ))
    })
}

/// Asks the language model (needs [`crate::Manifest::llm`]).
pub fn llm(prompt: &str) -> Result<String, Error> {
    llm_with(LlmRequest {
        prompt: prompt.to_owned(),
        ..LlmRequest::default()
    })
}

/// Asks the language model with a system prompt, token cap or temperature.
pub fn llm_with(request: LlmRequest) -> Result<String, Error> {
    Ok(host::llm(&types::LlmRequest {
        system: request.system,
        prompt: request.prompt,
        max_tokens: request.max_tokens,
        temperature: request.temperature,
        model: request.model,
    })?)
}

/// The run's environment: `session` (the MCP session or chat the call belongs to),
/// `locale` (`en` or `zh`), `model` (when the run names one), and the values the
/// operator set under `[env]` in evo.toml.
pub fn env() -> serde_json::Map<String, serde_json::Value> {
    match serde_json::from_str(&host::env()) {
        Ok(serde_json::Value::Object(env)) => env,
        _ => serde_json::Map::new(),
    }
}

/// Suggests keeping `text` in long-term memory once this call succeeds.
///
/// Unlike [`memory::store`] nothing is written now: the host decides, at the end of the
/// run, whether to keep it (deduplicated against what it already knows). Like a store
/// it needs write access to memory ([`crate::Manifest::memory`] with
/// [`crate::MemoryAccess::ReadWrite`], granted by the operator); without it the host
/// drops the suggestions.
pub fn remember(text: impl Into<String>, category: Option<&str>) {
    MEMORY_WRITES.with(|writes| {
        writes.borrow_mut().push(types::MemoryWrite {
            text: text.into(),
            category: category.map(str::to_owned),
        });
    });
}

/// Emits an event to whoever watches the run (for example a progress line in a UI).
pub fn emit<T: Serialize>(event: &T) {
    match serde_json::to_string(event) {
        Ok(json) => host::emit(&json),
        Err(e) => log(
            LogLevel::Warn,
            &format!("event not emitted, it is not JSON: {e}"),
        ),
    }
}

/// Writes a message to the host log; see also [`crate::log!`].
pub fn log(level: LogLevel, message: &str) {
    host::log(level.into(), message);
}

pub mod memory {
    //! Long-term memory (needs [`crate::Manifest::memory`]).

    use super::{Error, MemoryEntry, StoreOutcome, host, types};

    /// Finds up to `limit` entries relevant to `query`, best first.
    pub fn search(query: &str, limit: u32) -> Result<Vec<MemoryEntry>, Error> {
        Ok(host::memory_search(query, limit)?
            .into_iter()
            .map(entry)
            .collect())
    }

    /// A filtered search, for [`query`]: what to look for, how many, and which entries.
    ///
    /// ```no_run
    /// use evo_guest::memory;
    ///
    /// let decisions = memory::query(
    ///     &memory::Query::new("database choice", 5)
    ///         .source("user")
    ///         .since("2026-11-01")
    ///         .include_superseded(),
    /// )?;
    /// # Ok::<(), evo_guest::Error>(())
    /// ```
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct Query {
        /// What to look for (natural language).
        pub text: String,
        /// At most this many entries, best first.
        pub limit: u32,
        /// Only entries from these sources (`user`, `capture`, `skill`, `file`, `log`);
        /// empty for every source.
        pub sources: Vec<String>,
        /// Only entries from this day on (`YYYY-MM-DD`, the host's local time).
        pub since: Option<String>,
        /// Only entries up to this day (`YYYY-MM-DD`, the host's local time).
        pub until: Option<String>,
        /// Also entries a later store superseded.
        pub include_superseded: bool,
    }

    impl Query {
        /// Up to `limit` entries about `text`, from every source and day.
        pub fn new(text: impl Into<String>, limit: u32) -> Self {
            Self {
                text: text.into(),
                limit,
                ..Self::default()
            }
        }

        /// Only entries from `source` (and any other sources named).
        pub fn source(mut self, source: impl Into<String>) -> Self {
            self.sources.push(source.into());
            self
        }

        /// Only entries from `day` (`YYYY-MM-DD`) on.
        pub fn since(mut self, day: impl Into<String>) -> Self {
            self.since = Some(day.into());
            self
        }

        /// Only entries up to `day` (`YYYY-MM-DD`).
        pub fn until(mut self, day: impl Into<String>) -> Self {
            self.until = Some(day.into());
            self
        }

        /// Also entries a later store superseded ([`MemoryEntry::superseded_by`] says
        /// by which).
        pub fn include_superseded(mut self) -> Self {
            self.include_superseded = true;
            self
        }
    }

    /// Finds the entries `query` asks for, best first.
    pub fn query(query: &Query) -> Result<Vec<MemoryEntry>, Error> {
        let request = types::MemoryRequest {
            query: query.text.clone(),
            limit: query.limit,
            sources: query.sources.clone(),
            since: query.since.clone(),
            until: query.until.clone(),
            include_superseded: query.include_superseded,
        };
        Ok(host::memory_query(&request)?
            .into_iter()
            .map(entry)
            .collect())
    }

    fn entry(e: types::MemoryEntry) -> MemoryEntry {
        MemoryEntry {
            id: e.id,
            text: e.text,
            score: e.score,
            category: e.category,
            created_at: e.created_at,
            source: e.source,
            superseded_by: e.superseded_by,
        }
    }

    /// Stores `text` now, unless a near-duplicate exists (see the outcome's reason).
    pub fn store(text: &str, category: Option<&str>) -> Result<StoreOutcome, Error> {
        let outcome = host::memory_store(text, category)?;
        Ok(StoreOutcome {
            stored: outcome.stored,
            reason: outcome.reason,
        })
    }

    /// Forgets entries by id or by query; returns how many were removed.
    pub fn forget(query: &str) -> Result<u32, Error> {
        Ok(host::memory_forget(query)?)
    }
}

pub mod scratch {
    //! The run's scratch space: values shared by the skills of one agent run.

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use super::{Error, host};

    /// Reads `key`; `Ok(None)` if it was never set.
    pub fn get<T: DeserializeOwned>(key: &str) -> Result<Option<T>, Error> {
        host::scratch_get(key)
            .map(|json| {
                serde_json::from_str(&json).map_err(|e| {
                    Error::failed(format!(
                        "scratch value {key:?} has an unexpected shape: {e}"
                    ))
                })
            })
            .transpose()
    }

    /// Sets `key` to `value`.
    pub fn set<T: Serialize>(key: &str, value: &T) -> Result<(), Error> {
        let json = serde_json::to_string(value)
            .map_err(|e| Error::failed(format!("scratch value {key:?} is not JSON: {e}")))?;
        host::scratch_set(key, &json);
        Ok(())
    }
}
