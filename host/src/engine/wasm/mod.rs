//! The WebAssembly engine: runs skills that are components of the `evo:skill` world.
//!
//! One [`WasmEngine`] per process holds the wasmtime `Engine` (component model, epoch
//! interruption, pooling allocator), the `Linker` with WASI p2 and the `context`
//! imports, and the on-disk cache of compiled components. [`WasmEngine::load_file`]
//! checks a component's API version, reads its manifest (from the section `evo skill
//! build` embeds, else by calling its `manifest` export once), intersects its
//! capabilities with the operator's policy, and compiles it (or loads it from the
//! cache); the resulting [`WasmSkill`] runs each call in a fresh instance under its
//! limits. With a cache, a file loaded before and unchanged since is described from
//! what was learnt then, and its compiled code is loaded on its first call.
//!
//! ```no_run
//! use evo_host::grants::Policy;
//! use evo_host::engine::wasm::{EngineConfig, WasmEngine};
//! use evo_host::skill::kernel::SkillContext;
//!
//! # async fn run() -> evo_host::Result<()> {
//! let engine = WasmEngine::new(EngineConfig::default())?;
//! let skill = engine.load_file("calculate.wasm".as_ref(), &Policy::default()).await?;
//! let outcome = skill.call(r#"{"expression":"sqrt(144) + 10"}"#, &SkillContext::detached()).await?;
//! assert_eq!(outcome.output["result"], 22.0);
//! # Ok(())
//! # }
//! ```

mod background;
mod cache;
mod call;
mod compile;
mod config_store;
mod contract;
mod executor;
mod functions;
mod guest;
mod http;
mod inspect;
mod known;
pub mod limits;
mod links;
mod load;
mod names;
mod parked;
mod plain;
mod scrub;
pub mod settings;
mod since_v0_1_0;
mod slots;
mod state;
mod swap;
mod ticker;
mod wit_json;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use cache::{ArtifactCache, LoadSource};
#[cfg(feature = "internals")]
pub use call::{MemoryWrite, StepTrace};
pub use call::{SkillOutcome, WasmSkill};
pub use executor::WasmExecutor;
pub use http::HttpBody;
pub(crate) use http::send_checked;
#[cfg(feature = "internals")]
pub use inspect::API_VERSION;
pub(crate) use inspect::check_component_header;
pub use inspect::{ComponentInfo, MANIFEST_SECTION, inspect, with_manifest};
pub(crate) use known::OpenComponent;
pub use limits::{LimitPolicy, Limits};
pub use names::with_short_names;
pub use parked::DEFAULT_PARKED_INSTANCES;
pub use plain::{PlainComponent, PlainExecutor, SEPARATOR, Unusable, component_name};
pub use slots::NESTED_RESERVE;
pub use state::HostState;

use crate::error::{Error, Result};

/// The current contract; `API_VERSION` is read from the same file.
pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "wit/since_v0.2.0",
        world: "evo:skill/plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// The first contract, frozen: components built against it run unchanged
/// ([`since_v0_1_0`] answers their imports through the current ones).
pub(crate) mod bindings_v0_1_0 {
    wasmtime::component::bindgen!({
        path: "wit/since_v0.1.0",
        world: "evo:skill/plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Whether an engine made now puts each slot's memory back whole after a call (swap is
/// on) rather than only the pages the call wrote: a fact of the machine that every
/// bench record carries, for it moves what a Wasm call costs.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn resets_memory_whole() -> bool {
    swap::is_on()
}

/// How often the epoch advances. Deadlines are rounded up to it, so a call overruns its
/// timeout by at most this much; 10 ms keeps the ticker's cost negligible.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Calls that may run at once by default: the pool is sized for this, and further calls
/// wait for a slot instead of failing. Sizing the pool to need (not wasmtime's default
/// of 1000) makes engine creation ~10× faster.
pub const DEFAULT_MAX_CONCURRENT_CALLS: u32 = 64;
/// Linear memory kept mapped between instances in a pool slot, so a fresh instance
/// does not pay page faults for its first MiBs (measured: 31 µs → 9 µs per call).
pub const KEEP_RESIDENT_MEMORY: usize = 4 << 20;
/// Table and async-stack bytes kept resident, for the same reason.
pub const KEEP_RESIDENT_SMALL: usize = 64 << 10;
/// Core instances per component in the pool: a Rust wasip2 component has 3–4, a
/// componentize-js one about a dozen.
const CORE_INSTANCES_PER_CALL: u32 = 16;
/// Memories per component in the pool (see [`limits::MAX_MEMORIES`]).
const MEMORIES_PER_CALL: u32 = 4;
/// Tables per component in the pool.
const TABLES_PER_CALL: u32 = 16;

/// Largest component the engine compiles by default: a componentize-py component is
/// about 40 MB; a Rust one well under 1 MB.
pub const DEFAULT_MAX_COMPONENT_BYTES: u64 = 64 << 20;
/// How long the engine waits for a component to compile by default. Cranelift cannot be
/// stopped midway: at the deadline the load fails, and the compilation finishes in the
/// background (into the compile cache, so a retry is fast).
pub const DEFAULT_COMPILE_DEADLINE: Duration = Duration::from_secs(120);

/// Told when a component starts compiling (a compile-cache miss): its label and size in
/// bytes. The CLI prints a progress line with it.
#[derive(Clone, Default)]
pub struct CompileNotice(Option<Arc<NoticeFn>>);

type NoticeFn = dyn Fn(&str, usize) + Send + Sync;

impl CompileNotice {
    /// Calls `f` for each compilation.
    pub fn new(f: impl Fn(&str, usize) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    fn tell(&self, label: &str, size: usize) {
        if let Some(f) = &self.0 {
            f(label, size);
        }
    }
}

impl std::fmt::Debug for CompileNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "CompileNotice(set)"
        } else {
            "CompileNotice(none)"
        })
    }
}

