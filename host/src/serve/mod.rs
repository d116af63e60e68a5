//! `evo serve`: the host's skills to any Model Context Protocol client, over stdio
//! ([`stdio`]) or streamable HTTP beside a plain HTTP API ([`http`]).
//!
//! Built on the official Rust SDK (`rmcp`). What a client sees:
//!
//! - **tools**: every skill [`ServeSettings::serves`] and that is not internal, with its
//!   input and output schemas and annotations derived from what it is granted; results
//!   as `structuredContent` plus a text block, failures as `isError` results whose text
//!   carries the code, the message (the validation report for bad input) and a hint;
//! - **resources and prompts**: instruction skills (SKILL.md) as `skill://NAME/PATH`
//!   resources, one per file, and as prompts;
//! - **a live catalogue**: [`Host::refresh`] runs every [`CATALOGUE_POLL`]; a change
//!   is announced with `notifications/tools/list_changed` (and the resources and
//!   prompts ones) on every session;
//! - **progress, cancellation, logs**: a call with a progress token gets a heartbeat
//!   and what the skill emits; `notifications/cancelled` drops the call (the Wasm guest
//!   is interrupted, a native script's process group killed); what the skill logs
//!   reaches the client at the level it asked for.
//!
//! Calls on one session run concurrently; [`Server`] bounds them across all sessions
//! (`serve.max_calls`) and waits, rather than spawning without limit.

// Logging is deprecated by SEP-2577 (2026-07-28), but it is how clients of every
// revision so far hear a server's log.
#![allow(
    deprecated,
    reason = "MCP logging, deprecated by SEP-2577, is still what clients use"
)]

pub mod http;
pub mod stdio;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, JsonObject,
    ListPromptsResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam, Prompt,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::capabilities::{Access, Grant, MemoryAccess};
use crate::config::ServeSettings;
use crate::engine::loader::StaticExecutor;
use crate::error::Error;
use crate::host::Host;
use crate::skill::events::{EventSink, RunEvent};
use crate::skill::executor::ExecutorKind;
use crate::skill::registry::RegisteredSkill;

/// How often the catalogue is checked for skills installed, removed or edited by
/// another process.
pub const CATALOGUE_POLL: Duration = Duration::from_millis(500);
/// Catalogue ticks between two writes of the call statistics (10 s).
pub const STATS_EVERY: u32 = 20;
/// Resources per `resources/list` page.
pub const RESOURCES_PAGE: usize = 100;
/// How often a session's change forwarder checks that the session is still open.
const SESSION_CHECK: Duration = Duration::from_secs(5);
/// How often a call with a progress token hears that it is still running.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// The largest resource file served whole.
const MAX_RESOURCE_BYTES: u64 = 16 << 20;

/// What every session of one `evo serve` shares.
#[derive(Debug)]
pub struct Shared {
    host: Host,
    settings: ServeSettings,
    /// One permit per call allowed to run at once.
    calls: Arc<Semaphore>,
    /// Cancelled when the server stops taking calls (SIGTERM, stdin closed).
    draining: CancellationToken,
    /// Cancelled when calls still running must stop now.
    abort: CancellationToken,
}

impl Shared {
    /// The shared state of a server over `host`, as `host`'s `[serve]` configures it.
    pub fn new(host: Host) -> Arc<Self> {
        let settings = host.config().serve.clone();
        Arc::new(Self {
            calls: Arc::new(Semaphore::new(settings.max_calls)),
            settings,
            host,
            draining: CancellationToken::new(),
            abort: CancellationToken::new(),
        })
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Stops taking calls; those running go on until [`Shared::abort`].
    pub fn drain(&self) {
        self.draining.cancel();
    }

    /// Stops the calls still running.
    pub fn abort(&self) {
        self.draining.cancel();
        self.abort.cancel();
    }

    /// Whether no call is running.
    pub fn idle(&self) -> bool {
        self.calls.available_permits() == self.settings.max_calls
    }

    /// Keeps the catalogue live until `stop`: refreshes it every [`CATALOGUE_POLL`]
    /// (which ticks [`Host::changes`] when something changed).
    /// Also adds the calls made so far to the statistics (`evo skill stats`) every
    /// [`STATS_EVERY`] ticks and when stopped.
    pub async fn watch_catalogue(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(CATALOGUE_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                () = stop.cancelled() => {
                    self.flush_stats().await;
                    return;
                }
                _ = tick.tick() => {}
            }
            if let Err(e) = self.host.refresh().await {
                tracing::warn!("could not rescan the skills: [{}] {e}", e.code());
            }
            ticks += 1;
            if ticks.is_multiple_of(STATS_EVERY) {
                self.flush_stats().await;
            }
        }
    }

