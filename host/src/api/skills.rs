//! Skills as the host knows them: what a skill declares ([`SkillMeta`]), how it is
//! registered and run ([`RegisteredSkill`], [`Executor`]), what a run gives back
//! ([`SkillOutput`], [`StepTrace`]), its files and permissions, and the record of its
//! calls (history, statistics, metrics).

pub use crate::engine::loader::StaticExecutor;
pub use crate::skill::exchange::{
    ContextError, LlmRequest, MemoryFilter, MemoryHit, Scratch, StoreOutcome,
};
pub use crate::skill::kernel::Memory;
pub use crate::skill::kernel::executor::{
    Executor, ExecutorKind, MemoryWrite, MemoryWriteOutcome, SkillOutput, StepTrace, WriteStatus,
};
pub use crate::skill::kernel::table::{RegisteredSkill, SkillTable, ToolDefinition};
pub use crate::skill::manifest::package::disclosure::{
    CodeBlock, Instructions, Listed, MAX_TEXT_RESOURCE, Resource, ResourceRef, Section, SkillFiles,
};
pub use crate::skill::manifest::{Example, Mode, PipelineStep, RawMeta, ServiceSpec, SkillMeta};
pub use crate::skill::observe::events::EventKind;
pub use crate::skill::observe::history::{
    Filter as CallFilter, Record as CallRecord, SLOW_CALL_MS, Status as CallStatus, ToolStats,
    suggestions as call_suggestions,
};
#[cfg(feature = "metrics")]
pub use crate::skill::observe::metrics::{Metrics, Scraped};
pub use crate::skill::observe::stats::SkillStats;
pub use crate::skill::permission::{Locale, Permission, Profile};
pub use crate::skill::validate::Schema;
