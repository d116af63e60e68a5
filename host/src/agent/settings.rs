//! `[agent]` in `evo.toml`: how the agent runs.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::tool_loop::DEFAULT_MAX_LLM_ROUNDS;
use super::{DECISIVE_MARGIN, DEFAULT_SHORTLIST};
use crate::settings::{Invalid, Section, in_range};

/// How the agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Model requests one tool loop may make.
    pub max_llm_rounds: u32,
    /// Skills offered to the router.
    pub shortlist: usize,
    /// Route each message first.
    pub intent_recognition: bool,
    /// Take the skill index's first pick without asking the model to route when it
    /// leads the second by `decisive_margin` and only reads.
    pub decisive_routing: bool,
    /// See `decisive_routing`: a lead in the index's relevance, in (0, 1].
    pub decisive_margin: f64,
}

impl Default for AgentSettings {
    /// `DEFAULT_MAX_LLM_ROUNDS` rounds, a shortlist of [`DEFAULT_SHORTLIST`] skills,
    /// each message routed first, without the model where the index leads by
    /// [`DECISIVE_MARGIN`].
    fn default() -> Self {
        Self {
            max_llm_rounds: DEFAULT_MAX_LLM_ROUNDS,
            shortlist: DEFAULT_SHORTLIST,
            intent_recognition: true,
            decisive_routing: true,
            decisive_margin: f64::from(DECISIVE_MARGIN),
        }
    }
}

impl Section for AgentSettings {
    const TABLE: &'static str = "agent";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        in_range("agent.max_llm_rounds", self.max_llm_rounds, 1, 1_000)?;
        in_range("agent.shortlist", self.shortlist, 1, 10_000)?;
        if !(self.decisive_margin > 0.0 && self.decisive_margin <= 1.0) {
            return Err(Invalid::new(
                "agent.decisive_margin",
                format!(
                    "{} is out of range; use more than 0 and at most 1 (or decisive_routing = false to always ask the model)",
                    self.decisive_margin
                ),
            ));
        }
        Ok(())
    }
}
