//! The skill kernel: what a skill is, how it is called, and how calls are checked.
//!
//! - [`meta`]: the manifest (`skill.json`, SKILL.md [`frontmatter`]), parsed raw → validated.
//! - [`registry`]: every skill the agent can call, whatever runs it.
//! - [`kernel`]: [`kernel::SkillContext::call`], the one path every call takes: depth
//!   limit, lookup, gate 1, timeout and retry, gate 2, statistics, [`events`].
//! - [`validate`]: JSON Schema validation with reports a model can act on.
//! - [`template`]: the `{{ }}` language of pipelines and prompts.
//! - [`pipeline`] and [`llm_mode`]: the composite and llm executors.
//! - [`context`]: what a Wasm guest may ask of the host.
//! - [`package`]: what a skill directory holds, and its install record.

pub mod calls;
pub mod confirm;
pub mod context;
pub mod events;
pub mod executor;
pub mod frontmatter;
pub mod history;
pub mod kernel;
pub mod lanes;
pub mod live;
pub mod llm_mode;
pub mod meta;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod package;
pub mod permission;
pub mod pipeline;
pub mod registry;
pub mod stats;
pub mod template;
pub mod validate;
