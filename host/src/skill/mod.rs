//! Skills: what a skill is, how it is called, and how calls are checked and recorded.
//!
//! - [`kernel`]: [`kernel::SkillContext::call`], the one path every call takes: depth
//!   limit, lookup in the [`kernel::table`] of skills, gate 1, timeout and retry, gate 2,
//!   statistics, events; the [`kernel::executor::Executor`] trait every kind of skill
//!   implements, and the confirmation of dangerous calls.
//! - [`manifest`]: `skill.json` and SKILL.md, parsed raw → validated, and what a skill
//!   directory holds.
//! - [`observe`]: run events, the call history, statistics, live calls and metrics.
//! - [`composite`]: the pipeline and llm executors.
//! - [`exchange`]: the data a running skill and the host exchange.
//! - [`validate`]: JSON Schema validation with reports a model can act on.
//! - [`template`]: the `{{ }}` language of pipelines and prompts.
//! - [`permission`]: permission levels, agent profiles, and what a refusal says.
//! - [`lanes`]: the two-lane rule that keeps slow calls from holding every place.

pub mod composite;
pub mod exchange;
pub mod kernel;
pub mod lanes;
pub mod manifest;
pub mod observe;
pub mod permission;
pub mod template;
pub mod validate;
