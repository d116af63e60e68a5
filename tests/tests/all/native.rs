//! Native script skills under real Node, one test per scenario the sandbox must handle.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use evo_host::engine::native::{NativeConfig, NativeSandbox};
use serde_json::{Value, json};

/// A skills root with one skill per `(name, script)`.
fn skills(scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (name, script) in scripts {
        let dir = root.path().join(name).join("scripts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("execute.js"), script).unwrap();
        std::fs::write(
            root.path().join(name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Test script.\n---\n"),
        )
        .unwrap();
    }
    root
}

fn sandbox(root: &Path, config: NativeConfig) -> NativeSandbox {
    NativeSandbox::new(root, config)
}

const ECHO: &str = r#"
let data = '';
process.stdin.on('data', c => data += c);
process.stdin.on('end', () => {
  const input = JSON.parse(data);
  console.log(JSON.stringify({ message: input.message, cwd: process.cwd() }));
});
"#;

#[tokio::test]
async fn a_script_gets_its_input_on_stdin_and_runs_in_a_fresh_workspace() {
    let root = skills(&[("echo", ECHO)]);
    let sandbox = sandbox(root.path(), NativeConfig::default());
    let result = sandbox
        .execute("echo", &json!({ "message": "feat: add new feature" }))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!((result.exit_code, result.error.clone()), (Some(0), None));
    let output = result.output();
    assert_eq!(output["message"], "feat: add new feature");
    let cwd = output["cwd"].as_str().unwrap();
    assert!(
        Path::new(cwd)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("skill-workspace-"),
        "{cwd}"
    );
    assert!(
        !Path::new(cwd).exists(),
        "the workspace is removed afterwards"
    );
    assert!(result.protections.contains(&"env-scrubbed".to_owned()));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group_and_leaves_no_zombie() {
    let root = skills(&[(
        "hang",
        r#"
const { spawn } = require('child_process');
const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
console.log(JSON.stringify({ pid: process.pid, child: child.pid }));
setInterval(() => {}, 1000);
"#,
    )]);
    let sandbox = sandbox(
        root.path(),
        NativeConfig {
            timeout: Duration::from_millis(800),
            ..NativeConfig::default()
        },
    );
    let result = sandbox.execute("hang", &json!({})).await.unwrap();
    assert_eq!(result.error.as_deref(), Some("Execution timeout"));
    assert!(!result.success);
    assert!(
        (800..5_000).contains(&result.duration),
        "duration recorded: {}",
        result.duration
    );
    let pids = result.output();
    let pid = pids["pid"].as_u64().unwrap();
    let child = pids["child"].as_u64().unwrap();
    // The script was reaped (no /proc entry at all); its child got SIGKILL with the group.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the script is gone, not a zombie"
    );
    std::thread::sleep(Duration::from_millis(200));
    let state = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    let running = state
        .split(") ")
        .nth(1)
        .is_some_and(|rest| !rest.starts_with('Z'));
    assert!(!running, "the grandchild is not running: {state}");
}

#[tokio::test]
async fn a_flood_of_output_is_cut_at_10mb() {
    let root = skills(&[(
        "flood",
        "const line = 'x'.repeat(1023) + '\\n'; for (let i = 0; i < 12 * 1024; i++) process.stdout.write(line);",
    )]);
    let sandbox = sandbox(root.path(), NativeConfig::default());
    let result = sandbox.execute("flood", &json!({})).await.unwrap();
    assert_eq!(
        result.error.as_deref(),
        Some("Output size exceeded 10MB limit")
    );
    assert!(result.stdout.ends_with("[TRUNCATED]"));
    assert!(result.stdout.len() <= 10 * 1024 * 1024 + "[TRUNCATED]".len());
}

#[tokio::test]
async fn an_out_of_memory_script_fails_alone() {
    let root = skills(&[(
        "leak",
        "const keep = []; while (true) keep.push(new Array(1e6).fill(1.5));",
    )]);
    // A small heap makes the test fast; the default is 512 MiB.
    let sandbox = sandbox(
        root.path(),
        NativeConfig {
            max_old_space_mb: 64,
            ..NativeConfig::default()
        },
    );
    let result = sandbox.execute("leak", &json!({})).await.unwrap();
    assert_eq!(result.error.as_deref(), Some("Out of memory"));
    // The host goes on: the next execution works.
    let root = skills(&[("echo", ECHO)]);
    let ok = sandbox_for(&root)
        .execute("echo", &json!({ "message": "still here" }))
        .await
        .unwrap();
    assert!(ok.success);
}

fn sandbox_for(root: &tempfile::TempDir) -> NativeSandbox {
    sandbox(root.path(), NativeConfig::default())
}

#[tokio::test]
async fn missing_skills_thrown_errors_and_spawn_failures_are_reported() {
    let root = skills(&[("thrower", "throw new Error('boom: the input was wrong');")]);
    let sandbox = sandbox_for(&root);
    let err = sandbox
        .execute("non-existent", &json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (err.to_string().as_str(), err.code()),
        ("Skills not found: non-existent", "ENOENT")
    );

    let result = sandbox.execute("thrower", &json!({})).await.unwrap();
    assert_eq!((result.success, result.exit_code), (false, Some(1)));
    assert_eq!(result.error.as_deref(), Some("boom: the input was wrong"));

    let broken = NativeSandbox::new(
        root.path(),
        NativeConfig {
            node: "/nonexistent/node".into(),
            ..NativeConfig::default()
        },
    );
    let result = broken.execute("thrower", &json!({})).await.unwrap();
    assert!(
        result
            .error
            .as_deref()
            .unwrap()
            .starts_with("Failed to spawn process: /nonexistent/node"),
        "{result:?}"
    );
}

#[tokio::test]
async fn statistics_count_every_execution() {
    let root = skills(&[("echo", ECHO), ("thrower", "throw new Error('no');")]);
    let sandbox = sandbox_for(&root);
    for _ in 0..2 {
        sandbox
            .execute("echo", &json!({ "message": "m" }))
            .await
            .unwrap();
    }
    sandbox.execute("thrower", &json!({})).await.unwrap();
    let echo = sandbox.stats().get("echo").unwrap();
    assert_eq!(
        (echo.call_count, echo.success_count, echo.success_rate),
        (2, 2, 1.0)
    );
    assert!(echo.average_duration > 0.0);
    let thrower = sandbox.stats().get("thrower").unwrap();
    assert_eq!((thrower.call_count, thrower.success_count), (1, 0));
}

#[tokio::test]
async fn ten_scripts_at_max_three_never_run_more_than_three_at_once() {
    let root = skills(&[(
        "nap",
        "const start = Date.now(); setTimeout(() => console.log(JSON.stringify({ start, end: Date.now() })), 300);",
    )]);
    let sandbox = Arc::new(sandbox(
        root.path(),
        NativeConfig {
            max_concurrency: 3,
            ..NativeConfig::default()
        },
    ));
    let handles: Vec<_> = (0..10)
        .map(|_| {
            let sandbox = sandbox.clone();
            tokio::spawn(async move { sandbox.execute("nap", &json!({})).await.unwrap() })
        })
        .collect();
    let mut spans = Vec::new();
    for handle in handles {
        let result = handle.await.unwrap();
        let output: Value = result.output();
        spans.push((
            output["start"].as_u64().unwrap(),
            output["end"].as_u64().unwrap(),
        ));
    }
    let most = spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap();
    assert!(most <= 3, "at most 3 at once, saw {most}: {spans:?}");
    assert!(most >= 2, "the slots are used in parallel: {spans:?}");
}

fn example(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../skills-native")
        .join(name)
}

#[tokio::test]
async fn the_example_skills_run_through_the_host() {
    let data = tempfile::tempdir().unwrap();
    let config = evo_host::Config {
        skill_dirs: vec![example("")],
        ..evo_host::Config::default()
    };
    let host = evo_host::Host::builder()
        .data_dir(data.path())
        .config(config)
        .build()
        .await
        .unwrap();
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    for name in ["git-commit", "csv-to-json", "text-stats"] {
        assert_eq!(
            host.skill(name).map(|s| s.kind()),
            Some(evo_host::skill::kernel::executor::ExecutorKind::Native)
        );
    }
    let ctx = host.context(None);

    // git-commit with { message: 'feat: add new feature' }.
    let out = ctx
        .call("git-commit", json!({ "message": "feat: add new feature." }))
        .await
        .unwrap();
    assert_eq!(out["message"], "feat: add new feature");
    assert_eq!(out["type"], "feat");
    assert_eq!(out["commit"].as_str().unwrap().len(), 40, "{out}");
    let err = ctx
        .call("git-commit", json!({ "message": "added stuff" }))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "git-commit: failed: \"added stuff\" is not \"type(scope): subject\""
    );

    let out = ctx.call("csv-to-json", json!({ "csv": "name,quote\nAda,\"loops, and \"\"more\"\"\"\nGrace,\"line\nbreak\"\n" })).await.unwrap();
    assert_eq!(out["columns"], json!(["name", "quote"]));
    assert_eq!(out["rows"][0]["quote"], "loops, and \"more\"");
    assert_eq!(out["rows"][1]["quote"], "line\nbreak");

    let out = ctx
        .call(
            "text-stats",
            json!({ "text": "The cat sat. The cat ran! Dogs barked?" }),
        )
        .await
        .unwrap();
    assert_eq!(
        (out["words"].clone(), out["sentences"].clone()),
        (json!(8), json!(3))
    );
    assert_eq!(out["topWords"][0], json!({ "word": "cat", "count": 2 }));
}

#[test]
fn the_hosts_secrets_never_reach_a_script() {
    let root = skills(&[(
        "env-probe",
        "console.log(JSON.stringify({ keys: Object.keys(process.env).sort(), home: process.env.HOME || null }));",
    )]);
    let home = tempfile::tempdir().unwrap();
    let out = evo_tests::cli::command(
        home.path(),
        &[
            "skill",
            "run",
            root.path().join("env-probe").to_str().unwrap(),
            "--json",
        ],
    )
    .env("OPENAI_API_KEY", "sk-secret-do-not-leak")
    .env("GITHUB_TOKEN", "ghp_secret")
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["output"]["keys"], json!(["PATH"]), "{value}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("secret"));
}

fn confined(root: &Path) -> NativeSandbox {
    NativeSandbox::new(
        root,
        NativeConfig {
            launcher: Some(evo_tests::evo_bin()),
            ..NativeConfig::default()
        },
    )
}

#[tokio::test]
async fn a_confined_script_touches_nothing_outside_its_workspace() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("memory.db");
    std::fs::write(&secret, "private").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        r#"
const fs = require('fs');
const net = require('net');
const r = {{}};
try {{ fs.readFileSync({secret:?}); r.read = 'read'; }} catch (e) {{ r.read = e.code; }}
try {{ fs.writeFileSync({outside:?}, 'x'); r.write = 'written'; }} catch (e) {{ r.write = e.code; }}
fs.writeFileSync('inside.txt', 'ok'); r.inside = fs.readFileSync('inside.txt', 'utf8');
const socket = net.connect({port}, '127.0.0.1');
socket.on('connect', () => {{ r.connect = 'connected'; done(); }});
socket.on('error', e => {{ r.connect = e.code; done(); }});
function done() {{ console.log(JSON.stringify(r)); process.exit(0); }}
"#,
        secret = secret.to_str().unwrap(),
        outside = secret_dir.path().join("planted.txt").to_str().unwrap(),
    );
    let root = skills(&[("peek", &script)]);
    let sandbox = confined(root.path());
    let isolation = sandbox.isolation().await;
    assert!(
        isolation.iter().any(|p| p == "landlock-full"),
        "Landlock is not available on this kernel, so native isolation cannot be checked here: {isolation:?}"
    );
    let result = sandbox.execute("peek", &json!({})).await.unwrap();
    assert!(result.success, "{result:?}");
    assert!(
        result.protections.contains(&"landlock-full".to_owned()),
        "{:?}",
        result.protections
    );
    let seen = result.output();
    // With a private root the paths do not exist in the script's view; with Landlock
    // alone they exist and are refused.
    let refused = if result.protections.contains(&"private-root".to_owned()) {
        "ENOENT"
    } else {
        "EACCES"
    };
    assert_eq!(
        seen["read"], refused,
        "the host's data cannot be read: {seen}"
    );
    assert_eq!(
        seen["write"], refused,
        "nothing can be planted outside: {seen}"
    );
    assert_eq!(seen["inside"], "ok");
    assert_ne!(seen["connect"], "connected", "no network: {seen}");
    assert!(!secret_dir.path().join("planted.txt").exists());
    drop(listener);
}

