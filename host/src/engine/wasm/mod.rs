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
//! use evo_host::capabilities::Policy;
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
mod executor;
mod guest;
mod http;
mod inspect;
mod known;
pub mod limits;
mod scrub;
mod slots;
mod state;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Linker;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use cache::{ArtifactCache, LoadSource};
pub use call::{MemoryWrite, SkillOutcome, StepTrace, WasmSkill};
pub use executor::WasmExecutor;
pub use http::HttpBody;
pub(crate) use http::send_checked;
pub use inspect::{API_VERSION, ComponentInfo, MANIFEST_SECTION, inspect, with_manifest};
pub use limits::{LimitPolicy, Limits};
pub use slots::NESTED_RESERVE;
pub use state::HostState;

use crate::capabilities::Policy;
use crate::error::{Error, Result};
use crate::skill::meta::SkillMeta;

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        // The vendored, frozen contract; `API_VERSION` is read from the same file.
        path: "wit/since_v0.1.0",
        world: "evo:skill/plugin",
        imports: { default: async },
        exports: { default: async },
    });
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
}

impl Default for EngineConfig {
    /// - components up to [`DEFAULT_MAX_COMPONENT_BYTES`], compiled within
    ///   [`DEFAULT_COMPILE_DEADLINE`], silently,
    /// - no cache (set `cache_dir` to keep compiled components across runs),
    /// - [`DEFAULT_MAX_CONCURRENT_CALLS`] concurrent calls,
    /// - the pooling allocator,
    /// - the default [`LimitPolicy`].
    fn default() -> Self {
        Self {
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
            compile_deadline: DEFAULT_COMPILE_DEADLINE,
            on_compile: CompileNotice::default(),
            cache_dir: None,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            pooling: true,
            limits: LimitPolicy::default(),
        }
    }
}

impl EngineConfig {
    /// The wasmtime configuration Evo runs skills with. Public so that benchmarks and
    /// embedders can build a bare wasmtime engine configured identically.
    pub fn wasmtime_config(&self, fuel: bool) -> Config {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(fuel);
        config.parallel_compilation(true);
        if self.pooling {
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(self.pooling_config()));
        }
        config
    }

    fn pooling_config(&self) -> PoolingAllocationConfig {
        let calls = self.max_concurrent_calls.max(1);
        let calls = calls + NESTED_RESERVE + slots::long_lane(calls);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(calls)
            .total_core_instances(calls * CORE_INSTANCES_PER_CALL)
            .total_memories(calls * MEMORIES_PER_CALL)
            .total_tables(calls * TABLES_PER_CALL)
            .total_stacks(calls)
            .max_memories_per_component(MEMORIES_PER_CALL)
            .max_memory_size(
                usize::try_from(self.limits.max_memory_mib << 20).unwrap_or(usize::MAX),
            )
            .linear_memory_keep_resident(KEEP_RESIDENT_MEMORY)
            .table_keep_resident(KEEP_RESIDENT_SMALL)
            .async_stack_keep_resident(KEEP_RESIDENT_SMALL)
            .pagemap_scan(Enabled::Auto);
        pool
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
    fn new(config: &EngineConfig, fuel: bool) -> Result<Self> {
        let (engine, allocator) = match Engine::new(&config.wasmtime_config(fuel)) {
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
                let engine = Engine::new(&fallback.wasmtime_config(fuel))
                    .map_err(|e| Error::Engine(e.to_string()))?;
                (engine, Allocator::OnDemand)
            }
            Err(e) => return Err(Error::Engine(e.to_string())),
        };
        let mut linker = Linker::new(&engine);
        state::add_to_linker(&mut linker).map_err(|e| Error::Engine(e.to_string()))?;
        start_epoch_ticker(&engine);
        Ok(Self {
            key: ArtifactCache::engine_key(&engine),
            engine,
            linker,
            allocator,
        })
    }
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until the engine is dropped.
fn start_epoch_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("evo-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => return,
                }
            }
        });
    if let Err(e) = spawned {
        // Without a ticker, deadlines never fire; the tokio guard in `call` still
        // bounds each call's wall-clock time, so this degrades rather than hangs.
        tracing::error!(error = %e, "could not start the epoch ticker; deadlines rely on the async guard only");
    }
}

