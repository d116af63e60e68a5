//! `evo doctor`: what this installation can do, and what is broken. Exits 1 when a part
//! that is configured or needed does not work, so scripts can gate on it.

use std::time::Duration;

use evo_host::sandbox::IsolationLevel;
use evo_host::skills::ExecutorKind;
use serde_json::{Value, json};

use super::args;
use super::{Failure, Globals, out};

/// Longest wait for `node --version`.
const NODE_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One line of the report.
struct Check {
    name: &'static str,
    ok: bool,
    /// Broken and it matters: the command fails.
    broken: bool,
    detail: String,
}

impl Check {
    fn ok(name: &'static str, detail: String) -> Self {
        Self {
            name,
            ok: true,
            broken: false,
            detail,
        }
    }
    fn note(name: &'static str, detail: String) -> Self {
        Self {
            name,
            ok: false,
            broken: false,
            detail,
        }
    }
    fn broken(name: &'static str, detail: String) -> Self {
        Self {
            name,
            ok: false,
            broken: true,
            detail,
        }
    }
}

/// Whether `dir` takes a new file.
fn data_dir_check(dir: &std::path::Path) -> Check {
    match tempfile::NamedTempFile::new_in(dir) {
        Ok(_) => Check::ok("data directory", format!("{} (writable)", dir.display())),
        Err(e) => Check::broken(
            "data directory",
            format!("{}: not writable: {e}", dir.display()),
        ),
    }
}

