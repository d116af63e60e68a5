//! Other Evo nodes whose skills this one calls: `[remotes]` entries, added, checked
//! and removed, and what a remote says of its skills. Connecting to one ([`Remote`])
//! needs the `remotes` feature; without it a configured remote is a load error
//! (`FEATURE_NOT_BUILT`).

#[cfg(feature = "remotes")]
pub use crate::remote::Remote;
pub use crate::remote::protocol::SkillInfo;
pub use crate::remote::{RemoteSpec, add, check, load, remove};
