//! `cargo build --release -p evo-cli && cargo bench -p evo-tests --bench serve`
//!
//! `evo serve` next to its floor, measured in the same run: an **echo server** built on
//! the same SDK (`rmcp` over stdio) whose only tool returns its input — the cost of MCP
//! itself. Evo serves the `calculate` Wasm component (a fresh instance per call) from
//! a skills directory, with the compile cache warm. Measured:
//!
//! - a tools/call round trip over stdio with a lean Rust client (rmcp), and p50/p99
//!   with it and with the official Python SDK (`EVO_TEST_PYTHON`, as `./scripts/test`
//!   installs it) — budget ≤ 1.3× the echo floor;
//! - spawn → first tool result (budget < 50 ms);
//! - throughput with 8 calls in flight;
//! - 10,000 calls over HTTP (`/v1/skills/calculate/call`) at concurrency 64: errors,
//!   p50/p99 and the server's peak RSS.
//!
//! Run with `EVO_BENCH_ECHO=1`, this binary is the echo server.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use evo_tests::figures::Recorder;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

const ECHO_ENV: &str = "EVO_BENCH_ECHO";

/// The floor: an rmcp server with one tool that returns its arguments.
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), json!("object"));
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Returns its input.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let input = Value::Object(request.arguments.unwrap_or_default());
        let mut result = CallToolResult::success(vec![ContentBlock::text(input.to_string())]);
        result.structured_content = Some(input);
        Ok(result.into())
    }
}

fn echo_server() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let running = Echo.serve(rmcp::transport::stdio()).await.unwrap();
        let _ = running.waiting().await;
    });
}

/// A server to measure: how to start it and which call to make.
struct Target {
    label: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    tool: &'static str,
    arguments: Value,
    expected: Value,
}

impl Target {
    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args).stderr(Stdio::null());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    async fn connect(&self) -> RunningService<RoleClient, ()> {
        ().serve(TokioChildProcess::new(self.command()).unwrap())
            .await
            .unwrap()
    }

    fn params(&self) -> CallToolRequestParams {
        CallToolRequestParams::new(self.tool)
            .with_arguments(self.arguments.as_object().unwrap().clone())
    }

    /// One call, checked: a fast failure must not pass for speed.
    async fn call(&self, client: &RunningService<RoleClient, ()>) {
        let result = client.call_tool(self.params()).await.unwrap();
        assert_eq!(
            result.structured_content.as_ref(),
            Some(&self.expected),
            "{}: {result:?}",
            self.label
        );
    }
}

fn targets(home: &Path, skills: &Path) -> [Target; 2] {
    let input = json!({ "expression": "sqrt(144) + 10" });
    [
        Target {
            label: "echo floor (rmcp)",
            program: std::env::current_exe().unwrap(),
            args: vec![],
            env: vec![(ECHO_ENV, "1".into())],
            tool: "echo",
            arguments: input.clone(),
            expected: input.clone(),
        },
        Target {
            label: "evo serve, calculate.wasm",
            program: evo_tests::evo_bin(),
            args: vec![
                "serve".into(),
                "--skills-dir".into(),
                skills.display().to_string(),
            ],
            env: vec![("EVO_HOME", home.display().to_string())],
            tool: "calculate",
            arguments: input,
            expected: json!({ "result": 22 }),
        },
    ]
}

fn main() {
    if std::env::var_os(ECHO_ENV).is_some() {
        echo_server();
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let skills = work.path().join("skills");
    std::fs::create_dir_all(skills.join("calculate")).unwrap();
    std::fs::copy(
        evo_tests::skills::CALCULATE,
        skills.join("calculate/skill.wasm"),
    )
    .unwrap();
    let recorder = Recorder::new("serve", "./scripts/bench serve", PATHS);
    let targets = targets(&home, &skills);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Warm the compile cache.
    runtime.block_on(async {
        let client = targets[1].connect().await;
        targets[1].call(&client).await;
        let _ = client.cancel().await;
    });

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("serve/stdio round trip");
    for target in &targets {
        let client = runtime.block_on(target.connect());
        runtime.block_on(target.call(&client));
        group.bench_function(target.label, |b| {
            b.iter(|| runtime.block_on(target.call(&client)));
        });
        runtime.block_on(async {
            let _ = client.cancel().await;
        });
    }
    group.finish();

    let mut group = c.benchmark_group("serve/spawn to first result");
    group.sample_size(20);
    for target in &targets {
        group.bench_function(target.label, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let client = target.connect().await;
                    target.call(&client).await;
                    let _ = client.cancel().await;
                });
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("serve/64 calls, 8 in flight");
    group.throughput(criterion::Throughput::Elements(64));
    for target in &targets {
        let client = Arc::new(runtime.block_on(target.connect()));
        group.bench_function(target.label, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let mut lanes = tokio::task::JoinSet::new();
                    for _ in 0..8 {
                        let client = client.clone();
                        let params = target.params();
                        let expected = target.expected.clone();
                        lanes.spawn(async move {
                            for _ in 0..8 {
                                let r = client.call_tool(params.clone()).await.unwrap();
                                assert_eq!(r.structured_content.as_ref(), Some(&expected));
                            }
                        });
                    }
                    while let Some(lane) = lanes.join_next().await {
                        lane.unwrap();
                    }
                });
            });
        });
    }
    group.finish();
    c.final_summary();

    // p50/p99, which criterion does not report.
    for target in &targets {
        let client = runtime.block_on(target.connect());
        let times = (0..2_000)
            .map(|_| {
                let start = Instant::now();
                runtime.block_on(target.call(&client));
                start.elapsed()
            })
            .collect();
        let (p50, p99) = evo_tests::percentiles(times);
        recorder.value(
            &format!("rust client, {}: p50", target.label),
            ns(p50),
            "ns",
        );
        recorder.value(
            &format!("rust client, {}: p99", target.label),
            ns(p99),
            "ns",
        );
        println!(
            "rust client, {:<26} p50 {:>7.1} µs  p99 {:>7.1} µs",
            target.label,
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6
        );
        runtime.block_on(async {
            let _ = client.cancel().await;
        });
    }
    python_client(&targets, &recorder);
    http_load(&home, &skills, &recorder);
    recorder.criterion_all();
}

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/serve",
    "host/src/engine/wasm",
    "host/src/skill",
    "cli",
    "tests/benches/serve.rs",
    "tests/mcp/bench.py",
];

