//! The `evo` binary: flags parsed by clap ([`Cli`]), turned into a validated
//! [`evo_host::Config`] and handed to [`evo_host::Host`] ([`args`]), one file per
//! subcommand. Conventions every subcommand keeps:
//!
//! - the data directory is `--data-dir`, else `EVO_HOME`, else the platform data dir;
//! - `--json` prints a machine-readable result on stdout;
//! - errors go to stderr as `error[CODE]: message` plus a hint (with `--json`, also on
//!   stdout as `{ success, error, code, hint }`);
//! - exit code 0 on success, 1 when the skill failed, 2 for bad usage or bad input;
//! - a closed stdout (`evo skill list | head -1`) ends the command quietly.

mod agent;
mod args;
mod config;
mod confirm;
mod db;
mod doctor;
mod memory;
mod meta;
mod model;
mod remote;
mod secret;
mod serve;
mod skill;
mod tool;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use evo_host::Error;

/// Prints a line to stdout; a reader that went away (`| head`) ends the process quietly
/// instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use out;

/// Writes `args` to stdout and flushes; exits with status 0 when stdout is closed, as
/// other Unix tools do. The text is formatted first and written whole: stdout is
/// line-buffered, and a long line (`evo skill list --json` over 1,000 skills is one of
/// 280 KB) would otherwise go out in a write per kilobyte.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let text = std::fmt::format(args);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// Evo runs agent skills — WebAssembly components — in a sandbox with time, memory and
/// output limits and no access to anything you did not grant.
#[derive(Debug, Parser)]
#[command(name = "evo", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "Examples:\n  \
    evo skill run examples/calculate.wasm --input '{\"expression\":\"sqrt(144) + 10\"}'\n  \
    evo skill run examples/file_head.wasm --dir ./docs::/data:ro --input '{\"path\":\"sandbox.md\"}'\n  \
    evo skill info examples/calculate.wasm --json\n  \
    evo tool call read --input '{\"file_path\":\"README.md\",\"limit\":20}'\n  \
    evo tool call bash --input '{\"command\":\"git status\"}'\n  \
    evo tool history --tool read --limit 10\n  \
    evo memory store \"The user prefers dark mode\" --category preference\n  \
    evo memory search \"which theme\"\n  \
    evo config show\n  \
    evo doctor")]
pub(crate) struct Cli {
    /// Data directory (compiled-component cache, installed skills, memory, evo.toml)
    /// [default: $EVO_HOME, else the platform's data directory, e.g. ~/.local/share/evo].
    // The library reads the variables (an empty one is unset), not clap, which refuses
    // an empty one with an error about the flag.
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,

    /// Configuration file to read instead of evo.toml in the data directory
    /// [env: EVO_CONFIG].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Print a machine-readable JSON result on stdout.
    #[arg(long, global = true)]
    json: bool,

    /// Log more (-v: info, -vv: debug, including what skills print). `EVO_LOG` sets
    /// a filter directly, e.g. `EVO_LOG=evo::skill=trace`.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run, install and inspect skills.
    #[command(subcommand)]
    Skill(skill::SkillCommand),
    /// Create a skill project that builds and runs as it comes: `evo new greet --lang js`,
    /// then `evo skill build`, `evo skill test`, `evo skill run .`.
    New {
        /// The skill's name (lowercase letters, digits, `-`, `_`); also the directory.
        name: String,
        /// The language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: skill::Lang,
        /// Where to create the project directory.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// The built-in tools and the call history: list, describe, call, history, stats,
    /// export.
    #[command(subcommand)]
    Tool(tool::ToolCommand),
    /// Search, store and forget long-term memory; read the daily logs.
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// Talk to the agent (needs a model: EVO_LLM, or `[llm]` in evo.toml).
    #[command(subcommand)]
    Agent(agent::AgentCommand),
    /// Serve the skills to MCP clients (stdio, or streamable HTTP with --http) and over
    /// an HTTP API.
    Serve(serve::ServeArgs),
    /// Show the effective configuration and where each value came from.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Set, list and remove the secrets skills may have put into their requests (API
    /// keys); skills never see them.
    #[command(subcommand)]
    Secret(secret::SecretCommand),
    /// The shared PostgreSQL database (`[storage] url`): migrate its schema, show its
    /// status.
    #[command(subcommand)]
    Db(db::DbCommand),
    /// Add, list and remove other Evo nodes, whose skills are listed and called here as
    /// `NAME/skill`.
    #[command(subcommand)]
    Remote(remote::RemoteCommand),
    /// The local model the agent runs offline: install it, see how fast it is here.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Check the set-up: data directory, Wasm engine, compile cache, memory, model, Node,
    /// native isolation. Exits 1 when a configured part is broken.
    Doctor,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout, e.g. `evo man > evo.1`.
    Man,
}

/// Options every command sees.
pub(crate) struct Globals {
    pub data_dir: PathBuf,
    pub config: Option<PathBuf>,
    pub json: bool,
    pub verbose: bool,
}

/// A command failure: an Evo error, or a usage problem found by the CLI itself.
pub(crate) enum Failure {
    Evo(Error),
    Usage {
        code: &'static str,
        message: String,
        hint: Option<String>,
    },
    /// The command reported its own failure already; exit with this status.
    Reported(u8),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Evo(error)
    }
}