struct Inner {
    config: EngineConfig,
    plain: Flavor,
    fuel: OnceLock<Result<Flavor, String>>,
    cache: Option<ArtifactCache>,
    /// What was learnt from the component files loaded before (beside the cache).
    known: Option<known::KnownFiles>,
    /// The places for calls' instances: the pool, the nested reserve, the long lane.
    slots: slots::Slots,
    /// Stores alive now (see [`WasmEngine::live_instances`]).
    live: Arc<std::sync::atomic::AtomicUsize>,
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
        let plain = Flavor::new(&config, false)?;
        let cache = config.cache_dir.clone().map(ArtifactCache::new);
        let known = config
            .cache_dir
            .as_ref()
            .map(|dir| known::KnownFiles::new(dir.join("known")));
        let slots = slots::Slots::new(config.max_concurrent_calls);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                plain,
                fuel: OnceLock::new(),
                cache,
                known,
                slots,
                live: Arc::default(),
                calls: Arc::default(),
            }),
        })
    }

    /// Instances (stores) alive now: those of the calls running, and none once they
    /// have all ended. A number that stays above zero when nothing runs is a leak.
    pub fn live_instances(&self) -> usize {
        self.inner.live.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn slots(&self) -> &slots::Slots {
        &self.inner.slots
    }

    fn calls(&self) -> &Arc<std::sync::atomic::AtomicUsize> {
        &self.inner.calls
    }

    fn live(&self) -> state::Live {
        state::Live::new(&self.inner.live)
    }

    /// The allocator in use.
    pub fn allocator(&self) -> Allocator {
        self.inner.plain.allocator
    }

    /// The configuration the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    fn flavor(&self, fuel: bool) -> Result<&Flavor> {
        if !fuel {
            return Ok(&self.inner.plain);
        }
        self.inner
            .fuel
            .get_or_init(|| Flavor::new(&self.inner.config, true).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::Engine(e.clone()))
    }

    /// Loads a skill from a `.wasm` file; see [`WasmEngine::load_bytes`].
    ///
    /// With a compile cache, a file loaded before and unchanged since (its fingerprint:
    /// identity, size, times and sampled bytes) is not read at all: the skill is
    /// described from what was learnt then, and its compiled code is loaded on its first
    /// call ([`WasmSkill::prepare`]).
    pub async fn load_file(&self, path: &Path, policy: &Policy) -> Result<WasmSkill> {
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let Some(known) = &self.inner.known else {
            let bytes = read_file(path).await?;
            return self.load_bytes(&label, bytes, policy).await;
        };
        let path = std::path::absolute(path).map_err(Error::io_at(path))?;
        let fingerprint = known::Fingerprint::of(&path).map_err(Error::io_at(&path))?;
        if let Some(seen) = known.get(&path, &fingerprint)
            && let Ok(meta) = SkillMeta::from_json(&seen.manifest)
        {
            let info = ComponentInfo {
                api_version: seen.api_version,
                sdk: seen.sdk,
                manifest: None,
            };
            let limits = Limits::resolve(&meta, &self.inner.config.limits);
            let origin = call::Origin::File(path);
            return Ok(WasmSkill::new(
                self.clone(),
                meta,
                info,
                seen.digest,
                limits,
                policy,
                origin,
            ));
        }
        let bytes = read_file(&path).await?;
        let (skill, manifest) = self
            .load_described(&label, bytes, policy, Some(&path))
            .await?;
        known.put(
            &path,
            fingerprint,
            known::Known {
                digest: skill.digest().to_owned(),
                api_version: skill.info().api_version.clone(),
                sdk: skill.info().sdk.clone(),
                manifest,
            },
        );
        Ok(skill)
    }

    /// Loads a skill: checks the API version before compiling, reads the manifest (from
    /// its [`MANIFEST_SECTION`] without instantiating it, else from its `manifest`
    /// export), compiles it or loads it from the cache, and grants capabilities as
    /// requested ∩ `policy`.
    pub async fn load_bytes(
        &self,
        label: &str,
        bytes: Vec<u8>,
        policy: &Policy,
    ) -> Result<WasmSkill> {
        Ok(self.load_described(label, bytes, policy, None).await?.0)
    }

    /// The skill in `bytes` and its manifest's JSON. A component read from `file` that
    /// embeds its manifest is compiled on its first call (from the file, whose digest is
    /// checked then).
    async fn load_described(
        &self,
        label: &str,
        bytes: Vec<u8>,
        policy: &Policy,
        file: Option<&Path>,
    ) -> Result<(WasmSkill, String)> {
        self.check_size(label, bytes.len())?;
        let info = inspect(label, &bytes)?;
        let digest = hex::encode(Sha256::digest(&bytes));
        let bytes: Arc<[u8]> = bytes.into();
        let embedded = match &info.manifest {
            Some(json) => Some((json.clone(), parse_manifest(label, json)?)),
            None => None,
        };
        let (json, meta, prepared) = match embedded {
            Some((json, meta)) => (json, meta, None),
            None => {
                let plain = self
                    .prepare(label, &digest, Code::Bytes(bytes.clone()), false)
                    .await?;
                let (json, meta) = call::read_manifest(self, label, &plain.0).await?;
                (json, meta, Some(plain))
            }
        };
        let limits = Limits::resolve(&meta, &self.inner.config.limits);
        let fuel = limits.fuel.is_some();
        let origin = match (prepared, file) {
            (Some(plain), _) if !fuel => call::Origin::Ready(plain),
            (None, Some(file)) => call::Origin::File(file.to_owned()),
            _ => call::Origin::Ready(
                self.prepare(label, &digest, Code::Bytes(bytes), fuel)
                    .await?,
            ),
        };
        let skill = WasmSkill::new(
            self.clone(),
            meta,
            ComponentInfo {
                manifest: None,
                ..info
            },
            digest,
            limits,
            policy,
            origin,
        );
        Ok((skill, json))
    }

    fn check_size(&self, label: &str, len: usize) -> Result<()> {
        let max = self.inner.config.max_component_bytes;
        if len as u64 > max {
            return Err(Error::ComponentLimit {
                skill: label.to_owned(),
                message: format!(
                    "the component is {:.1} MB; components may be at most {} MiB, so it was not compiled",
                    len as f64 / 1e6,
                    max >> 20
                ),
            });
        }
        Ok(())
    }

    /// The manifest JSON that the component's `manifest` export returns (an instance
    /// with no grants, called once), validated; any embedded manifest is not read. This
    /// is what `evo skill build` embeds.
    pub async fn exported_manifest(&self, label: &str, bytes: Vec<u8>) -> Result<String> {
        self.check_size(label, bytes.len())?;
        inspect(label, &bytes)?;
        let digest = hex::encode(Sha256::digest(&bytes));
        let (pre, _) = self
            .prepare(label, &digest, Code::Bytes(bytes.into()), false)
            .await?;
        Ok(call::read_manifest(self, label, &pre).await?.0)
    }

    /// Refuses a component whose embedded manifest ([`MANIFEST_SECTION`]) says something
    /// other than its `manifest` export: a host reads the section without instantiating
    /// the component, so the two must tell the same story. The skill manager checks this
    /// at install, where the operator sees what a skill asks for.
    pub async fn verify_embedded_manifest(&self, label: &str, bytes: Vec<u8>) -> Result<()> {
        let Some(embedded) = inspect(label, &bytes)?.manifest else {
            return Ok(());
        };
        let exported = self.exported_manifest(label, bytes).await?;
        let parse = |json: &str| serde_json::from_str::<serde_json::Value>(json).ok();
        if parse(&embedded).is_some() && parse(&embedded) == parse(&exported) {
            return Ok(());
        }
        Err(Error::InvalidManifest {
            skill: label.to_owned(),
            problems: vec![crate::skill::meta::Problem {
                field: format!("({MANIFEST_SECTION})"),
                message: "the manifest embedded in the component is not the one its `manifest` export returns"
                    .to_owned(),
                fix: "build it again with `evo skill build`, which embeds the export's manifest"
                    .to_owned(),
            }],
        })
    }

    /// Compiles `code` (or loads it from the cache) for the flavor with or without
    /// fuel, and links it.
    async fn prepare(&self, label: &str, digest: &str, code: Code, fuel: bool) -> Result<Prepared> {
        let engine = self.clone();
        let digest = digest.to_owned();
        let label_owned = label.to_owned();
        let deadline = self.inner.config.compile_deadline;
        let cached = match &self.inner.cache {
            Some(cache) => cache.contains(self.flavor(fuel)?.key, &digest),
            None => false,
        };
        if !cached {
            self.inner.config.on_compile.tell(label, code.len());
        }
        // A cache hit maps the artifact and links it in about 0.1 ms: less than a trip
        // to the blocking pool and back would add. Anything else (a compile) goes there.
        if let (Some(cache), true) = (&self.inner.cache, cached) {
            let flavor = self.flavor(fuel)?;
            if let Some(component) = cache.load(&flavor.engine, flavor.key, &digest) {
                return link(flavor, label, component, LoadSource::Cache);
            }
        }
        let compile = tokio::task::spawn_blocking(move || {
            let flavor = engine.flavor(fuel)?;
            let bytes = || code.bytes(&digest);
            let compiled = match &engine.inner.cache {
                Some(cache) => cache.load_or_compile(&flavor.engine, flavor.key, &digest, bytes),
                None => bytes().and_then(|bytes| {
                    wasmtime::component::Component::new(&flavor.engine, &bytes[..])
                        .map(|c| (c, LoadSource::Compiled))
                }),
            };
            let (component, source) = compiled.map_err(|e| Error::InvalidComponent {
                skill: label_owned.clone(),
                reason: format!("{e:#}"),
            })?;
            link(flavor, &label_owned, component, source)
        });
        match tokio::time::timeout(deadline, compile).await {
            Ok(joined) => joined.map_err(|e| Error::Engine(e.to_string()))?,
            Err(_) => Err(Error::ComponentLimit {
                skill: label.to_owned(),
                message: format!(
                    "compiling the component took longer than the compile deadline ({} ms); the compilation finishes in the background into the compile cache, so a later load may succeed",
                    deadline.as_millis()
                ),
            }),
        }
    }
}

