//! Crash safety: `evo` run as a subprocess and killed with SIGKILL at a random
//! moment of an install, an uninstall, a description update, a memory store or forget,
//! a daily-log line, a MEMORY.md re-index, a call that writes statistics and history,
//! or a component compile that writes the cache — many times over, from a seed. After
//! every kill: each database passes `PRAGMA integrity_check`, the next command works,
//! every listed skill is whole, and every write that `evo` acknowledged (exit 0) is
//! there, and every acknowledged removal stays removed.
//!
//! `./scripts/crash [ITERATIONS] [SEED]` runs it at length; the test suite runs a short
//! version (`tests/all/crash.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// What one run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Commands started.
    pub commands: usize,
    /// Of those, killed before they finished.
    pub killed: usize,
    /// Acknowledged writes checked at the end (skills, descriptions, memory entries,
    /// removals, calls counted).
    pub acknowledged: usize,
    /// Corrupted compile-cache files that the next run detected and rebuilt.
    pub caches_rebuilt: usize,
    /// Commands per operation, with how many were killed.
    pub by_operation: BTreeMap<&'static str, (usize, usize)>,
}

/// A deterministic generator (xorshift), so that a seed names a run.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the commands acknowledged, and so what must hold after any later kill.
#[derive(Debug, Default)]
struct Expected {
    installed: BTreeSet<String>,
    uninstalled: BTreeSet<String>,
    descriptions: BTreeMap<String, String>,
    memories: BTreeSet<String>,
    forgotten: BTreeSet<String>,
    log_lines: Vec<String>,
    calls: u64,
}

/// The harness: an `evo` binary, a data directory and the sources it installs from.
#[derive(Debug)]
pub struct Harness {
    evo: PathBuf,
    home: PathBuf,
    sources: PathBuf,
    component: PathBuf,
    rng: Rng,
    /// How long each operation took when it was left to finish: kills land within that.
    typical: BTreeMap<&'static str, Duration>,
    expected: Expected,
    report: Report,
}

/// The command run after every kill to check the data directory (not counted).
const CHECK: &str = "check";

const OPERATIONS: [&str; 9] = [
    "install",
    "uninstall",
    "update-description",
    "memory store",
    "memory forget",
    "memory log",
    "MEMORY.md re-index",
    "call (statistics, history)",
    "compile (cache write)",
];

