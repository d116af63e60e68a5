//! `fetch`: outbound HTTP from a Wasm skill through `evo`, against servers the test
//! starts on loopback. Only granted origins are reached; a refused server never sees a
//! connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

/// A loopback HTTP server answering every request with `answer(path, request)`, where
/// `request` is everything received (head and body); counts the connections it accepts
/// and keeps every request.
pub(crate) struct Server {
    pub(crate) port: u16,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(crate) fn start(answer: impl Fn(&str) -> String + Send + 'static) -> Self {
        Self::start_with(move |path, _| answer(path))
    }

    pub(crate) fn start_with(answer: impl Fn(&str, &str) -> String + Send + 'static) -> Self {
        Self::start_at("127.0.0.1", answer)
    }

    /// On another loopback address (`127.0.0.2`): another host, as far as grants go.
    pub(crate) fn start_at(
        address: &str,
        answer: impl Fn(&str, &str) -> String + Send + 'static,
    ) -> Self {
        let listener = TcpListener::bind((address, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (seen, kept) = (connections.clone(), received.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                seen.fetch_add(1, Ordering::SeqCst);
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    continue;
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    request.push_str(&header);
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_ok() {
                    request.push_str("\r\n");
                    request.push_str(&String::from_utf8_lossy(&body));
                }
                kept.lock().unwrap().push(request.clone());
                let _ = stream.write_all(answer(&path, &request).as_bytes());
            }
        });
        Self {
            port,
            connections,
            received,
        }
    }

    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Everything received, request by request.
    pub(crate) fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

pub(crate) fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn fetch(home: &std::path::Path, allow: &[String], input: Value) -> std::process::Output {
    let mut args = vec!["skill".to_owned(), "run".into(), skills::FETCH.into()];
    for origin in allow {
        args.push("--allow-host".into());
        args.push(origin.clone());
    }
    args.push("--input".into());
    args.push(input.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    evo(home, &args)
}

#[test]
fn a_granted_origin_is_reached_and_any_other_is_refused_before_connecting() {
    let home = tempfile::tempdir().unwrap();
    let granted = Server::start(|path| ok(&format!("hello from {path}")));
    let other = Server::start(|_| ok("you should not see this"));
    let allow = vec![format!("http://127.0.0.1:{}", granted.port)];

    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://127.0.0.1:{}/greeting?x=1", granted.port) }),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["status"], 200);
    assert_eq!(value["body"], "hello from /greeting?x=1");
    assert_eq!(granted.connections(), 1);

    // Another port of the same machine: not granted.
    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://127.0.0.1:{}/", other.port) }),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error[PERMISSION_DENIED]: fetch: denied: http://127.0.0.1:{}: the host refused the request: this skill was not granted that host",
            other.port
        )),
        "{err}"
    );
    // The grant that helps is a host, not a directory.
    assert!(
        err.contains("hint: grant the origin with `--allow-host https://HOST`"),
        "{err}"
    );
    assert_eq!(
        other.connections(),
        0,
        "the refused server saw no connection"
    );
    // The refusal is in the security log, whatever the skill did with the error.
    let blocked = history_blocked(home.path());
    assert_eq!(blocked.len(), 1, "{blocked:?}");
    assert_eq!(blocked[0]["tool"], "http");
    assert_eq!(blocked[0]["caller"], "fetch");
    assert_eq!(
        blocked[0]["error"],
        format!(
            "[PERMISSION_DENIED] outbound request refused: http://127.0.0.1:{}: not among the hosts granted to fetch (http://127.0.0.1:{})",
            other.port, granted.port
        )
    );
    assert!(
        blocked[0]["arguments"]
            .as_str()
            .unwrap()
            .contains(&format!("http://127.0.0.1:{}/", other.port)),
        "{}",
        blocked[0]
    );

    // No grant at all: the skill's request stays a request.
    let out = fetch(
        home.path(),
        &[],
        json!({ "url": format!("http://127.0.0.1:{}/", granted.port) }),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(granted.connections(), 1);
}

