//! Distributed skills: two `evo serve --http` nodes on loopback; node A lists and calls
//! node B's skills as `b/…` over B's `/v1/ws`, with B's token from A's secrets.

use std::path::Path;
use std::time::Duration;

use evo_tests::cli::{HttpServer, evo, stderr, stdout};
use serde_json::{Value, json};

use crate::serve_http::{http, skill_names};

const TOKEN: &str = "node-b-token-0123456789";

/// A node B data directory with a native `slow` skill that sleeps as long as asked.
fn node_b() -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let skills = home.path().join("skills-src");
    let slow = skills.join("slow");
    std::fs::create_dir_all(slow.join("scripts")).unwrap();
    std::fs::write(
        slow.join("skill.json"),
        json!({
            "name": "slow",
            "description": "Waits as long as asked, then says so.",
            "input": { "type": "object", "properties": { "ms": { "type": "integer" } }, "required": ["ms"] },
            "output": { "type": "object", "properties": { "slept": { "type": "integer" } }, "required": ["slept"] },
            "timeout": 3000
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        slow.join("scripts/execute.js"),
        "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n\
         setTimeout(() => console.log(JSON.stringify({ slept: input.ms })), input.ms);\n",
    )
    .unwrap();
    (home, skills)
}

fn start_b(home: &Path, skills: &Path, addr: &str) -> HttpServer {
    HttpServer::start_at(
        home,
        addr,
        &["--token", TOKEN, "--skills-dir", skills.to_str().unwrap()],
    )
}

/// Node A, with B added as `b` and B's token kept as a secret.
fn node_a(b_base: &str) -> (tempfile::TempDir, HttpServer) {
    let home = tempfile::tempdir().unwrap();
    assert!(
        crate::exfil::set_secret(home.path(), "B_TOKEN", TOKEN)
            .status
            .success()
    );
    let out = evo(
        home.path(),
        &["remote", "add", "b", b_base, "--token-secret", "B_TOKEN"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("b: added; "), "{}", stdout(&out));
    let a = HttpServer::start(home.path(), &[]);
    (home, a)
}

fn call(base: &str, skill: &str, input: &Value) -> (u16, Value) {
    http(
        "POST",
        &format!("{base}/v1/skills/{}/call", skill.replace('/', "%2F")),
        &[],
        Some(&input.to_string()),
    )
}

#[test]
fn a_node_calls_another_nodes_skills_and_survives_its_restart() {
    let (b_home, b_skills) = node_b();
    let addr = format!("127.0.0.1:{}", evo_tests::free_port());
    let mut b = start_b(b_home.path(), &b_skills, &addr);
    let (a_home, a) = node_a(&b.base);

    // Listed and described as A's own, under B's name.
    let names = skill_names(&a.base);
    assert!(
        names.contains(&"b/slow".to_owned()) && names.contains(&"b/calculate".to_owned()),
        "{names:?}"
    );
    let out = evo(a_home.path(), &["remote", "list"]);
    assert!(
        stdout(&out).starts_with(&format!("b  {}, token from secret B_TOKEN: ", b.base)),
        "{}",
        stdout(&out)
    );

    // B's levels gate A's callers: B's shell is `execute` here too.
    let out = evo(
        a_home.path(),
        &[
            "skill",
            "run",
            "b/bash",
            "--profile",
            "explore",
            "--input",
            r#"{"command":"echo hi"}"#,
        ],
    );
    // Refused before it ran (TOOL_BLOCKED), on B as it would be here.
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the agent may not call this tool (it needs execute; this profile allows only read_only)"),
        "{}",
        stderr(&out)
    );

    // A call, and B's error codes as A's.
    let (status, body) = call(&a.base, "b/slow", &json!({ "ms": 10 }));
    assert_eq!(
        (status, &body["output"]),
        (200, &json!({ "slept": 10 })),
        "{body}"
    );
    let (status, body) = call(&a.base, "b/calculate", &json!({ "expression": "1 +" }));
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "INVALID_INPUT");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("b: calculate: invalid input: "),
        "{body}"
    );
    // B's deadline, reported by B.
    let (_, body) = call(&a.base, "b/slow", &json!({ "ms": 10_000 }));
    assert_eq!(body["code"], "SKILL_TIMEOUT", "{body}");

    // B dies in the middle of a call: A answers with the lost connection (not a
    // deadline of its own: that would say "did not answer within").
    let base = a.base.clone();
    let slow = std::thread::spawn(move || call(&base, "b/slow", &json!({ "ms": 2_500 })));
    std::thread::sleep(Duration::from_millis(700));
    b.child.kill().unwrap();
    b.child.wait().unwrap();
    let (status, body) = slow.join().unwrap();
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["code"], "REMOTE_UNAVAILABLE", "{body}");
    assert_eq!(
        body["error"],
        format!(
            "b: the connection to {} was lost during the call; it may or may not have finished there",
            b.base
        )
    );

    // A command on A does not wait for B: B's skills are listed from the list kept when
    // B was added, and a call says B cannot be reached.
    let out = evo(a_home.path(), &["skill", "list"]);
    assert!(stdout(&out).contains("b/slow"), "{}", stdout(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let out = evo(
        a_home.path(),
        &["skill", "run", "b/slow", "--input", r#"{"ms":1}"#],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[REMOTE_UNAVAILABLE]: b: cannot reach "),
        "{}",
        stderr(&out)
    );

    // While B is down, calls fail the same way; when it is back, A reconnects.
    let (_, body) = call(&a.base, "b/slow", &json!({ "ms": 10 }));
    assert_eq!(body["code"], "REMOTE_UNAVAILABLE", "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("is `evo serve --http` running there?"),
        "{body}"
    );
    let _b = start_b(b_home.path(), &b_skills, &addr);
    let (status, body) = call(&a.base, "b/slow", &json!({ "ms": 10 }));
    assert_eq!(
        (status, &body["output"]),
        (200, &json!({ "slept": 10 })),
        "{body}"
    );
}

#[test]
fn a_wrong_token_or_url_is_said_when_the_remote_is_added() {
    let (b_home, b_skills) = node_b();
    let b = start_b(b_home.path(), &b_skills, "127.0.0.1:0");
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["remote", "add", "b", &b.base]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "b: added, but it does not answer now: b: {base} asks for a token (401) and none is configured for this remote; add it again with one: `evo remote add b {base} --token-secret NAME`\n",
            base = b.base
        )
    );
    let out = evo(home.path(), &["remote", "add", "c", "https://example.com"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[INVALID_ARGUMENT]: \"https://example.com\": https is not supported for remotes yet"),
        "{}",
        stderr(&out)
    );
    // Its skills are not listed, and asking for one says why.
    let out = evo(
        home.path(),
        &["skill", "run", "b/calculate", "--input", "{}"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "error[REMOTE_UNAVAILABLE]: b: b/calculate is not listed: {} asks for a token (401)",
            b.base
        )),
        "{}",
        stderr(&out)
    );
    // A remote that does not answer leaves the host working, without its skills.
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            "calculate",
            "--input",
            r#"{"expression":"1+1"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(home.path(), &["remote", "rm", "b"]);
    assert_eq!(stdout(&out), "b: removed\n");
    let out = evo(home.path(), &["remote", "rm", "b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error[REMOTE_NOT_FOUND]: no remote named b"));
}
