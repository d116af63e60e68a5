//! Confirmation of dangerous calls.
//!
//! A tool about to do something hard to undo (overwrite a file, `rm -rf`, a commit) asks
//! [`SkillContext::confirm`](crate::skill::kernel::SkillContext::confirm) first. The run's
//! [`Confirmer`] decides: the CLI asks on the terminal, `evo serve` asks the MCP client
//! (elicitation) when it can. A run without one follows the host's [`ConfirmPolicy`]
//! (deny, unless `evo.toml` says `[tools] confirm = "allow"`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::skill::exchange::BoxFuture;

/// How bad the call is if it was a mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Easy to undo.
    Low,
    /// Changes or replaces something that exists.
    Medium,
    /// Destroys data or reaches outside the project.
    High,
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        })
    }
}

/// What the user is asked to confirm: a dialog (tool and arguments, risk,
/// warning).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confirmation {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// How bad a mistake would be.
    pub risk: Risk,
    /// What will happen, in a sentence.
    pub warning: String,
}

/// Decides whether a dangerous call goes ahead.
pub trait Confirmer: Send + Sync + fmt::Debug {
    /// `true` to go ahead.
    fn confirm<'a>(&'a self, request: &'a Confirmation) -> BoxFuture<'a, bool>;
}

/// What a run without a [`Confirmer`] does with a dangerous call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmPolicy {
    /// Refuse it (`status: blocked`): nobody said yes.
    #[default]
    Deny,
    /// Let it run (for unattended hosts whose profile already bounds what runs).
    Allow,
}

/// A confirmer that always answers the same (tests, `--yes`).
#[derive(Debug, Clone, Copy)]
pub struct Always(pub bool);

impl Confirmer for Always {
    fn confirm<'a>(&'a self, _request: &'a Confirmation) -> BoxFuture<'a, bool> {
        Box::pin(std::future::ready(self.0))
    }
}
