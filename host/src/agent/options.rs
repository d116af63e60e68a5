//! How an agent runs: its options and their defaults.

use std::sync::Arc;

use super::Permissions;
use super::tool_loop;
use crate::skill::kernel::confirm::Confirmer;
use crate::skill::permission::Profile;

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Model requests one tool loop may make.
    pub max_llm_rounds: u32,
    /// Route each message with `intent_recognize` first; off means every message goes
    /// straight to the tool loop with all tools.
    pub intent_recognition: bool,
    /// Which skills the model may call.
    pub permissions: Permissions,
    /// Skills offered to the router when there are more (the most relevant to the
    /// message are chosen): the whole catalogue in every prompt costs tokens and
    /// confuses routing.
    pub shortlist: usize,
    /// Skills run at the start of each run with `{ "message" }`; a failure is logged,
    /// not fatal.
    pub before_skills: Vec<String>,
    /// Skills run at the end of each run with `{ "message", "response" }`
    /// .
    pub after_skills: Vec<String>,
    /// The permission profile of the agent's runs (e.g. `explore`: read-only); a call
    /// above it comes back to the model as `blocked`. `full` when `None`.
    pub profile: Option<Profile>,
    /// Who confirms dangerous calls (the CLI asks on the terminal); the host's policy
    /// decides when `None`.
    pub confirmer: Option<Arc<dyn Confirmer>>,
    /// The model every request of a run asks for, instead of the provider's configured
    /// one (`evo agent run --model`); an llm skill that names its own keeps it. The
    /// provider's name for it (`gpt-4o`, `llama3.2:1b`): the provider stays the same.
    pub model: Option<String>,
    /// The lead of the skill index's first pick over its second at which a capable
    /// model is not asked to route: it is shown that skill alone, says whether the
    /// message asks for it and writes its input (held to the skill's schema); if it
    /// declines, the router decides. Only a skill that reads is offered this way; one
    /// that changes something is left to the router. `None`: the router decides always.
    pub decisive_margin: Option<f32>,
}

impl Default for AgentOptions {
    /// - `tool_loop::DEFAULT_MAX_LLM_ROUNDS` rounds,
    /// - intent recognition on,
    /// - every skill allowed,
    /// - a shortlist of `DEFAULT_SHORTLIST` skills.
    fn default() -> Self {
        Self {
            max_llm_rounds: tool_loop::DEFAULT_MAX_LLM_ROUNDS,
            intent_recognition: true,
            permissions: Permissions::All,
            shortlist: DEFAULT_SHORTLIST,
            before_skills: Vec::new(),
            after_skills: Vec::new(),
            profile: None,
            confirmer: None,
            model: None,
            decisive_margin: Some(DECISIVE_MARGIN),
        }
    }
}

/// Skills offered to the router by default.
pub const DEFAULT_SHORTLIST: usize = 12;

/// Skills a small model is offered at most (see
/// [`ModelTraits::small`](crate::llm::ModelTraits::small)): each tool's definition is
/// a hundred tokens or more it reads at a few hundred tokens a second.
pub const SMALL_MODEL_SHORTLIST: usize = 3;

/// Default [`AgentOptions::decisive_margin`]: above the margin at which the skill index
/// routed no message of the fitting half of the routing set wrongly, with either
/// embedder (`./scripts/bench routing` fits it again and fails if it came out higher).
pub const DECISIVE_MARGIN: f32 = 0.25;
