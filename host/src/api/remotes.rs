//! Other Evo nodes whose skills this one calls: `[remotes]` entries, added, checked
//! and removed, and what a remote says of its skills.

pub use crate::remote::protocol::SkillInfo;
pub use crate::remote::{Remote, RemoteSpec, add, check, load, remove};
