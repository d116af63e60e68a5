//! `cargo build --release -p evo-cli && cargo bench -p evo-tests --bench startup`
//!
//! What surrounds a call: a process's start-up and its catalogue.
//!
//! - One-shot `evo skill run`: `calculate.wasm` (compile cache warm) next to the
//!   in-process built-in `calculate`, and `evo --version` (the process alone), in the
//!   same run. Budget: the Wasm run ≤ 1.5× the built-in's.
//! - 1,000 installed Wasm skills: `evo skill list` and `evo serve` until its first
//!   answered request (`GET /v1/health`),
//!   next to the same with no skills. Budget: ready in < 100 ms. Also `Host::build` in
//!   process, and the resident memory of an idle `evo serve` with and without them.
//! - Resident memory per call in flight: `evo serve` with 16 endless calls at once.
//!
//! The 1,000 skills are `calculate` with 1,000 names: its own manifest, renamed,
//! embedded as `evo skill build` embeds it, so each is a different component.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use evo_host::engine::wasm::with_manifest;
use evo_tests::skills;
use serde_json::Value;

const SKILLS: usize = 1_000;
const INPUT: &str = r#"{"expression":"sqrt(144) + 10"}"#;

/// `evo ARGS` with `EVO_HOME=home`, its output checked by `expect` once before timing.
fn evo(home: &Path, args: &[&str]) -> Command {
    evo_tests::cli::command(home, args)
}

fn run(home: &Path, args: &[&str]) -> Vec<u8> {
    let out = evo(home, args).output().unwrap();
    assert!(
        out.status.success(),
        "evo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A home with `n` Wasm skills in its skills directory, loaded once so that the compile
/// cache and the records hold them, and left to settle (a file changed in the last 2 s
/// is not remembered).
fn home_with(n: usize) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let bytes = std::fs::read(skills::CALCULATE).unwrap();
    let engine = evo_tests::engine();
    let exported = rt
        .block_on(engine.exported_manifest("calculate.wasm", bytes.clone()))
        .unwrap();
    let mut manifest: Value = serde_json::from_str(&exported).unwrap();
    for i in 0..n {
        let name = format!("calc-{i:04}");
        manifest["name"] = Value::String(name.clone());
        let component = with_manifest(&name, &bytes, &manifest.to_string()).unwrap();
        let dir = home.path().join("skills").join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("skill.wasm"), component).unwrap();
    }
    std::thread::sleep(Duration::from_millis(2_100));
    run(home.path(), &["skill", "list", "--json"]);
    home
}

fn one_shot(c: &mut Criterion) {
    let home = home_with(0);
    let wasm: PathBuf = home.path().join("calculate.wasm");
    std::fs::copy(skills::CALCULATE, &wasm).unwrap();
    std::thread::sleep(Duration::from_millis(2_100));
    let file = wasm.to_str().unwrap().to_owned();
    for skill in ["calculate", file.as_str()] {
        let out = run(home.path(), &["skill", "run", skill, "--input", INPUT]);
        assert_eq!(String::from_utf8_lossy(&out), "{\n  \"result\": 22\n}\n");
    }
    let mut group = c.benchmark_group("one_shot");
    group.sample_size(30);
    group.bench_function("floor: evo --version", |b| {
        b.iter(|| run(home.path(), &["--version"]))
    });
    group.bench_function("evo skill run calculate (built-in)", |b| {
        b.iter(|| {
            run(
                home.path(),
                &["skill", "run", "calculate", "--input", INPUT],
            )
        })
    });
    group.bench_function("evo skill run calculate.wasm", |b| {
        b.iter(|| run(home.path(), &["skill", "run", &file, "--input", INPUT]))
    });
    group.finish();
}

