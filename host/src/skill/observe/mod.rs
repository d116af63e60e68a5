//! What the kernel reports about calls: the [`events`] of a run, the call [`history`],
//! per-skill [`stats`], calls as they happen ([`live`]), the [`store`] both history and
//! statistics are kept in, and figures for monitoring (`metrics`, with the `metrics`
//! feature).

pub mod events;
pub mod history;
pub mod live;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod stats;
pub mod store;
