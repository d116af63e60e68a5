//! Argument parsing, output conventions and exit codes shared by every subcommand.
//!
//! - the data directory is `--data-dir`, else `EVO_HOME`, else the platform data dir;
//! - `--json` prints a machine-readable result on stdout;
//! - errors go to stderr as `error[CODE]: message` plus a hint;
//! - exit code 0 on success, 1 when the skill failed, 2 for bad usage or bad input.

mod agent;
mod memory;
mod skill;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use evo_host::Error;

/// Evo runs agent skills — WebAssembly components — in a sandbox with time, memory and
/// output limits and no access to anything you did not grant.
#[derive(Debug, Parser)]
#[command(name = "evo", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "Examples:\n  \
    evo skill run calculate.wasm --input '{\"expression\":\"sqrt(144) + 10\"}'\n  \
    evo skill run file-head.wasm --dir ./docs::/data:ro --input '{\"path\":\"README.md\"}'\n  \
    evo skill info calculate.wasm --json\n  \
    evo memory store \"The user prefers dark mode\" --category preference\n  \
    evo memory search \"which theme\"\n  \
    evo doctor")]
struct Cli {
    /// Data directory (compiled-component cache, installed skills, memory).
    #[arg(long, global = true, env = "EVO_HOME", value_name = "DIR")]
    data_dir: Option<PathBuf>,

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
    /// Run and inspect skills.
    #[command(subcommand)]
    Skill(skill::SkillCommand),
    /// Search, store and forget long-term memory; read the daily logs.
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// Talk to the agent (needs a model: EVO_LLM).
    #[command(subcommand)]
    Agent(agent::AgentCommand),
    /// Check the set-up: data directory, Wasm engine, compile cache, memory.
    Doctor,
    /// Internal: confine this process and become a native skill's Node.
    #[command(name = "__native-exec", hide = true)]
    NativeExec {
        /// The only writable directory.
        #[arg(long)]
        workspace: PathBuf,
        /// Extra read-only directories.
        #[arg(long = "read")]
        read: Vec<PathBuf>,
        /// CPU seconds allowed.
        #[arg(long, default_value_t = 60)]
        cpu_seconds: u64,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        program: Vec<std::ffi::OsString>,
    },
}

/// Options every command sees.
pub(crate) struct Globals {
    pub data_dir: PathBuf,
    pub json: bool,
}

/// A command failure: an Evo error, or a usage problem found by the CLI itself.
pub(crate) enum Failure {
    Evo(Error),
    Usage {
        code: &'static str,
        message: String,
        hint: Option<String>,
    },
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Evo(error)
    }
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before any runtime or thread exists: the launcher replaces itself with the script.
    if let Command::NativeExec {
        workspace,
        read,
        cpu_seconds,
        program,
    } = &cli.command
    {
        let spec = evo_host::engine::native::confine::Spec {
            workspace: workspace.clone(),
            read_only: read.clone(),
            cpu_seconds: *cpu_seconds,
        };
        let error =
            evo_host::engine::native::confine::confine_and_exec(&spec, &program[0], &program[1..]);
        eprintln!(
            "Failed to spawn process: {}: {error}",
            program[0].to_string_lossy()
        );
        return ExitCode::from(127);
    }
    init_tracing(cli.verbose);
    let globals = Globals {
        data_dir: evo_host::paths::data_dir(cli.data_dir.as_deref()),
        json: cli.json,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error[RUNTIME_ERROR]: could not start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Skill(command) => skill::run(command, &globals).await,
            Command::Memory(command) => memory::run(command, &globals),
            Command::Agent(command) => agent::run(command, &globals).await,
            Command::Doctor => skill::doctor(&globals).await,
            Command::NativeExec { .. } => Ok(()),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => report(&failure, globals.json),
    }
}

fn report(failure: &Failure, json: bool) -> ExitCode {
    let (code, message, hint, exit) = match failure {
        Failure::Evo(e) => (
            e.code(),
            e.to_string(),
            e.hint().map(str::to_owned),
            if e.is_bad_input() { 2 } else { 1 },
        ),
        Failure::Usage {
            code,
            message,
            hint,
        } => (*code, message.clone(), hint.clone(), 2),
    };
    if json {
        let value = serde_json::json!({ "success": false, "error": message, "code": code });
        println!("{value}");
    }
    eprintln!("error[{code}]: {message}");
    if let Some(hint) = hint {
        eprintln!("  hint: {hint}");
    }
    ExitCode::from(exit)
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug,cranelift_codegen=info,wasmtime=info",
    };
    let filter = EnvFilter::try_from_env("EVO_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