impl Harness {
    /// A harness running `evo` on a fresh data directory under `root`, with `seed`.
    pub fn new(evo: &Path, root: &Path, component: &Path, seed: u64) -> Self {
        let home = root.join("home");
        let sources = root.join("sources");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&sources).expect("sources");
        Self {
            evo: evo.to_owned(),
            home,
            sources,
            component: component.to_owned(),
            rng: Rng(seed.max(1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            typical: BTreeMap::new(),
            expected: Expected::default(),
            report: Report::default(),
        }
    }

    /// Runs `iterations` commands, each killed at a random moment two times in three,
    /// checking the data directory after each; then checks every acknowledged write.
    pub fn run(mut self, iterations: usize) -> Report {
        for i in 0..iterations {
            let operation = OPERATIONS[self.rng.below(OPERATIONS.len() as u64) as usize];
            let kill = self.rng.below(3) != 0;
            self.step(i, operation, kill);
            self.check_integrity(&format!("after {operation} #{i}"));
            self.check_skills(&format!("after {operation} #{i}"));
        }
        self.check_everything();
        self.report
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.evo);
        command.args(args);
        for var in crate::HOST_SETTINGS {
            command.env_remove(var);
        }
        command
            .env("EVO_HOME", &self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `args`, killed after a random part of the operation's typical time when
    /// `kill`; its stdout when it finished with success.
    fn attempt(&mut self, operation: &'static str, args: &[&str], kill: bool) -> Option<String> {
        let typical = *self
            .typical
            .get(operation)
            .unwrap_or(&Duration::from_millis(200));
        let delay =
            kill.then(|| Duration::from_micros(self.rng.below(typical.as_micros() as u64 + 1)));
        let started = Instant::now();
        let mut child = self.command(args).spawn().expect("evo starts");
        let mut stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut was_killed = false;
        let status = match delay {
            Some(delay) => {
                let deadline = started + delay;
                loop {
                    if let Some(status) = child.try_wait().expect("waits") {
                        break status;
                    }
                    if Instant::now() >= deadline {
                        let _ = child.kill();
                        was_killed = true;
                        break child.wait().expect("waits");
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            None => child.wait().expect("waits"),
        };
        let stdout = reader.join().unwrap_or_default();
        let stderr = errors.join().unwrap_or_default();
        if operation != CHECK {
            let counts = self.report.by_operation.entry(operation).or_default();
            counts.0 += 1;
            self.report.commands += 1;
            if was_killed && !status.success() {
                counts.1 += 1;
                self.report.killed += 1;
            }
        }
        if was_killed && !status.success() {
            return None;
        }
        if !was_killed {
            self.typical.insert(operation, started.elapsed());
        }
        assert!(
            status.success(),
            "`evo {}` failed without being killed ({status}): {stderr}",
            args.join(" ")
        );
        Some(stdout)
    }

    fn step(&mut self, i: usize, operation: &'static str, kill: bool) {
        let home = self.home.clone();
        match operation {
            "install" => {
                let name = format!("crash-{}", self.rng.below(6));
                let dir = crate::native_skill(
                    &self.sources.join(i.to_string()),
                    &name,
                    &format!("Crash test skill {i}."),
                    serde_json::json!({}),
                    "console.log(JSON.stringify({ ok: true }));",
                );
                let dir = dir.to_str().expect("utf-8").to_owned();
                let args = ["skill", "install", &dir, "--native", "--overwrite"];
                match self.attempt(operation, &args, kill) {
                    Some(_) => {
                        self.expected.uninstalled.remove(&name);
                        self.expected.installed.insert(name.clone());
                        self.expected
                            .descriptions
                            .insert(name, format!("Crash test skill {i}."));
                    }
                    None => self.unsure_of(&name),
                }
            }
            "uninstall" | "update-description" => {
                let Some(name) = self.pick(&self.expected.installed.clone()) else {
                    return;
                };
                let description = format!("Updated at step {i}.");
                let args: Vec<&str> = if operation == "uninstall" {
                    vec!["skill", "uninstall", &name]
                } else {
                    vec!["skill", "update-description", &name, &description]
                };
                match self.attempt(operation, &args, kill) {
                    Some(_) if operation == "uninstall" => {
                        self.expected.installed.remove(&name);
                        self.expected.descriptions.remove(&name);
                        self.expected.uninstalled.insert(name);
                    }
                    Some(_) => {
                        self.expected.descriptions.insert(name, description);
                    }
                    None => self.unsure_of(&name),
                }
            }
            "memory store" => {
                // Words of their own, so that no store supersedes another: forgetting an
                // entry also forgets the versions it superseded, which would make an
                // acknowledged store vanish for a reason other than a crash.
                let words: Vec<String> = (0..6)
                    .map(|_| format!("w{:x}", self.rng.next() & 0xff_ffff))
                    .collect();
                let text = format!("Step {i}: {}", words.join(" "));
                if let Some(out) =
                    self.attempt(operation, &["memory", "store", &text, "--json"], kill)
                {
                    let decision: Value = serde_json::from_str(&out).expect("a decision");
                    assert_eq!(decision["action"], "add", "{decision}");
                    let id = decision["id"].as_str().expect("an id").to_owned();
                    self.expected.forgotten.remove(&id);
                    self.expected.memories.insert(id);
                }
            }
            "memory forget" => {
                let Some(id) = self.pick(&self.expected.memories.clone()) else {
                    return;
                };
                match self.attempt(operation, &["memory", "forget", &id], kill) {
                    Some(_) => {
                        self.expected.memories.remove(&id);
                        self.expected.forgotten.insert(id);
                    }
                    None => {
                        self.expected.memories.remove(&id);
                    }
                }
            }
            "memory log" => {
                let line = format!("Crash step {i} logged w{}z", self.rng.below(1_000_000));
                if self
                    .attempt(operation, &["memory", "log", "--add", &line], kill)
                    .is_some()
                {
                    self.expected.log_lines.push(line);
                }
            }
            "MEMORY.md re-index" => {
                // The file is the user's: written whole by us, re-indexed by the search.
                let path = home.join("MEMORY.md");
                let mut text = std::fs::read_to_string(&path).unwrap_or_default();
                text.push_str(&format!("- Note {i}: the m{i}k relay is blue\n"));
                let temp = home.join("MEMORY.md.tmp");
                std::fs::write(&temp, text).expect("writes");
                std::fs::rename(&temp, &path).expect("renames");
                let query = format!("m{i}k relay");
                self.attempt(operation, &["memory", "search", &query], kill);
            }
            "call (statistics, history)" => {
                let args = [
                    "skill",
                    "run",
                    "calculate",
                    "--input",
                    r#"{"expression":"6*7"}"#,
                ];
                if let Some(out) = self.attempt(operation, &args, kill) {
                    assert!(out.contains("42"), "{out}");
                    self.expected.calls += 1;
                }
            }
            "compile (cache write)" => {
                let cache = home.join("cache/wasm");
                match self.rng.below(3) {
                    // A cold cache: the run compiles and writes it.
                    0 => {
                        let _ = std::fs::remove_dir_all(&cache);
                    }
                    // A corrupt one: cut short. The run must detect it and rebuild.
                    1 => {
                        if let Some(artifact) = first_file(&cache) {
                            let len = std::fs::metadata(&artifact).map_or(0, |m| m.len());
                            let file = std::fs::OpenOptions::new().write(true).open(&artifact);
                            if let Ok(file) = file {
                                file.set_len(self.rng.below(len)).expect("truncates");
                                self.run_component(operation, false)
                                    .expect("a corrupt cache file is rebuilt");
                                self.report.caches_rebuilt += 1;
                            }
                        }
                    }
                    _ => {}
                }
                self.run_component(operation, kill);
            }
            other => unreachable!("{other}"),
        }
    }

    /// Runs the component (compiling it unless the cache has it), checking its answer
    /// when it finished; its output then.
    fn run_component(&mut self, operation: &'static str, kill: bool) -> Option<String> {
        let component = self.component.to_str().expect("utf-8").to_owned();
        let args = [
            "skill",
            "run",
            &component,
            "--input",
            r#"{"expression":"2^5"}"#,
        ];
        let out = self.attempt(operation, &args, kill)?;
        assert!(out.contains("32"), "{out}");
        Some(out)
    }

    /// A killed command on `name` may or may not have taken effect.
    fn unsure_of(&mut self, name: &str) {
        self.expected.installed.remove(name);
        self.expected.uninstalled.remove(name);
        self.expected.descriptions.remove(name);
    }

    fn pick(&mut self, from: &BTreeSet<String>) -> Option<String> {
        let n = from.len() as u64;
        (n > 0).then(|| from.iter().nth(self.rng.below(n) as usize).cloned())?
    }

    fn check_integrity(&self, when: &str) {
        for db in ["evo.db", "memory.db"] {
            let path = self.home.join(db);
            if !path.exists() {
                continue;
            }
            let conn = rusqlite::Connection::open(&path).expect("opens");
            let result: String = conn
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .expect("checks");
            assert_eq!(result, "ok", "{db} {when}");
        }
    }

    /// The next command works, and every installed skill it lists is whole.
    fn check_skills(&mut self, when: &str) {
        let out = self
            .attempt(CHECK, &["skill", "list", "--json"], false)
            .unwrap_or_else(|| panic!("skill list {when}"));
        let listing: Value = serde_json::from_str(&out).expect("a listing");
        let listed: BTreeMap<String, String> = listing["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("crash-")))
            .map(|s| {
                let name = s["name"].as_str().unwrap_or_default().to_owned();
                let description = s["description"].as_str().unwrap_or_default().to_owned();
                (name, description)
            })
            .collect();
        for name in listed.keys() {
            let dir = self.home.join("skills").join(name);
            for file in ["SKILL.md", "scripts/execute.js"] {
                assert!(
                    dir.join(file).is_file(),
                    "{name} is listed without {file} {when}"
                );
            }
        }
        for name in &self.expected.installed {
            assert!(
                listed.contains_key(name),
                "acknowledged install of {name} lost {when}"
            );
        }
        for name in &self.expected.uninstalled {
            assert!(
                !listed.contains_key(name),
                "acknowledged uninstall of {name} undone {when}"
            );
        }
        for (name, description) in &self.expected.descriptions {
            assert_eq!(
                listed.get(name),
                Some(description),
                "description of {name} {when}"
            );
        }
    }

    /// At the end: every acknowledged memory write and removal, log line and call.
    fn check_everything(&mut self) {
        let conn = rusqlite::Connection::open(self.home.join("memory.db")).expect("opens");
        let exists = |id: &str| -> bool {
            conn.query_row("SELECT count(*) FROM entries WHERE id = ?1", [id], |r| {
                r.get::<_, i64>(0)
            })
            .expect("counts")
                > 0
        };
        for id in &self.expected.memories {
            assert!(exists(id), "acknowledged store {id} lost");
        }
        for id in &self.expected.forgotten {
            assert!(!exists(id), "acknowledged forget of {id} undone");
        }
        let logs: String = std::fs::read_dir(self.home.join("memory"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect();
        for line in &self.expected.log_lines {
            assert!(
                logs.contains(line.as_str()),
                "acknowledged log line lost: {line}"
            );
        }
        let evo = rusqlite::Connection::open(self.home.join("evo.db")).expect("opens");
        let calls: i64 = evo
            .query_row(
                "SELECT coalesce(sum(call_count), 0) FROM skill_stats WHERE skill = 'calculate'",
                [],
                |r| r.get(0),
            )
            .expect("stats");
        assert!(
            calls as u64 >= self.expected.calls,
            "{} acknowledged calls, {calls} counted",
            self.expected.calls
        );
        self.report.acknowledged = self.expected.installed.len()
            + self.expected.uninstalled.len()
            + self.expected.descriptions.len()
            + self.expected.memories.len()
            + self.expected.forgotten.len()
            + self.expected.log_lines.len()
            + self.expected.calls as usize;
    }
}

fn first_file(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
}
