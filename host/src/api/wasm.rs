//! WebAssembly components: the engine that compiles and caches them ([`WasmEngine`]),
//! an Evo skill component ([`WasmSkill`]) and a plain component whose exports are tools
//! ([`PlainComponent`]), and the limits a call runs under ([`WasmLimits`]).

pub use crate::engine::wasm::{
    Allocator, CompileNotice, ComponentInfo, DEFAULT_COMPILE_DEADLINE, DEFAULT_MAX_COMPONENT_BYTES,
    DEFAULT_MAX_CONCURRENT_CALLS, DEFAULT_PARKED_INSTANCES, EngineConfig, LimitPolicy,
    Limits as WasmLimits, LoadSource, PlainComponent, PlainExecutor,
    SEPARATOR as COMPONENT_SEPARATOR, SkillOutcome, Unusable, WasmEngine, WasmExecutor, WasmFile,
    WasmSkill, component_name,
};