/// A request without a body is sent from where its guest waits; one with a body keeps a
/// task of its own, which reads the body while the guest writes it after handing the
/// request over. A body of many writes (more than the body stream buffers) therefore
/// reaches the server whole, and does not wait for a reader that never comes.
#[test]
fn a_body_written_after_the_request_is_handed_over_reaches_the_server_whole() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start_with(|path, request| {
        let body = request.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        ok(&format!("{path} got {} bytes", body.len()))
    });
    let allow = vec![format!("http://127.0.0.1:{}", server.port)];
    // The guest writes it 4 KiB at a time: 16 writes.
    let body: String = (0..64 * 1024)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let out = fetch(
        home.path(),
        &allow,
        json!({
            "url": format!("http://127.0.0.1:{}/upload", server.port),
            "method": "POST",
            "body": body,
        }),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["body"], "/upload got 65536 bytes");
    let received = server.received();
    assert!(
        received[0].starts_with("POST /upload HTTP/1.1\r\n"),
        "{}",
        &received[0][..80]
    );
    assert!(
        received[0].ends_with(&body),
        "the body arrived cut or changed"
    );

    // Without a body, from where the guest waits.
    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://127.0.0.1:{}/nothing", server.port), "method": "DELETE" }),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["body"], "/nothing got 0 bytes");
    let received = server.received();
    assert!(
        received[1].starts_with("DELETE /nothing HTTP/1.1\r\n"),
        "{}",
        received[1]
    );
    assert!(
        !received[1]
            .to_ascii_lowercase()
            .contains("transfer-encoding"),
        "a request without a body is sent as one: {}",
        received[1]
    );
    assert_eq!(server.connections(), 2);
}

#[test]
fn a_redirect_to_another_host_is_refused_at_the_hop() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = Server::start(|_| ok("secret internal page"));
    let target = format!("http://127.0.0.1:{}/admin", elsewhere.port);
    let redirecting = Server::start(move |_| {
        format!(
            "HTTP/1.1 302 Found\r\nlocation: {target}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
    });
    let allow = vec![format!("http://127.0.0.1:{}", redirecting.port)];
    let url = format!("http://127.0.0.1:{}/go", redirecting.port);

    // Not followed: the skill sees the redirect itself.
    let out = fetch(home.path(), &allow, json!({ "url": url }));
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["status"], 302);

    // Followed: the hop is a new request, checked like the first, and refused.
    let out = fetch(home.path(), &allow, json!({ "url": url, "follow": true }));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "http://127.0.0.1:{}: the host refused the request",
            elsewhere.port
        )),
        "{err}"
    );
    assert_eq!(elsewhere.connections(), 0);
    assert_eq!(redirecting.connections(), 2);
}

/// The security log: the blocked rows of the call history, newest first.
fn history_blocked(home: &std::path::Path) -> Vec<Value> {
    let out = evo(home, &["tool", "history", "--status", "blocked", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// A name other than `localhost` that resolves inside the machine or a private network,
/// as `/etc/hosts` gives the machine's own name on Debian and in containers.
fn internal_name() -> String {
    use std::net::ToSocketAddrs;
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let mut names: Vec<String> = hosts
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .flat_map(|line| line.split_whitespace().skip(1).map(str::to_owned))
        .collect();
    if let Ok(out) = std::process::Command::new("hostname").output() {
        names.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    names
        .into_iter()
        .filter(|name| !name.is_empty() && name != "localhost")
        .find(|name| {
            (name.as_str(), 80).to_socket_addrs().is_ok_and(|mut addresses| {
                addresses.all(|a| evo_manifest::is_internal(a.ip()) && a.is_ipv4())
            })
        })
        .expect(
            "this test needs a name other than localhost that resolves to an IPv4 address inside the machine (the machine's own name in /etc/hosts)",
        )
}

#[test]
fn a_name_that_resolves_inside_is_refused_unless_the_address_is_granted() {
    let home = tempfile::tempdir().unwrap();
    let inside = Server::start(|_| ok("the operator's admin page"));
    let name = internal_name();
    // The operator allows any host on that port, as for a skill that browses the web:
    // a name is still not a way into the machine.
    let allow = vec![format!("http://*:{}", inside.port)];
    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://{name}:{}/", inside.port) }),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error[PERMISSION_DENIED]: fetch: denied: http://{name}:{}: the name resolves to an address inside the machine or a private network; only a grant naming that address reaches it",
            inside.port
        )),
        "{err}"
    );
    assert_eq!(inside.connections(), 0);
    let blocked = history_blocked(home.path());
    let reason = blocked[0]["error"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "[PERMISSION_DENIED] outbound request refused: {name}:{} resolves to ",
            inside.port
        )) && reason.ends_with(
            ", inside the machine or a private network, which only a grant naming that address allows"
        ),
        "{reason}"
    );

    // Granted by address, the same server is reached.
    let allow = vec![format!("http://127.0.0.1:{}", inside.port)];
    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://127.0.0.1:{}/", inside.port) }),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(inside.connections(), 1);
}