#[tokio::test]
async fn the_examples_work_confined_and_isolation_can_be_required() {
    let sandbox = confined(&example(""));
    let result = sandbox
        .execute(
            "git-commit",
            &json!({ "message": "docs: explain the sandbox" }),
        )
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.output()["message"], "docs: explain the sandbox");

    let unconfined = NativeSandbox::new(
        example(""),
        NativeConfig {
            require_isolation: true,
            ..NativeConfig::default()
        },
    );
    let err = unconfined
        .execute("text-stats", &json!({ "text": "x" }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CAPABILITY_DENIED");
    assert!(
        err.to_string().contains("require file-system isolation"),
        "{err}"
    );
}

/// A native skill directory `root/name` with `script` as its `scripts/execute.js`.
pub(crate) fn native_skill(
    root: &Path,
    name: &str,
    description: &str,
    script: &str,
) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n"),
    )
    .unwrap();
    std::fs::write(dir.join("scripts/execute.js"), script).unwrap();
    dir
}

/// Whether a live (not zombie) process's command line contains `marker`.
pub(crate) fn running(marker: &str) -> bool {
    live_processes(marker) > 0
}

/// Live (not zombie) processes whose command line contains `marker`.
pub(crate) fn live_processes(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                .filter(|e| {
                    let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                    let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                    let zombie = stat.split(") ").nth(1).is_some_and(|r| r.starts_with('Z'));
                    !zombie
                        && String::from_utf8_lossy(&cmdline)
                            .replace('\0', " ")
                            .contains(marker)
                })
                .count()
        })
        .unwrap_or(0)
}

