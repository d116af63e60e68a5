//! The web console `evo serve --http` serves at `/`, driven by a real headless Chromium:
//! every page loads without a console error, a call made through the form returns the
//! right result and is seen live and in the history, a refused call is under Security,
//! a memory search finds a stored fact, and the pages fit a phone's width. Screenshots
//! of each page are written to `target/console-screenshots/` for a reviewer.
//!
//! With a token, every console page and `/metrics` answer 401 until the browser signs in.

use std::path::{Path, PathBuf};

use evo_tests::cli::{HttpServer, evo, home_with_components, stdout};
use evo_tests::skills;

use crate::browser::Browser;
use crate::metrics::post;

/// Where the screenshots go (printed, so a reviewer finds them).
fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    eprintln!("console screenshots: {}", dir.display());
    dir
}

/// The console's pages, by the file name of their screenshot.
const PAGES: [(&str, &str); 6] = [
    ("overview", "/"),
    ("skills", "/skills"),
    ("skill", "/skills/calculate"),
    ("calls", "/calls"),
    ("security", "/security"),
    ("memory", "/memory?q=staging%20database"),
];

/// JavaScript: true once the page has replaced its "Loading…" with content.
const SHOWN: &str = "document.querySelector('main h1') !== null";

#[test]
fn every_page_loads_clean_and_a_call_made_in_the_form_is_seen_live_in_the_history_and_refusals_under_security()
 {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(
        root.path(),
        &[("calculate", skills::CALCULATE), ("fetch", skills::FETCH)],
    );
    let stored = evo(
        &home,
        &[
            "memory",
            "store",
            "The staging database moved to db-staging-2 on port 5433",
        ],
    );
    assert!(stored.status.success(), "{}", stdout(&stored));
    let logged = evo(&home, &["memory", "log", "--add", "deployed the console"]);
    assert!(logged.status.success());
    // A call from a terminal writes to the same history, but is no node.
    let ran = evo(
        &home,
        &[
            "skill",
            "run",
            "calculate",
            "--input",
            r#"{"expression":"1"}"#,
        ],
    );
    assert!(ran.status.success(), "{}", stdout(&ran));
    let server = HttpServer::start(&home, &[]);
    let base = server.base.clone();
    // Not granted any host: refused inside the sandbox, before a connection is made.
    let refused = post(
        &format!("{base}/v1/skills/fetch/call"),
        r#"{"url":"http://127.0.0.1:9/private-path"}"#,
    );
    assert_ne!(refused, 200);
    let shots = screenshots();
    let mut browser = Browser::start(1280, 800);

    browser.open(&format!("{base}/"));
    browser.wait_for_text("Calls per second");
    browser.wait_for("document.querySelectorAll('.card b').length === 6");
    browser.wait_for_text("PERMISSION_DENIED");
    // The figures update on their own: a call made elsewhere is counted within seconds.
    let counted = "Number(document.querySelectorAll('.card b')[5].textContent)";
    let before = browser.eval(counted).as_u64().unwrap();
    assert_eq!(
        post(
            &format!("{base}/v1/skills/calculate/call"),
            r#"{"expression":"3 * 3"}"#
        ),
        200
    );
    browser.wait_for(&format!("{counted} > {before}"));
    browser.wait_for("document.querySelector('canvas').getAttribute('aria-label').includes('now')");
    browser.wait_for_text("Served by");
    let note = browser.eval("document.querySelector('main').innerText");
    assert!(
        !note.as_str().unwrap().contains("nodes share this history"),
        "one server, counted as several nodes: {note}"
    );
    browser.screenshot(&shots.join("overview.png"));
    // The server samples its gauges on its own: a chart opened later starts with them.
    browser.eval(
        "window.sampled = 0; setInterval(async () => { const s = await (await fetch('/v1/stats')).json(); window.sampled = (s.nodes[0].gauge_history || []).length; }, 200); true",
    );
    browser.wait_for("window.sampled >= 2");

    browser.open(&format!("{base}/skills"));
    browser.wait_for("document.querySelector('a[href=\"/skills/calculate\"]')");
    browser.screenshot(&shots.join("skills.png"));

    // The call form, used as a keyboard user would: type the input, press Ctrl+Enter.
    browser.open(&format!("{base}/skills/calculate"));
    browser.wait_for("document.querySelector('#call-input')");
    browser
        .eval("{ const i = document.querySelector('#call-input'); i.value = ''; i.focus(); } true");
    browser.type_text(r#"{"expression": "6 * 7"}"#);
    browser.press("Enter", 2);
    browser.wait_for(
        "document.querySelector('#call-result .output')?.textContent.includes('\"result\": 42')",
    );
    // What the call reported as it ran is shown with it.
    browser.wait_for("document.querySelector('#call-result').innerText.includes('skill_result')");
    browser.screenshot(&shots.join("skill.png"));
    assert_eq!(browser.take_errors(), Vec::<String>::new());
    // Bad input is answered with the API's code and hint, not a blank page (the
    // browser logs the 422 as a failed load: that one is expected).
    browser.eval("{ const i = document.querySelector('#call-input'); i.value = '{\"expression\": 7}'; i.focus(); } true");
    browser.press("Enter", 2);
    browser.wait_for_text("SKILL_VALIDATION_FAILED");
    let errors = browser.take_errors();
    assert!(
        errors.len() == 1 && errors[0].contains("status of 422"),
        "{errors:#?}"
    );

    browser.open(&format!("{base}/calls"));
    browser.wait_for_text("Live: calls appear here as they end.");
    // The form's call, in the history.
    browser.wait_for(
        "[...document.querySelectorAll('#history tbody tr')].some(r => r.innerText.includes('calculate') && r.innerText.includes('success'))",
    );
    // A call made elsewhere while the page is open: seen live, then in the history.
    let history_rows = "document.querySelectorAll('#history tbody tr[data-id]').length";
    let before = browser.eval(history_rows).as_u64().unwrap();
    assert_eq!(
        post(
            &format!("{base}/v1/skills/calculate/call"),
            r#"{"expression":"1 + 1"}"#
        ),
        200
    );
    browser.wait_for("document.querySelector('#live-finished').innerText.includes('calculate')");
    browser.wait_for(&format!("{history_rows} > {before}"));
    // Each call's error and hint are one keypress away.
    browser.wait_for("document.querySelector('#history button[aria-expanded]')");
    browser.screenshot(&shots.join("calls.png"));

    browser.open(&format!("{base}/security"));
    browser.wait_for_text("outbound request refused");
    // The sandbox's refusal inside `fetch` is a row of the page, not only its intro.
    browser.wait_for(
        "[...document.querySelectorAll('main tbody tr')].some(r => r.innerText.includes('fetch') && r.innerText.includes('PERMISSION_DENIED'))",
    );
    browser.screenshot(&shots.join("security.png"));

    browser.open(&format!("{base}/memory?q=staging%20database"));
    browser.wait_for_text("db-staging-2");
    browser.wait_for_text("deployed the console");
    browser.eval(
        "[...document.querySelectorAll('#memory-hits button')].find(b => b.textContent.includes('Versions')).click(); true",
    );
    browser.wait_for_text("Decisions");
    browser.wait_for("document.querySelector('#memory-history').innerText.includes('add')");
    browser.screenshot(&shots.join("memory.png"));

    // By keyboard from the top: the first Tab reaches "Skip to content", the next the
    // navigation, in order.
    browser.open(&format!("{base}/"));
    browser.wait_for(SHOWN);
    let mut focused = Vec::new();
    for _ in 0..3 {
        browser.press("Tab", 0);
        focused.push(browser.eval("document.activeElement.textContent.trim()"));
    }
    assert_eq!(focused, ["Skip to content", "Overview", "Skills"]);

    // At a phone's width, no page is wider than the screen.
    browser.set_width(Some((390, 844)));
    for (name, path) in PAGES {
        browser.open(&format!("{base}{path}"));
        browser.wait_for(SHOWN);
        let (wide, screen) = (
            browser.eval("document.documentElement.scrollWidth"),
            browser.eval("window.innerWidth"),
        );
        assert!(
            wide.as_u64() <= screen.as_u64(),
            "{path} is {wide} px wide on a {screen} px screen"
        );
        browser.screenshot(&shots.join(format!("{name}-phone.png")));
    }
    let errors = browser.take_errors();
    assert!(errors.is_empty(), "the console logged errors: {errors:#?}");
}

/// An HTTP client that shows redirects instead of following them.
fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::config::Config::builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .build(),
    )
}

