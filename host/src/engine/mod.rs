//! The executors that run code a skill brings, each under limits, reporting the result
//! the way every executor does; the kernel knows them only through the
//! [`Executor`](crate::skill::kernel::executor::Executor) trait.
//!
//! - [`wasm`]: WebAssembly components.
//! - `native`: Node scripts in a subprocess sandbox (lower trust than Wasm), with the
//!   `native` feature.
//! - [`service`]: a skill that is one granted HTTP endpoint.
//! - [`loader`]: picks the executor for a skill directory; instruction-only skills,
//!   whose answer is their own text, are run by its `StaticExecutor`.
//!
//! The executors that run no code of the skill's live with what they run: built-in
//! tools in `tools` (`ToolExecutor`), templates and pipelines in `skill::composite::pipeline`, llm
//! skills in `skill::composite::llm`, another node's skills in `remote`.

mod instructions;
pub mod loader;
#[cfg(feature = "native")]
pub mod native;
pub(crate) mod native_settings;
pub mod service;
mod skill_dirs;
pub mod wasm;

pub(crate) use skill_dirs::{for_each_dir, skill_dirs};
