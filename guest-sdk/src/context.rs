//! The host context: plain functions over the WIT `context` imports.

use std::cell::RefCell;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::__private::bindings::evo::skill::{context as host, types};
use crate::Error;

pub use types::LogLevel;

/// One entry found by [`memory::search`].
pub type MemoryEntry = types::MemoryEntry;

/// What [`memory::store`] did.
pub type StoreOutcome = types::StoreOutcome;

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
}

thread_local! {
    static MEMORY_WRITES: RefCell<Vec<types::MemoryWrite>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn take_memory_writes() -> Vec<types::MemoryWrite> {
    MEMORY_WRITES.with(|writes| std::mem::take(&mut *writes.borrow_mut()))
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
    })?)
}

/// Suggests keeping `text` in long-term memory once this call succeeds.
///
/// Unlike [`memory::store`] this needs no capability: the host decides, at the end of
/// the run, whether to keep it (deduplicated against what it already knows).
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
    host::log(level, message);
}

pub mod memory {
    //! Long-term memory (needs [`crate::Manifest::memory`]).

    use super::{Error, MemoryEntry, StoreOutcome, host};

    /// Finds up to `limit` entries relevant to `query`, best first.
    pub fn search(query: &str, limit: u32) -> Result<Vec<MemoryEntry>, Error> {
        Ok(host::memory_search(query, limit)?)
    }

    /// Stores `text` now, unless a near-duplicate exists (see the outcome's reason).
    pub fn store(text: &str, category: Option<&str>) -> Result<StoreOutcome, Error> {
        Ok(host::memory_store(text, category)?)
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