/// Starts `evo serve --http`, reads where it listens, and waits for its first answer
/// (`GET /v1/health`, 200): the server, how long until that answer, and its address.
fn serve_ready(home: &Path) -> (std::process::Child, Duration, String) {
    let started = Instant::now();
    let mut child = evo(home, &["serve", "--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("evo serve said where it answers")
            .unwrap();
        if let Some(rest) = line.split("MCP at http://").nth(1) {
            break rest.split("/mcp").next().unwrap().to_owned();
        }
    };
    let health = format!("GET /v1/health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    let mut stream = std::net::TcpStream::connect(&addr).expect("it listens");
    std::io::Write::write_all(&mut stream, health.as_bytes()).unwrap();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    let ready = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Keep reading, so that the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, ready, addr)
}

fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Resident memory of `pid` now, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

fn catalogue(c: &mut Criterion) {
    let empty = home_with(0);
    let full = home_with(SKILLS);
    let listed: Value =
        serde_json::from_slice(&run(full.path(), &["skill", "list", "--json"])).unwrap();
    let count = listed["skills"].as_array().map_or(0, |s| {
        s.iter()
            .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("calc-")))
            .count()
    });
    assert_eq!(count, SKILLS, "{listed}");
    let out = run(
        full.path(),
        &["skill", "run", "calc-0999", "--input", INPUT],
    );
    assert_eq!(String::from_utf8_lossy(&out), "{\n  \"result\": 22\n}\n");

    let mut group = c.benchmark_group("catalogue");
    group.sample_size(20);
    for (label, home) in [("no skills", &empty), ("1,000 Wasm skills", &full)] {
        group.bench_function(format!("evo skill list, {label}"), |b| {
            b.iter(|| run(home.path(), &["skill", "list", "--json"]))
        });
        group.bench_function(format!("evo serve until it answers, {label}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (child, ready, _) = serve_ready(home.path());
                    total += ready;
                    stop(child);
                }
                total
            })
        });
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Each home's configuration made once, outside what is timed.
    let configs = [&empty, &full].map(|home| (home.path(), evo_tests::config(home.path())));
    let build = |home: &Path| {
        let config = configs
            .iter()
            .find(|(h, _)| *h == home)
            .map(|(_, c)| c.clone());
        rt.block_on(
            evo_host::Host::builder()
                .data_dir(home)
                .config(config.expect("a home of this bench"))
                .build(),
        )
        .unwrap()
    };
    for (label, home) in [("no skills", &empty), ("1,000 Wasm skills", &full)] {
        group.bench_function(format!("Host::build in process, {label}"), |b| {
            b.iter(|| build(home.path()))
        });
    }
    group.finish();

    // What each installed skill adds to `Host::build`: the medians of builds with and
    // without them, taken in turns, their difference shared out.
    const BUILDS: usize = 31;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..BUILDS {
        for (home, times) in [(&empty, &mut without), (&full, &mut with)] {
            let started = Instant::now();
            let host = build(home.path());
            times.push(started.elapsed());
            drop(host);
        }
    }
    let (with, without) = (
        evo_tests::percentiles(with).0,
        evo_tests::percentiles(without).0,
    );
    let per_skill = with.saturating_sub(without).as_secs_f64() * 1e9 / SKILLS as f64;
    let recorder = evo_tests::figures::Recorder::new("startup", "./scripts/bench startup", PATHS);
    recorder.value("Host::build per installed Wasm skill", per_skill, "ns");
    println!(
        "Host::build: {:.1} ms with {SKILLS} Wasm skills, {:.1} ms with none: {:.1} µs per skill",
        with.as_secs_f64() * 1e3,
        without.as_secs_f64() * 1e3,
        per_skill / 1e3
    );

    for (label, home) in [("no skills", &empty), ("1,000 Wasm skills", &full)] {
        let (child, ready, _) = serve_ready(home.path());
        std::thread::sleep(Duration::from_millis(500));
        println!(
            "evo serve, {label}: ready in {:.1} ms, idle RSS {:.1} MiB",
            ready.as_secs_f64() * 1e3,
            rss_kib(child.id()) as f64 / 1024.0
        );
        stop(child);
    }
}

/// Resident memory of `evo serve` with 16 calls in flight at once, next to idle: each
/// call a `spin` component (a loop without end, stopped by its 3-s deadline), so that all
/// are alive together; read half a second in.
fn in_flight(_: &mut Criterion) {
    const CALLS: usize = 16;
    let home = tempfile::tempdir().unwrap();
    evo_tests::runaway_skills(&home.path().join("skills"), 3_000);
    let (child, _, addr) = serve_ready(home.path());
    std::thread::sleep(Duration::from_millis(500));
    let idle = rss_kib(child.id());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let addr = addr.clone();
            rt.spawn(async move {
                evo_tests::load::post(&addr, "/v1/skills/spin/call", "{}")
                    .await
                    .unwrap_or_else(|e| panic!("the call was answered: {e}"))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let busy = rss_kib(child.id());
    let answers: Vec<(u16, Value)> = calls
        .into_iter()
        .map(|call| rt.block_on(call).unwrap())
        .collect();
    // Every call was alive until its deadline: each ends in a timeout, nothing else.
    for (status, body) in &answers {
        assert_eq!(
            (*status, body["code"].as_str()),
            (504, Some("SKILL_TIMEOUT")),
            "{body}"
        );
    }
    println!(
        "evo serve: idle RSS {:.1} MiB, {CALLS} calls in flight {:.1} MiB: {:.0} KiB per call",
        idle as f64 / 1024.0,
        busy as f64 / 1024.0,
        busy.saturating_sub(idle) as f64 / CALLS as f64
    );
    stop(child);
}

criterion_group!(benches, one_shot, catalogue, in_flight);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "cli",
    "host/src/engine",
    "host/src/host",
    "host/src/config",
    "host/src/config.rs",
    "host/src/packages",
    "tests/benches/startup.rs",
];

evo_tests::recorded_main!("startup", PATHS, benches);