/// Links `component` to the host's imports, ready to instantiate.
fn link(
    flavor: &Flavor,
    label: &str,
    component: wasmtime::component::Component,
    source: LoadSource,
) -> Result<Prepared> {
    let instance_pre = flavor.linker.instantiate_pre(&component).map_err(|e| Error::NotASkill {
        skill: label.to_owned(),
        reason: format!("it imports something this host does not provide ({e:#}); skills may import only WASI p2 and evo:skill/context"),
    })?;
    let pre = bindings::PluginPre::new(instance_pre).map_err(|e| Error::NotASkill {
        skill: label.to_owned(),
        reason: format!("{e:#}"),
    })?;
    Ok((pre, source))
}

/// A compiled, linked component and where its code came from.
type Prepared = (bindings::PluginPre<HostState>, LoadSource);

/// A component's bytes, in hand or in a file loaded before.
enum Code {
    Bytes(Arc<[u8]>),
    File(PathBuf),
}

impl Code {
    fn len(&self) -> usize {
        match self {
            Self::Bytes(bytes) => bytes.len(),
            Self::File(path) => std::fs::metadata(path).map_or(0, |m| m.len() as usize),
        }
    }

    /// The bytes; a file's must still have the SHA-256 it was loaded with.
    fn bytes(&self, digest: &str) -> wasmtime::Result<Arc<[u8]>> {
        match self {
            Self::Bytes(bytes) => Ok(bytes.clone()),
            Self::File(path) => {
                let bytes = std::fs::read(path)
                    .map_err(|e| wasmtime::Error::msg(format!("{}: {e}", path.display())))?;
                if hex::encode(Sha256::digest(&bytes)) != digest {
                    return Err(wasmtime::Error::msg(format!(
                        "{} changed after it was loaded; load it again (restart the host, or `evo serve` picks it up at its next refresh)",
                        path.display()
                    )));
                }
                Ok(bytes.into())
            }
        }
    }
}

async fn read_file(path: &Path) -> Result<Vec<u8>> {
    tokio::task::spawn_blocking({
        let path = path.to_owned();
        move || std::fs::read(&path)
    })
    .await
    .map_err(|e| Error::Engine(e.to_string()))?
    .map_err(Error::io_at(path))
}

/// The manifest `json` of the component `label`, validated.
fn parse_manifest(label: &str, json: &str) -> Result<SkillMeta> {
    SkillMeta::from_json(json).map_err(|problems| Error::InvalidManifest {
        skill: label.to_owned(),
        problems,
    })
}