/// How to build a [`WasmEngine`].
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Largest component, in bytes, that is compiled at all.
    pub max_component_bytes: u64,
    /// Longest wait for a component to compile.
    pub compile_deadline: Duration,
    /// Told when a component starts compiling.
    pub on_compile: CompileNotice,
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// Calls that may run at once (pool size); more wait for a slot.
    pub max_concurrent_calls: u32,
    /// Use the pooling allocator (falls back to on-demand if it cannot be set up).
    pub pooling: bool,
    /// The most any skill may ask for.
    pub limits: LimitPolicy,
    /// Whether a skill may make symbolic links in a read-write grant (only ones that
    /// point down, into the directory that holds them); `false` refuses every link.
    pub symlinks: bool,
    /// Instances that may be made ahead of their calls, one per component at most
    /// (0: each call makes its own when it starts). The pool keeps places for them
    /// beside its call slots; they hold at most 64 MiB of linear memory in all.
    pub parked_instances: u32,
}

impl Default for EngineConfig {
    /// - components up to [`DEFAULT_MAX_COMPONENT_BYTES`], compiled within
    ///   [`DEFAULT_COMPILE_DEADLINE`], silently,
    /// - no cache (set `cache_dir` to keep compiled components across runs),
    /// - [`DEFAULT_MAX_CONCURRENT_CALLS`] concurrent calls,
    /// - the pooling allocator,
    /// - the default [`LimitPolicy`],
    /// - symbolic links that point down allowed,
    /// - [`DEFAULT_PARKED_INSTANCES`] instances made ahead.
    fn default() -> Self {
        Self {
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
            compile_deadline: DEFAULT_COMPILE_DEADLINE,
            on_compile: CompileNotice::default(),
            cache_dir: None,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            pooling: true,
            limits: LimitPolicy::default(),
            symlinks: true,
            parked_instances: DEFAULT_PARKED_INSTANCES,
        }
    }
}

impl EngineConfig {
    /// The wasmtime configuration Evo runs skills with. Public so that benchmarks and
    /// embedders can build a bare wasmtime engine configured identically.
    pub fn wasmtime_config(&self, fuel: bool) -> Config {
        self.config_with(fuel, !swap::is_on())
    }

    /// [`Self::wasmtime_config`], the pool putting back only the pages a call wrote
    /// (found by the kernel's page scan) if `page_scan`, every page otherwise: the scan
    /// misses pages in swap (see [`swap`]).
    fn config_with(&self, fuel: bool, page_scan: bool) -> Config {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(fuel);
        config.parallel_compilation(true);
        if self.pooling {
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(
                self.pooling_config(page_scan),
            ));
        }
        config
    }

    fn pooling_config(&self, page_scan: bool) -> PoolingAllocationConfig {
        let calls = self.max_concurrent_calls.max(1);
        let calls = calls
            + NESTED_RESERVE
            + slots::long_lane(calls)
            + parked::Parking::new(self.parked_instances).places();
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(calls)
            .total_core_instances(calls * CORE_INSTANCES_PER_CALL)
            .total_memories(calls * MEMORIES_PER_CALL)
            .total_tables(calls * TABLES_PER_CALL)
            .total_stacks(calls)
            .max_memories_per_component(MEMORIES_PER_CALL)
            .max_core_instances_per_component(self.limits.max_instances)
            .max_tables_per_component(self.limits.max_instances)
            .max_memory_size(
                usize::try_from(self.limits.max_memory_mib << 20).unwrap_or(usize::MAX),
            )
            .linear_memory_keep_resident(KEEP_RESIDENT_MEMORY)
            .table_keep_resident(KEEP_RESIDENT_SMALL)
            .async_stack_keep_resident(KEEP_RESIDENT_SMALL)
            .pagemap_scan(if page_scan {
                Enabled::Auto
            } else {
                Enabled::No
            });
        pool
    }
}

