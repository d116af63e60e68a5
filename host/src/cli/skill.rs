//! `evo skill …`: run and inspect skills.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use evo_host::capabilities::{Access, DirPolicy, Policy};
use evo_host::engine::wasm::{EngineConfig, WasmEngine, WasmSkill};
use evo_host::skill::context::{RunContext, SkillEvent};
use serde_json::json;

use super::{Failure, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum SkillCommand {
    /// Run a skill once and print its output.
    Run {
        /// The skill: a `.wasm` component.
        skill: PathBuf,
        /// The input as JSON; `-` reads it from stdin.
        #[arg(long, short, default_value = "{}", value_name = "JSON")]
        input: String,
        #[command(flatten)]
        grants: Grants,
    },
    /// Show a skill's manifest, limits, and what it would be granted.
    Info {
        /// The skill: a `.wasm` component.
        skill: PathBuf,
        #[command(flatten)]
        grants: Grants,
    },
}

/// Capabilities the operator grants for this invocation.
#[derive(Debug, clap::Args)]
pub(crate) struct Grants {
    /// Offer a host directory to the skill: `HOST::GUEST` (read-write), `HOST::GUEST:ro`
    /// (read-only), or `HOST` (same path in the guest). The skill gets it only if its
    /// manifest asks for GUEST; repeat for more directories.
    #[arg(long = "dir", value_name = "HOST::GUEST[:ro]")]
    dirs: Vec<String>,
}

impl Grants {
    fn policy(&self) -> Result<Policy, Failure> {
        let dirs = self
            .dirs
            .iter()
            .map(|spec| {
                DirPolicy::parse(spec).map_err(|message| Failure::Usage {
                    code: "INVALID_ARGUMENT",
                    message: format!("--dir {spec}: {message}"),
                    hint: Some(
                        "use HOST::GUEST or HOST::GUEST:ro with an existing host directory".into(),
                    ),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            dirs,
            ..Policy::default()
        })
    }
}

pub(crate) async fn run(command: SkillCommand, globals: &Globals) -> Result<(), Failure> {
    match command {
        SkillCommand::Run {
            skill,
            input,
            grants,
        } => {
            let input = read_input(input)?;
            let skill = load(&skill, &grants.policy()?, globals).await?;
            let json_mode = globals.json;
            let events: evo_host::skill::context::EventSink =
                std::sync::Arc::new(move |e: SkillEvent| {
                    if !json_mode {
                        eprintln!("event from {}: {}", e.skill, e.event);
                    }
                });
            let run = RunContext {
                events: Some(events),
                ..RunContext::default()
            };
            let outcome = skill.call(&input, &run).await?;
            if globals.json {
                let mut value = serde_json::to_value(&outcome).map_err(internal)?;
                value["success"] = json!(true);
                println!("{value}");
            } else {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&outcome.output).map_err(internal)?
                );
            }
            Ok(())
        }
        SkillCommand::Info { skill, grants } => {
            let skill = load(&skill, &grants.policy()?, globals).await?;
            let value = json!({
                "manifest": skill.meta(),
                "limits": skill.limits(),
                "grant": skill.grant(),
                "apiVersion": skill.info().api_version,
                "sdk": skill.info().sdk,
                "digest": skill.digest(),
                "loadedFrom": skill.load_source(),
            });
            if globals.json {
                println!("{value}");
            } else {
                print_info(&skill);
            }
            Ok(())
        }
    }
}

fn print_info(skill: &WasmSkill) {
    let meta = skill.meta();
    println!("{} {} — {}", meta.name, meta.version, meta.description);
    println!("  category:   {}", meta.category);
    if !meta.tags.is_empty() {
        println!("  tags:       {}", meta.tags.join(", "));
    }
    let limits = skill.limits();
    println!(
        "  limits:     {} ms, {} MiB memory, {} bytes output{}",
        limits.timeout_ms,
        limits.memory_mib,
        limits.output_bytes,
        limits
            .fuel
            .map(|f| format!(", {f} fuel"))
            .unwrap_or_default()
    );
    let grant = skill.grant();
    if meta.capabilities.dirs.is_empty() && !meta.capabilities.llm && grant.refused.is_empty() {
        println!("  requests:   nothing (pure computation)");
    }
    for dir in &grant.dirs {
        let access = match dir.access {
            Access::Read => "read-only",
            Access::ReadWrite => "read-write",
        };
        println!(
            "  granted:    {} → {} ({access})",
            dir.host.display(),
            dir.guest
        );
    }
    for refused in &grant.refused {
        println!("  not granted: {refused}");
    }
    println!(
        "  api:        evo:skill@{}{}",
        skill.info().api_version,
        skill
            .info()
            .sdk
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    );
    println!("  digest:     sha256:{}", skill.digest());
}

async fn load(path: &Path, policy: &Policy, globals: &Globals) -> Result<WasmSkill, Failure> {
    if !path.is_file() {
        return Err(Failure::Usage {
            code: "SKILL_NOT_FOUND",
            message: format!("{} is not a file", path.display()),
            hint: Some("give the path of a skill's .wasm component".into()),
        });
    }
    let config = EngineConfig {
        cache_dir: Some(evo_host::paths::wasm_cache_dir(&globals.data_dir)),
        // One CLI invocation runs one call at a time; a small pool starts fastest.
        max_concurrent_calls: 4,
        ..EngineConfig::default()
    };
    let engine = WasmEngine::new(config)?;
    Ok(engine.load_file(path, policy).await?)
}

fn read_input(input: String) -> Result<String, Failure> {
    let input = if input == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::Usage {
                code: "INVALID_INPUT",
                message: format!("could not read the input from stdin: {e}"),
                hint: None,
            })?;
        text
    } else {
        input
    };
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&input) {
        return Err(Failure::Usage {
            code: "INVALID_INPUT",
            message: format!("--input is not valid JSON: {e}"),
            hint: Some(
                "quote the JSON for your shell, e.g. --input '{\"expression\":\"1+2\"}'".into(),
            ),
        });
    }
    Ok(input)
}

fn internal(error: serde_json::Error) -> Failure {
    Failure::Usage {
        code: "INTERNAL_ERROR",
        message: error.to_string(),
        hint: None,
    }
}
