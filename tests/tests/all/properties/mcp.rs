//! MCP JSON-RPC frames, sent to a real `evo serve` session.

use super::*;

/// One line a client could send: JSON-RPC with any method, id and params, or anything.
fn frame() -> impl Strategy<Value = String> {
    let method = prop::sample::select(
        &[
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "resources/subscribe",
            "prompts/list",
            "prompts/get",
            "logging/setLevel",
            "completion/complete",
            "notifications/cancelled",
            "notifications/initialized",
            "x/unknown",
            "",
        ][..],
    );
    let id = prop_oneof![
        Just(Value::Null),
        (1_000_i64..2_000).prop_map(|n| json!(n)),
        Just(json!("s")),
        Just(json!({ "an": "object" })),
        Just(json!(1e300)),
        Just(json!(u64::MAX)),
    ];
    let message = (method, prop::option::of(id), json_value(), any::<bool>()).prop_map(
        |(method, id, params, version)| {
            let mut message = json!({ "method": method, "params": params });
            if version {
                message["jsonrpc"] = json!("2.0");
            }
            if let Some(id) = id {
                message["id"] = id;
            }
            message.to_string()
        },
    );
    prop_oneof![
        4 => message,
        1 => any::<String>(),
        1 => json_value().prop_map(|v| v.to_string()),
    ]
    // One frame per line: a newline inside would make two.
    .prop_map(|line| line.replace(['\n', '\r'], " "))
}

#[test]
fn a_serve_session_survives_any_frames_and_keeps_answering() {
    use proptest::strategy::ValueTree as _;
    let root = tempfile::tempdir().unwrap();
    let (home, cwd) = (root.path().join("home"), root.path().join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut raw = crate::serve::Raw::start_in(&home, &cwd, &[]);
    let mut runner = proptest::test_runner::TestRunner::new(seeded(1));
    let frames = prop::collection::vec(frame(), 50);
    for round in 0..8_u64 {
        let sent = frames.new_tree(&mut runner).unwrap().current();
        for line in &sent {
            raw.send_line(line);
        }
        // After any fifty frames the session still answers, and answers right.
        let id = 100 + round;
        raw.call(
            id,
            "calculate",
            json!({ "expression": format!("{round} + 1") }),
        );
        let answer = raw.expect_id(id);
        assert_eq!(
            answer["result"]["structuredContent"]["result"],
            round + 1,
            "after {sent:#?}: {answer}"
        );
    }
}

#[test]
fn a_serve_session_survives_the_fuzz_seeds() {
    let root = tempfile::tempdir().unwrap();
    let (home, cwd) = (root.path().join("home"), root.path().join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut raw = crate::serve::Raw::start_in(&home, &cwd, &[]);
    for (id, (path, bytes)) in (200_u64..).zip(corpus("mcp_frames")) {
        let text = String::from_utf8_lossy(&bytes);
        // Each line is sent whole, so a corpus file's unterminated last line ends here
        // too.
        for line in text.lines() {
            raw.send_line(line);
        }
        raw.call(id, "calculate", json!({ "expression": "2 * 3" }));
        let answer = raw.expect_id(id);
        assert_eq!(
            answer["result"]["structuredContent"]["result"],
            6,
            "after {}: {answer}",
            path.display()
        );
    }
}