/// What a `.wasm` file holds.
#[derive(Debug, Clone)]
pub enum WasmFile {
    /// An Evo skill: the component exports `evo:skill/skill`.
    Skill(WasmSkill),
    /// A plain component: each of its exported functions is a skill.
    Component(PlainComponent),
}

impl WasmFile {
    /// The manifests of the skills it holds.
    pub fn skills(&self) -> Box<dyn Iterator<Item = &crate::skill::manifest::SkillMeta> + '_> {
        match self {
            Self::Skill(skill) => Box::new(std::iter::once(skill.meta())),
            Self::Component(component) => Box::new(component.skills()),
        }
    }

    /// The skills it holds, ready to register.
    pub fn registered(&self) -> Result<Vec<crate::skill::kernel::table::RegisteredSkill>> {
        use crate::skill::kernel::table::RegisteredSkill;
        match self {
            Self::Skill(skill) => {
                let (meta, executor) = (
                    skill.shared_meta(),
                    Arc::new(WasmExecutor::new(skill.clone())),
                );
                Ok(vec![if skill.remembered() {
                    RegisteredSkill::with_checked_schemas(meta, executor)
                } else {
                    RegisteredSkill::new(meta, executor)?
                }])
            }
            Self::Component(component) => component
                .skills()
                .map(|meta| {
                    let executor =
                        component
                            .executor(&meta.name)
                            .ok_or_else(|| Error::SkillNotFound {
                                name: meta.name.clone(),
                            })?;
                    RegisteredSkill::new(meta.clone(), Arc::new(executor))
                })
                .collect(),
        }
    }
}

/// Which instance allocator the engine ended up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocator {
    /// Pre-reserved slots, reused across calls.
    Pooling,
    /// Memory mapped per instance (the fallback).
    OnDemand,
}

/// A wasmtime engine with the linker for one configuration (with or without fuel).
struct Flavor {
    engine: Engine,
    linker: Linker<HostState>,
    allocator: Allocator,
    /// [`ArtifactCache::engine_key`] of `engine`.
    key: u64,
}

impl Flavor {
    /// The engine with or without fuel, its epoch ticking while `running` holds a store;
    /// with `functions`, Cranelift reuses the functions compiled before (for any
    /// component) from there.
    fn new(
        config: &EngineConfig,
        fuel: bool,
        functions: Option<&Arc<functions::FunctionCache>>,
        running: &Arc<ticker::Running>,
    ) -> Result<Self> {
        let page_scan = !swap::is_on();
        let wasmtime_config = |config: &EngineConfig| {
            let mut wasmtime_config = config.config_with(fuel, page_scan);
            if let Some(functions) = functions {
                wasmtime_config
                    .enable_incremental_compilation(functions.clone())
                    .map_err(|e| Error::Engine(e.to_string()))?;
            }
            Ok::<_, Error>(wasmtime_config)
        };
        if !page_scan && config.pooling {
            tracing::debug!(
                "swap is on: the pool puts every page of a call's memory back, not only those the kernel reports written"
            );
        }
        let (engine, allocator) = match Engine::new(&wasmtime_config(config)?) {
            Ok(engine) => (
                engine,
                if config.pooling {
                    Allocator::Pooling
                } else {
                    Allocator::OnDemand
                },
            ),
            Err(e) if config.pooling => {
                tracing::warn!(error = %e, "pooling allocator unavailable; falling back to on-demand allocation");
                let fallback = EngineConfig {
                    pooling: false,
                    ..config.clone()
                };
                let engine = Engine::new(&wasmtime_config(&fallback)?)
                    .map_err(|e| Error::Engine(e.to_string()))?;
                (engine, Allocator::OnDemand)
            }
            Err(e) => return Err(Error::Engine(e.to_string())),
        };
        let mut linker = Linker::new(&engine);
        state::add_to_linker(&mut linker).map_err(|e| Error::Engine(e.to_string()))?;
        links::add_to_linker(&mut linker, config.symlinks)
            .map_err(|e| Error::Engine(e.to_string()))?;
        since_v0_1_0::add_to_linker(&mut linker).map_err(|e| Error::Engine(e.to_string()))?;
        ticker::start(
            &engine,
            page_scan && allocator == Allocator::Pooling,
            running.clone(),
        );
        Ok(Self {
            key: ArtifactCache::engine_key(&engine),
            engine,
            linker,
            allocator,
        })
    }
}

