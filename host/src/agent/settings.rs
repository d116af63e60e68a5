//! `[agent]` in `evo.toml`: how the agent runs.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::DEFAULT_SHORTLIST;
use super::tool_loop::DEFAULT_MAX_LLM_ROUNDS;
use crate::settings::{Invalid, Section, in_range};

/// How the agent runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Model requests one tool loop may make.
    pub max_llm_rounds: u32,
    /// Skills offered to the router.
    pub shortlist: usize,
    /// Route each message first.
    pub intent_recognition: bool,
}

impl Default for AgentSettings {
    /// `DEFAULT_MAX_LLM_ROUNDS` rounds, a shortlist of [`DEFAULT_SHORTLIST`] skills,
    /// each message routed first.
    fn default() -> Self {
        Self {
            max_llm_rounds: DEFAULT_MAX_LLM_ROUNDS,
            shortlist: DEFAULT_SHORTLIST,
            intent_recognition: true,
        }
    }
}

impl Section for AgentSettings {
    const TABLE: &'static str = "agent";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        in_range("agent.max_llm_rounds", self.max_llm_rounds, 1, 1_000)?;
        in_range("agent.shortlist", self.shortlist, 1, 10_000)
    }
}
