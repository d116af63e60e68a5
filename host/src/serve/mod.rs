//! `evo serve`: the host's skills to any Model Context Protocol client, over stdio
//! ([`stdio`]) or streamable HTTP beside a plain HTTP API ([`http`]).
//!
//! Built on the official Rust SDK (`rmcp`). What a client sees:
//!
//! - **tools**: every skill [`ServeSettings::serves`](crate::config::ServeSettings::serves) and that is not internal, with its
//!   input and output schemas and annotations derived from what it is granted; results
//!   as `structuredContent` plus a text block, failures as `isError` results whose text
//!   carries the code, the message (the validation report for bad input) and a hint;
//! - **resources and prompts**: instruction skills (SKILL.md) as `skill://NAME/PATH`
//!   resources, one per file, and as prompts;
//! - **a live catalogue**: [`Host::refresh`](crate::Host::refresh) runs every [`CATALOGUE_POLL`]; a change
//!   is announced with `notifications/tools/list_changed` (and the resources and
//!   prompts ones) on every session;
//! - **progress, cancellation, logs**: a call with a progress token gets a heartbeat
//!   and what the skill emits; `notifications/cancelled` drops the call (the Wasm guest
//!   is interrupted, a native script's process group killed); what the skill logs
//!   reaches the client at the level it asked for;
//! - **confirmations**: a dangerous call (replacing a file, `rm -rf`) asks the client's
//!   user, by `elicitation/create` or, on revision 2026-07-28, an input-required result
//!   (the rules of `confirm`); a client that can be asked neither way gets the host's
//!   `[tools] confirm` policy.
//!
//! Calls on one session run concurrently; [`Server`] bounds them across all sessions
//! (`serve.max_calls`) and waits, rather than spawning without limit.
//!
//! Needs the `serve` feature of evo-host (on by default).

mod confirm;
mod console;
mod gate;
pub mod http;
mod manage;
mod manage_tools;
mod mcp;
mod mcp_params;
mod memory;
mod notify;
pub mod openapi;
mod pages;
mod refusal;
mod reply;
mod resources;
#[cfg(feature = "postgres")]
mod sessions;
mod shared;
mod signin;
mod skills;
mod stats;
pub mod stdio;
mod tool;
mod ws;

pub use mcp::Server;
pub use refusal::Refusal;
pub use resources::RESOURCES_PAGE;
pub use shared::{CATALOGUE_POLL, STATS_EVERY, Shared};
pub use tool::{annotations, failure_text, tool_of};
