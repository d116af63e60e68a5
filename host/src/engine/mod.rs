//! Executors, one per kind of skill. Each runs a skill under limits and reports the
//! result the same way; the kernel knows them only through the
//! [`Executor`](crate::skill::executor::Executor) trait.
//!
//! - [`wasm`]: WebAssembly components.
//! - [`native`]: Node scripts in a subprocess sandbox (lower trust than Wasm).
//! - [`loader`]: picks the executor for a skill directory.

pub mod loader;
pub mod native;
pub mod service;
pub mod wasm;
