//! `cargo build --release -p evo-cli && cargo bench -p evo-tests --bench mcp_stdio`
//!
//! A `tools/call` round trip over stdio measured from outside by a **raw JSON-RPC
//! client** (no SDK: one line written, one line read, on blocking pipes), so that what
//! is timed is the server, not a client library. Three servers answer the same
//! `echo-string` call:
//!
//! - the **floor**: a hand-written stdio echo server (this bench binary with
//!   `EVO_BENCH_RAW_ECHO=1`): it reads a line, parses it, writes the answer as Evo
//!   shapes it (the text and `structuredContent: {"result": …}`), on one thread;
//! - the **floor with the instance**: the same server, whose tool makes a fresh
//!   instance of the same component per call and calls its `echo-string` through
//!   wasmtime alone (`EVO_BENCH_RAW_WASM_ECHO=1`): the least a server that runs each
//!   call in a fresh instance must do;
//! - **`evo serve`** serving `skills-wasm/plain-kinds` (a plain `wit-bindgen`
//!   component; its `kinds/echo-string` returns its argument), a fresh instance per call;
//! - **Wassette** serving the same component, when `EVO_BENCH_WASSETTE` names its binary
//!   (the peer: another MCP host of Wasm components, built outside this repository);
//! - another build of `evo`, when `EVO_BENCH_BASELINE_EVO` names it (an older commit's,
//!   to measure a change against the code before it in the same run);
//! - the binary users install (`--profile dist`: whole-program LTO, built for size off
//!   the measured paths), when `EVO_BENCH_DIST_EVO` names it (`./scripts/dist-size`
//!   leaves it at `target/dist/evo`): what the size settings cost a call.
//!
//! Each call's answer is checked before anything is timed. Printed after criterion's
//! figures, in two ways of calling, each server's batches interleaved with the others'
//! (40 rounds, the order rotating) so that the machine's moods fall on all of them:
//!
//! - **one call after another** (20,000 calls a server, in batches of 500), as criterion
//!   times them: a server may still be finishing the last call's work when the next
//!   arrives, and is not woken for it;
//! - **after 1 ms idle** (2,000 calls a server, in batches of 50): the server has
//!   finished everything and sleeps when the call arrives, as it does between an
//!   agent's calls.
//!
//! For each: p50/p99 and the **server's CPU per call** (user + system time of the
//! server process over the batches, from `/proc/PID/stat`).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use evo_host::engine::wasm::EngineConfig;
use serde_json::{Value, json};

#[path = "common/mod.rs"]
mod common;

const ECHO_ENV: &str = "EVO_BENCH_RAW_ECHO";
const WASM_ECHO_ENV: &str = "EVO_BENCH_RAW_WASM_ECHO";
const WASSETTE_ENV: &str = "EVO_BENCH_WASSETTE";
const BASELINE_ENV: &str = "EVO_BENCH_BASELINE_EVO";
const DIST_ENV: &str = "EVO_BENCH_DIST_EVO";
/// The string every call echoes.
const TEXT: &str = "hello, evo";
/// Rounds of interleaved batches behind the percentiles and the CPU figures.
const ROUNDS: usize = 40;
/// Calls one after another in a round's batch (20,000 a server in all).
const BATCH: usize = 500;
/// Calls in a round's batch of calls to an idle server (2,000 a server in all).
const IDLE_BATCH: usize = 50;
/// The pause before each call to an idle server: far longer than any server here takes
/// to finish the work a call leaves, far shorter than an agent's pause between calls.
const IDLE: Duration = Duration::from_millis(1);

/// One way of calling a server, and what its calls took.
#[derive(Default)]
struct Regime {
    times: Vec<Duration>,
    /// The server's CPU time over the batches (the pauses included, when it idles).
    cpu: Duration,
}

impl Regime {
    /// `calls` timed calls of `session`, each after `pause` if given.
    fn batch(&mut self, session: &mut Session, calls: usize, pause: Option<Duration>) {
        let cpu = session.cpu();
        for _ in 0..calls {
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
            let start = Instant::now();
            session.echo();
            self.times.push(start.elapsed());
        }
        self.cpu += session.cpu() - cpu;
    }
}

