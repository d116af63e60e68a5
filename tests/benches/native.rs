//! `cargo bench -p evo-tests --bench native`
//!
//! A whole native-skill call of a trivial script, next to its floor measured in the same
//! run: a bare `node` (no flags) reading the same JSON on stdin and printing the answer,
//! started the way the sandbox starts its child (tokio `Command`, PATH-only environment,
//! piped stdin/stdout/stderr, own process group, an empty working directory). Then each layer of the confined call,
//! added one at a time through the launcher (`evo-launcher __native-exec --layers …`;
//! the first also through `evo` itself, the launcher's fallback), and the
//! whole call through [`NativeSandbox`]. Budget: confined call ≤ 1.15× bare
//! node. Every row checks its answer once before it is timed.
//! Also: ten calls at maxConcurrency 1 vs 2.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use evo_host::engine::native::cgroup::{CallCgroup, Limits};
use evo_host::engine::native::{ExecutionResult, NativeConfig, NativeSandbox};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

const SCRIPT: &str = "const d = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(JSON.stringify({ echo: d.message }));";
const ANSWER: &str = "{\"echo\":\"hello\"}";

/// Runs `program args` in `cwd` the way the sandbox runs its child, feeding `input`; its
/// stdout.
async fn spawn(program: &Path, args: &[&std::ffi::OsStr], cwd: &Path, input: &Value) -> String {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(evo_tests::peer_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("spawns");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.to_string().as_bytes())
        .await
        .expect("writes");
    drop(stdin);
    let output = child.wait_with_output().await.expect("waits");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn check(result: &ExecutionResult) {
    assert!(result.success, "{result:?}");
    assert_eq!(result.output(), json!({ "echo": "hello" }));
}

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
    let node = which("node");
    // The sandbox runs its child in a fresh, empty workspace: so does the floor.
    let workspace = tempfile::tempdir().expect("workspace");

    let mut group = c.benchmark_group("native_call");
    group.sample_size(20);
    for (label, flags) in [
        ("floor: bare node reading stdin", &[][..]),
        (
            "floor: same, with --max-old-space-size=512",
            &["--max-old-space-size=512"][..],
        ),
    ] {
        let mut args: Vec<&std::ffi::OsStr> = flags.iter().map(std::ffi::OsStr::new).collect();
        args.push(script.as_os_str());
        let floor = || rt.block_on(spawn(&node, &args, workspace.path(), &input));
        assert_eq!(floor(), ANSWER);
        group.bench_function(label, |b| b.iter(|| black_box(floor())));
    }
    let sandbox = NativeSandbox::new(root.path(), NativeConfig::default());
    check(&rt.block_on(sandbox.execute("echo", &input)).expect("runs"));
    group.bench_function("evo: unconfined call (V8 heap flag)", |b| {
        b.iter(|| black_box(rt.block_on(sandbox.execute("echo", &input)).expect("runs")));
    });

    // The launchers are the binaries built next to this bench (`cargo build --release
    // -p evo-cli`): the small `evo-launcher` the CLI starts, and `evo` itself, its fallback.
    let built = |name: &str| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join(name)))
            .filter(|path| path.is_file())
            .unwrap_or_else(|| {
                panic!("{name} is built next to this bench: cargo build --release -p evo-cli")
            })
    };
    let evo = built("evo");
    let small = built(evo_host::sandbox::LAUNCHER);
    let limits = Limits {
        memory_bytes: 512 << 20,
        max_tasks: 256,
        cpu_percent: evo_host::engine::native::DEFAULT_MAX_CPU_PERCENT,
    };
    for (label, launcher, layers, cgroup) in [
        (
            "layers: launcher only (exec through evo, rlimits)",
            &evo,
            "none",
            false,
        ),
        (
            "layers: launcher only (exec through evo-launcher, rlimits)",
            &small,
            "none",
            false,
        ),
        ("layers: + landlock", &small, "landlock", false),
        (
            "layers: + namespaces, private root",
            &small,
            "landlock,namespaces",
            false,
        ),
        (
            "layers: + seccomp",
            &small,
            "landlock,namespaces,seccomp",
            false,
        ),
        (
            "layers: + cgroup (made, joined, killed, removed)",
            &small,
            "landlock,namespaces,seccomp",
            true,
        ),
    ] {
        let run = || async {
            let cgroup =
                cgroup.then(|| CallCgroup::create(limits).expect("a cgroup can be made here"));
            let mut args: Vec<std::ffi::OsString> = vec![
                evo_host::sandbox::LAUNCHER_EXEC.into(),
                "--workspace".into(),
                workspace.path().into(),
                "--read".into(),
                root.path().into(),
                "--layers".into(),
                layers.into(),
            ];
            for procs in cgroup.iter().flat_map(CallCgroup::procs) {
                args.push("--cgroup".into());
                args.push(procs.into());
            }
            args.extend(["--".into(), node.clone().into(), script.clone().into()]);
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            let out = spawn(launcher, &args, workspace.path(), &input).await;
            if let Some(cgroup) = cgroup {
                cgroup.remove().await;
            }
            out
        };
        assert_eq!(rt.block_on(run()), ANSWER, "{label}");
        group.bench_function(label, |b| b.iter(|| black_box(rt.block_on(run()))));
    }
    let sandbox = NativeSandbox::new(
        root.path(),
        NativeConfig {
            launcher: Some(small),
            ..NativeConfig::default()
        },
    );
    let result = rt.block_on(sandbox.execute("echo", &input)).expect("runs");
    check(&result);
    assert!(
        result.protections.iter().any(|p| p == "private-root"),
        "{:?}",
        result.protections
    );
    group.bench_function(
        "evo: confined call (every layer, no heap flag; launcher started ahead)",
        |b| b.iter(|| black_box(rt.block_on(sandbox.execute("echo", &input)).expect("runs"))),
    );
    // Where the confined call's cost is: not the cap of one core on
    // the call's CPU; the calls spaced apart, timed without the pause (the floor
    // likewise), still start the next launcher beside each call.
    let uncapped = NativeSandbox::new(
        root.path(),
        NativeConfig {
            launcher: sandbox.config().launcher.clone(),
            max_cpu_percent: 200,
            ..NativeConfig::default()
        },
    );
    check(&rt.block_on(uncapped.execute("echo", &input)).expect("runs"));
    group.bench_function(
        "evo: confined call, CPU cap raised to two cores (max_cpu_percent = 200)",
        |b| b.iter(|| black_box(rt.block_on(uncapped.execute("echo", &input)).expect("runs"))),
    );
    group.bench_function("evo: confined call, 60 ms apart", |b| {
        b.iter_custom(|n| {
            spaced(n, || {
                black_box(rt.block_on(sandbox.execute("echo", &input)).expect("runs"));
            })
        })
    });
    group.bench_function("floor: bare node, 60 ms apart", |b| {
        let args = [script.as_os_str()];
        b.iter_custom(|n| {
            spaced(n, || {
                black_box(rt.block_on(spawn(&node, &args, workspace.path(), &input)));
            })
        })
    });
    // A host's first call, as a one-shot `evo skill run` makes it: nothing started ahead.
    let cold = || {
        NativeSandbox::new(
            root.path(),
            NativeConfig {
                launcher: sandbox.config().launcher.clone(),
                ..NativeConfig::default()
            },
        )
    };
    check(&rt.block_on(cold().execute("echo", &input)).expect("runs"));
    group.bench_function("evo: confined call, cold (a host's first call)", |b| {
        b.iter(|| black_box(rt.block_on(cold().execute("echo", &input)).expect("runs")));
    });
    for concurrency in [1, 2] {
        let sandbox = Arc::new(NativeSandbox::new(
            root.path(),
            NativeConfig {
                max_concurrency: concurrency,
                ..NativeConfig::default()
            },
        ));
        check(&rt.block_on(sandbox.execute("echo", &input)).expect("runs"));
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

/// `program` found on `PATH`.
fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{program} is on PATH"))
}

criterion_group!(benches, native);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/engine/native",
    "host/src/engine/native_settings.rs",
    "cli/src/launcher.rs",
    "tests/benches/native.rs",
];

evo_tests::recorded_main!("native", PATHS, benches);

/// The time of `n` runs of `call`, each 60 ms after the last ended (the pause not
/// counted).
fn spaced(n: u64, mut call: impl FnMut()) -> std::time::Duration {
    let mut total = std::time::Duration::ZERO;
    for _ in 0..n {
        std::thread::sleep(std::time::Duration::from_millis(60));
        let start = std::time::Instant::now();
        call();
        total += start.elapsed();
    }
    total
}