pub(crate) async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..100 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("waited 10 s for {what}");
}

/// A host with one native skill that starts a child (`sleep MARKER`) and never ends.
async fn host_with_a_hanging_skill(
    marker: &str,
    timeout_ms: u64,
) -> (evo_host::Host, [tempfile::TempDir; 2]) {
    let skills = tempfile::tempdir().unwrap();
    let script = format!(
        "require('child_process').spawn('sleep', ['{marker}'], {{ stdio: 'ignore' }});\nsetInterval(() => {{}}, 1000);\n"
    );
    let dir = native_skill(
        skills.path(),
        "hang",
        "Starts a child and never finishes.",
        &script,
    );
    std::fs::write(
        dir.join("skill.json"),
        format!(r#"{{ "timeout": {timeout_ms} }}"#),
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let config = evo_host::Config {
        skill_dirs: vec![skills.path().to_owned()],
        ..evo_host::Config::default()
    };
    let host = evo_host::Host::builder()
        .data_dir(data.path())
        .config(config)
        .embedder(Arc::new(evo_host::retrieval::embed::HashEmbedder))
        .build()
        .await
        .unwrap();
    (host, [skills, data])
}

#[tokio::test]
async fn through_the_host_a_timeout_is_the_scripts_own_and_kills_its_children() {
    let marker = format!("{}.25", 40 + std::process::id() % 50);
    let (host, _dirs) = host_with_a_hanging_skill(&marker, 1_500).await;
    let err = host.call("hang", json!({})).await.unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().as_str()),
        ("SKILL_TIMEOUT", "hang: timeout: Execution timeout"),
        "the sandbox's report, not the kernel's"
    );
    wait_until("the child to be killed", || {
        !running(&format!("sleep {marker}"))
    })
    .await;
}

