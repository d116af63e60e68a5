//! `evo serve --http`'s `/metrics`: what Prometheus scrapes, counted from the calls
//! the server made, labelled by skill, status and code, never by input; and a real
//! Prometheus scraping it.

use evo_tests::cli::{HttpServer, home_with_components};
use evo_tests::skills;

/// `GET url`: the content type and the text.
fn scrape(url: &str) -> (String, String) {
    let response = ureq::get(url).call().unwrap();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (kind, response.into_body().read_to_string().unwrap())
}

/// The value of the sample named exactly `series` (name and labels), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// `POST body` to `url`: the status.
pub(crate) fn post(url: &str, body: &str) -> u16 {
    ureq::post(url)
        .header("content-type", "application/json")
        .config()
        .http_status_as_error(false)
        .build()
        .send(body)
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn metrics_count_calls_by_skill_status_and_code_and_the_sandboxs_refusals() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(
        root.path(),
        &[("calculate", skills::CALCULATE), ("fetch", skills::FETCH)],
    );
    let server = HttpServer::start(&home, &[]);
    let base = &server.base;
    let calculate = format!("{base}/v1/skills/calculate/call");
    assert_eq!(post(&calculate, r#"{"expression":"1 + 1"}"#), 200);
    assert_eq!(post(&calculate, r#"{"expression":"2 * 3"}"#), 200);
    assert_eq!(post(&calculate, r#"{"expression":7}"#), 422);
    // Not granted any host: the request is refused before a connection is made.
    let refused = post(
        &format!("{base}/v1/skills/fetch/call"),
        r#"{"url":"http://127.0.0.1:9/private-path"}"#,
    );
    assert_ne!(refused, 200);
    // A name that is not there is not a label of its own.
    post(&format!("{base}/v1/skills/no-such-skill/call"), "{}");

    let (kind, text) = scrape(&format!("{base}/metrics"));
    assert_eq!(
        kind,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    for (series, value) in [
        (
            r#"evo_calls_total{skill="calculate",status="success",code=""}"#,
            2.0,
        ),
        (
            r#"evo_calls_total{skill="calculate",status="error",code="SKILL_VALIDATION_FAILED"}"#,
            1.0,
        ),
        (r#"evo_refusals_total{kind="http"}"#, 1.0),
        (r#"evo_call_duration_seconds_count{skill="calculate"}"#, 3.0),
        (
            r#"evo_call_duration_seconds_bucket{le="+Inf",skill="calculate"}"#,
            3.0,
        ),
        ("evo_calls_running", 0.0),
        ("evo_calls_queued", 0.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series} in:\n{text}");
    }
    assert!(
        sample(&text, "evo_skills").is_some_and(|n| n >= 2.0),
        "{text}"
    );
    assert!(
        sample(&text, "evo_call_slots").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
    for input in ["private-path", "no-such-skill", "2 * 3"] {
        assert!(
            !text.contains(input),
            "an input became a label: {input}\n{text}"
        );
    }
}

/// A Prometheus server, stopped when dropped.
struct Prometheus(std::process::Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_the_calls_a_load_made() {
    let binary = std::env::var("EVO_TEST_PROMETHEUS").unwrap_or_else(|_| "prometheus".into());
    let version = std::process::Command::new(&binary)
        .arg("--version")
        .output();
    assert!(
        version.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs Prometheus ({binary}): ./scripts/test installs Debian's `prometheus` (scripts/prometheus.sh); {version:?}"
    );
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(root.path(), &[("calculate", skills::CALCULATE)]);
    let server = HttpServer::start(&home, &[]);
    let target = server.base.trim_start_matches("http://").to_owned();
    let config = root.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: evo\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = evo_tests::free_port();
    let _prometheus = Prometheus(
        std::process::Command::new(&binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                root.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );

    // The load: seven calls that succeed and two the schema refuses.
    let calculate = format!("{}/v1/skills/calculate/call", server.base);
    for i in 0..7 {
        assert_eq!(
            post(&calculate, &format!(r#"{{"expression":"{i} + 1"}}"#)),
            200
        );
    }
    for _ in 0..2 {
        assert_eq!(post(&calculate, r#"{"expression":true}"#), 422);
    }

    let query = |promql: &str| -> Option<f64> {
        let url = format!("http://127.0.0.1:{port}/api/v1/query");
        let response = ureq::get(&url).query("query", promql).call().ok()?;
        let body: serde_json::Value =
            serde_json::from_str(&response.into_body().read_to_string().ok()?).ok()?;
        body["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (mut ok, mut refused) = (None, None);
    while std::time::Instant::now() < deadline {
        ok = query(r#"sum(evo_calls_total{skill="calculate",status="success"})"#);
        refused =
            query(r#"sum(evo_calls_total{skill="calculate",code="SKILL_VALIDATION_FAILED"})"#);
        if ok == Some(7.0) && refused == Some(2.0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert_eq!(
        (ok, refused),
        (Some(7.0), Some(2.0)),
        "what Prometheus's query API answered"
    );
    assert_eq!(
        query(r#"evo_call_duration_seconds_count{skill="calculate"}"#),
        Some(9.0)
    );
}
