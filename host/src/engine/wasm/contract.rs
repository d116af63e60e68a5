//! The contract version a component was built against: its linked form and its
//! instances, whose exports answer as the current contract's types whatever the version
//! (a 0.1.0 component's through [`since_v0_1_0`](super::since_v0_1_0)), and what
//! instantiating any linked component gives a call.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::bindings::evo::skill::types;
use super::bindings_v0_1_0 as v0_1_0;
use super::since_v0_1_0::{error, output};
use super::state::HostState;

pub(super) type GuestFuture<'a, T> =
    std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<T>> + Send + 'a>>;

/// A linked component a call instantiates: an Evo skill (its `evo:skill/skill` export
/// resolved) or a plain component (its functions looked up by the caller).
pub(super) trait Instantiate: Clone + Send + Sync + 'static {
    /// What instantiating gives the call's body.
    type Instance: Send + 'static;
    fn instantiate<'a>(
        &'a self,
        store: &'a mut Store<HostState>,
    ) -> GuestFuture<'a, Self::Instance>;
}

impl Instantiate for InstancePre<HostState> {
    type Instance = wasmtime::component::Instance;
    fn instantiate<'a>(
        &'a self,
        store: &'a mut Store<HostState>,
    ) -> GuestFuture<'a, Self::Instance> {
        Box::pin(self.instantiate_async(store))
    }
}

/// A linked Evo skill, of the contract version it was built against.
#[derive(Clone)]
pub(super) enum SkillPre {
    /// `evo:skill@0.2.0`.
    Current(super::bindings::PluginPre<HostState>),
    /// `evo:skill@0.1.0`.
    V0_1_0(v0_1_0::PluginPre<HostState>),
}

impl SkillPre {
    /// `pre` with its `evo:skill/skill` export resolved, of whichever version it has;
    /// the error is the current version's.
    pub(super) fn new(pre: InstancePre<HostState>) -> wasmtime::Result<Self> {
        match super::bindings::PluginPre::new(pre.clone()) {
            Ok(current) => Ok(Self::Current(current)),
            Err(error) => v0_1_0::PluginPre::new(pre)
                .map(Self::V0_1_0)
                .map_err(|_| error),
        }
    }
}

/// An instance of an Evo skill, of either version.
pub(super) enum SkillInstance {
    Current(super::bindings::Plugin),
    V0_1_0(v0_1_0::Plugin),
}

impl Instantiate for SkillPre {
    type Instance = SkillInstance;
    fn instantiate<'a>(
        &'a self,
        store: &'a mut Store<HostState>,
    ) -> GuestFuture<'a, Self::Instance> {
        match self {
            Self::Current(pre) => Box::pin(async move {
                pre.instantiate_async(store)
                    .await
                    .map(SkillInstance::Current)
            }),
            Self::V0_1_0(pre) => Box::pin(async move {
                pre.instantiate_async(store)
                    .await
                    .map(SkillInstance::V0_1_0)
            }),
        }
    }
}

impl SkillInstance {
    /// The `execute` export, its result as the current types.
    pub(super) async fn execute(
        &self,
        store: &mut Store<HostState>,
        input: String,
    ) -> wasmtime::Result<Result<types::SkillOutput, types::SkillError>> {
        match self {
            Self::Current(plugin) => plugin.evo_skill_skill().call_execute(store, &input).await,
            Self::V0_1_0(plugin) => Ok(plugin
                .evo_skill_skill()
                .call_execute(store, &input)
                .await?
                .map(output)
                .map_err(error)),
        }
    }

    /// The `manifest` export.
    pub(super) async fn manifest(&self, store: &mut Store<HostState>) -> wasmtime::Result<String> {
        match self {
            Self::Current(plugin) => plugin.evo_skill_skill().call_manifest(store).await,
            Self::V0_1_0(plugin) => plugin.evo_skill_skill().call_manifest(store).await,
        }
    }
}
