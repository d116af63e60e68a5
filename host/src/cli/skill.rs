//! `evo skill …`: run and inspect skills.

use std::io::Read;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use clap::Subcommand;
use evo_host::Error;
use evo_host::capabilities::{Access, DirPolicy, Policy};
use evo_host::db::Db;
use evo_host::engine::builtin::BuiltinTools;
use evo_host::engine::loader::{Loader, StaticExecutor};
use evo_host::engine::native::{NativeConfig, NativeSandbox};
use evo_host::engine::wasm::{EngineConfig, WasmEngine, WasmExecutor, WasmSkill};
use evo_host::memory::MemoryManager;
use evo_host::packages::{InstallOptions, ListQuery, SkillManager};
use evo_host::skill::events::{EventKind, EventSink, RunEvent};
use evo_host::skill::kernel::{Kernel, RunOptions};
use evo_host::skill::registry::{RegisteredSkill, SkillRegistry};
use evo_host::skill::stats::Stats;
use serde_json::json;

use super::{Failure, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum SkillCommand {
    /// Run a skill once and print its output.
    ///
    /// SKILL is a built-in tool or installed skill name (`calculate`), a skill directory
    /// (SKILL.md, skill.json, skill.wasm, prompt.md), or a `.wasm` component. The call goes
    /// through the same gates as an agent's: input defaults and validation, the skill's
    /// timeout and retries, output validation.
    Run {
        /// The skill: a name, a directory, or a `.wasm` file.
        skill: String,
        /// The input as JSON; `-` reads it from stdin.
        #[arg(long, short, default_value = "{}", value_name = "JSON")]
        input: String,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
    /// Install a skill from a ZIP archive or a directory into the data directory.
    ///
    /// The skill is checked and loaded as the host will load it before anything is
    /// written; the capabilities it asks for are shown and recorded, and it will not be
    /// given more later without a reinstall.
    Install {
        /// A ZIP archive holding one skill directory, or a skill directory (SKILL.md,
        /// skill.json, skill.wasm, prompt.md or scripts/execute.js).
        source: PathBuf,
        /// Replace an installed skill of the same name.
        #[arg(long)]
        overwrite: bool,
    },
    /// Change an installed skill's description (only the description can be changed;
    /// the rest of its SKILL.md stays byte for byte).
    UpdateDescription {
        /// The skill's name.
        name: String,
        /// The new description, one line.
        description: String,
    },
    /// Find installed skills for a request (keywords and meaning together).
    Search {
        /// What you want done, in plain words.
        query: String,
        /// How many results.
        #[arg(long, short = 'n', default_value_t = 5)]
        limit: usize,
    },
    /// Remove an installed skill.
    Uninstall {
        /// The skill's name.
        name: String,
    },
    /// List the skills available: built-in tools, installed skills, and `--skills-dir`.
    List {
        /// Only names containing this.
        #[arg(long)]
        name: Option<String>,
        /// Only skills with this tag (repeat for all of several).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Page to show, from 1 (with --limit).
        #[arg(long, default_value_t = 1)]
        page: usize,
        /// Skills per page.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        sources: Sources,
    },
    /// Show per-skill call statistics (all runs that used this data directory), or with
    /// --installs what is installed by tag and by day and week.
    Stats {
        /// Only this skill.
        skill: Option<String>,
        /// Install statistics instead of call statistics.
        #[arg(long, conflicts_with = "skill")]
        installs: bool,
    },
    /// Show a skill's manifest, limits, and what it would be granted.
    Info {
        /// The skill: a name, a directory, or a `.wasm` file.
        skill: String,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
}

/// Where skills come from besides the built-ins.
#[derive(Debug, clap::Args)]
pub(crate) struct Sources {
    /// Also load every skill directory under DIR (before the installed ones, which it
    /// overrides on a name clash).
    #[arg(long, value_name = "DIR")]
    pub(crate) skills_dir: Option<PathBuf>,
}

/// Capabilities the operator grants for this invocation.
#[derive(Debug, Default, clap::Args)]
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
            sources,
            grants,
        } => {
            let input = read_input(input)?;
            let host = Host::open(globals, &sources, &grants).await?;
            let name = host.resolve(&skill).await?;
            let native = host
                .kernel
                .registry()
                .get(&name)
                .is_some_and(|s| s.kind() == evo_host::skill::executor::ExecutorKind::Native);
            if native && !globals.json {
                let confined = host
                    .loader
                    .native()
                    .isolation()
                    .await
                    .iter()
                    .any(|p| p.starts_with("landlock"));
                eprintln!(
                    "note: {name} is a native script skill: a Node process {}, less isolated than a Wasm skill",
                    if confined {
                        "confined to its workspace"
                    } else {
                        "with process limits only (no file-system isolation here)"
                    }
                );
            }
            let json_mode = globals.json;
            let events = EventSink::new(move |event: RunEvent| {
                if json_mode {
                    return;
                }
                match event.kind {
                    EventKind::Emit => eprintln!(
                        "event from {}: {}",
                        event.skill.unwrap_or_default(),
                        event.output.unwrap_or_default()
                    ),
                    EventKind::SkillCall if event.depth.unwrap_or(0) > 1 => eprintln!(
                        "{}→ {} {}",
                        "  ".repeat(event.depth.unwrap_or(2) as usize - 2),
                        event.skill.unwrap_or_default(),
                        event.input.unwrap_or_default()
                    ),
                    _ => {}
                }
            });
            let ctx = host.kernel.context(RunOptions {
                events: Some(events),
                ..RunOptions::default()
            });
            let started = std::time::Instant::now();
            let result = ctx.call_full(&name, input).await;
            host.flush_stats();
            let outcome = result?;
            if globals.json {
                let mut value = serde_json::to_value(&outcome).map_err(internal)?;
                value["success"] = json!(true);
                value["skill"] = json!(name);
                value["duration"] = json!(started.elapsed().as_secs_f64() * 1000.0);
                println!("{value}");
            } else {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&outcome.output).map_err(internal)?
                );
            }
            Ok(())
        }
        SkillCommand::Install { source, overwrite } => {
            if !source.exists() {
                return Err(Failure::Usage {
                    code: "INVALID_ARGUMENT",
                    message: format!("{}: no such file or directory", source.display()),
                    hint: Some("give a skill's .zip archive or its directory".into()),
                });
            }
            let manager = manager(globals, &Grants::default())?;
            let bar = (!globals.json).then(install_bar);
            let mut progress = |done: u64, total: u64| {
                if let Some(bar) = &bar {
                    bar.set_length(total);
                    bar.set_position(done);
                }
            };
            let options = InstallOptions {
                overwrite,
                progress: Some(&mut progress),
            };
            let result = if source.is_dir() {
                manager.install_dir(&source, options).await
            } else {
                let bytes = std::fs::read(&source).map_err(|source_error| Error::Io {
                    path: source.clone(),
                    source: source_error,
                })?;
                manager.install_skill(&bytes, options).await
            };
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            let outcome = result?;
            let record = outcome.skill.clone().unwrap_or_default();
            if globals.json {
                let mut value = serde_json::to_value(&outcome).map_err(internal)?;
                value["kind"] = json!(record.kind);
                value["capabilities"] = json!(record.capabilities);
                println!("{value}");
            } else {
                println!("{}: {}", outcome.name, outcome.message);
                println!("  kind:       {}", record.kind);
                println!("  version:    {}", record.version);
                let caps = &record.capabilities;
                if caps.is_empty() {
                    println!("  requests:   nothing (pure computation)");
                }
                for dir in &caps.dirs {
                    println!(
                        "  requests:   directory {} ({:?}) {}",
                        dir.path, dir.access, dir.reason
                    );
                }
                if caps.llm {
                    println!("  requests:   the language model");
                }
                if caps.memory != evo_host::capabilities::MemoryAccess::None {
                    println!("  requests:   memory ({})", caps.memory.as_str());
                }
                if record.kind == "native" {
                    println!(
                        "  trust:      native script: runs as a Node process, less isolated than a Wasm skill"
                    );
                }
                println!("  digest:     sha256:{}", record.digest);
            }
            Ok(())
        }
        SkillCommand::UpdateDescription { name, description } => {
            let outcome = manager(globals, &Grants::default())?
                .update_skill_description(&name, &description)?;
            if globals.json {
                println!("{}", serde_json::to_value(&outcome).map_err(internal)?);
            } else {
                println!("{}: {}", outcome.name, outcome.message);
            }
            Ok(())
        }
        SkillCommand::Search { query, limit } => {
            let hits = manager(globals, &Grants::default())?.search_skills(&query, limit)?;
            if globals.json {
                println!("{}", json!({ "results": hits }));
            } else if hits.is_empty() {
                println!("no installed skill matches");
            } else {
                for hit in &hits {
                    println!("{:.2}  {}", hit.score, hit.name);
                }
            }
            Ok(())
        }
        SkillCommand::Uninstall { name } => {
            let outcome = manager(globals, &Grants::default())?.uninstall_skill(&name)?;
            if globals.json {
                println!("{}", serde_json::to_value(&outcome).map_err(internal)?);
            } else {
                println!("{}: {}", outcome.name, outcome.message);
            }
            Ok(())
        }
        SkillCommand::List {
            name,
            tags,
            page,
            limit,
            sources,
        } => {
            let host = Host::open(globals, &sources, &Grants::default()).await?;
            let installed: std::collections::HashMap<String, u64> =
                SkillManager::new(&globals.data_dir)
                    .list_skills(&ListQuery::default())?
                    .skills
                    .into_iter()
                    .map(|s| (s.name, s.installed_at))
                    .collect();
            let mut skills = host.kernel.registry().list();
            skills.retain(|s| {
                name.as_deref().is_none_or(|n| s.meta.name.contains(n))
                    && tags.iter().all(|t| s.meta.tags.contains(t))
            });
            let total = skills.len();
            if let Some(limit) = limit.filter(|l| *l > 0) {
                skills = skills
                    .into_iter()
                    .skip((page.max(1) - 1) * limit)
                    .take(limit)
                    .collect();
            }
            if globals.json {
                let items: Vec<_> = skills
                    .iter()
                    .map(|s| {
                        json!({
                            "name": s.meta.name,
                            "kind": s.kind(),
                            "category": s.meta.category,
                            "version": s.meta.version,
                            "description": s.meta.description,
                            "tags": s.meta.tags,
                            "installedAt": installed.get(&s.meta.name),
                        })
                    })
                    .collect();
                println!(
                    "{}",
                    json!({ "skills": items, "total": total, "errors": host.load_errors })
                );
            } else {
                let width = skills.iter().map(|s| s.meta.name.len()).max().unwrap_or(0);
                for skill in &skills {
                    println!(
                        "{:width$}  {:9}  {}",
                        skill.meta.name,
                        skill.kind().as_str(),
                        first_sentence(&skill.meta.description)
                    );
                }
                if skills.len() < total {
                    println!(
                        "({} of {total}; --page and --limit show others)",
                        skills.len()
                    );
                }
            }
            Ok(())
        }
        SkillCommand::Stats {
            skill: None,
            installs: true,
        } => {
            let stats = SkillManager::new(&globals.data_dir).statistics()?;
            if globals.json {
                println!("{}", serde_json::to_value(&stats).map_err(internal)?);
            } else {
                println!(
                    "{} skill{} installed",
                    stats.total,
                    if stats.total == 1 { "" } else { "s" }
                );
                for (tag, count) in &stats.by_tag {
                    println!("  tag {tag}: {count}");
                }
                for day in &stats.installs_per_day {
                    println!("  {}: {} installed", day.date, day.count);
                }
            }
            Ok(())
        }
        SkillCommand::Stats { skill, .. } => {
            let db = Db::open(&globals.data_dir)?;
            let mut stats = Stats::load(&db)?;
            if let Some(name) = &skill {
                stats.retain(|k, _| k == name);
                if stats.is_empty() {
                    return Err(Failure::Usage {
                        code: "SKILL_NOT_FOUND",
                        message: format!(
                            "no calls of {name} are recorded in {}",
                            db.path().display()
                        ),
                        hint: Some(
                            "statistics are recorded by `evo skill run` and agent runs".into(),
                        ),
                    });
                }
            }
            if globals.json {
                println!("{}", serde_json::to_value(&stats).map_err(internal)?);
            } else if stats.is_empty() {
                println!("no calls recorded yet");
            } else {
                let width = stats.keys().map(String::len).max().unwrap_or(5).max(5);
                println!(
                    "{:width$}  {:>7}  {:>8}  {:>9}  {:>9}",
                    "skill", "calls", "success", "avg ms", "max ms"
                );
                for (name, s) in &stats {
                    println!(
                        "{name:width$}  {:>7}  {:>7.1}%  {:>9.2}  {:>9.2}",
                        s.call_count,
                        s.success_rate * 100.0,
                        s.average_duration,
                        s.max_duration
                    );
                }
            }
            Ok(())
        }
        SkillCommand::Info {
            skill,
            sources,
            grants,
        } => {
            let host = Host::open(globals, &sources, &grants).await?;
            let name = host.resolve(&skill).await?;
            let registered = host
                .kernel
                .registry()
                .get(&name)
                .ok_or(Error::SkillNotFound { name: name.clone() })?;
            let wasm = registered
                .executor
                .as_any()
                .and_then(|any| any.downcast_ref::<WasmExecutor>())
                .map(WasmExecutor::skill);
            let mut value = json!({ "manifest": registered.meta, "kind": registered.kind() });
            if let Some(skill) = wasm {
                value["limits"] = json!(skill.limits());
                value["grant"] = json!(skill.grant());
                value["apiVersion"] = json!(skill.info().api_version);
                value["sdk"] = json!(skill.info().sdk);
                value["digest"] = json!(skill.digest());
                value["loadedFrom"] = json!(skill.load_source());
            }
            let instructions = registered
                .executor
                .as_any()
                .and_then(|any| any.downcast_ref::<StaticExecutor>())
                .map(|s| s.files().instructions())
                .transpose()?;
            if let Some(instructions) = &instructions {
                value["instructions"] = json!({
                    "sections": instructions.sections.iter().map(|s| json!({ "heading": s.heading, "level": s.level })).collect::<Vec<_>>(),
                    "codeBlocks": instructions.code_blocks,
                    "resources": instructions.resources,
                });
            }
            let record = evo_host::packages::InstallRecord::read(
                &evo_host::paths::skills_dir(&globals.data_dir).join(&name),
            );
            if let Some(record) = &record {
                value["installed"] = json!(record);
            }
            if globals.json {
                println!("{value}");
            } else if let Some(skill) = wasm {
                print_info(skill);
            } else {
                let meta = &registered.meta;
                println!("{} {} — {}", meta.name, meta.version, meta.description);
                println!("  kind:       {}", registered.kind());
                println!("  category:   {}", meta.category);
                if !meta.tags.is_empty() {
                    println!("  tags:       {}", meta.tags.join(", "));
                }
                println!(
                    "  timeout:    {} ms, {} retries",
                    meta.timeout_ms, meta.retry
                );
                if !meta.calls.is_empty() {
                    println!("  calls:      {}", meta.calls.join(", "));
                }
                if let Some(instructions) = &instructions {
                    for section in &instructions.sections {
                        println!(
                            "  section:    {}{}",
                            "  ".repeat(usize::from(section.level.saturating_sub(1))),
                            section.heading
                        );
                    }
                    if !instructions.code_blocks.is_empty() {
                        let n = instructions.code_blocks.len();
                        println!("  code:       {n} block{}", if n == 1 { "" } else { "s" });
                    }
                    for resource in &instructions.resources {
                        println!(
                            "  resource:   {} ({} bytes, {})",
                            resource.path, resource.bytes, resource.kind
                        );
                    }
                }
            }
            if !globals.json
                && let Some(record) = &record
            {
                let when = chrono::DateTime::from_timestamp_millis(
                    i64::try_from(record.installed_at).unwrap_or(0),
                )
                .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_default();
                println!("  installed:  {when}, sha256:{}", record.digest);
                let approved = &record.capabilities;
                if approved.is_empty() {
                    println!("  approved:   nothing beyond computation, at install");
                } else {
                    println!(
                        "  approved:   {} at install",
                        serde_json::to_string(approved).map_err(internal)?
                    );
                }
            }
            Ok(())
        }
    }
}