    /// Adds the calls made so far to the statistics in the data directory.
    pub async fn flush_stats(&self) {
        let host = self.host.clone();
        let flushed = tokio::task::spawn_blocking(move || host.flush_stats()).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!("could not record statistics: [{}] {e}", e.code());
        }
    }

    /// The served skill called `name` (or an alias of it).
    pub fn served(&self, name: &str) -> Option<Arc<RegisteredSkill>> {
        self.host
            .skill(name)
            .filter(|skill| skill.is_exposed() && self.settings.serves(&skill.meta.name))
    }

    /// Every served skill, by name.
    pub fn served_skills(&self) -> Vec<Arc<RegisteredSkill>> {
        self.host
            .skills()
            .into_iter()
            .filter(|skill| skill.is_exposed() && self.settings.serves(&skill.meta.name))
            .collect()
    }

    /// Runs `name` with `input` for a client: waits for a free slot (or `cancelled`),
    /// sends what the skill emits and logs to `events`, and stops the call when
    /// `cancelled` fires or the server aborts.
    pub async fn call(
        &self,
        name: &str,
        input: Value,
        events: Option<EventSink>,
        cancelled: &CancellationToken,
    ) -> Result<Value, Refusal> {
        if self.draining.is_cancelled() {
            return Err(Refusal::ShuttingDown);
        }
        let permit = tokio::select! {
            permit = self.calls.clone().acquire_owned() => permit.map_err(|_| Refusal::ShuttingDown)?,
            () = cancelled.cancelled() => return Err(Refusal::Cancelled),
            () = self.draining.cancelled() => return Err(Refusal::ShuttingDown),
        };
        let context = self.host.context(events);
        let call = context.call_full(name, input);
        let result = tokio::select! {
            result = call => result.map(|out| out.output).map_err(Refusal::Failed),
            () = cancelled.cancelled() => Err(Refusal::Cancelled),
            () = self.abort.cancelled() => Err(Refusal::ShuttingDown),
        };
        drop(permit);
        result
    }
}

/// Why a call gave no result.
#[derive(Debug)]
pub enum Refusal {
    /// The skill failed.
    Failed(Error),
    /// The client cancelled it.
    Cancelled,
    /// The server is stopping.
    ShuttingDown,
}

/// One MCP session's handler (a new one per HTTP session; one for stdio).
#[derive(Debug, Clone)]
pub struct Server {
    shared: Arc<Shared>,
    /// The level the client set with `logging/setLevel` (protocol revisions before
    /// 2026-07-28); newer clients send it with each request.
    log_level: Arc<Mutex<Option<LoggingLevelRank>>>,
}

/// A logging level as a number: debug 0 … emergency 7.
type LoggingLevelRank = u8;

impl Server {
    /// A handler for one session.
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            log_level: Arc::new(Mutex::new(None)),
        }
    }

    fn tool(&self, skill: &RegisteredSkill) -> Tool {
        tool_of(skill, &self.shared.host)
    }

    /// The events of one call, sent to the client: what the skill logs as
    /// `notifications/message` (at or above `level`), and, with a progress token,
    /// what it emits as progress.
    fn events(
        &self,
        context: &RequestContext<RoleServer>,
        level: Option<LoggingLevelRank>,
        progress: Option<Progress>,
    ) -> Option<EventSink> {
        if level.is_none() && progress.is_none() {
            return None;
        }
        let peer = context.peer.clone();
        Some(EventSink::new(move |event| match event {
            RunEvent::Log {
                skill,
                level: skill_level,
                message,
                ..
            } => {
                let rank = rank_of_skill_level(skill_level);
                if level.is_some_and(|min| rank >= min) {
                    let peer = peer.clone();
                    let param = LoggingMessageNotificationParam::new(
                        logging_level(rank),
                        json!({ "skill": skill, "message": message }),
                    )
                    .with_logger(skill);
                    tokio::spawn(async move {
                        let _ = peer.notify_logging_message(param).await;
                    });
                }
            }
            RunEvent::Emit { skill, output, .. } => {
                if let Some(progress) = &progress {
                    progress.send(&peer, Some(format!("{skill}: {output}")));
                }
            }
            _ => {}
        }))
    }
}

