//! `evo agent …`: talk to the agent.

use std::io::Write as _;

use clap::Subcommand;
use evo_host::Host;
use evo_host::agent::Permissions;
use evo_host::{EventSink, RunEvent};
use evo_host::{agent::Agent, agent::AgentOptions};
use evo_host::{llm::Message, llm::Role};

use super::args::{self, Grants, Sources};
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
        /// Most model requests in the tool loop (default: agent.max_llm_rounds in
        /// evo.toml, else 10).
        #[arg(long)]
        max_rounds: Option<u32>,
        /// Let the model call only skills tagged `readonly` (no side effects).
        #[arg(long)]
        read_only: bool,
        /// The model for this run, by the configured provider's name for it (e.g.
        /// `gpt-4o`, `llama3.2:1b`); llm skills that name their own keep theirs. To use
        /// another provider, set EVO_LLM.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
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
        /// The model for the session, as for `evo agent run --model`.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
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
            model,
            sources,
            grants,
        } => {
            let (host, agent) = open(globals, &sources, &grants, |options| {
                options.model = model;
                options.confirmer = crate::confirm::terminal();
                if no_routing {
                    options.intent_recognition = false;
                }
                if let Some(rounds) = max_rounds {
                    options.max_llm_rounds = rounds;
                }
                options.permissions = permissions(read_only);
            })
            .await?;
            let json = globals.json;
            let events = EventSink::new(move |event: RunEvent| show(&event, json));
            let result = agent.run(&message, events).await;
            flush(&host);
            if !json {
                let _ = writeln!(std::io::stdout());
            }
            result.map(drop).map_err(Into::into)
        }
        AgentCommand::Chat {
            read_only,
            model,
            sources,
            grants,
        } => {
            let (host, agent) = open(globals, &sources, &grants, |options| {
                options.model = model;
                options.confirmer = crate::confirm::terminal();
                options.permissions = permissions(read_only);
            })
            .await?;
            chat(&agent, globals.json).await;
            flush(&host);
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
    options: impl FnOnce(&mut AgentOptions),
) -> Result<(Host, Agent), Failure> {
    let host = args::host(globals, sources, grants).await?;
    let agent = host.agent(options)?;
    Ok((host, agent))
}

/// Failing to record statistics must not fail the run that happened.
fn flush(host: &Host) {
    if let Err(e) = host.flush_stats() {
        eprintln!("warning: could not record statistics: {e}");
    }
}

async fn chat(agent: &Agent, json: bool) {
    let mut history: Vec<Message> = Vec::new();
    let stdin = std::io::stdin();
    loop {
        if !json {
            crate::write_stdout(format_args!("you> "));
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
            crate::write_stdout(format_args!("evo> "));
        }
        let events = EventSink::new(move |event: RunEvent| show(&event, json));
        match agent.run_turn(line, &history, events).await {
            Ok(outcome) => {
                // As the run read it: a redacting preprocessor's output, not the line.
                history.push(Message::text(Role::User, outcome.message));
                history.push(Message::text(Role::Assistant, outcome.response));
                let excess = history.len().saturating_sub(CHAT_HISTORY_TURNS * 2);
                history.drain(..excess);
            }
            Err(e) => eprintln!("error[{}]: {e}", e.code()),
        }
        if !json {
            crate::write_stdout(format_args!("\n"));
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
    match event {
        RunEvent::Token { content, .. } => {
            let _ = write!(out, "{content}");
            let _ = out.flush();
        }
        RunEvent::SkillCall {
            skill,
            input,
            depth,
            ..
        } if skill != evo_host::agent::ROUTER_SKILL => {
            let indent = "  ".repeat(depth.saturating_sub(1) as usize);
            eprintln!("{indent}→ {skill} {input}");
        }
        RunEvent::SkillResult {
            skill,
            is_error: true,
            error,
            ..
        } => eprintln!("  ✗ {skill}: {}", error.as_deref().unwrap_or_default()),
        RunEvent::MemoryWrites { writes, .. } => {
            for write in writes {
                eprintln!("  {}", crate::memory::write_line(write));
            }
        }
        RunEvent::Warning { message, .. } => eprintln!("warning: {message}"),
        _ => {}
    }
}