/// `GET url` with `headers`: the status, the `Set-Cookie` header, the body.
fn get(url: &str, headers: &[(&str, &str)]) -> (u16, Option<String>, String) {
    let mut request = agent().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.call().unwrap();
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let status = response.status().as_u16();
    (
        status,
        cookie,
        response.into_body().read_to_string().unwrap(),
    )
}

/// The console's token: 32 hex digits, as `openssl rand -hex 16` makes them.
const TOKEN: &str = "c0ffee0123456789abcdef0123456789";

#[test]
fn with_a_token_every_console_page_answers_401_until_the_browser_signs_in() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(root.path(), &[("calculate", skills::CALCULATE)]);
    let server = HttpServer::start_at(&home, "0.0.0.0:0", &["--token", TOKEN]);
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    let base = format!("http://127.0.0.1:{port}");

    for (_, path) in PAGES {
        let (status, _, body) = get(&format!("{base}{path}"), &[]);
        assert_eq!(status, 401, "{path}");
        assert!(
            body.contains(r#"action="/login""#),
            "{path}: the sign-in form"
        );
    }
    for path in [
        "/metrics",
        "/v1/stats",
        "/v1/calls",
        "/v1/memory/logs",
        "/assets/console.js",
    ] {
        let (status, _, _) = get(&format!("{base}{path}"), &[]);
        assert_eq!(status, 401, "{path}");
    }

    // Signing in with a wrong token is refused; with the right one sets a cookie that
    // is not the token, kept from scripts and other sites.
    let sign_in = |token: &str| {
        let response = agent()
            .post(&format!("{base}/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .send(format!("token={token}&next=%2Fcalls"))
            .unwrap();
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (response.status().as_u16(), cookie, location)
    };
    let (status, cookie, _) = sign_in("wrong");
    assert_eq!((status, cookie), (401, None));
    let (status, cookie, location) = sign_in(TOKEN);
    assert_eq!((status, location.as_deref()), (303, Some("/calls")));
    let cookie = cookie.expect("a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        cookie.contains("Max-Age=43200"),
        "a session expires: {cookie}"
    );
    assert!(
        !cookie.contains(TOKEN),
        "the cookie is not the token: {cookie}"
    );
    assert!(
        cookie.starts_with(&format!("evo_console_{port}=")),
        "named after the port, so two servers on one machine keep theirs: {cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_owned();
    for path in ["/", "/calls", "/metrics", "/v1/stats", "/assets/console.js"] {
        let (status, _, _) = get(&format!("{base}{path}"), &[("cookie", &session)]);
        assert_eq!(status, 200, "{path} with the cookie");
    }
    // The cookie is not a bearer token, and another site's page cannot use it.
    let value = session.split_once('=').unwrap().1;
    let (status, _, _) = get(
        &format!("{base}/v1/stats"),
        &[("authorization", &format!("Bearer {value}"))],
    );
    assert_eq!(status, 401);
    let (status, _, _) = get(
        &format!("{base}/v1/stats"),
        &[("cookie", &session), ("origin", "http://evil.example")],
    );
    assert_eq!(status, 403);

    // "Make the session a random server-side id with an expiry, and sign out
    // everywhere": each sign-in is a session of its own, which signing out ends.
    let session_of = |token: &str| {
        let (status, cookie, _) = sign_in(token);
        assert_eq!(status, 303);
        cookie.unwrap().split(';').next().unwrap().to_owned()
    };
    let other = session_of(TOKEN);
    assert_ne!(other, session, "each sign-in is a new session");
    let sign_out = |session: &str, form: &str| {
        agent()
            .post(&format!("{base}/logout"))
            .header("cookie", session)
            .header("content-type", "application/x-www-form-urlencoded")
            .send(form)
            .unwrap()
            .status()
            .as_u16()
    };
    let stats = |session: &str| get(&format!("{base}/v1/stats"), &[("cookie", session)]).0;
    assert_eq!(sign_out(&other, ""), 303);
    assert_eq!(stats(&other), 401, "a session signed out is over");
    assert_eq!(stats(&session), 200, "another browser's is not");
    let third = session_of(TOKEN);
    assert_eq!(sign_out(&third, "everywhere=1"), 303);
    assert_eq!(stats(&session), 401, "signed out everywhere");
    assert_eq!(stats(&third), 401);
    let session = session_of(TOKEN);

    // The same in a browser: the page asked for shows the form; signing in opens it.
    let mut browser = Browser::start(1280, 800);
    browser.open(&format!("{base}/calls"));
    browser.wait_for("document.querySelector('#token')");
    browser.screenshot(&screenshots().join("sign-in.png"));
    browser.eval("document.querySelector('#token').focus(); true");
    browser.type_text(TOKEN);
    browser.press("Enter", 0);
    browser.wait_for("location.pathname === '/calls' && document.querySelector('#history table')");
    browser.wait_for_text("Live: calls appear here as they end.");
    // Loading the sign-in page answered 401 (as it must); nothing after it failed.
    let errors: Vec<_> = browser
        .take_errors()
        .into_iter()
        .filter(|e| !e.contains("status of 401"))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(stats(&session), 200);
}

/// "Throttle failed sign-ins per client": five wrong tokens, then even the right one
/// waits out the minute (a guesser cannot tell it was right); a session already open
/// goes on.
#[test]
fn a_client_that_guesses_wrong_five_times_waits_out_the_minute() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(root.path(), &[("calculate", skills::CALCULATE)]);
    let server = HttpServer::start(&home, &["--token", TOKEN]);
    let sign_in = |token: &str| {
        agent()
            .post(&format!("{}/login", server.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .send(format!("token={token}&next=%2F"))
            .unwrap()
    };
    let opened = sign_in(TOKEN);
    assert_eq!(opened.status().as_u16(), 303);
    let session = opened.headers()["set-cookie"].to_str().unwrap();
    let session = session.split(';').next().unwrap().to_owned();
    for _ in 0..5 {
        assert_eq!(sign_in("wrong").status().as_u16(), 401);
    }
    let response = sign_in(TOKEN);
    assert_eq!(response.status().as_u16(), 429);
    let wait: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(
        response
            .into_body()
            .read_to_string()
            .unwrap()
            .contains("Too many wrong tokens from this address"),
    );
    let (status, _, _) = get(
        &format!("{}/v1/stats", server.base),
        &[("cookie", &session)],
    );
    assert_eq!(status, 200, "a session already open goes on");
}

/// Serves `page` to every request on a port of loopback of its own: another site's page
/// on this machine. Its address.
fn serve_page(page: String) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    format!("http://localhost:{port}")
}

/// "A page on another localhost port drives a signed-in console": with the console
/// signed in at localhost:A, a page at localhost:B posts a `text/plain` form and sends
/// `no-cors` fetches (with and without a body type) to call a skill. The browser sends
/// them with the cookie (`SameSite=Strict` counts ports as one site); the server runs
/// none of them, while the console's own page still calls.
#[test]
fn a_page_on_another_port_cannot_call_skills_through_a_signed_in_console() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_components(root.path(), &[("calculate", skills::CALCULATE)]);
    let server = HttpServer::start(&home, &["--token", TOKEN]);
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    let console = format!("http://localhost:{port}");
    let call = format!("{console}/v1/skills/calculate/call");
    let attacker = serve_page(format!(
        r#"<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<form id="form" method="post" action="{call}" enctype="text/plain" target="sink">
<input name='{{"expression":"1+1","padding":"' value='"}}'></form>
<script>
window.results = [];
const sent = (what) => (r) => results.push(what + ":" + (r && r.type || "error"));
document.getElementById("sink").onload = () => results.push("form");
document.getElementById("form").submit();
fetch("{call}", {{ method: "POST", mode: "no-cors", credentials: "include", body: '{{"expression":"2+2"}}' }})
  .then(sent("text"), sent("text"));
fetch("{call}", {{ method: "POST", mode: "no-cors", credentials: "include", body: new Blob(['{{"expression":"3+3"}}']) }})
  .then(sent("untyped"), sent("untyped"));
fetch("{call}", {{ method: "POST", mode: "no-cors", credentials: "include", headers: {{ "Content-Type": "application/x-www-form-urlencoded" }}, body: '{{"expression":"4+4"}}' }})
  .then(sent("form-encoded"), sent("form-encoded"));
</script></body></html>"#
    ));

    let mut browser = Browser::start(1280, 800);
    browser.open(&format!("{console}/calls"));
    browser.wait_for("document.querySelector('#token')");
    browser.eval("document.querySelector('#token').focus(); true");
    browser.type_text(TOKEN);
    browser.press("Enter", 0);
    browser.wait_for("location.pathname === '/calls' && document.querySelector('#history table')");

    browser.open(&format!("{attacker}/"));
    browser.wait_for("window.results && window.results.length >= 4");
    let results = browser.eval("window.results.join(' ')");
    // Each request reached the server and was answered (an opaque response, not a
    // network error).
    for sent in [
        "form",
        "text:opaque",
        "untyped:opaque",
        "form-encoded:opaque",
    ] {
        assert!(results.as_str().unwrap().contains(sent), "{results}");
    }
    let calls = |status: &str| {
        let (code, _, body) = get(
            &format!("{}/v1/calls?skill=calculate&status={status}", server.base),
            &[("authorization", &format!("Bearer {TOKEN}"))],
        );
        assert_eq!(code, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()
    };
    assert_eq!(
        calls("success").as_array().unwrap().len(),
        0,
        "a page of another port made calls: {}",
        calls("success")
    );

    // The console's own page, in the same browser, still calls.
    browser.open(&format!("{console}/skills/calculate"));
    let made = browser.eval(
        r#"fetch("/v1/skills/calculate/call", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"expression":"6*7"}' }).then(r => r.status)"#,
    );
    assert_eq!(made, 200);
    assert_eq!(calls("success").as_array().unwrap().len(), 1);
}
