//! The per-call store state and the host side of the WIT `context` interface.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::evo::skill::{context, types};
use super::limits::{HOST_CALL_TIMEOUT, MAX_CHATTER_BYTES, MAX_LOG_AND_EVENT_CALLS, StoreLimiter};
use crate::capabilities::{Grant, MemoryAccess};
use crate::error::FailureKind;
use crate::skill::exchange::{
    ContextError, LlmRequest, MAX_SCRATCH_VALUE_BYTES, MemoryFilter, MemoryHit,
};
use crate::skill::kernel::SkillContext;
use crate::skill::observe::events::RunEvent;

/// Everything a store holds for one call.
pub struct HostState {
    pub(super) wasi: WasiCtx,
    pub(super) http: WasiHttpCtx,
    /// The checks of the call's outbound requests (see [`super::http`]).
    pub(super) outbound: super::http::Outbound,
    pub(super) table: ResourceTable,
    pub(super) limiter: StoreLimiter,
    pub(super) skill: Arc<str>,
    pub(super) calls: Arc<[String]>,
    pub(super) grant: Arc<Grant>,
    /// The calling frame: scratch, events, skill calls, model and memory.
    pub(super) ctx: SkillContext,
    pub(super) chatter: u32,
    /// Set by every host call (WASI, `wasi:http`, `wasi:config`, the context): whether
    /// the guest reached the host, as an instance made ahead must not have (see
    /// [`super::parked`]).
    pub(super) reached: bool,
    /// Counts this store in [`WasmEngine::live_instances`](super::WasmEngine::live_instances).
    pub(super) _live: Live,
}

/// One live store, counted from its creation to its drop; a store that may run guest
/// code also keeps the epoch ticking.
#[derive(Debug)]
pub(super) struct Live {
    count: Arc<std::sync::atomic::AtomicUsize>,
    _awake: Option<super::ticker::Awake>,
}