struct Inner {
    /// Components loaded from the compile cache, and compiled, since the engine started.
    from_cache: std::sync::atomic::AtomicU64,
    compiled: std::sync::atomic::AtomicU64,
    config: EngineConfig,
    plain: Flavor,
    fuel: OnceLock<Result<Flavor, String>>,
    cache: Option<ArtifactCache>,
    /// One turn per component being compiled (by flavor and digest): a call that finds
    /// another compiling the same bytes waits for it and reads the cache, so a
    /// component is compiled once however many calls race for it.
    compiling: compile::Gates,
    /// What was learnt from the component files loaded before (beside the cache).
    known: Option<known::KnownFiles>,
    /// The places for calls' instances: the pool, the nested reserve, the long lane.
    slots: slots::Slots,
    /// Stores alive now (see [`WasmEngine::live_instances`]).
    live: Arc<std::sync::atomic::AtomicUsize>,
    /// Stores that may run guest code now: the epoch ticks while there are any.
    running: Arc<ticker::Running>,
    /// Instances made ahead of their calls.
    parking: parked::Parking,
    /// Calls waiting for a slot or running (see [`background`]): what a long call
    /// would take the CPU from.
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

/// The shared Wasm engine. Cheap to clone; create one per process.
#[derive(Clone)]
pub struct WasmEngine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WasmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmEngine")
            .field("config", &self.inner.config)
            .field("allocator", &self.inner.plain.allocator)
            .finish_non_exhaustive()
    }
}

impl WasmEngine {
    /// Builds the engine; with `config.pooling`, falls back to on-demand allocation
    /// (logged) if the pool's address space cannot be reserved.
    pub fn new(config: EngineConfig) -> Result<Self> {
        let cache = config.cache_dir.clone().map(ArtifactCache::new);
        let running = Arc::new(ticker::Running::default());
        let plain = Flavor::new(
            &config,
            false,
            cache.as_ref().map(ArtifactCache::functions),
            &running,
        )?;
        let known = config
            .cache_dir
            .as_ref()
            .map(|dir| known::KnownFiles::new(dir.join("known")));
        let slots = slots::Slots::new(config.max_concurrent_calls);
        let parking = parked::Parking::new(config.parked_instances);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                plain,
                fuel: OnceLock::new(),
                cache,
                compiling: compile::Gates::default(),
                known,
                slots,
                live: Arc::default(),
                running,
                parking,
                calls: Arc::default(),
                from_cache: Default::default(),
                compiled: Default::default(),
            }),
        })
    }

    /// Loads many component files as one: what is learnt of them is written to the
    /// catalogue record once, when the returned batch is dropped, instead of once per
    /// file.
    pub(crate) fn batch(&self) -> LoadBatch {
        if let Some(known) = &self.inner.known {
            known.open_batch();
        }
        LoadBatch(self.clone())
    }

    /// Instances (stores) alive now: those of the calls running, and none once they
    /// have all ended. A number that stays above zero when nothing runs is a leak.
    pub fn live_instances(&self) -> usize {
        self.inner.live.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Components loaded since the engine started: from the compile cache, and
    /// compiled.
    pub fn loads(&self) -> (u64, u64) {
        let count = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        (count(&self.inner.from_cache), count(&self.inner.compiled))
    }

    fn slots(&self) -> &slots::Slots {
        &self.inner.slots
    }

    fn calls(&self) -> &Arc<std::sync::atomic::AtomicUsize> {
        &self.inner.calls
    }

    /// Counts a call's store among the live ones, and keeps the epoch ticking for it.
    fn live(&self) -> state::Live {
        state::Live::new(&self.inner.live).running(self.inner.running.awake())
    }

    /// The allocator in use.
    pub fn allocator(&self) -> Allocator {
        self.inner.plain.allocator
    }

    /// The configuration the engine was built with.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    fn flavor(&self, fuel: bool) -> Result<&Flavor> {
        if !fuel {
            return Ok(&self.inner.plain);
        }
        self.inner
            .fuel
            .get_or_init(|| {
                let functions = self.inner.cache.as_ref().map(ArtifactCache::functions);
                Flavor::new(&self.inner.config, true, functions, &self.inner.running)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| Error::Engine(e.clone()))
    }
}

/// Loads under way as one ([`WasmEngine::batch`]): dropping it writes what they learnt.
#[derive(Debug)]
#[must_use = "the batch closes when dropped"]
pub(crate) struct LoadBatch(WasmEngine);

impl Drop for LoadBatch {
    fn drop(&mut self) {
        if let Some(known) = &self.0.inner.known {
            known.close_batch();
        }
    }
}
