//! `cargo build --release -p evo-cli && cargo bench -p evo-tests --bench network`
//!
//! Skills on the network, each next to its floor in the same run:
//!
//! - **outbound**: the `fetch` Wasm skill, called through the library's `Host`, GETs a
//!   loopback server (granted by address), next to the same GET made by a plain Rust
//!   client (`ureq`). The server closes every connection, so both open one per
//!   request, as `wasi:http` does. Also the same skill refused before connecting: the
//!   instance and the check, without the request; and the skill failing before any
//!   request (an `ftp://` URL): the instance cost. Each also on a current-thread
//!   runtime; on each runtime, the same GET by hyper called as the skill is (the async
//!   floor). Budget: ≤ 1.3× the client plus the instance cost. Each is measured by
//!   criterion, and then all of them again in interleaved batches (each call's batch
//!   in turn, 100 rounds), whose p50s are what the budget's ratio divides. Beside each
//!   p50, the process's CPU time per call over its batches (`getrusage`, every thread:
//!   the loopback server's, which does the same work for every GET, included): what
//!   tells a call that waits from one that computes.
//! - **remote**: `calculate` on node B (`evo serve --http`, a subprocess) called from
//!   node A's `Host` as `b/calculate`, next to A's own `calculate`.

use std::hint::black_box;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use evo_host::Host;
use serde_json::{Value, json};

const BODY: &str = "hello from the loopback server";

/// A loopback server answering every request with [`BODY`] and closing the connection.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                // One write, as a real server sends a small response.
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
                    BODY.len()
                );
                let _ = stream.write_all(response.as_bytes());
            });
        }
    });
    port
}