/// A bar for installs of large archives (hidden when stderr is not a terminal).
fn install_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::stderr_with_hz(10),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("installing {bar:30} {bytes}/{total_bytes}")
    {
        bar.set_style(style);
    }
    bar
}

/// The skill manager of the data directory: it checks skills with the loader the host
/// uses and keeps the skill index current.
pub(crate) fn manager(globals: &Globals, grants: &Grants) -> Result<SkillManager, Failure> {
    let index = evo_host::packages::index::SkillIndex::new(
        Db::open(&globals.data_dir)?,
        evo_host::memory::configured_embedder()?,
    );
    Ok(SkillManager::new(&globals.data_dir)
        .with_index(index)
        .with_loader(loader(globals, grants)?))
}

/// The loader of one CLI invocation: Wasm with the compile cache in the data directory,
/// native skills confined by this binary.
fn loader(globals: &Globals, grants: &Grants) -> Result<Loader, Failure> {
    let config = EngineConfig {
        cache_dir: Some(evo_host::paths::wasm_cache_dir(&globals.data_dir)),
        // One CLI invocation runs a handful of calls; a small pool starts fastest.
        max_concurrent_calls: 4,
        ..EngineConfig::default()
    };
    let engine = WasmEngine::new(config)?;
    let native = NativeConfig {
        // This binary confines itself (`evo __native-exec`) before becoming Node.
        launcher: std::env::current_exe().ok(),
        require_isolation: std::env::var("EVO_NATIVE_REQUIRE_ISOLATION").is_ok_and(|v| v == "1"),
        ..NativeConfig::default()
    };
    Ok(Loader::new()
        .with_wasm(engine, grants.policy()?)
        .with_native(NativeSandbox::new(std::env::temp_dir(), native)))
}