/// A call's progress notifications: how long it has run, out of its deadline.
#[derive(Debug, Clone)]
struct Progress {
    token: rmcp::model::ProgressToken,
    started: Instant,
    total: Duration,
}

impl Progress {
    fn send(&self, peer: &rmcp::Peer<RoleServer>, message: Option<String>) {
        let elapsed = self.started.elapsed().min(self.total);
        let mut param =
            ProgressNotificationParam::new(self.token.clone(), elapsed.as_secs_f64() * 1000.0)
                .with_total(self.total.as_secs_f64() * 1000.0);
        param.message = Some(message.unwrap_or_else(|| {
            format!(
                "running for {:.1} s of at most {:.1} s",
                elapsed.as_secs_f64(),
                self.total.as_secs_f64()
            )
        }));
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }
}

fn rank_of(level: LoggingLevel) -> LoggingLevelRank {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn logging_level(rank: LoggingLevelRank) -> LoggingLevel {
    match rank {
        0 => LoggingLevel::Debug,
        1 => LoggingLevel::Info,
        2 => LoggingLevel::Notice,
        3 => LoggingLevel::Warning,
        4 => LoggingLevel::Error,
        5 => LoggingLevel::Critical,
        6 => LoggingLevel::Alert,
        _ => LoggingLevel::Emergency,
    }
}

/// A skill's `context.log` level on the MCP scale.
fn rank_of_skill_level(level: &str) -> LoggingLevelRank {
    match level {
        "trace" | "debug" => 0,
        "info" => 1,
        "warn" => 3,
        _ => 4,
    }
}

/// The MCP tool for `skill`: its schemas, and hints from what it is granted.
pub fn tool_of(skill: &RegisteredSkill, host: &Host) -> Tool {
    let meta = &skill.meta;
    let input = object_schema(&meta.input).unwrap_or_else(|| {
        let mut any = JsonObject::new();
        any.insert("type".into(), json!("object"));
        any
    });
    let mut tool = Tool::new(meta.name.clone(), meta.description.clone(), Arc::new(input));
    if let Some(output) = object_schema(&meta.output) {
        tool = tool.with_raw_output_schema(Arc::new(output));
    }
    tool.with_annotations(annotations(skill, host))
}

/// `schema` if it describes a JSON object (what MCP requires of tool schemas).
fn object_schema(schema: &Value) -> Option<JsonObject> {
    let object = schema.as_object()?;
    (object.get("type").and_then(Value::as_str) == Some("object")).then(|| object.clone())
}

/// What a client may assume of `skill`, from what it is granted: read-only unless it
/// can write a directory or memory or run programs; open-world when it reaches the
/// language model.
pub fn annotations(skill: &RegisteredSkill, host: &Host) -> ToolAnnotations {
    let grant = Grant::new(
        &skill.meta.capabilities,
        host.grants().for_skill(&skill.meta.name),
    );
    let writes = grant.dirs.iter().any(|d| d.access == Access::ReadWrite)
        || grant.memory == MemoryAccess::ReadWrite
        || MEMORY_WRITERS.contains(&skill.meta.name.as_str());
    let exec = skill.kind() == ExecutorKind::Native || skill.meta.name == "run_skill_script";
    let open_world = grant.llm || skill.kind() == ExecutorKind::Llm;
    ToolAnnotations::new()
        .read_only(!writes && !exec)
        .destructive(writes || exec)
        .open_world(open_world)
}

/// Built-in tools that write long-term memory.
const MEMORY_WRITERS: &[&str] = &["memory_store", "memory_forget"];

/// The text a model reads for a failed call: the code, the message (for bad input, the
/// validation report) and what to do.
pub fn failure_text(error: &Error) -> String {
    let mut text = format!("error[{}]: {error}", error.code());
    if let Some(hint) = error.hint() {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    text
}

/// A failed call as JSON: `{ code, error, hint, report? }`, the shape of the CLI's
/// `--json` errors.
pub fn failure_json(error: &Error) -> Value {
    let mut value = json!({
        "code": error.code(),
        "error": error.to_string(),
        "hint": error.hint(),
    });
    if let Error::Validation(report) = error {
        value["report"] = serde_json::to_value(report).unwrap_or(Value::Null);
    }
    value
}

/// The served instruction skills.
fn instruction_skills(shared: &Shared) -> Vec<Arc<RegisteredSkill>> {
    shared
        .served_skills()
        .into_iter()
        .filter(|s| s.kind() == ExecutorKind::Static)
        .collect()
}

fn files_of(skill: &RegisteredSkill) -> Option<&crate::skill::package::disclosure::SkillFiles> {
    skill
        .executor
        .as_any()
        .and_then(|any| any.downcast_ref::<StaticExecutor>())
        .map(StaticExecutor::files)
}

/// `skill://NAME/PATH` → (NAME, PATH).
fn parse_uri(uri: &str) -> Option<(&str, &str)> {
    uri.strip_prefix("skill://")?.split_once('/')
}

fn unknown_resource(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!("no resource {uri}; resources/list shows what this server has"),
        Some(json!({ "uri": uri })),
    )
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("evo", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Evo runs these tools in a sandbox: WebAssembly components with time, memory and output limits and only the access the operator granted. Instruction skills are resources (skill://NAME/SKILL.md) and prompts.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .shared
            .served_skills()
            .iter()
            .map(|s| self.tool(s))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.served(name).map(|s| self.tool(&s))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let Some(skill) = self.shared.served(name) else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}; tools/list shows the tools this server has"),
                Some(json!({ "tool": name })),
            ));
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        let level = context.meta.log_level().map(rank_of).or(*self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner));
        let progress = context.meta.get_progress_token().map(|token| Progress {
            token,
            started: Instant::now(),
            total: Duration::from_millis(skill.meta.timeout_ms.max(1)),
        });
        let events = self.events(&context, level, progress.clone());
        let heartbeat = progress.map(|progress| {
            let peer = context.peer.clone();
            let stop = context.ct.child_token();
            let guard = stop.clone().drop_guard();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(HEARTBEAT);
                tick.tick().await;
                progress.send(&peer, None);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        _ = tick.tick() => progress.send(&peer, None),
                    }
                }
            });
            guard
        });
        let result = self
            .shared
            .call(&skill.meta.name, input, events, &context.ct)
            .await;
        drop(heartbeat);
        match result {
            Ok(output) => {
                let text = serde_json::to_string(&output).unwrap_or_default();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                if output.is_object() {
                    result.structured_content = Some(output);
                }
                Ok(result.into())
            }
            Err(Refusal::Failed(error)) => {
                tracing::debug!(tool = name, code = error.code(), "call failed: {error}");
                Ok(CallToolResult::error(vec![ContentBlock::text(failure_text(&error))]).into())
            }
            Err(Refusal::Cancelled) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                "the call was cancelled",
                None,
            )),
            Err(Refusal::ShuttingDown) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                "the server is shutting down and takes no more calls; reconnect to a running one",
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                McpError::invalid_params(
                    format!("{cursor:?} is not a cursor this server gave"),
                    None,
                )
            })?,
        };
        let mut resources = Vec::new();
        let mut next = None;
        let mut index = 0usize;
        'skills: for skill in instruction_skills(&self.shared) {
            let Some(files) = files_of(&skill) else {
                continue;
            };
            for file in files.listing() {
                if index >= start {
                    if resources.len() == RESOURCES_PAGE {
                        next = Some(index.to_string());
                        break 'skills;
                    }
                    let mut resource = Resource::new(
                        format!("skill://{}/{}", skill.meta.name, file.path),
                        format!("{}/{}", skill.meta.name, file.path),
                    )
                    .with_mime_type(file.media_type)
                    .with_size(file.bytes);
                    if file.path == "SKILL.md" {
                        resource = resource.with_description(skill.meta.description.clone());
                    }
                    resources.push(resource);
                }
                index += 1;
            }
        }
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        let (name, path) = parse_uri(uri).ok_or_else(|| unknown_resource(uri))?;
        let skill = self
            .shared
            .served(name)
            .filter(|s| s.kind() == ExecutorKind::Static)
            .ok_or_else(|| unknown_resource(uri))?;
        let files = files_of(&skill).ok_or_else(|| unknown_resource(uri))?;
        // Checks the path stays inside the skill and names a file.
        let resource = files.resource(path).map_err(|_| unknown_resource(uri))?;
        if resource.bytes > MAX_RESOURCE_BYTES {
            return Err(McpError::invalid_params(
                format!(
                    "{uri} is {} bytes; the most served is {MAX_RESOURCE_BYTES}",
                    resource.bytes
                ),
                None,
            ));
        }
        let full = files.dir().join(&resource.path);
        let bytes = std::fs::read(&full)
            .map_err(|e| McpError::internal_error(format!("could not read {uri}: {e}"), None))?;
        let contents = match String::from_utf8(bytes) {
            Ok(text) if resource.kind == "text" => ResourceContents::text(text, uri),
            Ok(text) => ResourceContents::blob(base64_of(text.as_bytes()), uri),
            Err(e) => ResourceContents::blob(base64_of(e.as_bytes()), uri),
        }
        .with_mime_type(resource.media_type);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = instruction_skills(&self.shared)
            .into_iter()
            .map(|skill| {
                Prompt::new(
                    skill.meta.name.clone(),
                    Some(skill.meta.description.clone()),
                    None,
                )
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let name = request.name.as_str();
        let skill = self
            .shared
            .served(name)
            .filter(|s| s.kind() == ExecutorKind::Static)
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!("Unknown prompt: {name}; prompts/list shows the prompts"),
                    None,
                )
            })?;
        let files = files_of(&skill).ok_or_else(|| McpError::internal_error("no files", None))?;
        let instructions = files.instructions().map_err(|e| {
            McpError::internal_error(format!("could not read {name}'s SKILL.md: {e}"), None)
        })?;
        let mut text = format!(
            "Follow the instructions of the skill \"{}\" ({}). Its files are resources under skill://{}/.\n\n{}",
            skill.meta.name, skill.meta.description, skill.meta.name, instructions.body
        );
        if let Some(args) = request.arguments.filter(|a| !a.is_empty()) {
            text.push_str("\n\nTask input:\n");
            text.push_str(&Value::Object(args).to_string());
        }
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        result.description = Some(skill.meta.description.clone());
        Ok(result.into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(rank_of(request.level));
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.shared.host.changes();
        changes.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.shared.draining.cancelled() => return Ok(()),
                changed = changes.changed() => if changed.is_err() { return Ok(()) },
            }
            let sink = context.sink();
            let accepted = context.accepted();
            let sent = async {
                if accepted.tools_list_changed == Some(true) {
                    sink.notify_tool_list_changed().await?;
                }
                if accepted.resources_list_changed == Some(true) {
                    sink.notify_resource_list_changed().await?;
                }
                if accepted.prompts_list_changed == Some(true) {
                    sink.notify_prompt_list_changed().await?;
                }
                Ok::<(), rmcp::service::SubscriptionSendError>(())
            };
            if sent.await.is_err() {
                return Ok(());
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Clients of revisions before 2026-07-28 hear of changes on the session itself.
        let peer = context.peer;
        let mut changes = self.shared.host.changes();
        changes.mark_unchanged();
        let draining = self.shared.draining.clone();
        tokio::spawn(async move {
            // An HTTP session can end without a word; check now and then, so this task
            // goes with it.
            let mut check = tokio::time::interval(SESSION_CHECK);
            loop {
                tokio::select! {
                    () = draining.cancelled() => return,
                    _ = check.tick() => {
                        if peer.is_transport_closed() {
                            return;
                        }
                        continue;
                    }
                    changed = changes.changed() => if changed.is_err() { return },
                }
                if peer.notify_tool_list_changed().await.is_err()
                    || peer.notify_resource_list_changed().await.is_err()
                    || peer.notify_prompt_list_changed().await.is_err()
                {
                    return;
                }
            }
        });
    }
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