/// A host over a data directory holding `evo_toml` and, in `skills/fetch`, the fetch
/// component.
fn host(rt: &tokio::runtime::Runtime, home: &Path, evo_toml: &str) -> Host {
    let dir = home.join("src/fetch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(evo_tests::skills::FETCH, dir.join("skill.wasm")).unwrap();
    std::fs::write(home.join("evo.toml"), evo_toml).unwrap();
    rt.block_on(Host::builder().data_dir(home).build()).unwrap()
}

fn outbound(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let port = server();
    let url = format!("http://127.0.0.1:{port}/");
    let home = tempfile::tempdir().unwrap();
    let host = host(
        &rt,
        home.path(),
        &format!("skill_dirs = [\"src\"]\n[grants]\nhosts = [\"http://127.0.0.1:{port}\"]\n"),
    );
    let granted = json!({ "url": url });
    let refused = json!({ "url": format!("http://127.0.0.1:{}/", port + 1) });
    // Fails in the guest before any request: what instantiating and calling the skill
    // costs.
    let no_request = json!({ "url": "ftp://127.0.0.1/" });

    // Correct first, so a fast failure cannot pass for speed.
    let out = rt.block_on(host.call("fetch", granted.clone())).unwrap();
    assert_eq!(
        (out["status"].as_u64(), out["body"].as_str()),
        (Some(200), Some(BODY))
    );
    let err = rt
        .block_on(host.call("fetch", refused.clone()))
        .unwrap_err();
    assert_eq!(err.code(), "PERMISSION_DENIED", "{err}");
    let err = rt
        .block_on(host.call("fetch", no_request.clone()))
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let floor = || {
        let mut body = String::new();
        agent
            .get(&url)
            .call()
            .unwrap()
            .into_body()
            .into_reader()
            .read_to_string(&mut body)
            .unwrap();
        body
    };
    assert_eq!(floor(), BODY);

    // The same on a current-thread runtime: what the hand-offs between threads cost.
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let single_home = tempfile::tempdir().unwrap();
    let single_host = self::host(
        &single,
        single_home.path(),
        &format!("skill_dirs = [\"src\"]\n[grants]\nhosts = [\"http://127.0.0.1:{port}\"]\n"),
    );
    let out = single
        .block_on(single_host.call("fetch", granted.clone()))
        .unwrap();
    assert_eq!(out["body"].as_str(), Some(BODY));
    // The async floor on the same runtime, called the same way (`block_on` from outside
    // its workers): hyper with the connection driven where the response is awaited, as
    // Evo's sender drives it. Its readiness events cross from the worker that polls the
    // network to the waiting thread as Evo's do; the blocking client above pays none.
    let sock = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(rt.block_on(hyper_get(sock)), BODY);
    assert_eq!(single.block_on(hyper_default_send(&url)), BODY);

    let mut calls: Vec<(&str, Call<'_>)> = vec![
        (
            "floor: ureq GET (new connection)",
            Box::new(|| drop(black_box(floor()))),
        ),
        (
            "floor: hyper GET (connection in place), multi-thread",
            Box::new(|| drop(black_box(rt.block_on(hyper_get(sock))))),
        ),
        (
            "evo: fetch skill GET (Host::call)",
            fetch(&rt, &host, &granted, true),
        ),
        (
            "evo: fetch skill, no request (instance cost)",
            fetch(&rt, &host, &no_request, false),
        ),
        (
            "evo: fetch skill refused before connecting",
            fetch(&rt, &host, &refused, false),
        ),
        (
            "evo: fetch skill GET, current-thread runtime",
            fetch(&single, &single_host, &granted, true),
        ),
        (
            "evo: fetch skill, no request, current-thread runtime",
            fetch(&single, &single_host, &no_request, false),
        ),
        // The async floor: the same GET by hyper on the same runtime, as
        // wasmtime-wasi-http's own sender makes it.
        (
            "floor: hyper GET (default_send_request), current-thread",
            Box::new(|| drop(black_box(single.block_on(hyper_default_send(&url))))),
        ),
        (
            "evo: fetch skill refused, current-thread runtime",
            fetch(&single, &single_host, &refused, false),
        ),
    ];

    let mut group = c.benchmark_group("outbound");
    group.measurement_time(Duration::from_secs(8));
    // Whether criterion measured any of them: a filter that leaves all of them out
    // (`-- remote`), or a run that measures nothing (`--profile-time`, for a profiler),
    // skips the interleaved batches too, and records none of their figures.
    let mut measured = false;
    for (name, call) in &mut calls {
        group.bench_function(*name, |b| {
            measured = true;
            b.iter(&mut *call)
        });
    }
    group.finish();
    let recorder = evo_tests::figures::Recorder::new("network", "./scripts/bench network", PATHS);
    if !measured || recorder.unmeasured().is_some() {
        return;
    }

    // Criterion measures each for seconds in turn, and this machine's speed drifts
    // between them: a ratio of two of its figures moved by a fifth from run to run.
    // Here every call's batches take turns, so the drift falls on all of them alike.
    let mut times = vec![Vec::with_capacity(ROUNDS * BATCH); calls.len()];
    let mut cpu = vec![Duration::ZERO; calls.len()];
    for round in 0..ROUNDS {
        for offset in 0..calls.len() {
            let i = (round + offset) % calls.len();
            let call = &mut calls[i].1;
            let used = process_cpu();
            for _ in 0..BATCH {
                let start = Instant::now();
                call();
                times[i].push(start.elapsed());
            }
            cpu[i] += process_cpu().saturating_sub(used);
        }
    }
    for (((name, _), times), cpu) in calls.iter().zip(times).zip(cpu) {
        let (p50, p99) = evo_tests::percentiles(times);
        let cpu = cpu / u32::try_from(ROUNDS * BATCH).unwrap();
        let ns = |d: Duration| d.as_secs_f64() * 1e9;
        recorder.value(&format!("outbound, interleaved/{name}: p50"), ns(p50), "ns");
        recorder.value(&format!("outbound, interleaved/{name}: p99"), ns(p99), "ns");
        recorder.value(
            &format!("outbound, interleaved/{name}: process CPU per call"),
            ns(cpu),
            "ns",
        );
        println!(
            "{name:<58} p50 {:>6.1} µs  p99 {:>6.1} µs  process CPU {:>6.1} µs/call",
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            cpu.as_secs_f64() * 1e6
        );
    }
}

/// The CPU time (user and system) of every thread of this process so far, those that
/// ended included.
fn process_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    #[expect(unsafe_code, reason = "getrusage has no safe wrapper among our crates")]
    // SAFETY: `usage` is a valid place for one `rusage`, which the call fills.
    let usage = unsafe {
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()), 0);
        usage.assume_init()
    };
    let time = |t: libc::timeval| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap(),
            u32::try_from(t.tv_usec).unwrap() * 1_000,
        )
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// One way of making the request, timed.
type Call<'a> = Box<dyn FnMut() + 'a>;

