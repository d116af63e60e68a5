//! One MCP session's handler: tools, resources, prompts, subscriptions, logging.

// Logging is deprecated by SEP-2577 (2026-07-28), but it is how clients of every
// revision so far hear a server's log.
#![allow(
    deprecated,
    reason = "MCP logging, deprecated by SEP-2577, is still what clients use"
)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InputRequiredResult, InputResponses, JsonObject, ListPromptsResult, ListResourcesResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, Prompt, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, Role, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::skill::kernel::confirm::Confirmer;
use crate::skill::kernel::executor::ExecutorKind;
use crate::skill::kernel::executor::SkillOutput;
use crate::skill::kernel::table::RegisteredSkill;
use crate::skill::observe::events::EventSink;

use super::confirm::{self, AskPeer, Asker, Call, Leg, Suspended};
use super::notify::{self, LoggingLevelRank, Progress, rank_of};
use super::refusal::SHUTTING_DOWN;
use super::resources::{files_of, instruction_skills};
use super::signin::Scope;
use super::tool::{failure_text, structured, tool_of, trail};
use super::{Refusal, Shared};
use crate::error::Error;
use tokio_util::sync::CancellationToken;

/// How often a session's change forwarder checks that the session is still open.
const SESSION_CHECK: Duration = Duration::from_secs(5);
/// How often a call with a progress token hears that it is still running.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// One MCP session's handler (a new one per HTTP session; one for stdio).
#[derive(Debug, Clone)]
pub struct Server {
    shared: Arc<Shared>,
    /// The level the client set with `logging/setLevel` (protocol revisions before
    /// 2026-07-28); newer clients send it with each request.
    log_level: Arc<Mutex<Option<LoggingLevelRank>>>,
}

impl Server {
    /// A handler for one session.
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            log_level: Arc::new(Mutex::new(None)),
        }
    }

    /// Runs the tool `name` for one `tools/call`, its dangerous calls confirmed by
    /// whoever can answer (see [`confirm`](super::confirm)): a retry carrying
    /// `request_state` resumes the call that asked, with the answer in `responses`.
    /// `make` makes the work, given who answers its questions (`None`: nobody can, the
    /// host's policy does) and what cancels it.
    async fn run(
        &self,
        name: &str,
        request_state: Option<&str>,
        responses: Option<&InputResponses>,
        input: &Value,
        context: &RequestContext<RoleServer>,
        make: impl FnOnce(Option<Arc<dyn Confirmer>>, CancellationToken) -> Call,
    ) -> Result<Result<SkillOutput, Refusal>, Ask> {
        let suspended = match (request_state, confirm::asker(context)) {
            (Some(state), _) => self
                .shared
                .pending
                .resume(state, name, input, responses)
                .map_err(Ask::Invalid)?,
            (None, Asker::InputRequired) => Suspended::start_with(name, input.clone(), |asks| {
                // Stopped by being dropped (a cancelled request, an abandoned question).
                make(Some(asks), CancellationToken::new())
            }),
            (None, Asker::Peer(peer)) => {
                let confirmer: Arc<dyn Confirmer> = Arc::new(AskPeer(peer));
                return Ok(make(Some(confirmer), context.ct.clone()).await);
            }
            (None, Asker::Nobody) => return Ok(make(None, context.ct.clone()).await),
        };
        match suspended.drive(&self.shared.pending, &context.ct).await {
            Leg::Done(result) => Ok(result),
            Leg::Asks(result) => Err(Ask::Client(result)),
        }
    }

    /// [`Server::run`] for skill `name`.
    async fn run_skill(
        &self,
        name: &str,
        request: &CallToolRequestParams,
        input: Value,
        events: Option<EventSink>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<SkillOutput, Refusal>, Ask> {
        let (shared, skill, arguments) = (self.shared.clone(), name.to_owned(), input.clone());
        self.run(
            name,
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
            &input,
            context,
            move |confirmer, cancelled| {
                Box::pin(async move {
                    shared
                        .call(&skill, arguments, events, confirmer, &cancelled)
                        .await
                })
            },
        )
        .await
    }

    /// Whether this request's session gets the management tools: the operator enabled
    /// them, and over HTTP the request carries the admin token (over stdio the client
    /// is the local process that started the server).
    fn may_manage(&self, context: &RequestContext<RoleServer>) -> bool {
        self.shared.settings.manage
            && context
                .extensions
                .get::<axum::http::request::Parts>()
                .is_none_or(|parts| parts.extensions.get::<Scope>() == Some(&Scope::Admin))
    }

    /// A call of a management tool (`--manage`), its changes confirmed by the user.
    async fn manage(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let input = Value::Object(request.arguments.clone().unwrap_or_default());
        let client = context
            .peer
            .peer_info()
            .map_or_else(|| "client".to_owned(), |info| info.client_info.name.clone());
        let (shared, tool, arguments) = (self.shared.clone(), name.clone(), input.clone());
        let result = self
            .run(
                &name,
                request.request_state.as_deref(),
                request.input_responses.as_ref(),
                &input,
                context,
                move |confirmer, _| {
                    Box::pin(super::manage_tools::run(
                        shared, tool, arguments, client, confirmer,
                    ))
                },
            )
            .await;
        match result {
            Ok(Ok(out)) => {
                let text = serde_json::to_string(&out.output).unwrap_or_default();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(json!({ "result": out.output }));
                Ok(result.into())
            }
            Ok(Err(Refusal::Failed(error))) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(failure_text(&error))]).into())
            }
            Ok(Err(_)) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                "the change was cancelled, or the server is stopping",
                None,
            )),
            Err(Ask::Client(result)) => Ok((*result).into()),
            Err(Ask::Invalid(error)) => Err(error),
        }
    }

    fn tool(&self, skill: &RegisteredSkill) -> Tool {
        tool_of(skill, &self.shared.host)
    }
}

