//! `evo serve` over stdio as MCP clients use it: the official Python SDK, and raw
//! JSON-RPC lines for what a well-behaved client never sends (`serve_http` for HTTP).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use evo_tests::cli::{command, stderr};
use evo_tests::evo_bin;
use serde_json::{Value, json};

use crate::native::{live_processes, native_skill};

/// The Python with the `mcp` SDK that `./scripts/test` installs.
pub(crate) fn python() -> PathBuf {
    let python = std::env::var_os("EVO_TEST_PYTHON").unwrap_or_else(|| {
        panic!(
            "EVO_TEST_PYTHON is not set: run ./scripts/test, which installs the Python MCP SDK and sets it"
        )
    });
    PathBuf::from(python)
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/client.py")
}

/// A data directory with the instruction skill `guide` installed, and a second skill
/// (`commit-guide`) ready to install while a client is connected.
pub(crate) fn catalogue() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let guide = root.path().join("src/guide");
    std::fs::create_dir_all(&guide).unwrap();
    std::fs::write(
        guide.join("SKILL.md"),
        "---\nname: guide\ndescription: How to write release notes.\n---\n# Release notes\nLead with what users gained.\n",
    )
    .unwrap();
    let later = root.path().join("later/commit-guide");
    std::fs::create_dir_all(&later).unwrap();
    std::fs::write(
        later.join("SKILL.md"),
        "---\nname: commit-guide\ndescription: How to write a commit message.\n---\nUse the imperative mood.\n",
    )
    .unwrap();
    let out = command(&home, &["skill", "install", guide.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (root, later)
}

/// Checks what the Python client reported.
pub(crate) fn check_report(report: &Value, protocol: &str) {
    assert_eq!(report["protocol"], protocol, "{report:#}");
    assert_eq!(
        report["ok"],
        json!({ "isError": false, "structured": { "result": 22 } })
    );
    assert_eq!(report["calculate_tool"]["readOnly"], true);
    assert_eq!(
        report["calculate_tool"]["outputSchema"]["properties"]["result"]["type"],
        "number"
    );
    assert_eq!(report["bad"]["isError"], true);
    let text = report["bad"]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "error[SKILL_VALIDATION_FAILED]: calculate input does not match its schema"
        ),
        "{text}"
    );
    assert!(
        text.contains("[expression] type: expected string, got 7"),
        "{text}"
    );
    assert!(
        text.contains("hint: fix the input as the report says"),
        "{text}"
    );
    assert_eq!(report["resources"], json!(["skill://guide/SKILL.md"]));
    assert_eq!(
        report["resource_meta"],
        json!({ "mimeType": "text/markdown", "size": 106 })
    );
    assert!(
        report["resource_text"]
            .as_str()
            .unwrap()
            .ends_with("# Release notes\nLead with what users gained.\n")
    );
    assert_eq!(report["prompts"], json!(["guide"]));
    assert!(
        ["ToolsListChanged", "ToolListChangedNotification"]
            .contains(&report["event"].as_str().unwrap()),
        "{report:#}"
    );
    let after: Vec<&str> = report["tools_after"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        after.contains(&"commit-guide") && after.contains(&"guide"),
        "{after:?}"
    );
}

pub(crate) fn run_client(args: &[&str]) -> Value {
    run_python(&client_script(), args)
}

/// Runs the Python MCP client `script` with `args`; what it printed last, as JSON.
pub(crate) fn run_python(script: &Path, args: &[&str]) -> Value {
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Python MCP client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn the_python_sdk_uses_evo_over_stdio() {
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let (root, later) = catalogue();
        let home = root.path().join("home");
        let report = run_client(&[
            "stdio",
            evo_bin().to_str().unwrap(),
            home.to_str().unwrap(),
            later.to_str().unwrap(),
            mode,
        ]);
        check_report(&report, protocol);
    }
}

/// A raw stdio session: JSON-RPC lines in, lines out (read on a thread).
pub(crate) struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// Messages read while waiting for another id.
    early: Vec<Value>,
}

impl Raw {
    fn start(home: &Path, extra: &[&str]) -> Self {
        Self::start_in(home, Path::new("."), extra)
    }

