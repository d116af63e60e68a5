//! The skill kernel: what a skill is ([`meta::SkillMeta`]) and what it may ask of the
//! host while it runs ([`context`]).

pub mod context;
pub mod meta;
