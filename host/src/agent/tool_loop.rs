//! The tool-calling loop: ask the model; if it
//! calls tools, run them and give it the results; repeat until it answers without tools
//! or the round limit is reached.
//!
//! Skills are the tools. A call that fails gate 1 goes back to the model as a tool error
//! carrying the validation report, so it can fix its arguments and call again; a call the
//! agent's permission profile does not allow comes back as `blocked`.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::llm::{ChatOptions, ContentBlock, LlmProvider, Message, Role, ToolCall, collect};
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::MemoryWriteOutcome;
use crate::skill::validate::Direction;

/// Default bound on model requests in one loop.
pub const DEFAULT_MAX_LLM_ROUNDS: u32 = 10;

/// Which skills the model may call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Permissions {
    /// Every skill offered.
    #[default]
    All,
    /// Only skills tagged `readonly` (no side effects).
    ReadOnly,
    /// Only these skills.
    Only(BTreeSet<String>),
}

/// The tag of skills without side effects, which [`Permissions::ReadOnly`]
/// allows.
pub const READONLY_TAG: &str = "readonly";

impl Permissions {
    /// Whether the skill named `skill`, as registered in `ctx`'s kernel, may be called.
    pub fn allows(&self, ctx: &SkillContext, skill: &str) -> bool {
        match self {
            Self::All => true,
            Self::ReadOnly => ctx
                .kernel()
                .registry()
                .get(skill)
                .is_some_and(|s| s.meta.tags.iter().any(|t| t == READONLY_TAG)),
            Self::Only(names) => names.contains(skill),
        }
    }
}

/// Refuses the run's call of `skill` that the agent's permissions do not allow: the
/// refusal is a failed `skill_result` event (what a user watching the run sees) and a
/// row of the security log, besides the answer the model gets. Returns its message.
pub(super) fn refuse(ctx: &SkillContext, skill: &str, arguments: &Value) -> String {
    let error = Error::Blocked {
        tool: skill.to_owned(),
        message: "not allowed by this agent's permission profile".to_owned(),
        reason: crate::error::BlockReason::Profile,
    };
    let message = error.to_string();
    ctx.emit(crate::skill::observe::events::RunEvent::skill_failed(
        skill,
        &error,
        std::time::Duration::ZERO,
    ));
    ctx.record_refusal(
        skill,
        arguments,
        &message,
        "the agent's permission profile ([tools] profiles in evo.toml) does not list this tool; add it there if this agent should use it",
    );
    message
}

/// What a tool call returned to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutcome {
    /// The call.
    pub call: ToolCall,
    /// The content given to the model (JSON text).
    pub content: String,
    /// Whether it failed (or was blocked).
    pub is_error: bool,
    /// The memory writes the skill suggested, and what became of each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryWriteOutcome>,
}

/// How a loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The model answered without calling tools.
    Answered,
    /// The round limit was reached while the model still called tools.
    RoundLimit,
}

/// The result of a loop.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopOutcome {
    /// The model's last text.
    pub text: String,
    /// The whole conversation, including tool calls and results.
    pub messages: Vec<Message>,
    /// Every tool call made, in order.
    pub tool_results: Vec<ToolOutcome>,
    /// Model requests made.
    pub rounds: u32,
    /// Why it stopped.
    pub stop: Stop,
}

/// Runs the loop: `messages` so far, the tools in `options`, skills called through `ctx`
/// under `permissions`. `on_token` sees the model's text as it streams.
pub async fn chat_with_tools(
    provider: &dyn LlmProvider,
    mut messages: Vec<Message>,
    options: ChatOptions,
    ctx: &SkillContext,
    permissions: &Permissions,
    max_rounds: u32,
    mut on_token: impl FnMut(&str),
) -> Result<LoopOutcome> {
    let mut tool_results = Vec::new();
    let mut rounds = 0;
    loop {
        rounds += 1;
        let answer = collect(
            provider.chat(messages.clone(), options.clone()),
            &mut on_token,
        )
        .await?;
        let mut content = Vec::new();
        if !answer.text.is_empty() {
            content.push(ContentBlock::Text {
                text: answer.text.clone(),
            });
        }
        for call in &answer.tool_calls {
            content.push(ContentBlock::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.arguments.clone(),
            });
        }
        messages.push(Message {
            role: Role::Assistant,
            content,
        });
        if answer.tool_calls.is_empty() || rounds >= max_rounds {
            let stop = if answer.tool_calls.is_empty() {
                Stop::Answered
            } else {
                Stop::RoundLimit
            };
            return Ok(LoopOutcome {
                text: answer.text,
                messages,
                tool_results,
                rounds,
                stop,
            });
        }
        let mut results = Vec::new();
        for call in answer.tool_calls {
            let outcome = run_tool(ctx, permissions, &options, call).await?;
            results.push(ContentBlock::ToolResult {
                tool_use_id: outcome.call.id.clone(),
                content: outcome.content.clone(),
                is_error: outcome.is_error,
            });
            tool_results.push(outcome);
        }
        messages.push(Message {
            role: Role::User,
            content: results,
        });
    }
}

async fn run_tool(
    ctx: &SkillContext,
    permissions: &Permissions,
    options: &ChatOptions,
    call: ToolCall,
) -> Result<ToolOutcome> {
    let failed = |call: ToolCall, value: Value| {
        Ok(ToolOutcome {
            call,
            content: value.to_string(),
            is_error: true,
            memory: Vec::new(),
        })
    };
    let offered = options.tools.iter().any(|t| t.name == call.name);
    // A skill the permissions leave out is not offered either; the model naming it
    // anyway is refused as what it is.
    let exists = ctx.kernel().registry().get(&call.name).is_some();
    if exists && !permissions.allows(ctx, &call.name) {
        let message = refuse(ctx, &call.name, &call.arguments);
        return failed(call, json!({ "error": "blocked", "message": message }));
    }
    if !offered {
        let message = format!("unknown tool {:?}; use one of the tools offered", call.name);
        return failed(call, json!({ "error": "unknown_tool", "message": message }));
    }
    if !call.arguments.is_object() {
        let message = format!(
            "the arguments must be a JSON object, got {}",
            call.arguments
        );
        return failed(
            call,
            json!({ "error": "input_validation_failed", "message": message }),
        );
    }
    match ctx.call_full(&call.name, call.arguments.clone()).await {
        Ok(out) => Ok(ToolOutcome {
            call,
            content: out.output.to_string(),
            is_error: false,
            memory: out.memory,
        }),
        // The model had its tries at these arguments (`max_input_attempts`): stop the
        // run rather than let it spend rounds on a call it cannot get right.
        Err(Error::Validation(report))
            if report.direction == Direction::Input && report.attempt >= report.max_attempts =>
        {
            Err(Error::Validation(report))
        }
        Err(Error::Validation(report)) if report.direction == Direction::Input => failed(
            call,
            json!({ "error": "input_validation_failed", "message": report.to_llm_text() }),
        ),
        Err(error) => failed(
            call,
            json!({ "error": error.to_string(), "code": error.code() }),
        ),
    }
}