#[tokio::test]
async fn a_call_dropped_midway_kills_everything_the_script_started() {
    let marker = format!("{}.75", 40 + std::process::id() % 50);
    let (host, _dirs) = host_with_a_hanging_skill(&marker, 60_000).await;
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call("hang", json!({})).await }
    });
    let pattern = format!("sleep {marker}");
    wait_until("the script's child to start", || running(&pattern)).await;
    // A cancelled run (a client gone, a kernel deadline) drops the call's future.
    call.abort();
    let _ = call.await;
    wait_until("the child to be killed with its group", || {
        !running(&pattern)
    })
    .await;
}

#[test]
fn a_failed_script_keeps_what_it_printed_in_the_json_result() {
    let skills = tempfile::tempdir().unwrap();
    let dir = native_skill(
        skills.path(),
        "boom",
        "Prints, then throws.",
        "console.log('partial work');\nthrow new Error('kaput');\n",
    );
    let home = tempfile::tempdir().unwrap();
    let out = evo_tests::cli::evo(
        home.path(),
        &["skill", "run", dir.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let value: Value = serde_json::from_str(&evo_tests::cli::stdout(&out)).unwrap();
    assert_eq!(
        (&value["success"], &value["code"], &value["error"]),
        (
            &json!(false),
            &json!("SKILL_FAILED"),
            &json!("boom: failed: kaput")
        )
    );
    assert_eq!(value["stdout"], "partial work\n");
    assert!(
        value["stderr"].as_str().unwrap().contains("Error: kaput"),
        "{value}"
    );
    assert_eq!(value["exitCode"], 1);
    assert!(value["duration"].as_u64().unwrap() > 0, "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_the_second_call_on_launchers_wait_ready_and_confine_as_fully() {
    let marker = format!("{}.{}", 800 + std::process::id() % 100, std::process::id());
    let root = skills(&[
        (
            "echo",
            "const d = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(JSON.stringify({ echo: d.n, pid: process.pid }));",
        ),
        (
            "stuck",
            &format!(
                "require('child_process').spawn('setsid', ['sleep', '{marker}'], {{ detached: true, stdio: 'ignore' }}).unref();\nsetInterval(() => {{}}, 1000);\n"
            ),
        ),
    ]);
    let sandbox = NativeSandbox::new(
        root.path(),
        NativeConfig {
            launcher: Some(evo_tests::evo_bin()),
            max_concurrency: 1,
            timeout: Duration::from_millis(1_500),
            ..NativeConfig::default()
        },
    );
    let first = sandbox.execute("echo", &json!({ "n": 1 })).await.unwrap();
    assert_eq!(
        sandbox.ready_launchers(),
        0,
        "a one-shot host starts none ahead"
    );
    for n in 2..=4 {
        let result = sandbox.execute("echo", &json!({ "n": n })).await.unwrap();
        assert!(result.success, "{result:?}");
        assert_eq!(result.output()["echo"], n);
        assert_eq!(
            result.protections, first.protections,
            "a launcher started ahead confines as fully as a fresh one"
        );
        assert_eq!(sandbox.ready_launchers(), 1, "one waits for the next call");
    }
    // A call through a waiting launcher still takes everything with it at its end.
    let result = sandbox.execute("stuck", &json!({})).await.unwrap();
    assert_eq!(result.error.as_deref(), Some("Execution timeout"));
    let pattern = format!("sleep {marker}");
    wait_until("the stuck script's child to be gone", || !running(&pattern)).await;
}

#[test]
fn a_native_script_reaches_granted_hosts_only_through_the_hosts_proxy() {
    let home = tempfile::tempdir().unwrap();
    assert!(
        crate::exfil::set_secret(home.path(), "NATIVE_TOKEN", "native-0123456789-token")
            .status
            .success()
    );
    let granted = crate::fetch::Server::start_with(|_, request| {
        let auth = request
            .lines()
            .find_map(|l| l.strip_prefix("authorization: "))
            .unwrap_or("none")
            .to_owned();
        crate::fetch::ok(&format!("you sent {auth}"))
    });
    let other = crate::fetch::Server::start(|_| crate::fetch::ok("other"));
    let dir = home.path().join("net");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("skill.json"),
        r#"{"name":"net","description":"Fetches through the host.","capabilities":{
            "hosts":["http://127.0.0.1:*"],
            "secrets":[{"name":"NATIVE_TOKEN","host":"http://127.0.0.1:*"}]}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("scripts/execute.js"),
        r#"const http = require('http');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
function get(url, headers) {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: '.evo/http.sock', path: url, headers }, (res) => {
      let body = '';
      res.on('data', (c) => body += c);
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', (e) => resolve({ status: 0, body: String(e) }));
    req.end();
  });
}
(async () => {
  const granted = await get(input.granted, { authorization: 'Bearer {{secret:NATIVE_TOKEN}}' });
  const other = await get(input.other, {});
  // Not the full URL: the proxy cannot tell where it goes, so nothing is sent.
  const relative = await get('/y', {});
  let direct;
  try { await fetch(input.granted); direct = 'connected'; } catch (e) { direct = 'refused'; }
  console.log(JSON.stringify({ granted, other, relative, direct }));
})();
"#,
    )
    .unwrap();
    let allow = format!("http://127.0.0.1:{}", granted.port);
    let input = serde_json::json!({
        "granted": format!("http://127.0.0.1:{}/x", granted.port),
        "other": format!("http://127.0.0.1:{}/y", other.port),
    })
    .to_string();
    let dir_arg = dir.to_str().unwrap();
    let out = evo_tests::cli::evo(
        home.path(),
        &[
            "skill",
            "run",
            dir_arg,
            "--allow-host",
            &allow,
            "--allow-secret",
            "NATIVE_TOKEN",
            "--input",
            &input,
        ],
    );
    assert!(out.status.success(), "{}", evo_tests::cli::stderr(&out));
    let value: Value = serde_json::from_str(&evo_tests::cli::stdout(&out)).unwrap();
    assert_eq!(value["granted"]["status"], 200, "{value}");
    assert_eq!(
        value["granted"]["body"],
        format!(
            "you sent Bearer {}",
            "*".repeat("native-0123456789-token".len())
        ),
        "the server got the value; the script got it masked"
    );
    assert_eq!(granted.received().len(), 1);
    assert!(granted.received()[0].contains("authorization: Bearer native-0123456789-token"));
    assert_eq!(value["other"]["status"], 403, "{value}");
    assert!(
        value["other"]["body"]
            .as_str()
            .unwrap()
            .contains("not among the hosts granted to net"),
        "{value}"
    );
    assert_eq!(other.connections(), 0);
    assert_eq!(value["relative"]["status"], 400, "{value}");
    assert!(
        value["relative"]["body"]
            .as_str()
            .unwrap()
            .contains("send the full URL as the request path"),
        "{value}"
    );
    assert_eq!(
        granted.received().len(),
        1,
        "the relative request reached no one"
    );
    // Where the sandbox closes the network, the proxy is the only way out.
    let doctor = evo_tests::cli::stdout(&evo_tests::cli::evo(home.path(), &["doctor"]));
    if doctor.contains("no network (") {
        assert_eq!(value["direct"], "refused", "{value}");
        assert_eq!(granted.received().len(), 1);
    }

    let out = evo_tests::cli::evo(
        home.path(),
        &[
            "skill",
            "info",
            dir_arg,
            "--allow-host",
            &allow,
            "--allow-secret",
            "NATIVE_TOKEN",
        ],
    );
    let text = evo_tests::cli::stdout(&out);
    assert!(
        text.contains(&format!("\n  granted:    outbound HTTP to {allow}, through the host's proxy at .evo/http.sock\n  granted:    secret NATIVE_TOKEN for http://127.0.0.1:*\n")),
        "{text}"
    );
}

