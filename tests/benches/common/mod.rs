//! The floor a Wasm call is measured against: a bare wasmtime engine with Evo's
//! configuration (pooling, epoch interruption) instantiating the component from an
//! `InstancePre` and calling `execute` — no Evo code. Shared by the benches, with the
//! runtime they run calls on.

use evo_host::engine::wasm::EngineConfig;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// wasmtime's own bindings for the skill world, nothing of Evo's.
mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "evo:skill/plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

struct FloorState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
}

impl FloorState {
    /// A store with a default WASI context and a deadline far off, as every floor uses.
    fn store(engine: &Engine) -> Store<Self> {
        let state = Self {
            wasi: WasiCtx::builder().build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(engine, state);
        store.set_epoch_deadline(1_000);
        store
    }
}

impl WasiHttpView for FloorState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: wasmtime_wasi_http::default_hooks(),
        }
    }
}

impl WasiView for FloorState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl bindings::evo::skill::types::Host for FloorState {}

/// The skills measured never call the context; these exist only to satisfy the linker.
impl bindings::evo::skill::context::Host for FloorState {
    async fn call(
        &mut self,
        _: String,
        _: String,
    ) -> Result<String, bindings::evo::skill::types::SkillError> {
        Err(bindings::evo::skill::types::SkillError::Denied(
            String::new(),
        ))
    }
    async fn llm(
        &mut self,
        _: bindings::evo::skill::types::LlmRequest,
    ) -> Result<String, bindings::evo::skill::types::SkillError> {
        Err(bindings::evo::skill::types::SkillError::Denied(
            String::new(),
        ))
    }
    async fn memory_search(
        &mut self,
        _: String,
        _: u32,
    ) -> Result<
        Vec<bindings::evo::skill::types::MemoryEntry>,
        bindings::evo::skill::types::SkillError,
    > {
        Err(bindings::evo::skill::types::SkillError::Denied(
            String::new(),
        ))
    }
    async fn memory_store(
        &mut self,
        _: String,
        _: Option<String>,
    ) -> Result<bindings::evo::skill::types::StoreOutcome, bindings::evo::skill::types::SkillError>
    {
        Err(bindings::evo::skill::types::SkillError::Denied(
            String::new(),
        ))
    }
    async fn memory_forget(
        &mut self,
        _: String,
    ) -> Result<u32, bindings::evo::skill::types::SkillError> {
        Err(bindings::evo::skill::types::SkillError::Denied(
            String::new(),
        ))
    }
    async fn memory_query(
        &mut self,
        _: bindings::evo::skill::types::MemoryRequest,
    ) -> Result<
        Vec<bindings::evo::skill::types::MemoryEntry>,
        bindings::evo::skill::types::SkillError,
    > {
        Err(bindings::evo::skill::types::SkillError::Denied(
            String::new(),
        ))
    }
    async fn scratch_get(&mut self, _: String) -> Option<String> {
        None
    }
    async fn scratch_set(&mut self, _: String, _: String) {}
    async fn emit(&mut self, _: String) {}
    async fn log(&mut self, _: bindings::evo::skill::types::LogLevel, _: String) {}
    async fn env(&mut self) -> String {
        "{}".to_owned()
    }
}

/// A bare wasmtime engine instantiating one component and calling it with one input.
#[allow(dead_code, reason = "the plain-component bench uses only TypedFloor")]
pub struct Floor {
    engine: Engine,
    linker: Linker<FloorState>,
    pre: bindings::PluginPre<FloorState>,
    input: String,
}

