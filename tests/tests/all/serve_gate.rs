//! What `evo serve --http` refuses before any handler runs, on every route and method:
//! a `Host` that does not name loopback on a loopback bind (DNS rebinding), and bodies
//! the server will not read. Every refusal is the API's JSON error shape.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use evo_tests::cli::HttpServer;
use serde_json::Value;

/// Every route the server answers, with the methods it takes, plus one it does not
/// know (`/` is where the console will be): the Host check comes before routing.
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/v1/health"),
    ("GET", "/metrics"),
    ("GET", "/v1/calls"),
    ("GET", "/v1/calls/live"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/v1/skills"),
    ("GET", "/v1/skills/calculate"),
    ("POST", "/v1/skills/calculate/call"),
    ("POST", "/v1/skills"),
    ("DELETE", "/v1/skills/calculate"),
    ("POST", "/v1/skills/calculate/update"),
    ("GET", "/v1/skills/calculate/grants"),
    ("POST", "/v1/skills/calculate/grants"),
    ("POST", "/v1/skills/calculate/grants/revoke"),
    ("GET", "/v1/installed"),
    ("POST", "/v1/memory/search"),
    ("POST", "/v1/agent/run"),
    ("GET", "/v1/ws"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/no/such/route"),
];

/// Sends one HTTP/1.1 request as written (`host: None` sends no `Host` header at all)
/// and returns the status and the body, parsed as JSON when it is JSON.
fn raw(base: &str, method: &str, path: &str, host: Option<&str>, body: &str) -> (u16, Value) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    // A hang guard, not a measurement: GET /mcp may hold an event stream open.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if let Some(host) = host {
        request.push_str(&format!("Host: {host}\r\n"));
    }
    request.push_str(&format!(
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    // Read to the end, or to the end of the headers of an event stream (which stays
    // open: `GET /v1/calls/live`).
    let mut response = Vec::new();
    let mut chunk = [0; 4096];
    while let Ok(n @ 1..) = stream.read(&mut chunk) {
        response.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&response);
        if text
            .split_once("\r\n\r\n")
            .is_some_and(|(head, _)| head.contains("text/event-stream"))
        {
            break;
        }
    }
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())),
    )
}

fn body_for(method: &str, path: &str) -> &'static str {
    match (method, path) {
        ("POST", "/v1/skills/calculate/call") => r#"{"expression":"1+1"}"#,
        ("POST", "/v1/memory/search") => r#"{"query":"anything"}"#,
        ("POST", "/v1/agent/run") => r#"{"message":"hi"}"#,
        ("POST", "/mcp") => r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        _ => "",
    }
}

#[test]
fn on_loopback_a_host_that_is_not_loopback_is_refused_on_every_route_and_method() {
    let home = tempfile::tempdir().unwrap();
    let server = HttpServer::start(home.path(), &[]);
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    // A page at http://evil.example:PORT whose name now resolves to 127.0.0.1 sends its
    // own name; no `Origin` on a same-origin GET, or from a script that is not a browser.
    let rebound = [
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        "localhost.evil.example".to_owned(),
    ];
    for (method, path) in ROUTES {
        for host in &rebound {
            let (status, err) = raw(
                &server.base,
                method,
                path,
                Some(host),
                body_for(method, path),
            );
            assert_eq!(
                (status, err["code"].as_str()),
                (403, Some("HOST_REFUSED")),
                "{method} {path} with Host {host}: {err}"
            );
            let message = err["error"].as_str().unwrap_or_default();
            assert!(
                message.contains("this server listens on loopback"),
                "{method} {path}: {err}"
            );
            assert!(
                err["hint"]
                    .as_str()
                    .is_some_and(|h| h.contains("DNS rebinding")),
                "{method} {path}: {err}"
            );
        }
        let (status, err) = raw(&server.base, method, path, None, body_for(method, path));
        assert_eq!(
            (status, err["code"].as_str()),
            (400, Some("INVALID_REQUEST")),
            "{method} {path} without a Host: {err}"
        );
        // A Host that is not one `host[:port]`: user information before a loopback name
        // (read as the loopback host by a URL parser), or a second Host header after a
        // loopback one (the first read, the second seen by whatever else reads it).
        for odd in [
            format!("evil.example@127.0.0.1:{port}"),
            format!("127.0.0.1:{port}\r\nHost: evil.example"),
            format!("evil.example\r\nHost: 127.0.0.1:{port}"),
        ] {
            let (status, err) = raw(
                &server.base,
                method,
                path,
                Some(&odd),
                body_for(method, path),
            );
            assert_eq!(
                (status, err["code"].as_str()),
                (400, Some("INVALID_REQUEST")),
                "{method} {path} with Host {odd:?}: {err}"
            );
        }
        // The names of this machine pass the check (what the route then answers is its
        // own business: 404 for the unknown ones, a stream for GET /mcp, …).
        for host in [
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            "[::1]".to_owned(),
        ] {
            let (_, answer) = raw(
                &server.base,
                method,
                path,
                Some(&host),
                body_for(method, path),
            );
            assert_ne!(
                answer["code"].as_str(),
                Some("HOST_REFUSED"),
                "{method} {path} with Host {host}: {answer}"
            );
        }
    }
    let (status, skills) = raw(
        &server.base,
        "GET",
        "/v1/skills",
        Some(&format!("localhost:{port}")),
        "",
    );
    assert_eq!(status, 200, "{skills}");
    assert!(
        skills
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["name"] == "calculate")),
        "{skills}"
    );
}

#[test]
fn refusals_below_the_handlers_have_the_api_error_shape() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        "[serve]\nmax_message_kb = 1\n",
    )
    .unwrap();
    let server = HttpServer::start(home.path(), &[]);
    let host = Some("127.0.0.1");
    let big = format!(r#"{{"expression":"{}"}}"#, "1+".repeat(2048) + "1");
    let (status, err) = raw(
        &server.base,
        "POST",
        "/v1/skills/calculate/call",
        host,
        &big,
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (413, Some("MESSAGE_TOO_LARGE")),
        "{err}"
    );
    assert!(
        err["hint"]
            .as_str()
            .is_some_and(|h| h.contains("serve.max_message_kb")),
        "{err}"
    );

    let (status, err) = raw(&server.base, "GET", "/v1/nothing-here", host, "");
    assert_eq!(
        (status, err["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{err}"
    );
    assert!(
        err["hint"].as_str().is_some_and(|h| h.contains("openapi")),
        "{err}"
    );

    let (status, err) = raw(&server.base, "DELETE", "/v1/calls", host, "");
    assert_eq!(
        (status, err["code"].as_str()),
        (405, Some("METHOD_NOT_ALLOWED")),
        "{err}"
    );

    let (status, err) = raw(
        &server.base,
        "POST",
        "/v1/memory/search",
        host,
        r#"{"limit":3}"#,
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (400, Some("INVALID_INPUT")),
        "{err}"
    );
    assert!(
        err["error"].as_str().is_some_and(|e| e.contains("query")),
        "the JSON reader's message is kept: {err}"
    );

    // No model configured: the CLI's code, a status that says the server cannot do it,
    // and how to configure one.
    let (status, err) = raw(
        &server.base,
        "POST",
        "/v1/agent/run",
        host,
        r#"{"message":"hi"}"#,
    );
    assert_eq!(
        (status, err["code"].as_str()),
        (503, Some("LLM_NOT_CONFIGURED")),
        "{err}"
    );
    assert!(
        err["hint"].as_str().is_some_and(|h| h.contains("EVO_LLM")),
        "{err}"
    );
}