pub(super) async fn run(globals: &Globals) -> Result<(), Failure> {
    let host = match args::plain_host(globals).await {
        Ok(host) => host,
        // The shared database does not answer (or the data directory's cannot be
        // opened): nothing else can be checked without it; say so as a check.
        Err(Failure::Evo(e @ evo_host::Error::Database { .. })) => {
            let checks = [
                data_dir_check(&globals.data_dir),
                Check::broken("storage", e.to_string()),
            ];
            return report(globals, &globals.data_dir, Value::Null, &checks);
        }
        // A configuration that does not read is one broken part among the others: say
        // what is wrong with it and check what needs no configuration.
        Err(Failure::Evo(e @ evo_host::Error::Config { .. })) => {
            let node = std::path::Path::new("node");
            let checks = [
                data_dir_check(&globals.data_dir),
                Check::broken(
                    "configuration",
                    format!(
                        "{e}; {} (the checks that need it wait until it reads)",
                        e.hint().unwrap_or_default()
                    ),
                ),
                match node_version(node).await {
                    Ok(version) => Check::ok("node", format!("{} {version}", node.display())),
                    Err(problem) => Check::note("node", problem),
                },
            ];
            return report(globals, &globals.data_dir, Value::Null, &checks);
        }
        Err(e) => return Err(e),
    };
    let mut checks = Vec::new();

    let data_dir = host.data_dir().to_owned();
    checks.push(data_dir_check(&data_dir));
    checks.push(Check::ok(
        "configuration",
        match &host.config().file {
            Some(file) => format!("{} (reads)", file.display()),
            None => "defaults and environment (no evo.toml)".into(),
        },
    ));

    checks.push(match host.wasm_engine().map(|e| e.allocator()) {
        Some(allocator) => Check::ok(
            "wasm engine",
            format!(
                "{} allocator, {} pool slots",
                json!(allocator).as_str().unwrap_or("?"),
                host.config().engine.pool_slots
            ),
        ),
        None => Check::broken("wasm engine", "unavailable".into()),
    });

    let cache = evo_host::config::wasm_cache_dir(&data_dir);
    checks.push(if !host.config().engine.compile_cache {
        Check::note(
            "compile cache",
            "off (engine.compile_cache = false): every run compiles".into(),
        )
    } else {
        // One compiled artifact per component (beside them, what is learnt of the files
        // and the functions shared between components).
        let cached = std::fs::read_dir(&cache)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                    .count()
            })
            .unwrap_or(0);
        let writable = std::fs::create_dir_all(&cache)
            .and_then(|()| tempfile::NamedTempFile::new_in(&cache).map(drop));
        match writable {
            Ok(()) => Check::ok(
                "compile cache",
                format!("{} ({cached} components)", cache.display()),
            ),
            Err(e) => Check::broken(
                "compile cache",
                format!("{}: not writable: {e}", cache.display()),
            ),
        }
    });

    checks.push(match host.storage() {
        evo_host::storage::Storage::Local(dir) => Check::ok(
            "storage",
            format!(
                "SQLite in {} (one machine; [storage] url shares it between nodes)",
                dir.display()
            ),
        ),
        #[cfg(feature = "full")]
        evo_host::storage::Storage::Shared(pg) => {
            let pg = pg.clone();
            let probe = tokio::task::spawn_blocking(move || {
                pg.ping()?;
                Ok::<_, evo_host::Error>((pg.describe(), pg.schema_version()?, pg.pgvector()?.0))
            })
            .await;
            match probe {
                Ok(Ok((url, version, pgvector))) => Check::ok(
                    "storage",
                    format!(
                        "PostgreSQL {url}, schema version {version}; vectors: {}",
                        super::db::vectors(pgvector)
                    ),
                ),
                Ok(Err(e)) => Check::broken("storage", e.to_string()),
                Err(e) => Check::broken("storage", e.to_string()),
            }
        }
    });

    let memory = host.memory().status()?;
    checks.push(Check::ok(
        "memory",
        format!(
            "{} entries in {}; embedder {} ({} dimensions), vector search {}",
            memory.entries,
            memory.database,
            memory.embedder,
            memory.dimension,
            memory.vector_search
        ),
    ));

    let llm = &host.config().llm;
    let source = host.config().source("llm.model");
    let local = host
        .llm()
        .and_then(|p| p.describe().strip_prefix("local:").map(str::to_owned));
    checks.push(match &llm.model {
        _ if local.is_some() => {
            let file = local.unwrap_or_default();
            let path = if file.contains('/') {
                std::path::PathBuf::from(&file)
            } else {
                evo_host::llm::local::model_path(host.data_dir(), &file)
            };
            let source = if llm.model.is_some() {
                format!("from {source}")
            } else {
                "installed, and no other model is configured".to_owned()
            };
            let measured = tokio::task::spawn_blocking(move || {
                let model = evo_host::llm::local::model::LocalModel::open(&path)?;
                let speed = evo_host::llm::local::model::measure(&model)?;
                if model.is_noise(speed.perplexity) {
                    return Err(evo_host::Error::LocalModel {
                        path,
                        reason: format!(
                            "it loads, but what it writes is noise (perplexity {:.0} on a plain English sentence, where a working model scores under 100): the file is damaged or holds no trained weights",
                            speed.perplexity
                        ),
                    });
                }
                Ok::<_, evo_host::Error>(format!(
                    "local {} ({:.1} MB, {}-token context): {:.0} prompt tokens/s, {:.1} tokens/s here, perplexity {:.1}",
                    model.name(),
                    model.bytes() as f64 / 1e6,
                    model.context(),
                    speed.prompt_per_second,
                    speed.generated_per_second,
                    speed.perplexity
                ))
            })
            .await;
            match measured {
                Ok(Ok(detail)) => Check::ok("language model", format!("{detail} ({source})")),
                Ok(Err(e)) => Check::broken(
                    "language model",
                    format!("{e}; {}", e.hint().unwrap_or_default()),
                ),
                Err(e) => Check::broken("language model", e.to_string()),
            }
        }
        None => Check::note(
            "language model",
            "none configured (the agent and llm skills need one; EVO_LLM or [llm] in evo.toml)"
                .into(),
        ),
        Some(_) => {
            let settings = llm.clone();
            match tokio::task::spawn_blocking(move || evo_host::llm::probe(&settings)).await {
                Ok(Ok(detail)) => Check::ok("language model", format!("{detail} (from {source})")),
                Ok(Err(problem)) => Check::broken(
                    "language model",
                    format!("{problem} (configured by {source})"),
                ),
                Err(e) => Check::broken("language model", e.to_string()),
            }
        }
    });

    let native_skills = host
        .skills()
        .iter()
        .filter(|s| s.kind() == ExecutorKind::Native)
        .count();
    let node = &host.config().native.node;
    checks.push(match node_version(node).await {
        Ok(version) => Check::ok("node", format!("{} {version}", node.display())),
        Err(problem) if native_skills > 0 => Check::broken(
            "node",
            format!("{problem}; {native_skills} installed native skill(s) cannot run"),
        ),
        Err(problem) => Check::note(
            "node",
            format!("{problem} (only native script skills need it)"),
        ),
    });

    let protections = host.sandbox_protections().await;
    let level = IsolationLevel::of(&protections);
    let required = host.config().native.isolation == evo_host::config::Isolation::Required;
    let mut detail = format!(
        "{}: {} ({})",
        level.name(),
        level.describe(),
        protections.join(", ")
    );
    if !protections.iter().any(|p| p == "cgroup-memory") {
        detail.push_str("; no cgroup: memory is capped for V8's heap only, and a fork bomb only by the user's process limit");
    }
    checks.push(match args::native_launcher() {
        Some(launcher) if launcher.ends_with(evo_host::sandbox::LAUNCHER) => {
            Check::ok("native launcher", launcher.display().to_string())
        }
        Some(launcher) => Check::note(
            "native launcher",
            format!(
                "{} itself: {} is not installed beside it, so each native call starts the \
                 whole evo binary (slower); install both (`cargo install --path cli`)",
                launcher.display(),
                evo_host::sandbox::LAUNCHER
            ),
        ),
        None => Check::note(
            "native launcher",
            "this binary's own path is unknown: native skills run with process limits only".into(),
        ),
    });
    checks.push(match level {
        IsolationLevel::ProcessLimits if required && native_skills > 0 => Check::broken(
            "native isolation",
            format!("{detail}; native.isolation = required refuses to run them"),
        ),
        IsolationLevel::ProcessLimits => Check::note("native isolation", detail),
        _ => Check::ok("native isolation", detail),
    });

    let trust = &host.config().trust;
    checks.push(match host.trusted_keys() {
        Err(e) => Check::broken("trust", e.to_string()),
        Ok(keys) if keys.is_empty() && trust.require_signature => Check::broken(
            "trust",
            "[trust] require_signature is on and [trust] keys lists no key: every install from a registry is refused".into(),
        ),
        Ok(keys) if keys.is_empty() => Check::note(
            "trust",
            "no [trust] keys: skills from registries install unsigned, with a warning".into(),
        ),
        Ok(keys) => Check::ok(
            "trust",
            format!(
                "keys {}; signatures {}; pinned in {}",
                keys.iter()
                    .map(|k| format!("{} ({}…)", k.key, &k.fingerprint[..19.min(k.fingerprint.len())]))
                    .collect::<Vec<_>>()
                    .join(", "),
                if trust.require_signature { "required" } else { "checked, not required" },
                host.lock_path().display(),
            ),
        ),
    });

    let skills = host.skills().len();
    let failed = host.load_errors().len();
    checks.push(if failed == 0 {
        Check::ok("skills", format!("{skills} available"))
    } else {
        Check::note(
            "skills",
            format!("{skills} available, {failed} failed to load (see the warnings above)"),
        )
    });

    let memory = serde_json::to_value(&memory).unwrap_or(Value::Null);
    report(globals, &data_dir, memory, &checks)
}