#[allow(dead_code, reason = "the plain-component bench uses only TypedFloor")]
impl Floor {
    /// The floor for the component `bytes`, called with `input`, on an engine of the
    /// same configuration as Evo's.
    pub fn new(config: &EngineConfig, bytes: &[u8], input: &str) -> Self {
        let engine = Engine::new(&config.wasmtime_config(false)).unwrap();
        let component = Component::new(&engine, bytes).unwrap();
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
        // ComponentizeJS components import wasi:http (for `fetch`), as Evo links it.
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).unwrap();
        bindings::evo::skill::context::add_to_linker::<FloorState, HasSelf<FloorState>>(
            &mut linker,
            |s| s,
        )
        .unwrap();
        let pre = bindings::PluginPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
        Self {
            engine,
            linker,
            pre,
            input: input.to_owned(),
        }
    }

    /// The engine, of Evo's configuration.
    #[allow(dead_code, reason = "not every bench that includes the floor loads")]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Links `component` to the imports Evo provides, ready to instantiate: what any
    /// host pays once per component before its first call.
    #[allow(dead_code, reason = "not every bench that includes the floor loads")]
    pub fn link(&self, component: &Component) {
        let pre = self.linker.instantiate_pre(component).unwrap();
        bindings::PluginPre::new(pre).unwrap();
    }

    fn store(&self) -> Store<FloorState> {
        FloorState::store(&self.engine)
    }

    /// A fresh instance and no call: what instantiation alone costs.
    #[allow(
        dead_code,
        reason = "not every bench that includes the floor measures this"
    )]
    pub async fn instantiate(&self) {
        let mut store = self.store();
        self.pre.instantiate_async(&mut store).await.unwrap();
    }

    /// A fresh instance, one call: the output JSON.
    pub async fn call(&self) -> String {
        let mut store = self.store();
        let plugin = self.pre.instantiate_async(&mut store).await.unwrap();
        let output = plugin
            .evo_skill_skill()
            .call_execute(&mut store, &self.input)
            .await
            .unwrap()
            .unwrap();
        output.output
    }

    /// One instance kept across calls: what a call would cost if instances were reused
    /// (Evo gives every call a fresh one).
    pub async fn warm(&self) -> WarmFloor {
        let mut store = self.store();
        let plugin = self.pre.instantiate_async(&mut store).await.unwrap();
        WarmFloor {
            store,
            plugin,
            input: self.input.clone(),
        }
    }
}

/// An instance of a [`Floor`] called again and again.
#[allow(dead_code, reason = "only the languages bench measures reuse")]
pub struct WarmFloor {
    store: Store<FloorState>,
    plugin: bindings::Plugin,
    input: String,
}

#[allow(dead_code, reason = "only the languages bench measures reuse")]
impl WarmFloor {
    /// A further call on the same instance: the output JSON.
    pub async fn call(&mut self) -> String {
        self.plugin
            .evo_skill_skill()
            .call_execute(&mut self.store, &self.input)
            .await
            .unwrap()
            .unwrap()
            .output
    }
}

/// A current-thread runtime, as a CLI call runs on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The floor of a plain component's call: a bare wasmtime engine of Evo's configuration
/// linking WASI, instantiating the component from an `InstancePre` and calling one
/// function through a `TypedFunc` — the types known at compile time, so no JSON and no
/// dynamic values.
#[allow(dead_code, reason = "only the plain-component bench uses it")]
pub struct TypedFloor {
    engine: Engine,
    pre: wasmtime::component::InstancePre<FloorState>,
    index: wasmtime::component::ComponentExportIndex,
}

#[allow(dead_code, reason = "only the plain-component bench uses it")]
impl TypedFloor {
    /// The floor for `function` (of `interface`, or the world's own) of the component
    /// `bytes`.
    pub fn new(
        config: &EngineConfig,
        bytes: &[u8],
        interface: Option<&str>,
        function: &str,
    ) -> Self {
        let engine = Engine::new(&config.wasmtime_config(false)).unwrap();
        let component = Component::new(&engine, bytes).unwrap();
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
        let pre = linker.instantiate_pre(&component).unwrap();
        let instance = interface.map(|name| component.get_export_index(None, name).unwrap());
        let index = component
            .get_export_index(instance.as_ref(), function)
            .unwrap();
        Self { engine, pre, index }
    }

    /// A fresh instance, one typed call.
    pub async fn call<P, R>(&self, params: P) -> R
    where
        P: wasmtime::component::ComponentNamedList + wasmtime::component::Lower + Send + Sync,
        R: wasmtime::component::ComponentNamedList
            + wasmtime::component::Lift
            + Send
            + Sync
            + 'static,
    {
        let mut store = FloorState::store(&self.engine);
        let instance = self.pre.instantiate_async(&mut store).await.unwrap();
        let func = instance
            .get_typed_func::<P, R>(&mut store, &self.index)
            .unwrap();
        func.call_async(&mut store, params).await.unwrap()
    }
}
