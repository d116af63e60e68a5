//! The native sandbox that confines script skills and program tools: its isolation
//! levels, the layers it stacks, and the launcher that applies them
//! ([`confine_and_exec`]), which the `evo` binary runs as itself.

pub use crate::engine::native::IsolationLevel;
pub use crate::engine::native::confine::{
    Layers as SandboxLayers, Spec as LaunchSpec, confine_and_exec, wait_for_job,
};
pub use crate::engine::native::egress::SOCKET as EGRESS_SOCKET;
