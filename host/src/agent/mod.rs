//! The agent: runs a conversation over the skills (blueprint §3.7, §6.3).
//!
//! - [`tool_loop::chat_with_tools`]: the bounded tool-calling loop, with gate-1 failures
//!   returned to the model as tool errors and a permission profile that blocks calls.

pub mod tool_loop;
