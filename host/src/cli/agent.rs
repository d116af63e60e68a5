//! `evo agent …`: talk to the agent.

use std::io::Write as _;

use clap::Subcommand;
use evo_host::agent::tool_loop::Permissions;
use evo_host::agent::{Agent, AgentOptions};
use evo_host::llm::{Message, Role};
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
        /// Let the model call only skills tagged `readonly` (no side effects).
        #[arg(long)]
        read_only: bool,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
    /// Talk with the agent turn by turn; earlier turns are remembered for the session.
    /// `/reset` forgets them, `/exit` (or Ctrl-D) quits.
    Chat {
        /// Let the model call only skills tagged `readonly`.
        #[arg(long)]
        read_only: bool,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
}

/// Turns of a chat kept as history: enough context for follow-ups, bounded so a long
/// session does not grow every request without end.
const CHAT_HISTORY_TURNS: usize = 20;

pub(crate) async fn run(command: AgentCommand, globals: &Globals) -> Result<(), Failure> {
    match command {
        AgentCommand::Run {
            message,
            no_routing,
            max_rounds,
            read_only,
            sources,
            grants,
        } => {
            let options = AgentOptions {
                intent_recognition: !no_routing,
                max_llm_rounds: max_rounds,
                permissions: permissions(read_only),
                ..AgentOptions::default()
            };
            let (host, agent) = open(globals, &sources, &grants, options).await?;
            let json = globals.json;
            let events = EventSink::new(move |event: RunEvent| show(&event, json));
            let result = agent.run(&message, events).await;
            host.flush_stats();
            if !json {
                let _ = writeln!(std::io::stdout());
            }
            result.map(drop).map_err(Into::into)
        }
        AgentCommand::Chat {
            read_only,
            sources,
            grants,
        } => {
            let options = AgentOptions {
                permissions: permissions(read_only),
                ..AgentOptions::default()
            };
            let (host, agent) = open(globals, &sources, &grants, options).await?;
            chat(&agent, globals.json).await;
            host.flush_stats();
            Ok(())
        }
    }
}

fn permissions(read_only: bool) -> Permissions {
    if read_only {
        Permissions::ReadOnly
    } else {
        Permissions::All
    }
}

async fn open(
    globals: &Globals,
    sources: &Sources,
    grants: &Grants,
    options: AgentOptions,
) -> Result<(Host, Agent), Failure> {
    let Some(provider) = evo_host::llm::config::load(&globals.data_dir)? else {
        return Err(Failure::Usage {
            code: "LLM_NOT_CONFIGURED",
            message: "no language model is configured".into(),
            hint: Some(evo_host::llm::config::HOW_TO_CONFIGURE.into()),
        });
    };
    let host = Host::open(globals, sources, grants).await?;
    let index = evo_host::packages::index::SkillIndex::new(
        evo_host::db::Db::open(&globals.data_dir)?,
        host.memory.embedder(),
    );
    let agent = Agent::new(host.kernel_without_llm(), provider)?
        .with_memory(host.memory.clone())
        .with_options(options)
        .with_skill_index(index)?;
    Ok((host, agent))
}

async fn chat(agent: &Agent, json: bool) {
    let mut history: Vec<Message> = Vec::new();
    let stdin = std::io::stdin();
    loop {
        if !json {
            print!("you> ");
            let _ = std::io::stdout().flush();
        }
        let mut line = String::new();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" | "/quit" => break,
            "/reset" => {
                history.clear();
                eprintln!("(history cleared)");
                continue;
            }
            _ => {}
        }
        if !json {
            print!("evo> ");
        }
        let events = EventSink::new(move |event: RunEvent| show(&event, json));
        match agent.run_turn(line, &history, events).await {
            Ok(outcome) => {
                history.push(Message::text(Role::User, line));
                history.push(Message::text(Role::Assistant, outcome.response));
                let excess = history.len().saturating_sub(CHAT_HISTORY_TURNS * 2);
                history.drain(..excess);
            }
            Err(e) => eprintln!("error[{}]: {e}", e.code()),
        }
        if !json {
            println!();
        }
    }
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