/// The floor: a hand-written MCP server on stdio whose one tool returns what `echo`
/// makes of its argument.
fn echo_server(mut echo: impl FnMut(&Value) -> Value) {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let params = &message["params"];
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "echo", "version": "0.1.0" },
            }),
            Some("tools/list") => json!({ "tools": [{
                "name": "echo-string",
                "description": "Returns its argument.",
                "inputSchema": { "type": "object", "properties": { "v": { "type": "string" } } },
            }] }),
            Some("tools/call") => {
                let v = &echo(&params["arguments"]["v"]);
                json!({
                    "content": [{ "type": "text", "text": v.to_string() }],
                    "structuredContent": { "result": v },
                    "isError": false,
                })
            }
            _ => json!({}),
        };
        let answer = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        let mut bytes = serde_json::to_vec(&answer).unwrap();
        bytes.push(b'\n');
        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// The floor with the instance: the echo server whose tool makes a fresh instance of
/// the same component for each call and calls its `echo-string`, as a bare wasmtime host
/// would (Evo's engine configuration, WASI linked, an `InstancePre`, a typed call, no
/// JSON for the values), on one thread.
fn wasm_echo_server() {
    let bytes = std::fs::read(evo_tests::skills::PLAIN_KINDS).unwrap();
    let floor = common::TypedFloor::new(
        &EngineConfig::default(),
        &bytes,
        Some("fixture:plain/kinds@0.1.0"),
        "echo-string",
    );
    let rt = common::runtime();
    echo_server(|v| {
        let text = v.as_str().unwrap_or_default().to_owned();
        let (echoed,) = rt.block_on(floor.call::<(String,), (String,)>((text,)));
        Value::String(echoed)
    });
}

/// A server to measure.
struct Target {
    label: String,
    command: Command,
}

/// A running server and the raw client talking to it.
struct Session {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
    tool: String,
    line: String,
}