#[test]
fn a_server_that_never_answers_costs_the_call_its_deadline_and_no_more() {
    let home = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts and holds every connection, never answering.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let out = fetch(
        home.path(),
        &[format!("http://127.0.0.1:{port}")],
        json!({ "url": format!("http://127.0.0.1:{port}/slow") }),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "error[SKILL_TIMEOUT]: fetch: timeout: the call did not finish within 3000 ms\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn install_shows_the_hosts_asked_for_and_info_what_is_granted() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("src/fetch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(skills::FETCH, dir.join("skill.wasm")).unwrap();
    let out = evo(home.path(), &["skill", "install", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "\n  requests:   outbound HTTP to http://*:* (the servers the tests start)\n"
        ),
        "{}",
        stdout(&out)
    );
    // Without a grant: what it asks for, that it is not granted, and what was approved
    // at install, each in words.
    let out = evo(home.path(), &["skill", "info", "fetch"]);
    let text = stdout(&out);
    for line in [
        "\n  requests:   outbound HTTP to http://*:* (the servers the tests start)\n",
        "\n  not granted: ",
        "\n  approved:   outbound HTTP to http://*:* (the servers the tests start), at install\n",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    assert!(
        !text.contains("approved:   {"),
        "no raw JSON in the human form: {text}"
    );
    let out = evo(
        home.path(),
        &[
            "skill",
            "info",
            "fetch",
            "--allow-host",
            "http://127.0.0.1:8080",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\n  granted:    outbound HTTP to http://127.0.0.1:8080\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_invalid_allow_host_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let out = fetch(
        home.path(),
        &["ftp://example.com".to_owned()],
        json!({ "url": "http://127.0.0.1:1/" }),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--allow-host ftp://example.com: \"ftp://example.com\": the scheme \"ftp\" is not allowed; use http or https"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn configuration_values_reach_the_skill_through_wasi_config() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start_with(|_, request| {
        let agent = request
            .lines()
            .find_map(|l| l.strip_prefix("user-agent: "))
            .unwrap_or("none")
            .to_owned();
        ok(&agent)
    });
    std::fs::write(
        home.path().join("evo.toml"),
        "[skill_config.fetch]\nuser_agent = \"evo-test/1.0\"\n\n[skill_config.other]\nuser_agent = \"not for fetch\"\n",
    )
    .unwrap();
    let allow = vec![format!("http://127.0.0.1:{}", server.port)];
    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://127.0.0.1:{}/", server.port) }),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["user_agent"], "evo-test/1.0");
    assert_eq!(value["body"], "evo-test/1.0");

    // Without a value, the skill reads none.
    std::fs::remove_file(home.path().join("evo.toml")).unwrap();
    let out = fetch(
        home.path(),
        &allow,
        json!({ "url": format!("http://127.0.0.1:{}/", server.port) }),
    );
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["user_agent"], Value::Null);

    // A table is not a value.
    std::fs::write(
        home.path().join("evo.toml"),
        "[skill_config.fetch]\nuser_agent = { name = \"x\" }\n",
    )
    .unwrap();
    let out = fetch(home.path(), &allow, json!({ "url": "http://127.0.0.1:1/" }));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("skill_config.fetch.user_agent: a table is not a configuration value; use a string, number or boolean"),
        "{}",
        stderr(&out)
    );
}
