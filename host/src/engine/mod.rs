//! Executors, one per kind of skill. Each runs a skill under limits and reports the
//! result the same way; the kernel knows them only through what they return.

pub mod wasm;
