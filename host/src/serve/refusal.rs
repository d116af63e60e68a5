//! Why a call the server took gave no result, whichever transport took it.

use crate::error::Error;

/// Why a call gave no result.
#[derive(Debug)]
pub enum Refusal {
    /// The skill failed.
    Failed(Error),
    /// The client cancelled it.
    Cancelled,
    /// The server is stopping.
    ShuttingDown,
    /// Every slot is taken and `waiting` calls already wait for one.
    Busy {
        /// How many wait.
        waiting: usize,
    },
}

/// What a call the server can no longer take is answered, over either transport
/// (`-32603`).
pub(super) const SHUTTING_DOWN: &str =
    "the server is shutting down and takes no more calls; reconnect to a running one";