    /// `evo serve EXTRA` started in `cwd`, initialised.
    pub(crate) fn start_in(home: &Path, cwd: &Path, extra: &[&str]) -> Self {
        let mut args = vec!["serve"];
        args.extend_from_slice(extra);
        let mut child = command(home, &args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("evo serve wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut raw = Self {
            stdin: child.stdin.take(),
            child,
            lines,
            early: Vec::new(),
        };
        raw.send_line(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }).to_string());
        raw.expect_id(0);
        raw.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send_line(
            &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": arguments } })
                .to_string(),
        );
    }

    /// Sends SIGTERM to `evo serve`.
    fn terminate(&self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success());
    }

    /// Waits for call `id` of a skill that answers `{"done": true}`, which it must.
    fn expect_done(&mut self, id: u64) {
        let answer = self.expect_id(id);
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({ "done": true }),
            "call {id}: {answer}"
        );
    }

    /// Moves the messages already written into [`Raw::early`].
    fn read_pending(&mut self) {
        while let Ok(message) = self.lines.try_recv() {
            if message.get("id").is_some() {
                self.early.push(message);
            }
        }
    }

    /// The message with `id` (answers come in any order; notifications are skipped).
    pub(crate) fn expect_id(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        if let Some(i) = self.early.iter().position(|m| m.get("id") == Some(&id)) {
            return self.early.remove(i);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer with id {id}"));
            if message.get("id") == Some(&id) {
                return message;
            }
            if message.get("id").is_some() {
                self.early.push(message);
            }
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits while `condition` holds, failing with `what` after `limit`.
fn wait_while(limit: Duration, what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while condition() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How `child` ended, failing with `what` if it still runs after `limit`.
fn exit_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Skill directories with a runaway loop, a memory bomb and a native script that
/// never ends, for `--skills-dir`.
fn misbehaving(root: &Path) -> PathBuf {
    let dir = evo_tests::runaway_skills(&root.join("skills"), 3000);
    native_skill(
        &dir,
        "forever",
        "Never ends, and neither does its child.",
        &format!(
            "require('child_process').spawn('sleep', ['{}'], {{ stdio: 'ignore' }});\nsetInterval(() => {{}}, 1000);\n",
            forever_marker()
        ),
    );
    dir
}

/// What the `forever` skill's child runs: `sleep` for an hour and this process's id.
fn forever_marker() -> String {
    format!("3600.{}1", std::process::id())
}

#[test]
fn a_session_survives_bad_lines_runaways_bombs_and_cancellation() {
    let root = tempfile::tempdir().unwrap();
    let skills = misbehaving(root.path());
    let home = root.path().join("home");
    let mut raw = Raw::start(&home, &["--skills-dir", skills.to_str().unwrap()]);

    // A line that is not JSON gets a parse error; one that is not JSON-RPC, an
    // invalid-request error; the session goes on.
    raw.send_line("this is not json");
    let error = raw.expect_id(Value::Null);
    assert_eq!(error["error"]["code"], -32700, "{error}");
    raw.send_line(r#"{"hello":"world","id":7}"#);
    let error = raw.expect_id(7);
    assert_eq!(error["error"]["code"], -32600, "{error}");
    // Oversized: over the 4 MiB default.
    raw.send_line(&format!("{{\"pad\":\"{}\"}}", "x".repeat(5 << 20)));
    let error = raw.expect_id(Value::Null);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("message refused: longer than 4194304 bytes"),
        "{error}"
    );

    // An unknown tool is a JSON-RPC error, not a result.
    raw.call(8, "no-such-tool", json!({}));
    let error = raw.expect_id(8);
    assert_eq!(error["error"]["code"], -32602, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool: no-such-tool"),
        "{error}"
    );

    // Params of the wrong shape are invalid params that say which field and what it
    // must be, whether the SDK could read the line as a request or not.
    raw.send_line(
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"calculate","arguments":"str"}}"#,
    );
    let error = raw.expect_id(9);
    assert_eq!(error["error"]["code"], -32602, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"arguments\" is a string: it must be an object"),
        "{error}"
    );
    // Without `"jsonrpc": "2.0"` it is no JSON-RPC 2.0 request at all.
    raw.send_line(r#"{"id":11,"method":"tools/call","params":"x"}"#);
    let error = raw.expect_id(11);
    assert_eq!(error["error"]["code"], -32600, "{error}");
    raw.send_line(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":"x"}"#);
    let error = raw.expect_id(10);
    assert_eq!(error["error"]["code"], -32602, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("params must be an object (\"name\", \"arguments\"), not a string"),
        "{error}"
    );

    // A runaway call is cut at its deadline while other calls are answered meanwhile.
    let marker = format!("sleep {}", forever_marker());
    raw.call(10, "spin", json!({}));
    raw.call(11, "bomb", json!({}));
    for id in 20..25 {
        raw.call(
            id,
            "calculate",
            json!({ "expression": format!("{id} * 2") }),
        );
    }
    for id in 20..25 {
        let answer = raw.expect_id(id);
        assert_eq!(answer["result"]["structuredContent"]["result"], id * 2);
    }
    // Answered while spin ran: its answer (at its 3 s deadline) has not come yet.
    raw.read_pending();
    assert!(
        !raw.early.iter().any(|m| m["id"] == 10),
        "calculate was answered only after spin ended"
    );
    let bomb = raw.expect_id(11);
    assert_eq!(bomb["result"]["isError"], true, "{bomb}");
    assert!(
        bomb["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("error[MEMORY_LIMIT_EXCEEDED]: bomb: memory limit of 64 MiB exceeded"),
        "{bomb}"
    );
    let spin = raw.expect_id(10);
    assert_eq!(spin["result"]["isError"], true, "{spin}");
    assert!(
        spin["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(
                "error[SKILL_TIMEOUT]: spin: timeout: the call did not finish within 3000 ms"
            ),
        "{spin}"
    );

    // A cancelled native call: its process is killed and nothing answers the call.
    raw.call(30, "forever", json!({}));
    wait_while(
        Duration::from_secs(20),
        "the native script never started",
        || live_processes(&marker) == 0,
    );
    raw.send_line(
        &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 30, "reason": "user stopped it" } })
            .to_string(),
    );
    wait_while(
        Duration::from_secs(10),
        "the cancelled script still runs",
        || live_processes(&marker) > 0,
    );
    // Its slot is free: the session still answers.
    raw.call(31, "calculate", json!({ "expression": "1 + 1" }));
    assert_eq!(
        raw.expect_id(31)["result"]["structuredContent"]["result"],
        2
    );
    // A call whose `_meta` names an earlier protocol version than the session's is
    // answered too (by the SDK's own loop, which runs it under that version).
    raw.send_line(
        &json!({ "jsonrpc": "2.0", "id": 32, "method": "tools/call", "params": {
            "name": "calculate", "arguments": { "expression": "2 + 3" },
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2025-06-18" } } })
        .to_string(),
    );
    assert_eq!(
        raw.expect_id(32)["result"]["structuredContent"]["result"],
        5
    );

    // The end of input ends the server promptly, even with a call running.
    raw.call(40, "forever", json!({}));
    wait_while(
        Duration::from_secs(20),
        "the native script never started",
        || live_processes(&marker) == 0,
    );
    drop(raw.stdin.take());
    let status = exit_within(
        &mut raw.child,
        Duration::from_secs(2),
        "evo serve still runs after its input ended",
    );
    assert!(status.success(), "{status}");
    wait_while(
        Duration::from_secs(10),
        "a script outlived the server",
        || live_processes(&marker) > 0,
    );
    // Everything it wrote has been read: the cancelled call was never answered.
    raw.early
        .extend(raw.lines.iter().filter(|m| m.get("id").is_some()));
    assert!(
        !raw.early.iter().any(|m| m["id"] == 30),
        "the cancelled call was answered: {:?}",
        raw.early
    );

    // The calls are in the statistics.
    let out = command(&home, &["skill", "stats", "--json"])
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["calculate"]["callCount"], 7, "{stats}");
    assert_eq!(stats["calculate"]["successCount"], 7, "{stats}");
}

#[test]
fn sigterm_finishes_the_calls_in_flight_and_refuses_new_ones() {
    let marker = format!("3600.{}2", std::process::id());
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("skills");
    native_skill(
        &dir,
        "slow",
        "Answers after a second.",
        &format!(
            "require('child_process').spawn('sleep', ['{marker}'], {{ stdio: 'ignore' }});\nsetTimeout(() => {{ console.log(JSON.stringify({{ done: true }})); process.exit(0); }}, 1000);\n"
        ),
    );
    let mut raw = Raw::start(
        &root.path().join("home"),
        &["--skills-dir", dir.to_str().unwrap()],
    );
    raw.call(1, "slow", json!({}));
    wait_while(
        Duration::from_secs(20),
        "the native script never started",
        || live_processes(&format!("sleep {marker}")) == 0,
    );
    raw.terminate();
    std::thread::sleep(Duration::from_millis(100));
    raw.call(2, "calculate", json!({ "expression": "1" }));
    let refused = raw.expect_id(2);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the server is shutting down"),
        "{refused}"
    );
    raw.expect_done(1);
    let status = exit_within(
        &mut raw.child,
        Duration::from_secs(5),
        "evo serve still runs after SIGTERM",
    );
    assert!(status.success(), "{status}");
}

/// "Every request read before the signal finishes (with a bounded drain time) or is
/// refused before it is read": under load, calls waiting for one of two slots when
/// SIGTERM comes were answered `-32603 shutting down`; now they run.
#[test]
fn sigterm_answers_every_call_read_before_it_even_those_waiting_for_a_slot() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("skills");
    native_skill(
        &dir,
        "slow",
        "Answers after a fifth of a second.",
        "setTimeout(() => { console.log(JSON.stringify({ done: true })); process.exit(0); }, 200);\n",
    );
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("evo.toml"), "[serve]\nmax_calls = 2\n").unwrap();
    let mut raw = Raw::start(&home, &["--skills-dir", dir.to_str().unwrap()]);
    let calls = 1..=6;
    for id in calls.clone() {
        raw.call(id, "slow", json!({}));
    }
    // Lines are read in order: the answer to a ping written after the calls says that
    // all of them were read.
    raw.send_line(r#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#);
    raw.expect_id(99);
    raw.terminate();
    for id in calls {
        raw.expect_done(id);
    }
    let status = exit_within(
        &mut raw.child,
        evo_host::serve::stdio::GRACE,
        "evo serve still runs after answering every call",
    );
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn refresh_sees_skills_added_edited_and_removed_by_other_processes() {
    let home = tempfile::tempdir().unwrap();
    let host = evo_host::Host::builder()
        .data_dir(home.path())
        .config(evo_tests::config(home.path()))
        .build()
        .await
        .unwrap();
    let mut changes = host.changes();
    assert!(!host.refresh().await.unwrap(), "nothing changed yet");

    // Another process installs a skill (an atomic rename into skills/).
    let staged = home.path().join("staged-guide");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::write(
        staged.join("SKILL.md"),
        "---\nname: guide\ndescription: First words.\n---\nBody.\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join("skills")).unwrap();
    let installed = home.path().join("skills/guide");
    std::fs::rename(&staged, &installed).unwrap();
    assert!(host.refresh().await.unwrap());
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();
    assert_eq!(
        host.skill("guide").unwrap().meta.description,
        "First words."
    );

    // Its SKILL.md is edited in place.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(
        installed.join("SKILL.md"),
        "---\nname: guide\ndescription: Better words, and more of them.\n---\nBody.\n",
    )
    .unwrap();
    assert!(host.refresh().await.unwrap());
    assert_eq!(
        host.skill("guide").unwrap().meta.description,
        "Better words, and more of them."
    );

    // It is removed.
    std::fs::remove_dir_all(&installed).unwrap();
    assert!(host.refresh().await.unwrap());
    assert!(host.skill("guide").is_none());
    assert!(changes.has_changed().unwrap());
    assert!(!host.refresh().await.unwrap(), "and then nothing more");
}

#[test]
fn a_client_cannot_read_outside_a_skill_or_the_working_directory() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    let guide = skills.join("guide");
    std::fs::create_dir_all(&guide).unwrap();
    std::fs::write(
        guide.join("SKILL.md"),
        "---\nname: guide\ndescription: A guide.\n---\nBody.\n",
    )
    .unwrap();
    let secret = root.path().join("secret.txt");
    std::fs::write(&secret, "the secret").unwrap();
    std::os::unix::fs::symlink(&secret, guide.join("leak.md")).unwrap();
    let mut raw = Raw::start(
        &root.path().join("home"),
        &["--skills-dir", skills.to_str().unwrap()],
    );
    for (id, uri) in [
        (1, "skill://guide/../../secret.txt"),
        (2, "skill://guide/leak.md"),
        (3, "skill://guide//etc/passwd"),
        (4, "skill://nope/SKILL.md"),
    ] {
        raw.send_line(
            &json!({ "jsonrpc": "2.0", "id": id, "method": "resources/read", "params": { "uri": uri } })
                .to_string(),
        );
        let answer = raw.expect_id(id);
        assert!(answer.get("result").is_none(), "{uri}: {answer}");
        assert!(
            !answer.to_string().contains("the secret") && !answer.to_string().contains("root:"),
            "{uri}: {answer}"
        );
    }
    // The file tools stay inside the server's working directory.
    for (id, tool, pattern, path) in [(5, "grep", "root", "../"), (6, "glob", "*", "/etc")] {
        raw.call(id, tool, json!({ "pattern": pattern, "path": path }));
        let answer = raw.expect_id(id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("error[PERMISSION_DENIED]"), "{text}");
    }
}
