//! Skills in OCI registries: the settings (`[registries]`, `[trust]`), what
//! publishing, installing, searching and updating report, and who signed an artifact.

pub use crate::host::{Published, RegistryInstall, RegistryInstalled, RegistrySearch, Updated};
pub use crate::oci::reference::SCHEME;
pub use crate::oci::{
    CredentialSettings, Kind as ArtifactKind, Listed, RegistrySettings, TrustSettings,
    generate_signing_key,
};
pub use crate::skill::manifest::package::{RegistrySource, Signer};
