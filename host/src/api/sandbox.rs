//! The native sandbox that confines script skills and program tools: its isolation
//! levels, the layers it stacks, and the launcher that applies them
//! ([`launcher_main`]), which the small `evo-launcher` program (and the `evo` binary, under
//! the same hidden commands) runs as itself.

pub use crate::engine::native::IsolationLevel;
pub use crate::engine::native::confine::launcher::{
    EXEC as LAUNCHER_EXEC, LAUNCHER, WAIT as LAUNCHER_WAIT, is_command as is_launcher_command,
    main as launcher_main,
};
pub use crate::engine::native::confine::{
    Layers as SandboxLayers, Spec as LaunchSpec, confine_and_exec, wait_for_job,
};
pub use crate::engine::native::egress::SOCKET as EGRESS_SOCKET;
