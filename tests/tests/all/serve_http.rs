//! `evo serve --http`: the official Python SDK over streamable HTTP, the JSON API
//! under `/v1` with its codes, its token, `/v1/health`'s counts, and the call slots
//! under a runaway.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use evo_tests::cli::{HttpServer, command, stderr};
use evo_tests::evo_bin;
use serde_json::{Value, json};

use crate::nodes::mcp;
use crate::serve::{catalogue, check_report, run_client};

#[test]
fn the_python_sdk_uses_evo_over_http() {
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let (root, later) = catalogue();
        let home = root.path().join("home");
        let server = HttpServer::start(&home, &[]);
        let report = run_client(&[
            "http",
            &format!("{}/mcp", server.base),
            home.to_str().unwrap(),
            later.to_str().unwrap(),
            mode,
            evo_bin().to_str().unwrap(),
        ]);
        check_report(&report, protocol);
    }
}

/// A GET or POST with optional headers: (status, body as JSON or text).
/// The names `GET /v1/skills` lists.
pub(crate) fn skill_names(base: &str) -> Vec<String> {
    let (status, skills) = http("GET", &format!("{base}/v1/skills"), &[], None);
    assert_eq!(status, 200, "{skills}");
    skills
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = if method == "GET" {
        let mut request = agent.get(url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.call()
    } else {
        let mut request = agent.post(url).header("content-type", "application/json");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.send(body.unwrap_or(""))
    }
    .unwrap();
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[test]
fn the_http_api_calls_skills_and_answers_errors_with_codes() {
    let (root, _) = catalogue();
    let server = HttpServer::start(&root.path().join("home"), &[]);
    let base = &server.base;

    let (status, health) = http("GET", &format!("{base}/v1/health"), &[], None);
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));

    let names = skill_names(base);
    assert!(
        names.contains(&"calculate".to_owned()) && names.contains(&"guide".to_owned()),
        "{names:?}"
    );

    let (status, out) = http(
        "POST",
        &format!("{base}/v1/skills/calculate/call"),
        &[],
        Some(r#"{"expression":"sqrt(144) + 10"}"#),
    );
    assert_eq!((status, &out["output"]), (200, &json!({ "result": 22 })));

    let (status, err) = http(
        "POST",
        &format!("{base}/v1/skills/calculate/call"),
        &[],
        Some(r#"{"expression":7}"#),
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (422, Some("SKILL_VALIDATION_FAILED"))
    );
    assert_eq!(
        err["report"]["violations"][0]["path"], "expression",
        "{err}"
    );

    let (status, err) = http("GET", &format!("{base}/v1/skills/nope"), &[], None);
    assert_eq!(
        (status, err["code"].as_str()),
        (404, Some("SKILL_NOT_FOUND"))
    );

    let (status, err) = http(
        "POST",
        &format!("{base}/v1/skills/calculate/call"),
        &[],
        Some("{not json"),
    );
    assert_eq!((status, err["code"].as_str()), (400, Some("INVALID_INPUT")));

    let (status, hits) = http(
        "POST",
        &format!("{base}/v1/memory/search"),
        &[],
        Some(r#"{"query":"anything"}"#),
    );
    assert_eq!((status, hits), (200, json!([])));

    // The daily logs are searched, with the same filters as the CLI and the tools;
    // today's log is looked at on every search, so a line written by another process
    // is found at once.
    evo_host::memory::files::append_daily_log(
        &root.path().join("home"),
        "user: the narwhal migration slipped a week",
    )
    .unwrap();
    let (status, hits) = http(
        "POST",
        &format!("{base}/v1/memory/search"),
        &[],
        Some(r#"{"query":"narwhal migration","sources":["log"],"since":"2000-01-01"}"#),
    );
    assert_eq!(status, 200, "{hits}");
    assert_eq!(
        hits[0]["text"],
        "user: the narwhal migration slipped a week"
    );
    assert_eq!(hits[0]["source"], "log");
    let (status, err) = http(
        "POST",
        &format!("{base}/v1/memory/search"),
        &[],
        Some(r#"{"query":"narwhal","sources":["diary"]}"#),
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (400, Some("INVALID_INPUT")),
        "{err}"
    );

    // A memory entry nobody has: 404 with its own code, as the OpenAPI document says,
    // and the CLI says the same with a hint that leads to an id.
    for id in ["UNKNOWN", "mem-0000000000000000"] {
        let (status, err) = http("GET", &format!("{base}/v1/memory/entries/{id}"), &[], None);
        assert_eq!(
            (status, err["code"].as_str()),
            (404, Some("MEMORY_ENTRY_NOT_FOUND")),
            "{err}"
        );
    }
    let out = evo_tests::cli::evo(&root.path().join("home"), &["memory", "history", "mem-x"]);
    let said = stderr(&out);
    assert!(
        said.contains("error[MEMORY_ENTRY_NOT_FOUND]")
            && said.contains("evo memory search")
            && !said.contains("tool describe"),
        "{said}"
    );

    // No model configured: the agent endpoint says so with the CLI's code.
    let (status, err) = http(
        "POST",
        &format!("{base}/v1/agent/run"),
        &[],
        Some(r#"{"message":"hi"}"#),
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (503, Some("LLM_NOT_CONFIGURED"))
    );

    let (status, doc) = http("GET", &format!("{base}/v1/openapi.json"), &[], None);
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/health",
        "/v1/skills",
        "/v1/skills/{name}",
        "/v1/skills/{name}/call",
        "/v1/memory/search",
        "/v1/agent/run",
        "/v1/calls",
        "/v1/calls/live",
        "/v1/skills/{name}/update",
        "/v1/skills/{name}/grants",
        "/v1/skills/{name}/grants/revoke",
        "/v1/installed",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} documented");
    }
    assert!(
        doc["components"]["schemas"]["SkillSummary"]["properties"]
            .get("inputSchema")
            .is_some(),
        "schemas generated from the types: {:#}",
        doc["components"]["schemas"]
    );

    // A web page of another origin is refused (DNS rebinding protection).
    let (status, err) = http(
        "GET",
        &format!("{base}/v1/skills"),
        &[("origin", "http://evil.example")],
        None,
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (403, Some("ORIGIN_REFUSED"))
    );
    let (status, _) = http(
        "GET",
        &format!("{base}/v1/skills"),
        &[("origin", "http://localhost:3000")],
        None,
    );
    assert_eq!(status, 200);
    // A page on another port of this machine may read, not call a skill: a form post or
    // a `no-cors` fetch from it needs no preflight. The server's own pages may.
    let call = format!("{base}/v1/skills/calculate/call");
    let input = r#"{"expression":"1 + 1"}"#;
    let (status, err) = http(
        "POST",
        &call,
        &[("origin", "http://localhost:3000")],
        Some(input),
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (403, Some("ORIGIN_REFUSED")),
        "{err}"
    );
    let (status, body) = http("POST", &call, &[("origin", base.as_str())], Some(input));
    assert_eq!(status, 200, "the server's own page: {body}");
}

/// Tokens of 32 hex digits, as `openssl rand -hex 16` makes them.
const TOKEN: &str = "5f0c2a9e81d34b7c9a6e0f1d2c3b4a59";
const TOKEN_ADMIN: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

#[test]
fn a_non_loopback_bind_needs_a_token_and_every_request_must_carry_it() {
    let home = tempfile::tempdir().unwrap();
    let out = command(home.path(), &["serve", "--http", "0.0.0.0:0"])
        .env_remove("EVO_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error[TOKEN_REQUIRED]: refusing to serve on 0.0.0.0:0 without a token"),
        "{err}"
    );

    // "Require a token of at least 128 bits": a word is refused, for either token.
    for flags in [
        ["--token", "s3cret", "--admin-token", TOKEN_ADMIN],
        ["--token", TOKEN, "--admin-token", "admin-password1"],
    ] {
        let mut args = vec!["serve", "--http", "0.0.0.0:0"];
        args.extend(flags);
        let out = command(home.path(), &args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.starts_with("error[TOKEN_WEAK]: the "), "{err}");
        assert!(
            err.contains("at least 128 are needed so that it cannot be guessed")
                && err.contains("openssl rand -hex 16"),
            "{err}"
        );
    }

    // Bound to every address, reached here on loopback.
    let mut child = command(
        home.path(),
        &["serve", "--http", "0.0.0.0:0", "--token", TOKEN],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let bound = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.split("MCP at http://").nth(1) {
            break rest.split("/mcp").next().unwrap().to_owned();
        }
    };
    assert!(bound.starts_with("0.0.0.0:"), "{bound}");
    let base = format!("http://127.0.0.1:{}", bound.rsplit(':').next().unwrap());
    let (status, err) = http("GET", &format!("{base}/v1/skills"), &[], None);
    assert_eq!((status, err["code"].as_str()), (401, Some("UNAUTHORIZED")));
    let (status, _) = http(
        "GET",
        &format!("{base}/v1/skills"),
        &[("authorization", "Bearer wrong")],
        None,
    );
    assert_eq!(status, 401);
    let (status, _) = http(
        "GET",
        &format!("{base}/v1/skills"),
        &[("authorization", &format!("Bearer {TOKEN}"))],
        None,
    );
    assert_eq!(status, 200);
    let (status, _) = http(
        "POST",
        &format!("{base}/mcp"),
        &[("accept", "application/json, text/event-stream")],
        Some(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
    );
    assert_eq!(status, 401, "MCP is behind the token too");
    let (status, _) = http("GET", &format!("{base}/metrics"), &[], None);
    assert_eq!(status, 401, "and so are the metrics");
    let (status, _) = http(
        "GET",
        &format!("{base}/metrics"),
        &[("authorization", &format!("Bearer {TOKEN}"))],
        None,
    );
    assert_eq!(status, 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn health_counts_the_calls_running_and_their_wasm_instances() {
    // An operator's (and the load harness's) check for leaks: while a call runs it is
    // counted with its instance; once it has ended, both are zero again.
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let skills_dir = evo_tests::runaway_skills(&root.path().join("skills"), 2000);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("evo.toml"),
        format!("skill_dirs = [{:?}]\n", skills_dir.display().to_string()),
    )
    .unwrap();
    let server = HttpServer::start(&home, &[]);
    let health_when = |done: &dyn Fn(&Value) -> bool| health_when(&server.base, done);
    let idle = health_when(&|_| true);
    assert_eq!((&idle["calls"], &idle["instances"]), (&json!(0), &json!(0)));

    let spinning = std::thread::spawn({
        let url = format!("{}/v1/skills/spin/call", server.base);
        move || http("POST", &url, &[], Some("{}"))
    });
    // The call is counted as it is accepted and its instance a moment later, once it
    // is made: wait for both (a leak would show as one that never comes).
    let busy = health_when(&|h| h["calls"] == 1 && h["instances"] == 1);
    assert_eq!((&busy["calls"], &busy["instances"]), (&json!(1), &json!(1)));
    let (_, error) = spinning.join().unwrap();
    assert_eq!(error["code"], "SKILL_TIMEOUT", "{error}");
    // A call stopped by its wall-clock guard is dropped by its own thread, a moment
    // after the answer.
    let after = health_when(&|h| h["instances"] == 0);
    assert_eq!(
        (&after["calls"], &after["instances"]),
        (&json!(0), &json!(0))
    );
}

#[test]
fn a_runaway_holding_the_only_slot_does_not_hold_up_a_good_call() {
    // Through `evo serve --http`, with one Wasm slot: a runaway takes it, a good call
    // comes and waits for it, and the runaway, now beside another call, moves to the
    // low-priority threads and its slot to the long lane. The good call is answered
    // while the runaway still runs, and nothing is left alive after.
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let skills_dir = evo_tests::runaway_skills(&root.path().join("skills"), 3000);
    std::fs::create_dir_all(skills_dir.join("fixture-probe")).unwrap();
    std::fs::copy(
        evo_tests::skills::FIXTURE_PROBE,
        skills_dir.join("fixture-probe/skill.wasm"),
    )
    .unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("evo.toml"),
        format!(
            "skill_dirs = [{:?}]\n\n[engine]\npool_slots = 1\n",
            skills_dir.display().to_string()
        ),
    )
    .unwrap();
    let server = HttpServer::start(&home, &[]);
    let spinning = std::thread::spawn({
        let url = format!("{}/v1/skills/spin/call", server.base);
        move || http("POST", &url, &[], Some("{}"))
    });
    health_when(&server.base, &|h| h["instances"] == 1);
    let (_, answer) = http(
        "POST",
        &format!("{}/v1/skills/fixture-probe/call", server.base),
        &[],
        Some(r#"{"stdout_bytes":64}"#),
    );
    assert_eq!(answer["output"]["written"], 64, "{answer}");
    assert!(
        !spinning.is_finished(),
        "the good call was answered only after the runaway ended"
    );
    let (_, error) = spinning.join().unwrap();
    assert_eq!(error["code"], "SKILL_TIMEOUT", "{error}");
    let after = health_when(&server.base, &|h| h["instances"] == 0);
    assert_eq!(
        (&after["calls"], &after["instances"]),
        (&json!(0), &json!(0))
    );
}

/// `GET /v1/health` of the server at `base` once `done` holds of it, or after 20 s.
fn health_when(base: &str, done: &dyn Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = http("GET", &format!("{base}/v1/health"), &[], None).1;
        if done(&now) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_mcp_request_of_the_wrong_shape_is_told_which_field_and_what_it_must_be() {
    // "tools/call with "arguments":"str" answers -32601 "tools/call"; it is invalid
    // params (-32602) with what was expected."
    let home = tempfile::tempdir().unwrap();
    let server = HttpServer::start(home.path(), &[]);
    let base = &server.base;
    let (session, _) = mcp(
        base,
        None,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "shape-test", "version": "1" } } }),
    );
    let session = session.expect("a session starts");
    mcp(
        base,
        Some(&session),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    );
    let ask = |id: u64, method: &str, params: Value| {
        mcp(
            base,
            Some(&session),
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        )
        .1
    };
    let answer = ask(
        2,
        "tools/call",
        json!({ "name": "calculate", "arguments": "str" }),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "the params of tools/call are wrong: \"arguments\" is a string: it must be an object, the tool's inputs, as its inputSchema says"
    );
    let answer = ask(
        3,
        "tools/call",
        json!({ "arguments": { "expression": "1" } }),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"name\" is missing"),
        "{answer}"
    );
    let answer = ask(4, "tools/run", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("there is no method \"tools/run\"; this server answers initialize"),
        "{answer}"
    );
    // The session goes on.
    let answer = ask(
        5,
        "tools/call",
        json!({ "name": "calculate", "arguments": { "expression": "6 * 7" } }),
    );
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 42,
        "{answer}"
    );
}
