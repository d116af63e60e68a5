//! `plain-hostile`: a plain WIT component (plain `wit-bindgen`, no Evo SDK) that tries
//! to take more than a call is given. Through `evo`, all at once, each attempt ends in
//! the error of the limit it hit, and nothing of it is left running.

use evo_tests::cli::{command, stderr, stdout};
use evo_tests::skills::PLAIN_HOSTILE;

/// Every process whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn a_hostile_plain_component_meets_every_limit_through_evo_under_load() {
    let home = tempfile::tempdir().unwrap();
    // The operator's cap on a call's time, so that the spinning call ends quickly.
    std::fs::write(
        home.path().join("evo.toml"),
        "[engine]\nmax_timeout_ms = 4000\n",
    )
    .unwrap();
    let attempts = [
        ("spin", "{}", "error[SKILL_TIMEOUT]"),
        ("hoard", r#"{"mib":200}"#, "error[MEMORY_LIMIT_EXCEEDED]"),
        // A result past the output cap…
        (
            "flood",
            r#"{"bytes":3000000}"#,
            "error[OUTPUT_LIMIT_EXCEEDED]",
        ),
        // …and one whose WIT values would take the host far more memory than its bytes
        // (a `list<u8>` lifts to 32 bytes a byte) stop before the host holds them.
        ("heap", r#"{"n":30000000}"#, "error[OUTPUT_LIMIT_EXCEEDED]"),
        // An error value is cut to what a message may be.
        ("complain", r#"{"bytes":100000}"#, "error[SKILL_FAILED]"),
    ];
    let children: Vec<_> = attempts
        .iter()
        .map(|(function, input, _)| {
            let skill = format!("{PLAIN_HOSTILE}#{function}");
            command(home.path(), &["skill", "run", &skill, "--input", input])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (child, (function, _, expected)) in children.into_iter().zip(attempts) {
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{function}: {}", stdout(&out));
        let error = stderr(&out);
        assert!(error.contains(expected), "{function}: {error}");
        if function == "complain" {
            assert!(error.len() < 20_000, "{function}: {} bytes", error.len());
        }
    }
    // Printing past the stdout cap stops the printing, not the call.
    let out = command(
        home.path(),
        &[
            "skill",
            "run",
            &format!("{PLAIN_HOSTILE}#shout"),
            "--input",
            r#"{"bytes":1000000}"#,
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: u64 = stdout(&out).trim().parse().unwrap();
    assert!(printed <= 64 << 10, "{printed} bytes printed");
    let home_text = home.path().to_string_lossy();
    assert_eq!(processes_mentioning(&home_text), Vec::<String>::new());
}

/// A directory of skills holding plain-kinds as `kinds` and plain-hostile as `hostile`.
fn served_components(root: &std::path::Path) -> std::path::PathBuf {
    let skills = root.join("skills");
    for (name, wasm) in [
        ("kinds", evo_tests::skills::PLAIN_KINDS),
        ("hostile", PLAIN_HOSTILE),
    ] {
        std::fs::create_dir_all(skills.join(name)).unwrap();
        std::fs::copy(wasm, skills.join(name).join("skill.wasm")).unwrap();
    }
    skills
}

#[test]
fn plain_components_are_mcp_tools_with_derived_schemas_and_their_limits() {
    use serde_json::{Value, json};
    let root = tempfile::tempdir().unwrap();
    let skills = served_components(root.path());
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("evo.toml"), "[engine]\nmax_timeout_ms = 4000\n").unwrap();
    let mut raw = crate::serve::Raw::start_in(
        &home,
        std::path::Path::new("."),
        &["--skills-dir", skills.to_str().unwrap()],
    );
    raw.send_line(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let list = raw.expect_id(1);
    let tools = list["result"]["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed: {list}"))
            .clone()
    };
    let divide = tool("kinds__kinds__divide");
    assert_eq!(divide["inputSchema"]["required"], json!(["a", "b"]));
    // MCP wants an object: a result that is not one is `{ "result": … }`.
    assert_eq!(divide["outputSchema"]["required"], json!(["result"]));
    assert!(
        divide["outputSchema"]["properties"]["result"]["anyOf"].is_array(),
        "{divide}"
    );
    let point = tool("kinds__kinds__echo-point");
    assert_eq!(point["outputSchema"]["type"], "object");
    assert!(tools.iter().all(|t| t["name"] != "kinds__counters__read"));

    raw.call(2, "kinds__kinds__divide", json!({ "a": 7, "b": 2 }));
    let answer = raw.expect_id(2);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({ "result": 3 }),
        "{answer}"
    );
    raw.call(
        3,
        "kinds__kinds__echo-point",
        json!({ "v": { "x": 1, "y": 2 } }),
    );
    let answer = raw.expect_id(3);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({ "x": 1, "y": 2, "label": null }),
        "{answer}"
    );
    // Hostile calls end in their limits while a good one is answered.
    raw.call(10, "hostile__spin", json!({}));
    raw.call(11, "hostile__hoard", json!({ "mib": 200 }));
    raw.call(12, "hostile__heap", json!({ "n": 30_000_000 }));
    raw.call(13, "kinds__greet", json!({ "name": "still here" }));
    let good = raw.expect_id(13);
    assert_eq!(
        good["result"]["structuredContent"],
        json!({ "result": "hello, still here" }),
        "{good}"
    );
    for (id, code) in [
        (10, "SKILL_TIMEOUT"),
        (11, "MEMORY_LIMIT_EXCEEDED"),
        (12, "OUTPUT_LIMIT_EXCEEDED"),
    ] {
        let answer: Value = raw.expect_id(id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(code), "{id}: {text}");
    }
}

#[test]
fn plain_components_answer_over_the_http_api() {
    use serde_json::json;
    let root = tempfile::tempdir().unwrap();
    let skills = served_components(root.path());
    let server = evo_tests::cli::HttpServer::start(
        &root.path().join("home"),
        &["--skills-dir", skills.to_str().unwrap()],
    );
    let (status, out) = crate::serve_http::http(
        "POST",
        &format!("{}/v1/skills/kinds__greet/call", server.base),
        &[],
        Some(r#"{"name":"http"}"#),
    );
    assert_eq!(
        (status, &out["output"]),
        (200, &json!("hello, http")),
        "{out}"
    );
    let (status, err) = crate::serve_http::http(
        "POST",
        &format!("{}/v1/skills/kinds__kinds__echo-u8/call", server.base),
        &[],
        Some(r#"{"v":256}"#),
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (422, Some("SKILL_VALIDATION_FAILED")),
        "{err}"
    );
    let (status, err) = crate::serve_http::http(
        "POST",
        &format!("{}/v1/skills/kinds__kinds__divide/call", server.base),
        &[],
        Some(r#"{"a":1,"b":0}"#),
    );
    assert_eq!(err["code"], "SKILL_FAILED", "{status} {err}");
    assert!(err.to_string().contains("cannot divide 1 by 0"), "{err}");
}

#[test]
fn the_manifest_beside_a_hostile_component_sets_its_fuel_and_memory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("hostile");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(PLAIN_HOSTILE, dir.join("skill.wasm")).unwrap();
    std::fs::write(
        dir.join("skill.json"),
        r#"{"name":"hostile","description":"Misbehaves.","limits":{"fuel":200000000,"memoryMib":16}}"#,
    )
    .unwrap();
    let home = root.path().join("home");
    let run = |function: &str, input: &str| {
        let skill = format!("{}#{function}", dir.display());
        command(&home, &["skill", "run", &skill, "--input", input])
            .output()
            .unwrap()
    };
    let out = run("spin", "{}");
    assert!(
        stderr(&out).contains("error[FUEL_EXHAUSTED]"),
        "{}",
        stderr(&out)
    );
    let out = run("hoard", r#"{"mib":20}"#);
    assert!(
        stderr(&out).contains(
            "error[MEMORY_LIMIT_EXCEEDED]: hostile__hoard: memory limit of 16 MiB exceeded"
        ),
        "{}",
        stderr(&out)
    );
    // Within its limits it answers.
    let out = run("hoard", r#"{"mib":2}"#);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "2");
}

/// A component of `instances` core instances of one tiny module, whose `answer` (the
/// last instance's) returns 7.
fn many_instances(instances: usize) -> Vec<u8> {
    let mut wat = String::from(
        "(component\n  (core module $m (func (export \"f\") (result i32) (i32.const 7)))\n",
    );
    for i in 0..instances {
        wat.push_str(&format!("  (core instance $i{i} (instantiate $m))\n"));
    }
    wat.push_str(&format!(
        "  (alias core export $i{} \"f\" (core func $f))\n  (func (export \"answer\") (result u32) (canon lift (core func $f)))\n)\n",
        instances - 1
    ));
    wat::parse_str(&wat).expect("the test's component parses")
}

#[test]
fn a_component_of_many_instances_runs_within_the_cap_and_past_it_is_told_the_setting() {
    // "componentize-py with --stub-wasi traps on every call with `instance count too
    // high at 33` (the pool allows 32) ... make a limit hit say which limit and the
    // setting that raises it."
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |file: &str| {
        command(&home, &["skill", "run", file, "--input", "{}"])
            .output()
            .unwrap()
    };
    let forty = root.path().join("forty.wasm");
    std::fs::write(&forty, many_instances(40)).unwrap();
    let out = run(forty.to_str().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "7");

    let many = root.path().join("many.wasm");
    std::fs::write(&many, many_instances(200)).unwrap();
    let out = run(many.to_str().unwrap());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let error = stderr(&out);
    assert!(
        error.contains("error[COMPONENT_LIMIT]")
            && error.contains(
                "the component creates more core instances than the 128 one component may have"
            )
            && error.contains("raise `max_instances` under [engine] in evo.toml"),
        "{error}"
    );
    // The operator raises it.
    std::fs::write(home.join("evo.toml"), "[engine]\nmax_instances = 256\n").unwrap();
    let out = run(many.to_str().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "7");
}

/// A server on loopback that counts the connections it accepts and those still open.
/// It answers each request's head with `ok`, or, when `answers` is false, never answers
/// and holds the connection until the client closes it.
struct Counting {
    base: String,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Counting {
    fn start(answers: bool) -> Self {
        use std::io::{BufRead as _, BufReader, Read as _};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let accepted = std::sync::Arc::new(AtomicUsize::new(0));
        let open = std::sync::Arc::new(AtomicUsize::new(0));
        let (count, held) = (accepted.clone(), open.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                held.fetch_add(1, Ordering::SeqCst);
                let held = held.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        line.clear();
                    }
                    if answers {
                        let _ = std::io::Write::write_all(
                            &mut stream,
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        );
                    } else {
                        // Held until the client lets go.
                        let mut rest = [0; 4096];
                        while reader.read(&mut rest).is_ok_and(|n| n > 0) {}
                    }
                    held.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            base,
            accepted,
            open,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until no connection is open; false if some still are after a minute.
    fn all_closed(&self) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self.open.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        true
    }
}

/// plain-hostile as `hostile`, asking for any port on 127.0.0.1.
fn networked_hostile(root: &std::path::Path) -> std::path::PathBuf {
    let dir = root.join("hostile");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(PLAIN_HOSTILE, dir.join("skill.wasm")).unwrap();
    std::fs::write(
        dir.join("skill.json"),
        r#"{"name":"hostile","description":"Misbehaves.","capabilities":{"hosts":["http://127.0.0.1:*"]}}"#,
    )
    .unwrap();
    dir
}

#[test]
fn a_component_that_fires_requests_without_waiting_gets_64_a_call_and_no_more() {
    // "a call makes at most 64 requests": requests handed over without waiting for any
    // are counted when they are handed over, not when they are waited for.
    let server = Counting::start(true);
    let root = tempfile::tempdir().unwrap();
    let dir = networked_hostile(root.path());
    let home = root.path().join("home");
    let input =
        serde_json::json!({ "url": format!("{}/x", server.base), "n": 100, "mode": "wait" });
    let out = command(
        &home,
        &[
            "skill",
            "run",
            &format!("{}#swarm", dir.display()),
            "--input",
            &input.to_string(),
            "--allow-host",
            "http://127.0.0.1:*",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let result = &value["output"];
    assert_eq!(
        (&result["handed"], &result["answered"], &result["refused"]),
        (&100.into(), &64.into(), &36.into()),
        "{value}"
    );
    assert_eq!(
        result["first-refusal"], "ErrorCode::HttpRequestDenied",
        "{value}"
    );
    assert_eq!(server.accepted(), 64);
    // The refusals are in the security log, with the rule.
    let out = command(&home, &["tool", "history", "--status", "blocked"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("already made 64 requests, the most one call may make"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn connections_a_component_forgets_close_when_its_call_ends_while_evo_serves_on() {
    // A guest that returns with requests pending, their futures and unfinished bodies
    // forgotten so that nothing drops them, holds no connection past its call.
    let server = Counting::start(false);
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    networked_hostile(&skills);
    std::fs::copy(evo_tests::skills::PLAIN_KINDS, {
        std::fs::create_dir_all(skills.join("kinds")).unwrap();
        skills.join("kinds").join("skill.wasm")
    })
    .unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut raw = crate::serve::Raw::start_in(
        &home,
        std::path::Path::new("."),
        &[
            "--skills-dir",
            skills.to_str().unwrap(),
            "--allow-host",
            "http://127.0.0.1:*",
        ],
    );
    let url = format!("{}/held", server.base);
    raw.call(
        1,
        "hostile__swarm",
        serde_json::json!({ "url": url, "n": 64, "mode": "forget" }),
    );
    raw.call(
        2,
        "hostile__swarm",
        serde_json::json!({ "url": url, "n": 64, "mode": "forget-with-body" }),
    );
    raw.call(
        3,
        "kinds__greet",
        serde_json::json!({ "name": "still here" }),
    );
    for id in [1, 2] {
        let answer = raw.expect_id(id);
        assert_eq!(
            answer["result"]["structuredContent"]["handed"], 64,
            "{answer}"
        );
    }
    let good = raw.expect_id(3);
    assert_eq!(
        good["result"]["structuredContent"],
        serde_json::json!({ "result": "hello, still here" }),
        "{good}"
    );
    assert!(server.accepted() > 0, "the requests were started");
    assert!(
        server.accepted() <= 128,
        "{} connections",
        server.accepted()
    );
    assert!(
        server.all_closed(),
        "{} connections still open after their calls ended",
        server.open.load(std::sync::atomic::Ordering::SeqCst)
    );
}
