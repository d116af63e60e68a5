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

/// `evo serve --http` over `skills`, with one slot per lane and one call waiting in
/// each (`max_calls = 1`, `max_queue = 1`).
fn one_slot_one_waiting(root: &std::path::Path, skills: &std::path::Path) -> HttpServer {
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("evo.toml"),
        format!(
            "skill_dirs = [{:?}]\n\n[serve]\nmax_calls = 1\nmax_queue = 1\n",
            skills.display().to_string()
        ),
    )
    .unwrap();
    HttpServer::start(&home, &[])
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
    let server = one_slot_one_waiting(root.path(), &skills);
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

/// Answers after the `ms` milliseconds its input asks for.
const SLEEP_AS_ASKED: &str = "let data = ''; process.stdin.on('data', c => data += c); process.stdin.on('end', () => setTimeout(() => console.log('{\"ok\":true}'), JSON.parse(data).ms));";

#[test]
fn a_backlog_of_long_calls_is_refused_on_its_own_and_never_refuses_a_quick_call() {
    // Each lane has its own queue: a skill whose calls keep running long waits in the
    // long lane, so its backlog fills that lane's queue only.
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    let schema = |timeout: u64| json!({ "timeout": timeout, "input": { "type": "object" }, "output": { "type": "object" } });
    for (name, timeout) in [("slow", 20_000), ("hold", 20_000), ("quick", 8_000)] {
        native_skill(
            &skills,
            name,
            "Answers when asked.",
            schema(timeout),
            SLEEP_AS_ASKED,
        );
    }
    let server = one_slot_one_waiting(root.path(), &skills);
    let base = server.base.clone();
    let call = move |skill: &str, ms: u64| {
        let (status, body) = crate::serve_http::http(
            "POST",
            &format!("{base}/v1/skills/{skill}/call"),
            &[],
            Some(&json!({ "ms": ms }).to_string()),
        );
        (status, body["code"].as_str().unwrap_or_default().to_owned())
    };
    let spawn = |skill: &'static str, ms: u64| {
        let call = call.clone();
        std::thread::spawn(move || call(skill, ms))
    };
    // Two calls of `slow` that run long: its next ones take the long lane.
    for _ in 0..2 {
        assert_eq!(call("slow", 300).0, 200);
    }
    // The long lane's one slot, then its queue of one; a third is refused.
    let running_long = spawn("slow", 4_000);
    std::thread::sleep(Duration::from_millis(400));
    let waiting_long = spawn("slow", 10);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(call("slow", 10), (503, "SERVER_BUSY".to_owned()));
    // The quick lane's slot is taken too; a quick call waits for it (the lane's queue
    // has room) and answers once it is free, never refused for `slow`'s backlog.
    let holding = spawn("hold", 1_500);
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    assert_eq!(call("quick", 0), (200, String::new()));
    assert!(
        started.elapsed() > Duration::from_millis(500),
        "it waited for `hold`"
    );
    assert_eq!(holding.join().unwrap().0, 200);
    assert_eq!(running_long.join().unwrap().0, 200);
    assert_eq!(waiting_long.join().unwrap().0, 200);
}