#[test]
fn a_native_skill_named_by_a_relative_path_runs() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("rel/echo");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("skill.json"),
        r#"{"name":"echo","description":"Says ok."}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("scripts/execute.js"),
        "console.log(JSON.stringify({ ok: true }))\n",
    )
    .unwrap();
    // As a user types it, from the directory above: the sandbox binds the skill's
    // directory by its absolute path.
    let out = evo_tests::cli::command(home.path(), &["skill", "run", "rel/echo"])
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evo_tests::cli::stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&evo_tests::cli::stdout(&out)).unwrap(),
        json!({ "ok": true })
    );
}

/// What the kernel says about the script's own process, read from `/proc` inside the
/// sandbox, and what happens when it tries to become root.
const PRIVILEGE_PROBE: &str = r#"
const fs = require('fs');
const status = fs.readFileSync('/proc/self/status', 'utf8');
const field = name => (new RegExp('^' + name + ':\\s*(\\S+)', 'm').exec(status) || [])[1];
const limits = {};
for (const line of fs.readFileSync('/proc/self/limits', 'utf8').split('\n').slice(1)) {
  const m = /^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)/.exec(line);
  if (m) limits[m[1]] = [m[2], m[3]];
}
let setuid;
try { process.setuid(0); setuid = 'became root'; } catch (e) { setuid = e.code; }
console.log(JSON.stringify({
  noNewPrivs: field('NoNewPrivs'), seccomp: field('Seccomp'),
  capEff: field('CapEff'), capBnd: field('CapBnd'),
  uid: process.getuid(), setuid,
  core: limits['Max core file size'], fileSize: limits['Max file size'],
  cpu: limits['Max cpu time'], processes: limits['Max processes'],
}));
"#;

