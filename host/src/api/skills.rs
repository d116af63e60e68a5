//! Skills as the host knows them: what a skill declares ([`SkillMeta`]), how it is
//! registered and run ([`RegisteredSkill`], [`Executor`]), what a run gives back
//! ([`SkillOutput`], [`StepTrace`]), its files and permissions, and the record of its
//! calls (history, statistics, metrics).

pub use crate::engine::loader::StaticExecutor;
pub use crate::skill::context::{
    ContextError, LlmRequest, MemoryFilter, MemoryHit, Scratch, StoreOutcome,
};
pub use crate::skill::events::EventKind;
pub use crate::skill::executor::{
    Executor, ExecutorKind, MemoryWrite, MemoryWriteOutcome, SkillOutput, StepTrace, WriteStatus,
};
pub use crate::skill::history::{
    Filter as CallFilter, Record as CallRecord, SLOW_CALL_MS, Status as CallStatus, ToolStats,
    suggestions as call_suggestions,
};
pub use crate::skill::kernel::Memory;
pub use crate::skill::meta::{Example, Mode, PipelineStep, RawMeta, ServiceSpec, SkillMeta};
#[cfg(feature = "metrics")]
pub use crate::skill::metrics::{Metrics, Scraped};
pub use crate::skill::package::disclosure::{
    CodeBlock, Instructions, Listed, MAX_TEXT_RESOURCE, Resource, ResourceRef, Section, SkillFiles,
};
pub use crate::skill::permission::{Locale, Permission, Profile};
pub use crate::skill::registry::{RegisteredSkill, SkillRegistry, ToolDefinition};
pub use crate::skill::stats::SkillStats;
pub use crate::skill::validate::Schema;