/// `evo doctor`: what this installation can do, and where things are.
pub(crate) async fn doctor(globals: &Globals) -> Result<(), Failure> {
    let host = Host::open(globals, &Sources { skills_dir: None }, &Grants::default()).await?;
    let engine = host.loader.wasm_engine().map(|e| e.allocator());
    let cache = evo_host::paths::wasm_cache_dir(&globals.data_dir);
    let cached = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
    let memory = host.memory.status()?;
    let skills = host.kernel.registry().len();
    let native = host.loader.native().isolation().await;
    let value = json!({
        "dataDir": globals.data_dir,
        "wasm": { "allocator": engine, "cache": cache, "cachedComponents": cached },
        "memory": memory,
        "skills": { "available": skills, "failedToLoad": host.load_errors.len() },
        "nativeSkills": { "protections": native },
    });
    if globals.json {
        println!("{value}");
        return Ok(());
    }
    println!("data directory:  {}", globals.data_dir.display());
    match engine {
        Some(allocator) => println!(
            "wasm engine:     ok ({} allocator)",
            serde_json::to_value(allocator)
                .map_err(internal)?
                .as_str()
                .unwrap_or("?")
        ),
        None => println!("wasm engine:     unavailable"),
    }
    println!("compile cache:   {} ({cached} components)", cache.display());
    println!(
        "memory:          {} entries in {}",
        memory.entries,
        memory.database.display()
    );
    println!(
        "  embedder:      {} ({} dimensions)",
        memory.embedder, memory.dimension
    );
    println!("  vector search: {}", memory.vector_search);
    println!(
        "skills:          {skills} available, {} failed to load",
        host.load_errors.len()
    );
    if native.iter().any(|p| p.starts_with("landlock")) {
        println!("native skills:   confined ({})", native.join(", "));
    } else {
        println!(
            "native skills:   NOT confined to their workspace (Landlock unavailable{}); they run with process limits only",
            if native.is_empty() { "" } else { "; applied: " }
        );
        if !native.is_empty() {
            println!("                 {}", native.join(", "));
        }
    }
    Ok(())
}

