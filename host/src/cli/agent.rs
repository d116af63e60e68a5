//! `evo agent …`: talk to the agent.

use std::io::Write as _;

use clap::Subcommand;
use evo_host::agent::{Agent, AgentOptions};
use evo_host::skill::events::{EventKind, EventSink, RunEvent};

use super::skill::{Grants, Host, Sources};
use super::{Failure, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum AgentCommand {
    /// Send one message; the answer streams to stdout, skill calls to stderr.
    Run {
        /// The message.
        message: String,
        /// Skip intent recognition: go straight to the tool loop with every tool.
        #[arg(long)]
        no_routing: bool,
        /// Most model requests in the tool loop.
        #[arg(long, default_value_t = evo_host::agent::tool_loop::DEFAULT_MAX_LLM_ROUNDS)]
        max_rounds: u32,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
}

pub(crate) async fn run(command: AgentCommand, globals: &Globals) -> Result<(), Failure> {
    let AgentCommand::Run {
        message,
        no_routing,
        max_rounds,
        sources,
        grants,
    } = command;
    let Some(provider) = evo_host::llm::config::from_env()? else {
        return Err(Failure::Usage {
            code: "LLM_NOT_CONFIGURED",
            message: "no language model is configured".into(),
            hint: Some(evo_host::llm::config::HOW_TO_CONFIGURE.into()),
        });
    };
    let host = Host::open(globals, &sources, &grants).await?;
    let kernel = host.kernel_without_llm();
    let agent = Agent::new(kernel, provider)?
        .with_memory(host.memory.clone())
        .with_options(AgentOptions {
            intent_recognition: !no_routing,
            max_llm_rounds: max_rounds,
            ..AgentOptions::default()
        });
    let json = globals.json;
    let events = EventSink::new(move |event: RunEvent| show(&event, json));
    let result = agent.run(&message, events).await;
    host.flush_stats();
    if !json {
        let _ = writeln!(std::io::stdout());
    }
    result.map(drop).map_err(Into::into)
}

/// Prints one event: JSON lines with `--json`, else tokens to stdout and skill calls to
/// stderr as they happen.
fn show(event: &RunEvent, json: bool) {
    // A closed stdout (`evo agent run … | head`) is the reader's choice, not an error.
    let mut out = std::io::stdout().lock();
    if json {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(out, "{line}");
        }
        return;
    }
    match event.kind {
        EventKind::Token => {
            let _ = write!(out, "{}", event.content.as_deref().unwrap_or_default());
            let _ = out.flush();
        }
        EventKind::SkillCall
            if event.skill.as_deref() != Some(evo_host::agent::intent::SKILL_NAME) =>
        {
            let depth = event.depth.unwrap_or(1).saturating_sub(1) as usize;
            eprintln!(
                "{}→ {} {}",
                "  ".repeat(depth),
                event.skill.as_deref().unwrap_or_default(),
                event
                    .input
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
        }
        EventKind::SkillResult if event.is_error == Some(true) => eprintln!(
            "  ✗ {}: {}",
            event.skill.as_deref().unwrap_or_default(),
            event.error.as_deref().unwrap_or_default()
        ),
        _ => {}
    }
}