impl Live {
    pub(super) fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            count: count.clone(),
            _awake: None,
        }
    }

    /// The store may run guest code: the epoch ticks while it lives.
    pub(super) fn running(mut self, awake: super::ticker::Awake) -> Self {
        self._awake = Some(awake);
        self
    }

    /// Its store runs no more guest code (its call ended): the epoch need not tick for
    /// it while it waits to be dropped.
    pub(super) fn stop_running(&mut self) {
        self._awake = None;
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.count
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl std::fmt::Debug for HostState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostState")
            .field("skill", &self.skill)
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.reached = true;
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl super::config_store::HasConfig for HostState {
    fn config_values(&mut self) -> &std::collections::BTreeMap<String, String> {
        self.reached = true;
        &self.grant.config
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.reached = true;
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}

/// Adds WASI p2, `wasi:http` (every request checked against the grant), `wasi:config`
/// (the granted values, every published version) and the current `context` interface
/// to `linker`.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    super::http::add_to_linker(linker)?;
    super::config_store::add_to_linker(linker)?;
    context::add_to_linker::<HostState, HasSelf<HostState>>(linker, reached)?;
    Ok(())
}

/// The state a context call works on, marked as reached.
pub(super) fn reached(state: &mut HostState) -> &mut HostState {
    state.reached = true;
    state
}

impl From<ContextError> for types::SkillError {
    fn from(error: ContextError) -> Self {
        match error.kind {
            FailureKind::InvalidInput => Self::InvalidInput(error.message),
            FailureKind::NotFound => Self::NotFound(error.message),
            FailureKind::Denied => Self::Denied(error.message),
            FailureKind::Timeout => Self::Timeout(error.message),
            FailureKind::Failed | FailureKind::Unavailable => Self::Failed(error.message),
        }
    }
}

impl HostState {
    fn memory(&self, needed: MemoryAccess) -> Result<(), types::SkillError> {
        self.grant
            .check_memory(&self.skill, needed)
            .map_err(types::SkillError::Denied)
    }

    /// Counts a `log`/`emit` call; false once the per-call budget is spent.
    fn chatter_allowed(&mut self) -> bool {
        self.chatter += 1;
        if self.chatter == MAX_LOG_AND_EVENT_CALLS + 1 {
            tracing::warn!(skill = %self.skill, "more than {MAX_LOG_AND_EVENT_CALLS} log/emit calls; dropping the rest");
        }
        self.chatter <= MAX_LOG_AND_EVENT_CALLS
    }
}

/// A memory hit as the contract gives it.
fn entry(hit: MemoryHit) -> types::MemoryEntry {
    types::MemoryEntry {
        id: hit.id,
        text: hit.text,
        score: hit.score,
        category: hit.category,
        created_at: hit.created_at,
        source: hit.source,
        superseded_by: hit.superseded_by,
    }
}

/// Runs a backend request under [`HOST_CALL_TIMEOUT`].
async fn bounded<T>(
    what: &str,
    future: impl Future<Output = Result<T, ContextError>>,
) -> Result<T, types::SkillError> {
    match tokio::time::timeout(HOST_CALL_TIMEOUT, future).await {
        Ok(result) => result.map_err(Into::into),
        Err(_) => Err(types::SkillError::Timeout(format!(
            "{what} did not answer within {} s",
            Duration::as_secs(&HOST_CALL_TIMEOUT)
        ))),
    }
}

impl types::Host for HostState {}

impl context::Host for HostState {
    async fn call(&mut self, skill: String, input: String) -> Result<String, types::SkillError> {
        if !self.calls.contains(&skill) {
            return Err(types::SkillError::Denied(format!(
                "{} may not call {skill:?}: add it to the `calls` list of its manifest",
                self.skill
            )));
        }
        let input = self.outbound.scrub.text("input to another skill", input);
        let ctx = self.ctx.clone();
        let what = format!("skill {skill:?}");
        bounded(&what, async move { ctx.guest_call(skill, input).await }).await
    }

    async fn llm(&mut self, request: types::LlmRequest) -> Result<String, types::SkillError> {
        self.grant
            .check_llm(&self.skill)
            .map_err(types::SkillError::Denied)?;
        let ctx = self.ctx.clone();
        let request = LlmRequest {
            caller: self.skill.to_string(),
            system: request
                .system
                .map(|s| self.outbound.scrub.text("model prompt", s)),
            prompt: self.outbound.scrub.text("model prompt", request.prompt),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            // Held to `[llm] models` by the kernel; none: the run's, or the configured.
            model: request.model,
            output_schema: None,
        };
        bounded(
            "the language model",
            async move { ctx.guest_llm(request).await },
        )
        .await
    }

    async fn memory_search(
        &mut self,
        query: String,
        limit: u32,
    ) -> Result<Vec<types::MemoryEntry>, types::SkillError> {
        self.memory(MemoryAccess::Read)?;
        let ctx = self.ctx.clone();
        let hits = bounded("memory search", async move {
            ctx.guest_memory_search(query, limit).await
        })
        .await?;
        Ok(hits.into_iter().map(entry).collect())
    }

    async fn memory_query(
        &mut self,
        query: types::MemoryRequest,
    ) -> Result<Vec<types::MemoryEntry>, types::SkillError> {
        self.memory(MemoryAccess::Read)?;
        let ctx = self.ctx.clone();
        let filter = MemoryFilter {
            sources: query.sources,
            since: query.since,
            until: query.until,
            include_superseded: query.include_superseded,
        };
        let hits = bounded("memory search", async move {
            ctx.guest_memory_query(query.query, query.limit, filter)
                .await
        })
        .await?;
        Ok(hits.into_iter().map(entry).collect())
    }

    async fn memory_store(
        &mut self,
        text: String,
        category: Option<String>,
    ) -> Result<types::StoreOutcome, types::SkillError> {
        self.memory(MemoryAccess::ReadWrite)?;
        let text = self.outbound.scrub.text("memory write", text);
        let ctx = self.ctx.clone();
        let outcome = bounded("memory store", async move {
            ctx.guest_memory_store(text, category).await
        })
        .await?;
        Ok(types::StoreOutcome {
            stored: outcome.stored,
            reason: outcome.reason,
        })
    }

    async fn memory_forget(&mut self, query: String) -> Result<u32, types::SkillError> {
        self.memory(MemoryAccess::ReadWrite)?;
        let ctx = self.ctx.clone();
        bounded("memory forget", async move {
            ctx.guest_memory_forget(query).await
        })
        .await
    }

    async fn scratch_get(&mut self, key: String) -> Option<String> {
        self.ctx.scratch().get(&key).map(|v| v.to_string())
    }

    async fn scratch_set(&mut self, key: String, value: String) {
        if value.len() > MAX_SCRATCH_VALUE_BYTES {
            tracing::warn!(skill = %self.skill, %key, bytes = value.len(), "scratch value larger than {MAX_SCRATCH_VALUE_BYTES} bytes dropped");
            return;
        }
        let value = self.outbound.scrub.text("scratch value", value);
        let value = match serde_json::from_str(&value) {
            Ok(value) => value,
            Err(e) => {
                tracing::warn!(skill = %self.skill, %key, error = %e, "scratch value is not JSON; dropped");
                return;
            }
        };
        if let Err(reason) = self.ctx.scratch().set(&key, value) {
            tracing::warn!(skill = %self.skill, %key, "scratch write dropped: {reason}");
        }
    }

    async fn emit(&mut self, event: String) {
        if !self.chatter_allowed() {
            return;
        }
        if event.len() > MAX_CHATTER_BYTES {
            tracing::warn!(skill = %self.skill, bytes = event.len(), "emitted event larger than {MAX_CHATTER_BYTES} bytes; dropped");
            return;
        }
        let event = self.outbound.scrub.text("event", event);
        match serde_json::from_str(&event) {
            Ok(event) => self.ctx.emit(RunEvent::emitted(&self.skill, event)),
            Err(e) => {
                tracing::warn!(skill = %self.skill, error = %e, "emitted event is not JSON; dropped")
            }
        }
    }

    async fn env(&mut self) -> String {
        self.ctx.env().to_string()
    }

    async fn log(&mut self, level: types::LogLevel, message: String) {
        if !self.chatter_allowed() {
            return;
        }
        let message = self
            .outbound
            .scrub
            .text("log", super::limits::cut(message, MAX_CHATTER_BYTES));
        let skill = &*self.skill;
        let name = match level {
            types::LogLevel::Trace => {
                tracing::trace!(target: "evo::skill", skill, "{message}");
                "trace"
            }
            types::LogLevel::Debug => {
                tracing::debug!(target: "evo::skill", skill, "{message}");
                "debug"
            }
            types::LogLevel::Info => {
                tracing::info!(target: "evo::skill", skill, "{message}");
                "info"
            }
            types::LogLevel::Warn => {
                tracing::warn!(target: "evo::skill", skill, "{message}");
                "warn"
            }
            types::LogLevel::Error => {
                tracing::error!(target: "evo::skill", skill, "{message}");
                "error"
            }
        };
        // Whoever runs the call (an MCP client, say) may want the skill's log too.
        self.ctx.emit(RunEvent::logged(skill, name, message));
    }
}