impl Failure {
    pub(crate) fn usage(code: &'static str, message: String, hint: Option<&str>) -> Self {
        Self::Usage {
            code,
            message,
            hint: hint.map(str::to_owned),
        }
    }
}

fn main() -> ExitCode {
    // The sandbox's launcher commands (hidden; the small `evo-launcher` beside this binary
    // runs the same), read before anything else exists: the launcher confines itself and
    // becomes the script, and none of Evo's own start-up is any use to it.
    let mut args = std::env::args_os().skip(1).peekable();
    if args
        .peek()
        .is_some_and(|first| evo_host::sandbox::is_launcher_command(first))
    {
        return ExitCode::from(evo_host::sandbox::launcher_main(args));
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    let data_dir = evo_host::config::data_dir(cli.data_dir.as_deref());
    init_tracing(
        cli.verbose,
        &data_dir,
        matches!(cli.command, Command::Serve(_)),
    );
    let globals = Globals {
        data_dir,
        config: cli.config,
        json: cli.json,
        verbose: cli.verbose > 0,
    };
    let result = match cli.command {
        Command::Completions { shell } => {
            meta::completions(shell);
            Ok(())
        }
        Command::Man => meta::man(),
        Command::Config(command) => config::run(command, &globals),
        Command::Secret(command) => secret::run(command, &globals),
        Command::Db(command) => db::run(command, &globals),
        Command::Model(command) => model::run(command, &globals),
        Command::New { name, lang, dir } => skill::new(&globals, &name, lang, &dir),
        command => match runtime_for(&command) {
            Ok(runtime) => runtime.block_on(async {
                match command {
                    Command::Skill(command) => skill::run(command, &globals).await,
                    Command::Tool(command) => tool::run(command, &globals).await,
                    Command::Memory(command) => memory::run(command, &globals).await,
                    Command::Agent(command) => agent::run(command, &globals).await,
                    Command::Doctor => doctor::run(&globals).await,
                    Command::Remote(command) => remote::run(command, &globals).await,
                    Command::Serve(args) => serve::run(args, &globals).await,
                    _ => Ok(()),
                }
            }),
            Err(e) => Err(Failure::usage(
                "RUNTIME_ERROR",
                format!("could not start the async runtime: {e}"),
                None,
            )),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => report(&failure, globals.json),
    }
}

/// The runtime `command` runs on. `evo serve` over stdio has one client, whose calls
/// are mostly short: one thread reads a line, runs the call and writes the answer, with
/// no hand-off between threads (a long call moves to Evo's low-priority threads once
/// others wait, as on any runtime). Measured by the `mcp_stdio` bench: 0.7× the CPU per
/// echo call of the multi-thread runtime, and 0.8× the round trip.
fn runtime_for(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    if matches!(command, Command::Serve(args) if args.http.is_none()) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    }
}

/// What clap found wrong with the command line, as every other failure is reported:
/// `error[INVALID_ARGUMENT]: …` and its hint (clap's tip, else `--help`), and with
/// `--json` the same as JSON on stdout. Help and the version print as clap prints them.
fn parse_failure(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    }
    let text = error.render().to_string();
    // The message is the first paragraph (a list of missing arguments runs on over
    // lines); tips and the usage follow.
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.trim().is_empty())
        .unwrap_or(lines.len());
    let message = lines[..end]
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    let message = message
        .strip_prefix("error: ")
        .unwrap_or(&message)
        .to_owned();
    let rest = &lines[end..];
    let hint = rest
        .iter()
        .find_map(|l| l.trim().strip_prefix("tip: "))
        .map_or_else(
            || {
                "`evo --help` (or `evo COMMAND --help`) lists the commands and their flags"
                    .to_owned()
            },
            str::to_owned,
        );
    let json = std::env::args_os().any(|a| a == "--json");
    let failure = Failure::Usage {
        code: "INVALID_ARGUMENT",
        message,
        hint: Some(hint),
    };
    let status = report(&failure, json);
    // Clap's usage line, for the reader at a terminal.
    if let Some(usage) = rest.iter().position(|l| l.starts_with("Usage:")) {
        eprintln!("\n{}", rest[usage..].join("\n").trim_end());
    }
    status
}