fn first_sentence(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // A sentence ends at ". " before a capital letter, not at "e.g. ".
    let end = line
        .match_indices(". ")
        .map(|(i, _)| i)
        .find(|&i| line[i + 2..].chars().next().is_some_and(char::is_uppercase));
    match end {
        Some(end) => line[..=end].to_owned(),
        None => line,
    }
}

/// The skills of one CLI invocation: built-ins, installed skills, `--skills-dir`.
pub(crate) struct Host {
    kernel: Arc<Kernel>,
    pub(crate) memory: Arc<MemoryManager>,
    registry: Arc<SkillRegistry>,
    loader: Loader,
    data_dir: PathBuf,
    load_errors: Vec<serde_json::Value>,
}

impl Host {
    pub(crate) async fn open(
        globals: &Globals,
        sources: &Sources,
        grants: &Grants,
    ) -> Result<Self, Failure> {
        let loader = loader(globals, grants)?;
        let registry = Arc::new(SkillRegistry::new());
        BuiltinTools::default().register(&registry)?;
        evo_host::memory::register_skills(&registry)?;
        let memory = Arc::new(MemoryManager::open_configured(&globals.data_dir)?);
        let mut kernel = Kernel::new(registry.clone()).with_memory(memory.clone());
        // A broken model configuration must not stop commands that need no model.
        match evo_host::llm::config::load(&globals.data_dir) {
            Ok(Some(provider)) => {
                kernel = kernel.with_llm(Arc::new(evo_host::llm::ProviderLlm(provider)));
            }
            Ok(None) => {}
            Err(e) => eprintln!("warning: no language model: {e}"),
        }
        let kernel = Arc::new(kernel);
        let mut load_errors = Vec::new();
        let installed = evo_host::paths::skills_dir(&globals.data_dir);
        let dirs = [Some(installed), sources.skills_dir.clone()];
        for dir in dirs.into_iter().flatten() {
            if !dir.is_dir() {
                if sources.skills_dir.as_ref() == Some(&dir) {
                    return Err(Failure::Usage {
                        code: "INVALID_ARGUMENT",
                        message: format!("--skills-dir {}: not a directory", dir.display()),
                        hint: None,
                    });
                }
                continue;
            }
            for (path, result) in loader.load_all(&dir).await? {
                match result {
                    Ok(skill) => {
                        registry.register(skill);
                    }
                    Err(e) => {
                        eprintln!("warning: skipped {}: [{}] {e}", path.display(), e.code());
                        load_errors.push(
                            json!({ "path": path, "code": e.code(), "error": e.to_string() }),
                        );
                    }
                }
            }
        }
        Ok(Self {
            kernel,
            memory,
            registry,
            loader,
            data_dir: globals.data_dir.clone(),
            load_errors,
        })
    }