/// A call of the `fetch` skill on `input` through `host`, on `rt`, that answers (`ok`)
/// or fails, as it did when checked before anything was timed.
fn fetch<'a>(
    rt: &'a tokio::runtime::Runtime,
    host: &'a Host,
    input: &'a Value,
    ok: bool,
) -> Call<'a> {
    Box::new(move || {
        let answer = black_box(rt.block_on(host.call("fetch", input.clone())));
        assert_eq!(answer.is_ok(), ok, "{answer:?}");
    })
}

/// Rounds of interleaved batches behind the percentiles, each call's batch in turn.
const ROUNDS: usize = 100;
/// Calls in a round's batch (5,000 of each in all).
const BATCH: usize = 50;

/// A GET of `url` by `wasmtime_wasi_http::default_send_request`, its connection a task
/// of its own.
async fn hyper_default_send(url: &str) -> bytes::Bytes {
    use http_body_util::BodyExt as _;
    let req = http::Request::get(url)
        .header("host", "127.0.0.1")
        .body(
            http_body_util::Empty::<bytes::Bytes>::new()
                .map_err(|_| unreachable!())
                .boxed_unsync(),
        )
        .unwrap();
    let (res, io) = wasmtime_wasi_http::default_send_request(req, None)
        .await
        .unwrap();
    let io = tokio::spawn(io);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let _ = io.await;
    body
}

/// A GET of `/` from `address` by hyper, its connection polled beside the response in
/// the same future: no task of its own.
async fn hyper_get(address: std::net::SocketAddr) -> bytes::Bytes {
    use http_body_util::BodyExt as _;
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(wasmtime_wasi_http::io::TokioIo::new(tcp))
            .await
            .unwrap();
    let request = http::Request::get("/")
        .header("host", "127.0.0.1")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let response = async {
        let response = sender.send_request(request).await.unwrap();
        response.into_body().collect().await.unwrap().to_bytes()
    };
    let (body, _) = tokio::join!(response, connection);
    body
}

fn remote(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b_home = tempfile::tempdir().unwrap();
    let b = evo_tests::cli::HttpServer::start(b_home.path(), &[]);
    let a_home = tempfile::tempdir().unwrap();
    evo_host::remotes::add(
        a_home.path(),
        evo_host::remotes::RemoteSpec {
            name: "b".into(),
            url: b.base.clone(),
            token_secret: None,
        },
    )
    .unwrap();
    let a = rt
        .block_on(Host::builder().data_dir(a_home.path()).build())
        .unwrap();
    let input = json!({ "expression": "sqrt(144) + 10" });
    for name in ["calculate", "b/calculate"] {
        let out: Value = rt.block_on(a.call(name, input.clone())).unwrap();
        assert_eq!(out["result"], 22, "{name}");
    }

    let mut group = c.benchmark_group("remote");
    group.bench_function("local: calculate on A", |b| {
        b.iter(|| rt.block_on(a.call("calculate", input.clone())).unwrap())
    });
    group.bench_function("remote: b/calculate, A → B over /v1/ws", |b| {
        b.iter(|| rt.block_on(a.call("b/calculate", input.clone())).unwrap())
    });
    group.finish();
    drop(b);
}

criterion_group!(benches, outbound, remote);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/engine",
    "host/src/http.rs",
    "host/src/remote",
    "host/src/serve",
    "skills-wasm",
    "tests/benches/network.rs",
];

evo_tests::recorded_main!("network", PATHS, benches);