impl Session {
    /// Starts `target`, initialises the session and finds the echo tool.
    fn start(target: &mut Target) -> Self {
        let mut child = target
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", target.label));
        let mut session = Self {
            stdin: BufWriter::new(child.stdin.take().unwrap()),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next: 0,
            tool: String::new(),
            line: String::new(),
        };
        session.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "raw", "version": "0.1.0" },
            }),
        );
        session.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        let tools = session.request("tools/list", json!({}));
        session.tool = tools["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|tool| tool["name"].as_str())
            .find(|name| name.ends_with("echo-string"))
            .unwrap_or_else(|| panic!("{}: no echo-string tool in {tools}", target.label))
            .to_owned();
        session
    }

    fn send(&mut self, message: &Value) {
        serde_json::to_writer(&mut self.stdin, message).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer; returns its `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            self.line.clear();
            let read = self.stdout.read_line(&mut self.line).unwrap();
            assert!(read > 0, "the server closed its output");
            let answer: Value = serde_json::from_str(&self.line).unwrap();
            if answer["id"] == id {
                assert!(answer.get("error").is_none(), "{answer}");
                return answer["result"].clone();
            }
        }
    }

    /// One echo call, checked: a fast failure must not pass for speed.
    fn echo(&mut self) {
        let params = json!({ "name": self.tool, "arguments": { "v": TEXT } });
        let result = self.request("tools/call", params);
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            result["isError"] != true && text.contains(TEXT),
            "{}",
            result
        );
    }

    /// The server's CPU time so far (user + system, all its threads).
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_secs_f64(ticks as f64 / clock_ticks())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Clock ticks per second, the unit of `/proc/PID/stat`'s times.
fn clock_ticks() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn targets(home: &Path, skills: &Path) -> Vec<Target> {
    let mut floor = Command::new(std::env::current_exe().unwrap());
    floor.env(ECHO_ENV, "1");
    let mut evo = Command::new(evo_tests::evo_bin());
    evo.arg("serve")
        .arg("--skills-dir")
        .arg(skills)
        .env("EVO_HOME", home);
    let mut wasm_floor = Command::new(std::env::current_exe().unwrap());
    wasm_floor.env(WASM_ECHO_ENV, "1");
    let mut targets = vec![
        Target {
            label: "hand-written echo (floor)".into(),
            command: floor,
        },
        Target {
            label: "hand-written echo, a fresh instance per call (floor)".into(),
            command: wasm_floor,
        },
        Target {
            label: "evo serve".into(),
            command: evo,
        },
    ];
    for (env, label, dir) in [
        (BASELINE_ENV, "evo serve, baseline build", "baseline"),
        (DIST_ENV, "evo serve, --profile dist", "dist"),
    ] {
        if let Some(binary) = std::env::var_os(env) {
            let mut command = Command::new(binary);
            command
                .arg("serve")
                .arg("--skills-dir")
                .arg(skills)
                .env("EVO_HOME", home.join(dir));
            targets.push(Target {
                label: label.into(),
                command,
            });
        }
    }
    match std::env::var_os(WASSETTE_ENV) {
        Some(wassette) => {
            let Ok(version) = std::env::var("EVO_BENCH_WASSETTE_VERSION") else {
                panic!(
                    "{WASSETTE_ENV} is set without EVO_BENCH_WASSETTE_VERSION: build it with ./scripts/wassette SOURCE_DIR, which sets both, so the record says what was measured"
                );
            };
            let plugins = home.join("wassette");
            std::fs::create_dir_all(&plugins).unwrap();
            std::fs::copy(
                evo_tests::skills::PLAIN_KINDS,
                plugins.join("plain_kinds.wasm"),
            )
            .unwrap();
            let mut command = Command::new(PathBuf::from(wassette));
            command
                .args(["serve", "--stdio", "--plugin-dir"])
                .arg(&plugins)
                .env("HOME", home);
            targets.push(Target {
                label: format!("wassette {version} (peer)"),
                command,
            });
        }
        None => println!(
            "wassette: not measured (source <(./scripts/wassette SOURCE_DIR) builds it and sets {WASSETTE_ENV})"
        ),
    }
    targets
}

fn main() {
    if std::env::var_os(ECHO_ENV).is_some() {
        echo_server(Value::clone);
        return;
    }
    if std::env::var_os(WASM_ECHO_ENV).is_some() {
        wasm_echo_server();
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let skills = work.path().join("skills");
    std::fs::create_dir_all(skills.join("kinds")).unwrap();
    std::fs::copy(
        evo_tests::skills::PLAIN_KINDS,
        skills.join("kinds/skill.wasm"),
    )
    .unwrap();
    let recorder =
        evo_tests::figures::Recorder::new("mcp_stdio", "./scripts/bench mcp_stdio", PATHS);
    let mut targets = targets(&home, &skills);
    let mut sessions: Vec<Session> = targets.iter_mut().map(Session::start).collect();
    for session in &mut sessions {
        // Warm: the compile cache, the instance pool, the page cache.
        for _ in 0..200 {
            session.echo();
        }
    }

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("mcp stdio, raw client: tools/call round trip");
    for (target, session) in targets.iter().zip(&mut sessions) {
        group.bench_function(&target.label, |b| b.iter(|| session.echo()));
    }
    group.finish();
    c.final_summary();

    let mut regimes: Vec<Vec<Regime>> = sessions
        .iter()
        .map(|_| vec![Regime::default(), Regime::default()])
        .collect();
    for round in 0..ROUNDS {
        // Each server's batches in turn, the order rotating, so that what the machine
        // does meanwhile falls on every server alike.
        for offset in 0..sessions.len() {
            let i = (round + offset) % sessions.len();
            let session = &mut sessions[i];
            regimes[i][0].batch(session, BATCH, None);
            regimes[i][1].batch(session, IDLE_BATCH, Some(IDLE));
        }
    }
    for (target, regimes) in targets.iter().zip(regimes) {
        for (regime, kind) in regimes.into_iter().zip(["", ": after 1 ms idle"]) {
            let calls = regime.times.len() as f64;
            let cpu = regime.cpu.as_secs_f64() * 1e9 / calls;
            let (p50, p99) = evo_tests::percentiles(regime.times);
            let ns = |d: Duration| d.as_secs_f64() * 1e9;
            let label = format!("{}{kind}", target.label);
            recorder.value(&format!("{label}: p50"), ns(p50), "ns");
            recorder.value(&format!("{label}: p99"), ns(p99), "ns");
            recorder.value(&format!("{label}: server CPU per call"), cpu, "ns");
            println!(
                "{label:<44} p50 {:>6.1} µs  p99 {:>6.1} µs  server CPU {:>5.1} µs/call",
                p50.as_secs_f64() * 1e6,
                p99.as_secs_f64() * 1e6,
                cpu / 1e3,
            );
        }
    }
    recorder.criterion_all();
}

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/serve",
    "host/src/engine/wasm",
    "host/src/skill",
    "cli",
    "tests/benches/mcp_stdio.rs",
];