fn report(failure: &Failure, json: bool) -> ExitCode {
    let (code, message, hint, exit) = match failure {
        Failure::Reported(status) => return ExitCode::from(*status),
        // The exit status every front end agrees on for the code (`docs/errors.md`).
        Failure::Evo(e) => (
            e.code(),
            e.to_string(),
            e.hint().map(str::to_owned),
            e.answer().exit,
        ),
        Failure::Usage {
            code,
            message,
            hint,
        } => (
            *code,
            message.clone(),
            hint.clone(),
            evo_host::errors::answer_for(code, false).exit,
        ),
    };
    if json {
        let mut value = serde_json::json!({
            "success": false,
            "error": message,
            "code": code,
            "hint": hint,
        });
        // A native script's result keeps what it printed and how it ended.
        if let Failure::Evo(Error::Script { run, .. }) = failure
            && let (Some(fields), Ok(serde_json::Value::Object(run))) =
                (value.as_object_mut(), serde_json::to_value(run))
        {
            fields.extend(run);
        }
        // A failed composite keeps the steps that ran.
        if let Failure::Evo(e) = failure
            && !e.steps().is_empty()
        {
            value["intermediateSteps"] = serde_json::json!(e.steps());
        }
        out!("{value}");
    }
    eprintln!("error[{code}]: {message}");
    if let Some(hint) = hint {
        eprintln!("  hint: {hint}");
    }
    if let Failure::Evo(e) = failure
        && !e.steps().is_empty()
        && !json
    {
        eprintln!("  steps that ran (`--json` shows their inputs and outputs):");
        for step in e.steps() {
            let (mark, output) = match &step.error {
                None => ("✓", step.output.to_string()),
                Some(_) => ("✗", "failed".to_owned()),
            };
            eprintln!(
                "    {mark} {} ({} ms) → {}",
                step.step_name,
                step.duration,
                cut(&output, 120)
            );
        }
    }
    ExitCode::from(exit)
}

/// Logs to stderr, with every secret value redacted from each line, whoever wrote it (a
/// skill's log, a library's trace of a guest's calls).
/// A server's log keeps every warning; a one-shot command's leaves out the slow-call
/// warnings (`evo::tools`, over 500 ms): the user is waiting for that very call, its
/// duration is in `--json` and `evo tool stats`, and a first run that compiles a
/// component is slow on purpose. `-v` shows them.
fn init_tracing(verbose: u8, data_dir: &std::path::Path, server: bool) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        // rmcp logs every JSON-RPC error answer as a warning; they are the client's.
        // Refusals are in the call's own error and in `evo tool history --status blocked`.
        0 if server => "warn,rmcp=error,evo::security=error",
        0 => "warn,rmcp=error,evo::security=error,evo::tools=error",
        1 => "info,rmcp=warn",
        _ => "debug,cranelift_codegen=info,wasmtime=info",
    };
    let filter = EnvFilter::try_from_env("EVO_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(RedactingStderr(std::sync::Arc::new(
            evo_host::secrets::SecretStore::new(data_dir),
        )))
        .with_target(false)
        // Colours for a person at a terminal; plain text for a file, a pipe or CI's log.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Makes one [`Redacting`] writer per log event.
struct RedactingStderr(std::sync::Arc<evo_host::secrets::SecretStore>);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactingStderr {
    type Writer = Redacting;

    fn make_writer(&'a self) -> Redacting {
        Redacting {
            secrets: self.0.snapshot().unwrap_or_default(),
            line: Vec::new(),
        }
    }
}

/// Collects one event's text and writes it to stderr, redacted, when dropped.
struct Redacting {
    secrets: std::sync::Arc<evo_host::secrets::Secrets>,
    line: Vec<u8>,
}

impl std::io::Write for Redacting {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Redacting {
    fn drop(&mut self) {
        let line = std::mem::take(&mut self.line);
        let line = self.secrets.redact_bytes(&line).unwrap_or(line);
        let _ = std::io::stderr().write_all(&line);
    }
}

/// Turns a serialisation failure (which would be a bug) into a reported error.
/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

pub(crate) fn internal(error: serde_json::Error) -> Failure {
    Failure::usage("INTERNAL_ERROR", error.to_string(), None)
}
