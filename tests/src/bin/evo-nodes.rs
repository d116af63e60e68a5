//! Several `evo serve --http` nodes on one PostgreSQL database:
//! `./scripts/nodes [CALLS] [CONCURRENCY]`.
//!
//! For one, two and three nodes on this machine, each on a fresh database: a Wasm skill
//! installed through the first node's data directory (the others take it from the
//! shared catalogue), then CALLS calls of it and CALLS/10 memory stores, spread over the
//! nodes in turn at CONCURRENCY, checking every answer. Reports calls per second, p50
//! and p99, and per node; and, with two nodes or more, the time from a store through one
//! node until a search through another finds it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use evo_tests::cli::HttpServer;
use evo_tests::load::post;
use serde_json::{Value, json};

/// A node's data directory, on the database at `url`.
fn node_home(root: &Path, i: usize, url: &str) -> PathBuf {
    let home = root.join(format!("node{i}"));
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("evo.toml"),
        format!("[storage]\nurl = \"{url}\"\n"),
    )
    .expect("evo.toml");
    home
}

/// Calls `call(i)` for `i` in `0..calls`, `concurrency` at a time: the latencies, and
/// the wall time.
async fn phase<F, Fut>(calls: usize, concurrency: usize, call: F) -> (Vec<Duration>, Duration)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (call, next) = (call.clone(), next.clone());
            tokio::spawn(async move {
                let mut times = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= calls {
                        return times;
                    }
                    let began = Instant::now();
                    if let Err(e) = call(i).await {
                        panic!("call {i} failed: {e}");
                    }
                    times.push(began.elapsed());
                }
            })
        })
        .collect();
    let mut times = Vec::new();
    for worker in workers {
        times.extend(worker.await.expect("worker"));
    }
    (times, started.elapsed())
}

fn line(label: &str, nodes: usize, mut times: Vec<Duration>, wall: Duration) -> String {
    times.sort();
    let rate = times.len() as f64 / wall.as_secs_f64();
    format!(
        "| {label} | {nodes} | {rate:.0} | {:.0} | {:.2} | {:.2} |",
        rate / nodes as f64,
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() * 99 / 100].as_secs_f64() * 1e3,
    )
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map_or(5_000, |a| a.parse().expect("CALLS"));
    let concurrency: usize = std::env::args()
        .nth(2)
        .map_or(32, |a| a.parse().expect("CONCURRENCY"));
    let admin =
        std::env::var("EVO_TEST_POSTGRES").expect("EVO_TEST_POSTGRES (./scripts/nodes sets it)");
    let evo = std::env::var("EVO_BIN").map_or_else(|_| evo_tests::evo_bin(), PathBuf::from);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut table = vec![
        "| load | nodes | calls/s | per node | p50 ms | p99 ms |".to_owned(),
        "| --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut visibility = Vec::new();
    for nodes in 1..=3 {
        let url = evo_host::storage::pg::scratch_database(&admin).expect("a database");
        let root = tempfile::tempdir().expect("tempdir");
        let homes: Vec<PathBuf> = (0..nodes)
            .map(|i| node_home(root.path(), i, &url))
            .collect();
        let servers: Vec<HttpServer> = homes
            .iter()
            .map(|home| HttpServer::start_with(&evo, home, "127.0.0.1:0", &[]))
            .collect();
        let skill = root.path().join("fixture-probe");
        std::fs::create_dir_all(&skill).expect("dir");
        std::fs::copy(evo_tests::skills::FIXTURE_PROBE, skill.join("skill.wasm")).expect("copies");
        let installed = evo_tests::cli::command_of(
            &evo,
            &homes[0],
            &["skill", "install", skill.to_str().expect("utf-8")],
        )
        .output()
        .expect("evo runs");
        assert!(
            installed.status.success(),
            "{}",
            String::from_utf8_lossy(&installed.stderr)
        );
        let addrs: Arc<Vec<String>> = Arc::new(
            servers
                .iter()
                .map(|s| s.base.trim_start_matches("http://").to_owned())
                .collect(),
        );
        let probe = json!({ "stdout_bytes": 64 }).to_string();
        // Every node has the skill before anything is timed.
        for addr in addrs.iter() {
            let deadline = Instant::now() + Duration::from_secs(30);
            while rt
                .block_on(post(addr, "/v1/skills/fixture-probe/call", &probe))
                .map(|r| r.0)
                != Ok(200)
            {
                assert!(Instant::now() < deadline, "{addr} never got the skill");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let (times, wall) = rt.block_on(phase(calls, concurrency, {
            let (addrs, probe) = (addrs.clone(), probe.clone());
            move |i| {
                let (addrs, probe) = (addrs.clone(), probe.clone());
                async move {
                    let (status, answer) = post(
                        &addrs[i % addrs.len()],
                        "/v1/skills/fixture-probe/call",
                        &probe,
                    )
                    .await?;
                    (status == 200 && answer["output"]["written"] == 64)
                        .then_some(())
                        .ok_or(format!("{status} {answer}"))
                }
            }
        }));
        table.push(line("Wasm skill call", nodes, times, wall));
        let (times, wall) = rt.block_on(phase(calls / 10, concurrency, {
            let addrs = addrs.clone();
            move |i| {
                let addrs = addrs.clone();
                async move {
                    let body =
                        json!({ "text": format!("Service s{i} listens on port {}", 10_000 + i) })
                            .to_string();
                    let (status, answer) = post(
                        &addrs[i % addrs.len()],
                        "/v1/skills/memory_store/call",
                        &body,
                    )
                    .await?;
                    (status == 200 && answer["output"]["stored"] == true)
                        .then_some(())
                        .ok_or(format!("{status} {answer}"))
                }
            }
        }));
        table.push(line("memory store", nodes, times, wall));
        if nodes >= 2 {
            let mut times: Vec<Duration> = (0..50)
                .map(|k| {
                    let text = format!("Visibility probe {k} is called q{k}zz{nodes}");
                    let started = Instant::now();
                    let body = json!({ "text": text }).to_string();
                    let (status, _) = rt
                        .block_on(post(&addrs[0], "/v1/skills/memory_store/call", &body))
                        .expect("stores");
                    assert_eq!(status, 200);
                    let query =
                        json!({ "query": format!("q{k}zz{nodes}"), "limit": 1 }).to_string();
                    loop {
                        let (_, hits): (u16, Value) = rt
                            .block_on(post(&addrs[1], "/v1/memory/search", &query))
                            .expect("searches");
                        if hits[0]["text"] == text.as_str() {
                            break started.elapsed();
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                })
                .collect();
            times.sort();
            visibility.push(format!(
                "{nodes} nodes: a store through node 1 found through node 2 after p50 {:.1} ms, p99 {:.1} ms (the store's own round trip included)",
                times[times.len() / 2].as_secs_f64() * 1e3,
                times[times.len() * 99 / 100].as_secs_f64() * 1e3,
            ));
        }
        drop(servers);
    }
    println!(
        "{calls} calls and {} stores per row, concurrency {concurrency}, spread over the nodes in turn\n",
        calls / 10
    );
    for row in table {
        println!("{row}");
    }
    println!();
    for line in visibility {
        println!("{line}");
    }
}