    /// The registered name for SKILL: a `.wasm` file or a directory is loaded and
    /// registered first; anything else is looked up by name.
    async fn resolve(&self, skill: &str) -> Result<String, Failure> {
        let path = Path::new(skill);
        let registered = if path.is_dir() {
            self.loader.load_dir(path).await?
        } else if path.is_file() {
            let wasm = self.loader.load_wasm_file(path).await?;
            RegisteredSkill::new(wasm.meta().clone(), Arc::new(WasmExecutor::new(wasm)))?
        } else if self.kernel.registry().has(skill) {
            let name = self
                .kernel
                .registry()
                .get(skill)
                .map(|s| s.meta.name.clone());
            return Ok(name.unwrap_or_else(|| skill.to_owned()));
        } else if skill.contains(['/', '\\']) || skill.ends_with(".wasm") {
            return Err(Failure::Usage {
                code: "SKILL_NOT_FOUND",
                message: format!("{skill} is not a file or directory"),
                hint: Some(
                    "give a skill name (`evo skill list`), a skill directory, or a .wasm component"
                        .into(),
                ),
            });
        } else {
            return Err(Error::SkillNotFound {
                name: skill.to_owned(),
            }
            .into());
        };
        let name = registered.meta.name.clone();
        self.kernel.registry().register(registered);
        Ok(name)
    }

    /// A kernel over the same skills and memory without a model, for an agent to give
    /// its own.
    pub(crate) fn kernel_without_llm(&self) -> Kernel {
        Kernel::new(self.registry.clone())
            .with_memory(self.memory.clone())
            .with_stats(self.kernel.stats().clone())
    }

    /// Adds this invocation's calls to the statistics in the data directory. Failing to
    /// record statistics must not fail the command that ran, so it only warns.
    pub(crate) fn flush_stats(&self) {
        let result = Db::open(&self.data_dir).and_then(|mut db| self.kernel.stats().flush(&mut db));
        if let Err(e) = result {
            eprintln!("warning: could not record statistics: {e}");
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

fn read_input(input: String) -> Result<serde_json::Value, Failure> {
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
    serde_json::from_str(&input).map_err(|e| Failure::Usage {
        code: "INVALID_INPUT",
        message: format!("--input is not valid JSON: {e}"),
        hint: Some("quote the JSON for your shell, e.g. --input '{\"expression\":\"1+2\"}'".into()),
    })
}

fn internal(error: serde_json::Error) -> Failure {
    Failure::Usage {
        code: "INTERNAL_ERROR",
        message: error.to_string(),
        hint: None,
    }
}
