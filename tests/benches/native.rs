//! `cargo bench -p evo-tests --bench native`
//!
//! A whole native-skill call of a trivial script through the sandbox, next to its floor
//! measured in the same run: a bare `node` process reading the same JSON on stdin and
//! printing the answer, with the same PATH-only environment (no workspace, no process
//! group, no output watch). Budget ≤ 1.1× the floor.
//! Also: ten calls at maxConcurrency 1 vs 2.

use std::hint::black_box;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use evo_host::engine::native::{NativeConfig, NativeSandbox};
use serde_json::json;

const SCRIPT: &str = "const d = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(JSON.stringify({ echo: d.message }));";

fn native(c: &mut Criterion) {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("echo/scripts");
    std::fs::create_dir_all(&dir).expect("dir");
    let script = dir.join("execute.js");
    std::fs::write(&script, SCRIPT).expect("script");
    let input = json!({ "message": "hello" });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let mut group = c.benchmark_group("native_call");
    group.sample_size(20);
    for (label, flags) in [
        ("floor: bare node reading stdin", &[][..]),
        (
            "floor: same, with --max-old-space-size=512",
            &["--max-old-space-size=512"][..],
        ),
    ] {
        group.bench_function(label, |b| {
            b.iter(|| {
                // The same environment as the sandbox gives (PATH only): this machine sets
                // NODE_EXTRA_CA_CERTS, which alone costs node ~55 ms at start-up.
                let mut child = Command::new("node")
                    .args(flags)
                    .arg(&script)
                    .env_clear()
                    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("node runs");
                child
                    .stdin
                    .take()
                    .expect("stdin")
                    .write_all(input.to_string().as_bytes())
                    .expect("writes");
                black_box(child.wait_with_output().expect("waits"))
            });
        });
    }
    let sandbox = NativeSandbox::new(root.path(), NativeConfig::default());
    group.bench_function("evo: sandboxed call", |b| {
        b.iter(|| black_box(rt.block_on(sandbox.execute("echo", &input)).expect("runs")));
    });
    // Confined: through `evo __native-exec` (Landlock, rlimits), when the binary is built
    // next to this bench (`cargo build --release -p evo-host`).
    let evo = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("evo")))
        .filter(|path| path.is_file());
    match evo {
        Some(launcher) => {
            let sandbox = NativeSandbox::new(
                root.path(),
                NativeConfig {
                    launcher: Some(launcher),
                    ..NativeConfig::default()
                },
            );
            group.bench_function("evo: confined call (evo __native-exec)", |b| {
                b.iter(|| black_box(rt.block_on(sandbox.execute("echo", &input)).expect("runs")));
            });
        }
        None => eprintln!(
            "note: the evo binary is not built next to this bench; the confined call is not measured (cargo build --release -p evo-host)"
        ),
    }
    for concurrency in [1, 2] {
        let sandbox = Arc::new(NativeSandbox::new(
            root.path(),
            NativeConfig {
                max_concurrency: concurrency,
                ..NativeConfig::default()
            },
        ));
        group.bench_function(
            format!("evo: 10 calls at maxConcurrency {concurrency}"),
            |b| {
                b.iter(|| {
                    rt.block_on(async {
                        let calls: Vec<_> = (0..10)
                            .map(|_| {
                                let sandbox = sandbox.clone();
                                let input = input.clone();
                                tokio::spawn(async move {
                                    sandbox.execute("echo", &input).await.expect("runs")
                                })
                            })
                            .collect();
                        for call in calls {
                            black_box(call.await.expect("joins"));
                        }
                    });
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, native);
criterion_main!(benches);