/// Prints `checks` (with `--json`, beside the data directory and memory's status);
/// fails the command when one is broken.
fn report(
    globals: &Globals,
    data_dir: &std::path::Path,
    memory: Value,
    checks: &[Check],
) -> Result<(), Failure> {
    let broken = checks.iter().any(|c| c.broken);
    if globals.json {
        let value: serde_json::Map<String, Value> = checks
            .iter()
            .map(|c| {
                (
                    c.name.to_owned(),
                    json!({ "ok": c.ok, "broken": c.broken, "detail": c.detail }),
                )
            })
            .collect();
        out!(
            "{}",
            json!({ "ok": !broken, "dataDir": data_dir, "memory": memory, "checks": value })
        );
    } else {
        for check in checks {
            let mark = if check.ok {
                "ok  "
            } else if check.broken {
                "FAIL"
            } else {
                "note"
            };
            out!("{mark}  {:18} {}", check.name, check.detail);
        }
    }
    if broken {
        return Err(Failure::Reported(1));
    }
    Ok(())
}

async fn node_version(node: &std::path::Path) -> Result<String, String> {
    let run = tokio::process::Command::new(node)
        .arg("--version")
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(NODE_PROBE_TIMEOUT, run).await {
        Ok(Ok(output)) if output.status.success() => {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        }
        Ok(Ok(output)) => Err(format!(
            "{} --version failed ({})",
            node.display(),
            output.status
        )),
        Ok(Err(e)) => Err(format!("{} not found: {e}", node.display())),
        Err(_) => Err(format!(
            "{} --version did not answer in {NODE_PROBE_TIMEOUT:?}",
            node.display()
        )),
    }
}
