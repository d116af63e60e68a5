//! The executors that run code a skill brings, each under limits, reporting the result
//! the way every executor does; the kernel knows them only through the
//! [`Executor`](crate::skill::executor::Executor) trait.
//!
//! - [`wasm`]: WebAssembly components.
//! - `native`: Node scripts in a subprocess sandbox (lower trust than Wasm), with the
//!   `native` feature.
//! - [`service`]: a skill that is one granted HTTP endpoint.
//! - [`loader`]: picks the executor for a skill directory (and runs instruction-only
//!   skills, whose answer is their own text, with a static one).
//!
//! The executors that run no code of the skill's live with what they run: built-in
//! tools in `tools` (`ToolExecutor`), templates and pipelines in `skill::pipeline`, llm
//! skills in `skill::llm_mode`, another node's skills in `remote`.

pub mod loader;
#[cfg(feature = "native")]
pub mod native;
pub(crate) mod native_limits;
pub mod service;
mod skill_dirs;
pub mod wasm;