fn ns(d: Duration) -> f64 {
    d.as_secs_f64() * 1e9
}

/// The same round trips with the official Python SDK.
fn python_client(targets: &[Target], recorder: &Recorder) {
    let Some(python) = std::env::var_os("EVO_TEST_PYTHON") else {
        println!("python client: not measured (set EVO_TEST_PYTHON to a Python with `mcp`)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/bench.py");
    for target in targets {
        let mut command = std::process::Command::new(&python);
        command
            .arg(&script)
            .arg("2000")
            .arg(target.tool)
            .arg(target.arguments.to_string())
            .arg(&target.program)
            .args(&target.args);
        for (k, v) in &target.env {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        for p in ["p50", "p99"] {
            let us = report[format!("{p}_us")].as_f64().unwrap();
            recorder.value(
                &format!("python client, {}: {p}", target.label),
                us * 1e3,
                "ns",
            );
        }
        println!(
            "python client, {:<24} p50 {:>7.1} µs  p99 {:>7.1} µs",
            target.label,
            report["p50_us"].as_f64().unwrap(),
            report["p99_us"].as_f64().unwrap()
        );
    }
}

/// 10,000 calls over HTTP at concurrency 64.
fn http_load(home: &Path, skills: &Path, recorder: &Recorder) {
    let mut child = std::process::Command::new(evo_tests::evo_bin())
        .args(["serve", "--http", "127.0.0.1:0", "--skills-dir"])
        .arg(skills)
        .env("EVO_HOME", home)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.split("MCP at http://").nth(1) {
            break rest.split("/mcp").next().unwrap().to_owned();
        }
    };
    let url = format!("http://{addr}/v1/skills/calculate/call");
    let started = Instant::now();
    let workers: Vec<_> = (0..64)
        .map(|worker| {
            let url = url.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                let calls = 10_000 / 64 + usize::from(worker < 10_000 % 64);
                let mut times = Vec::with_capacity(calls);
                let mut errors = 0;
                for _ in 0..calls {
                    let start = Instant::now();
                    let ok = agent
                        .post(&url)
                        .header("content-type", "application/json")
                        .send(r#"{"expression":"sqrt(144) + 10"}"#)
                        .ok()
                        .filter(|r| r.status() == 200)
                        .and_then(|r| r.into_body().read_to_string().ok())
                        .is_some_and(|body| body.contains(r#""output":{"result":22}"#));
                    times.push(start.elapsed());
                    errors += usize::from(!ok);
                }
                (times, errors)
            })
        })
        .collect();
    let mut times = Vec::new();
    let mut errors = 0;
    for worker in workers {
        let (t, e) = worker.join().unwrap();
        times.extend(t);
        errors += e;
    }
    let elapsed = started.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let peak = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap_or("VmHWM: ?")
        .to_owned();
    let calls = times.len();
    let (p50, p99) = evo_tests::percentiles(times);
    let peak_kib: f64 = peak
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap_or(f64::NAN);
    recorder.value("http: calls", calls as f64, "count");
    recorder.value("http: errors", errors as f64, "count");
    recorder.value(
        "http: calls per second",
        calls as f64 / elapsed.as_secs_f64(),
        "/s",
    );
    recorder.value("http: p50", ns(p50), "ns");
    recorder.value("http: p99", ns(p99), "ns");
    recorder.value("http: server peak RSS", peak_kib * 1024.0, "B");
    println!(
        "http, {calls} calls at concurrency 64: {errors} errors, {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms, server peak RSS {}",
        calls as f64 / elapsed.as_secs_f64(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        peak.trim_start_matches("VmHWM:").trim()
    );
    let _ = child.kill();
    let _ = child.wait();
}