/// Why [`Server::run`] gave no result.
enum Ask {
    /// The call asks the client a question: the input-required result to send.
    Client(Box<InputRequiredResult>),
    /// The retry was not one the server can take.
    Invalid(McpError),
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools: Vec<Tool> = self
            .shared
            .served_skills()
            .iter()
            .map(|s| self.tool(s))
            .collect();
        if self.may_manage(&context) {
            tools.extend(super::manage_tools::tools());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.shared.settings.manage && super::manage_tools::is_tool(name) {
            return super::manage_tools::tools()
                .into_iter()
                .find(|t| t.name == name);
        }
        self.shared.served(name).map(|s| self.tool(&s))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        if self.shared.settings.manage && super::manage_tools::is_tool(name) {
            if !self.may_manage(&context) {
                let error = Error::Blocked {
                    tool: name.to_owned(),
                    message: "over HTTP, the management tools need the admin token (evo serve --admin-token); the token sent with this request only calls skills".into(),
                    reason: crate::error::BlockReason::Profile,
                };
                return Ok(
                    CallToolResult::error(vec![ContentBlock::text(failure_text(&error))]).into(),
                );
            }
            return self.manage(&request, &context).await;
        }
        let Some(skill) = self.shared.served(name) else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}; tools/list shows the tools this server has"),
                // The protocol's error for an unknown tool, with the code the CLI and the
                // HTTP API answer with.
                Some(json!({ "tool": name, "code": "SKILL_NOT_FOUND" })),
            ));
        };
        let input = Value::Object(request.arguments.clone().unwrap_or_default());
        let level = context.meta.log_level().map(rank_of).or(*self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner));
        let progress = context.meta.get_progress_token().map(|token| Progress {
            token,
            started: Instant::now(),
            total: Duration::from_millis(skill.meta.timeout_ms.max(1)),
        });
        let events = notify::events(&context, level, progress.clone());
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
        let result = match self
            .run_skill(&skill.meta.name, &request, input, events, &context)
            .await
        {
            Ok(result) => result,
            Err(Ask::Client(result)) => {
                drop(heartbeat);
                return Ok((*result).into());
            }
            Err(Ask::Invalid(error)) => return Err(error),
        };
        drop(heartbeat);
        match result {
            Ok(out) => {
                let text = serde_json::to_string(&out.output).unwrap_or_default();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = structured(&skill, out.output);
                Ok(with_trail(result, trail(&[], &out.memory)).into())
            }
            Err(Refusal::Failed(error)) => {
                tracing::debug!(tool = name, code = error.code(), "call failed: {error}");
                let result = CallToolResult::error(vec![ContentBlock::text(failure_text(&error))]);
                Ok(with_trail(result, trail(error.steps(), &[])).into())
            }
            Err(Refusal::Busy { waiting }) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the server is busy: every slot is taken and {waiting} calls already wait for one; try again in a moment"
                ),
                None,
            )),
            Err(Refusal::Cancelled) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                "the call was cancelled",
                None,
            )),
            Err(Refusal::ShuttingDown) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                SHUTTING_DOWN,
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        super::resources::list(&self.shared, request.and_then(|r| r.cursor))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        super::resources::read(&self.shared, request.uri.as_str())
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

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(super::mcp_params::unreadable(
            &request.method,
            request.params.as_ref(),
        ))
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

/// `result` with the `trail` of its call (see [`trail`]): one more text block, and `_meta`.
fn with_trail(mut result: CallToolResult, trail: Option<(String, JsonObject)>) -> CallToolResult {
    if let Some((text, meta)) = trail {
        result.content.push(ContentBlock::text(text));
        result.meta = Some(MetaObject(meta));
    }
    result
}