#[test]
fn through_the_cli_a_script_cannot_gain_privileges_and_runs_under_its_limits() {
    let root = skills(&[("privilege-probe", PRIVILEGE_PROBE)]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        "[native]\nisolation = \"required\"\n",
    )
    .unwrap();
    let out = evo_tests::cli::command(
        home.path(),
        &[
            "skill",
            "run",
            root.path().join("privilege-probe").to_str().unwrap(),
            "--json",
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_str(&stdout).unwrap();
    let seen = &value["output"];
    // no_new_privs: no setuid binary or file capability can raise what the script holds.
    assert_eq!(seen["noNewPrivs"], "1", "{seen}");
    // A seccomp filter is installed (mode 2).
    assert_eq!(seen["seccomp"], "2", "{seen}");
    // No capabilities, and none that could come back (the bounding set is empty).
    assert_eq!(seen["capEff"], "0000000000000000", "{seen}");
    assert_eq!(seen["capBnd"], "0000000000000000", "{seen}");
    assert_ne!(seen["setuid"], "became root", "{seen}");
    // The rlimits, soft and hard alike (so the script cannot raise them again): no core
    // dumps, files of at most 1 GiB, CPU time bounded by the script's timeout (the
    // default 60 s, plus one), at most 4,096 processes.
    assert_eq!(seen["core"], json!(["0", "0"]), "{seen}");
    assert_eq!(
        seen["fileSize"],
        json!(["1073741824", "1073741824"]),
        "{seen}"
    );
    assert_eq!(seen["cpu"], json!(["61", "61"]), "{seen}");
    assert_eq!(seen["processes"], json!(["4096", "4096"]), "{seen}");
}

/// The CLI starts each native call through the small `evo-launcher` installed beside it,
/// and through itself (it has the same hidden commands) when that one is missing: `evo
/// doctor` says which, and either confines the script alike.
#[test]
fn the_cli_confines_scripts_through_the_small_launcher_beside_it_or_else_through_itself() {
    let root = skills(&[("privilege-probe", PRIVILEGE_PROBE)]);
    let probe = root.path().join("privilege-probe");
    let evo = evo_tests::evo_bin();
    // A folder of the build's own (so a hard link works) holding `evo` and nothing else.
    let alone = tempfile::tempdir_in(evo.parent().unwrap()).unwrap();
    let lone = alone.path().join("evo");
    std::fs::hard_link(&evo, &lone).unwrap();
    for (bin, launcher, small) in [
        (&evo, evo.with_file_name("evo-launcher"), true),
        (&lone, lone.clone(), false),
    ] {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("evo.toml"),
            "[native]\nisolation = \"required\"\n",
        )
        .unwrap();
        let run = |args: &[&str]| {
            let out = evo_tests::cli::command_of(bin, home.path(), args)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
            serde_json::from_str::<Value>(&stdout).unwrap()
        };
        let check = &run(&["doctor", "--json"])["checks"]["native launcher"];
        let detail = check["detail"].as_str().unwrap();
        assert_eq!(check["ok"], small, "{check}");
        assert!(
            detail.starts_with(&launcher.display().to_string()),
            "{launcher:?}: {detail}"
        );
        if !small {
            assert!(
                detail.contains("evo-launcher is not installed beside it"),
                "{detail}"
            );
        }
        let seen = run(&["skill", "run", probe.to_str().unwrap(), "--json"])["output"].clone();
        assert_eq!(seen["noNewPrivs"], "1", "{bin:?}: {seen}");
        assert_eq!(seen["seccomp"], "2", "{bin:?}: {seen}");
        assert_eq!(seen["capBnd"], "0000000000000000", "{bin:?}: {seen}");
        assert_eq!(
            seen["processes"],
            json!(["4096", "4096"]),
            "{bin:?}: {seen}"
        );
    }
}
