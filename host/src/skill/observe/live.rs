//! Calls as they start and finish, for whoever watches (`evo serve`'s
//! `/v1/calls/live`).
//!
//! A call of a skill or tool is announced when it starts and again when it ends, both
//! with the same number; a refusal inside a skill (an outbound request, a secret kept
//! in) is announced when it is recorded. Nothing is built or sent while nobody watches
//! (one atomic increment per call); a watcher that falls more than [`BACKLOG`] events
//! behind is told how many it missed.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use tokio::sync::broadcast;

use crate::skill::observe::store::Record;

/// Events a watcher may fall behind by before it misses some.
pub const BACKLOG: usize = 1024;

/// A call starting or ending.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LiveCall {
    /// A call started.
    Started {
        /// Its number in this process, the same when it ends.
        call: u64,
        /// The skill or tool.
        skill: String,
        /// Who called it.
        caller: String,
        /// Its run.
        task_id: String,
        /// When, Unix milliseconds.
        at_ms: i64,
    },
    /// A call ended, or something was refused.
    Finished {
        /// The number it started with; absent for a refusal, which has no start.
        #[serde(skip_serializing_if = "Option::is_none")]
        call: Option<u64>,
        /// The skill or tool (`http`, `secret` for the sandbox's own refusals).
        skill: String,
        /// Who called it.
        caller: String,
        /// Its run.
        task_id: String,
        /// `success`, `error` or `blocked`.
        status: &'static str,
        /// How long it took, in milliseconds.
        duration_ms: f64,
        /// The error's code, when it failed or was refused.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// The error's message (secrets redacted).
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl LiveCall {
    /// `started` or `finished`.
    #[cfg_attr(
        not(any(feature = "serve", feature = "internals")),
        allow(dead_code, reason = "`evo serve` and Evo's own tests use it")
    )]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Started { .. } => "started",
            Self::Finished { .. } => "finished",
        }
    }
}

/// Where calls are announced.
#[derive(Debug)]
pub struct LiveCalls {
    sender: broadcast::Sender<LiveCall>,
    next: AtomicU64,
}

impl Default for LiveCalls {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(BACKLOG).0,
            next: AtomicU64::new(1),
        }
    }
}

impl LiveCalls {
    /// The calls from now on.
    #[cfg_attr(
        not(any(feature = "serve", feature = "internals")),
        allow(dead_code, reason = "`evo serve` and Evo's own tests use it")
    )]
    pub fn subscribe(&self) -> broadcast::Receiver<LiveCall> {
        self.sender.subscribe()
    }

    /// Announces a call of `skill` starting; its number, for [`Self::finished`].
    pub(crate) fn started(&self, skill: &str, caller: &str, task_id: &str, at_ms: i64) -> u64 {
        let call = self.next.fetch_add(1, Ordering::Relaxed);
        if self.sender.receiver_count() > 0 {
            // Nobody may be left to receive it by now; that is not an error.
            let _ = self.sender.send(LiveCall::Started {
                call,
                skill: skill.to_owned(),
                caller: caller.to_owned(),
                task_id: task_id.to_owned(),
                at_ms,
            });
        }
        call
    }

    /// Announces how the call numbered `call` (none for a refusal) ended, as recorded.
    pub(crate) fn finished(&self, call: Option<u64>, record: &Record) {
        if self.sender.receiver_count() == 0 {
            return;
        }
        let (code, error) = record.error_parts();
        let _ = self.sender.send(LiveCall::Finished {
            call,
            skill: record.tool.clone(),
            caller: record.caller.clone(),
            task_id: record.task_id.clone(),
            status: record.status.name(),
            duration_ms: record.duration_ms,
            code: code.map(str::to_owned),
            error: error.map(str::to_owned),
        });
    }
}
