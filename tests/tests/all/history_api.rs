//! `GET /v1/calls`: the call history over HTTP, filtered by skill, caller, status, time
//! and count, each call with its error's code and message apart.

use evo_tests::cli::{HttpServer, home_with_components};
use evo_tests::skills;
use serde_json::Value;

use crate::metrics::post;

fn get(url: &str) -> (u16, Value) {
    let response = ureq::get(url)
        .config()
        .http_status_as_error(false)
        .build()
        .call()
        .unwrap();
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[test]
fn the_history_is_listed_newest_first_and_filtered_by_skill_caller_status_and_count() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(
        root.path(),
        &[("calculate", skills::CALCULATE), ("fetch", skills::FETCH)],
    );
    let server = HttpServer::start(&home, &[]);
    let base = &server.base;
    let calculate = format!("{base}/v1/skills/calculate/call");
    assert_eq!(post(&calculate, r#"{"expression":"1 + 1"}"#), 200);
    assert_eq!(post(&calculate, r#"{"expression":"2 + 2"}"#), 200);
    assert_eq!(post(&calculate, r#"{"expression":7}"#), 422);
    assert_ne!(
        post(
            &format!("{base}/v1/skills/fetch/call"),
            r#"{"url":"http://127.0.0.1:9/x"}"#
        ),
        200
    );

    let (status, all) = get(&format!("{base}/v1/calls"));
    assert_eq!(status, 200, "{all}");
    let all = all.as_array().unwrap();
    // Newest first by when each call started, whichever was written first (a refusal
    // inside `fetch` is written before the call that made it ends).
    let started: Vec<i64> = all.iter().map(|c| c["at_ms"].as_i64().unwrap()).collect();
    assert!(
        started.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {started:?}"
    );
    // `evo serve`'s own calls are the client's; a refusal inside a skill is that
    // skill's.
    assert!(
        all.iter()
            .all(|c| c["caller"] == if c["skill"] == "http" { "fetch" } else { "mcp" }),
        "{all:?}"
    );

    let (_, ok) = get(&format!("{base}/v1/calls?skill=calculate&status=success"));
    let ok = ok.as_array().unwrap();
    assert_eq!(ok.len(), 2, "{ok:?}");
    assert!(
        ok.iter()
            .all(|c| c["skill"] == "calculate" && c["status"] == "success")
    );
    assert!(
        ok[0]["arguments"].as_str().unwrap().contains("2 + 2"),
        "{ok:?}"
    );

    let (_, failed) = get(&format!("{base}/v1/calls?skill=calculate&status=error"));
    assert_eq!(failed[0]["code"], "SKILL_VALIDATION_FAILED", "{failed}");
    assert!(
        !failed[0]["error"].as_str().unwrap().starts_with('['),
        "the code is apart from the message: {failed}"
    );
    // With what to do about it, as the CLI says it, and the node that made the call.
    assert!(
        failed[0]["hint"].as_str().is_some_and(|h| !h.is_empty()),
        "{failed}"
    );
    let port = base.rsplit(':').next().unwrap();
    assert!(
        failed[0]["node"]
            .as_str()
            .is_some_and(|n| n.ends_with(&format!(":{port}"))),
        "{failed}"
    );

    // The security log: what the sandbox refused, by what it refused.
    let (_, blocked) = get(&format!("{base}/v1/calls?status=blocked"));
    let refused = blocked
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["skill"] == "http")
        .unwrap_or_else(|| panic!("the outbound request's refusal: {blocked}"));
    assert_eq!(refused["code"], "PERMISSION_DENIED");
    assert!(
        refused["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--allow-host")),
        "a refusal says how to grant it, if the skill is trusted: {refused}"
    );
    assert!(
        refused["arguments"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1:9")
    );

    let (_, one) = get(&format!("{base}/v1/calls?limit=1"));
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(one[0]["id"], all[0]["id"]);
    let (_, by_fetch) = get(&format!("{base}/v1/calls?caller=fetch"));
    assert_eq!(by_fetch.as_array().unwrap().len(), 1, "{by_fetch}");
    assert_eq!(by_fetch[0]["skill"], "http");
    let (_, none) = get(&format!("{base}/v1/calls?caller=nobody"));
    assert_eq!(none, serde_json::json!([]));
    let (_, later) = get(&format!("{base}/v1/calls?since_ms=99999999999999"));
    assert_eq!(later, serde_json::json!([]));

    let (status, err) = get(&format!("{base}/v1/calls?status=fine"));
    assert_eq!((status, err["code"].as_str()), (400, Some("INVALID_INPUT")));
    assert_eq!(err["hint"], "use success, error or blocked");
}

#[test]
fn live_calls_stream_each_start_and_end_and_the_sandboxs_refusals() {
    use std::io::BufRead as _;
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(
        root.path(),
        &[("calculate", skills::CALCULATE), ("fetch", skills::FETCH)],
    );
    let server = HttpServer::start(&home, &[]);
    let base = server.base.clone();
    let response = ureq::get(&format!("{base}/v1/calls/live")).call().unwrap();
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    // Each event as (name, data), read on a thread of its own.
    let (events, received) = std::sync::mpsc::channel::<(String, Value)>();
    std::thread::spawn(move || {
        let mut name = String::new();
        for line in std::io::BufReader::new(response.into_body().into_reader()).lines() {
            let Ok(line) = line else { return };
            if let Some(event) = line.strip_prefix("event: ") {
                name = event.to_owned();
            } else if let Some(data) = line.strip_prefix("data: ") {
                let data = serde_json::from_str(data).unwrap();
                if events.send((std::mem::take(&mut name), data)).is_err() {
                    return;
                }
            }
        }
    });

    assert_eq!(
        post(
            &format!("{base}/v1/skills/calculate/call"),
            r#"{"expression":"6 * 7"}"#
        ),
        200
    );
    assert_ne!(
        post(
            &format!("{base}/v1/skills/fetch/call"),
            r#"{"url":"http://127.0.0.1:9/x"}"#
        ),
        200
    );
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let event = received
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e}: the events so far: {seen:#?}"));
        seen.push(event);
    }
    let (kind, started) = &seen[0];
    assert_eq!(kind, "started");
    assert_eq!(started["skill"], "calculate");
    assert_eq!(started["caller"], "mcp");
    let (kind, finished) = &seen[1];
    assert_eq!(kind, "finished");
    assert_eq!(
        (&finished["call"], &finished["skill"], &finished["status"]),
        (
            &started["call"],
            &serde_json::json!("calculate"),
            &serde_json::json!("success")
        )
    );
    assert!(finished["duration_ms"].as_f64().unwrap() > 0.0);
    // fetch starts, the sandbox refuses its request (no number: nothing started it),
    // and fetch ends with the refusal's code.
    assert_eq!(
        (seen[2].0.as_str(), &seen[2].1["skill"]),
        ("started", &serde_json::json!("fetch"))
    );
    let (kind, refusal) = &seen[3];
    assert_eq!(kind, "finished");
    assert_eq!(
        (&refusal["skill"], &refusal["status"], &refusal["caller"]),
        (
            &serde_json::json!("http"),
            &serde_json::json!("blocked"),
            &serde_json::json!("fetch")
        )
    );
    assert!(refusal.get("call").is_none(), "{refusal}");
    let (kind, fetch) = &seen[4];
    assert_eq!(kind, "finished");
    assert_eq!(fetch["call"], seen[2].1["call"]);
    assert_eq!(fetch["code"], "PERMISSION_DENIED");
    assert!(
        fetch["error"]
            .as_str()
            .unwrap()
            .contains("not granted that host"),
        "{fetch}"
    );
}
