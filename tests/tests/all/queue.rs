//! `evo serve` under more calls than slots: a call's wait for a slot counts against its
//! own deadline, and past `serve.max_queue` waiting calls the server says it is busy.

use std::time::{Duration, Instant};

use evo_tests::cli::HttpServer;
use evo_tests::native_skill;
use serde_json::json;

/// Answers after `ms` milliseconds.
fn sleeper(ms: u64) -> String {
    format!(
        "let data = ''; process.stdin.on('data', c => data += c); process.stdin.on('end', () => setTimeout(() => console.log('{{\"ok\":true}}'), {ms}));"
    )
}

#[test]
fn a_waiting_call_times_out_at_its_own_deadline_and_a_full_queue_is_refused_as_busy() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    let open = |timeout: u64| json!({ "timeout": timeout, "input": { "type": "object" }, "output": { "type": "object" } });
    native_skill(
        &skills,
        "hold",
        "Holds its slot for 6 s.",
        open(20_000),
        &sleeper(6_000),
    );
    native_skill(
        &skills,
        "quick",
        "Answers at once, within 500 ms.",
        open(500),
        &sleeper(0),
    );
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("evo.toml"),
        format!(
            "skill_dirs = [{:?}]\n\n[serve]\nmax_calls = 1\nmax_queue = 1\n",
            skills.display().to_string()
        ),
    )
    .unwrap();
    let server = HttpServer::start(&home, &[]);
    let base = server.base.clone();
    let call = move |skill: &str| {
        let url = format!("{base}/v1/skills/{skill}/call");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let started = Instant::now();
        let response = agent
            .post(&url)
            .header("content-type", "application/json")
            .send("{}")
            .unwrap();
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body: serde_json::Value =
            serde_json::from_str(&response.into_body().read_to_string().unwrap()).unwrap();
        (status, body, retry_after, started.elapsed())
    };

    // `hold` takes the only slot...
    let holder = {
        let call = call.clone();
        std::thread::spawn(move || call("hold"))
    };
    std::thread::sleep(Duration::from_millis(700));
    // ...`quick` waits for it, and its wait counts against its own 500 ms deadline (and
    // the 2 s every call is given to end): it ends long before `hold` lets go.
    let waiter = {
        let call = call.clone();
        std::thread::spawn(move || call("quick"))
    };
    std::thread::sleep(Duration::from_millis(300));
    // A third finds the queue full: refused at once, with when to come back.
    let (status, body, retry_after, took) = call("quick");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "SERVER_BUSY", "{body}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert!(took < Duration::from_secs(1), "{took:?}");

    let (status, body, _, took) = waiter.join().unwrap();
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["code"], "SKILL_TIMEOUT", "{body}");
    assert!(took < Duration::from_millis(4_500), "waited {took:?}");

    let (status, body, _, _) = holder.join().unwrap();
    assert_eq!(status, 200, "{body}");
    // With the slot free again, the same call answers.
    let (status, body, _, _) = call("quick");
    assert_eq!(status, 200, "{body}");
}
