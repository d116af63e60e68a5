//! `service` skills through `evo`: a `skill.json` naming an HTTP endpoint on a loopback
//! server the test starts — a direct answer, a `202` polled to completion, a stream of
//! progress lines, a busy server retried, bad input, and a host not granted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use evo_tests::cli::{evo, stderr, stdout};
use serde_json::{Value, json};

use crate::fetch::{Server, ok};

fn json_answer(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A service on loopback: `/sum` adds, `/job` answers 202 and is done on the third
/// poll, `/quiet-job` too but names its status URL only the first time, `/stream` sends
/// two progress lines then the result, `/busy` fails once with 503.
fn service() -> Server {
    let polls = Arc::new(AtomicUsize::new(0));
    let quiet_polls = Arc::new(AtomicUsize::new(0));
    let busy = Arc::new(AtomicUsize::new(0));
    Server::start_with(move |path, request| {
        let body = request.split("\r\n\r\n").nth(1).unwrap_or("");
        let input: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let sum = || input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
        match path {
            "/sum" if input["a"].is_i64() => {
                json_answer("200 OK", "", &json!({ "sum": sum() }).to_string())
            }
            "/sum" => json_answer(
                "400 Bad Request",
                "",
                r#"{"error":"a and b must be integers"}"#,
            ),
            "/job" => json_answer("202 Accepted", "location: /job/status\r\n", "{}"),
            "/job/status" if polls.fetch_add(1, Ordering::SeqCst) < 2 => {
                json_answer("202 Accepted", "location: /job/status\r\n", "{}")
            }
            "/job/status" => json_answer("200 OK", "", r#"{"sum":42}"#),
            "/quiet-job" => json_answer("202 Accepted", "location: /quiet-job/status\r\n", "{}"),
            // Still working: 202 again, without a Location this time.
            "/quiet-job/status" if quiet_polls.fetch_add(1, Ordering::SeqCst) < 2 => {
                json_answer("202 Accepted", "", r#"{"state":"running"}"#)
            }
            "/quiet-job/status" => json_answer("200 OK", "", r#"{"sum":43}"#),
            "/stream" => {
                let lines = "{\"progress\":0.5}\n{\"progress\":1.0}\n{\"sum\":7}\n";
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{lines}",
                    lines.len()
                )
            }
            "/busy" if busy.fetch_add(1, Ordering::SeqCst) == 0 => {
                json_answer("503 Service Unavailable", "", r#"{"error":"busy"}"#)
            }
            "/busy" => json_answer("200 OK", "", r#"{"sum":1}"#),
            _ => ok("?"),
        }
    })
}

fn skill(root: &std::path::Path, name: &str, url: &str, retry: u32) -> String {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("skill.json"),
        json!({
            "name": name,
            "description": "Adds two numbers on a server.",
            "mode": "service",
            "service": { "url": url, "pollMs": 50 },
            "input": { "type": "object", "properties": { "a": {}, "b": {} } },
            "output": { "type": "object", "properties": { "sum": { "type": "integer" } }, "required": ["sum"] },
            "timeout": 5000,
            "retry": retry
        })
        .to_string(),
    )
    .unwrap();
    dir.to_str().unwrap().to_owned()
}

#[test]
fn a_service_skill_answers_directly_after_polls_and_as_a_stream() {
    let home = tempfile::tempdir().unwrap();
    let server = service();
    let base = format!("http://127.0.0.1:{}", server.port);
    let run = |dir: &str, input: Value| {
        evo(
            home.path(),
            &[
                "skill",
                "run",
                dir,
                "--allow-host",
                &base,
                "--input",
                &input.to_string(),
            ],
        )
    };

    let sum = skill(home.path(), "sum", &format!("{base}/sum"), 0);
    let out = run(&sum, json!({ "a": 2, "b": 3 }));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "sum": 5 })
    );

    // The server's 400 is the caller's bad input.
    let out = run(&sum, json!({ "a": "two" }));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "error[INVALID_INPUT]: sum: invalid input: the service at {base}/sum answered 400 Bad Request: {{\"error\":\"a and b must be integers\"}}"
        )),
        "{}",
        stderr(&out)
    );

    let job = skill(home.path(), "job", &format!("{base}/job"), 0);
    let out = run(&job, json!({}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "sum": 42 })
    );

    // A status URL that answers 202 without a Location is polled again, not read as
    // the answer (it used to fail with "a body that is not JSON" or a schema error).
    let quiet = skill(home.path(), "quiet", &format!("{base}/quiet-job"), 0);
    let out = run(&quiet, json!({}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "sum": 43 })
    );

    let stream = skill(home.path(), "stream", &format!("{base}/stream"), 0);
    let out = run(&stream, json!({}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "sum": 7 })
    );
    assert!(
        stderr(&out).contains(
            "event from stream: {\"progress\":0.5}\nevent from stream: {\"progress\":1.0}\n"
        ),
        "{}",
        stderr(&out)
    );

    // Busy once, retried by the kernel.
    let busy = skill(home.path(), "busy", &format!("{base}/busy"), 1);
    let out = run(&busy, json!({}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "sum": 1 })
    );
}

#[test]
fn a_service_on_a_host_not_granted_is_refused_before_connecting() {
    let home = tempfile::tempdir().unwrap();
    let server = service();
    let url = format!("http://127.0.0.1:{}/sum", server.port);
    let dir = skill(home.path(), "sum", &url, 0);
    let out = evo(
        home.path(),
        &["skill", "run", &dir, "--input", r#"{"a":1,"b":2}"#],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!(
            "error[PERMISSION_DENIED]: sum: denied: the host refused the request: http://127.0.0.1:{}: sum was granted no outbound hosts",
            server.port
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.connections(), 0);
    let out = evo(home.path(), &["skill", "info", &dir]);
    assert!(
        stdout(&out).contains("kind:       service"),
        "{}",
        stdout(&out)
    );

    // A manifest without its endpoint says so.
    let broken = home.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("skill.json"),
        r#"{"name":"broken","description":"x","mode":"service"}"#,
    )
    .unwrap();
    let out = evo(home.path(), &["skill", "run", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("service: a service skill needs its endpoint"),
        "{}",
        stderr(&out)
    );
}
