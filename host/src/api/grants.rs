//! What a skill may touch: the [`Policy`] `[grants]` in `evo.toml` sets, the
//! [`Grant`] each skill holds (directories, hosts, secrets, memory, programs), what a
//! skill asks for ([`RequestedCapabilities`]), and a grant changed on a running host
//! ([`GrantValue`], [`SkillGrants`]).

pub use crate::capabilities::{
    Access, DirGrant, DirPolicy, Grant, GrantFlag, HostPattern, MemoryAccess, Policy,
    RequestedCapabilities, SecretGrant,
};
pub use crate::host::{GrantValue, SkillGrants};
