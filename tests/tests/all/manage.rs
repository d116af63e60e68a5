//! Managing a running `evo serve` over the wire: installing from the loopback registry
//! and from an upload, granting and revoking by name, updating and uninstalling,
//! through the HTTP API with the admin token, and what is refused (no admin token, a
//! directory outside `[serve] grant_dirs`, an upload over the cap, an unsigned artifact
//! under `require_signature`), each leaving the server as it was.

use std::path::Path;

use evo_tests::cli::HttpServer;
use evo_tests::skills;
use serde_json::{Value, json};

use crate::registry::{home, ok, open};

const CALL: &str = "call-token-0123456789abcdef";
const ADMIN: &str = "admin-token-0123456789abcdef";

/// A request with the token `token` (none for `""`): (status, body as JSON or text).
fn request(method: &str, url: &str, token: &str, kind: &str, body: &[u8]) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let bearer = format!("Bearer {token}");
    let response = match method {
        "GET" => {
            let mut r = agent.get(url);
            if !token.is_empty() {
                r = r.header("authorization", &bearer);
            }
            r.call()
        }
        "DELETE" => {
            let mut r = agent.delete(url);
            if !token.is_empty() {
                r = r.header("authorization", &bearer);
            }
            r.call()
        }
        _ => {
            let mut r = agent.post(url).header("content-type", kind);
            if !token.is_empty() {
                r = r.header("authorization", &bearer);
            }
            r.send(body)
        }
    }
    .unwrap();
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn post_json(url: &str, token: &str, body: &Value) -> (u16, Value) {
    request(
        "POST",
        url,
        token,
        "application/json",
        body.to_string().as_bytes(),
    )
}

fn read_file(base: &str, skill: &str) -> (u16, Value) {
    post_json(
        &format!("{base}/v1/skills/{skill}/call"),
        CALL,
        &json!({ "path": "/data/notes.txt" }),
    )
}

/// Publishes the plain-io component (no manifest: it asks for nothing) to the open
/// registry; its reference.
fn published(home: &Path, tag: &str) -> String {
    let reference = format!("oci://{}/manage/io:{tag}", open());
    ok(home, &["skill", "publish", skills::PLAIN_IO, &reference]);
    reference
}

#[test]
fn the_admin_token_installs_grants_revokes_and_uninstalls_over_http_and_nothing_else_does() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the plan").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let home = home(&format!(
        "[serve]\ngrant_dirs = [{:?}]\n[engine]\nmax_component_mb = 1\n",
        root.path().display().to_string()
    ));
    let reference = published(home.path(), "v1");
    let server = HttpServer::start(home.path(), &["--token", CALL, "--admin-token", ADMIN]);
    let base = &server.base;
    let install = json!({ "reference": reference });

    // The token that calls does not change the server; no token is not let in at all.
    let (status, body) = post_json(&format!("{base}/v1/skills"), CALL, &install);
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("ADMIN_REQUIRED")),
        "{body}"
    );
    let (status, _) = post_json(&format!("{base}/v1/skills"), "", &install);
    assert_eq!(status, 401);
    let (status, body) = request(
        "GET",
        &format!("{base}/v1/skills/calculate/grants"),
        CALL,
        "",
        b"",
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("ADMIN_REQUIRED")),
        "{body}"
    );

    // Installed from the registry: listed and callable at once, with nothing granted.
    let (status, body) = post_json(&format!("{base}/v1/skills"), ADMIN, &install);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["name"], "io");
    assert!(
        body["source"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"),
        "{body}"
    );
    let (status, body) = read_file(base, "io__read-file");
    assert_eq!(
        (status, body["code"].as_str()),
        (500, Some("SKILL_FAILED")),
        "{body}"
    );

    // A directory outside [serve] grant_dirs is refused and nothing is written.
    let config = std::fs::read_to_string(home.path().join("evo.toml")).unwrap();
    let far = json!({ "dirs": [format!("{}::/data:ro", outside.path().display())] });
    let (status, body) = post_json(&format!("{base}/v1/skills/io/grants"), ADMIN, &far);
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("GRANT_OUTSIDE")),
        "{body}"
    );
    for (bad, code) in [
        (json!({ "dirs": ["/no/such::/data"] }), "GRANT_INVALID"),
        (json!({ "hosts": ["not a host at all"] }), "GRANT_INVALID"),
        (json!({}), "GRANT_INVALID"),
    ] {
        let (status, body) = post_json(&format!("{base}/v1/skills/io/grants"), ADMIN, &bad);
        assert_eq!(
            (status, body["code"].as_str()),
            (400, Some(code)),
            "{bad}: {body}"
        );
    }
    let (status, body) = post_json(
        &format!("{base}/v1/skills/nosuch/grants"),
        ADMIN,
        &json!({ "llm": true }),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("SKILL_NOT_FOUND")),
        "{body}"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("evo.toml")).unwrap(),
        config
    );

    // Granted by name: the next call sees the directory; revoked: it no longer does.
    let grant = json!({ "dirs": [format!("{}::/data:ro", data.display())] });
    let (status, body) = post_json(&format!("{base}/v1/skills/io/grants"), ADMIN, &grant);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["asking"].as_str(),
            body["granted"]["dirs"][0]["guest"].as_str()
        ),
        (Some("by-name"), Some("/data"))
    );
    let (status, body) = read_file(base, "io__read-file");
    assert_eq!(
        (status, &body["output"]),
        (200, &json!("the plan")),
        "{body}"
    );
    let config = std::fs::read_to_string(home.path().join("evo.toml")).unwrap();
    assert!(config.contains("[grants.skill.io]"), "{config}");
    let (status, body) = post_json(
        &format!("{base}/v1/skills/io/grants/revoke"),
        ADMIN,
        &json!({ "dirs": ["/data"] }),
    );
    assert_eq!((status, &body["entry"]), (200, &Value::Null), "{body}");
    let (status, _) = read_file(base, "io__read-file");
    assert_eq!(status, 500, "revoked");
    let (status, body) = post_json(
        &format!("{base}/v1/skills/io/grants/revoke"),
        ADMIN,
        &json!({ "dirs": ["/data"] }),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("NOT_GRANTED")),
        "{body}"
    );

    // An upload installs as a local file would, under the same cap.
    let bytes = std::fs::read(skills::PLAIN_IO).unwrap();
    let (status, body) = request(
        "POST",
        &format!("{base}/v1/skills?file=up.wasm"),
        ADMIN,
        "application/wasm",
        &bytes,
    );
    assert_eq!((status, body["name"].as_str()), (201, Some("up")), "{body}");
    let big = vec![0u8; (1 << 20) + 1];
    let (status, body) = request(
        "POST",
        &format!("{base}/v1/skills?file=big.wasm"),
        ADMIN,
        "application/wasm",
        &big,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (413, Some("ARTIFACT_TOO_LARGE")),
        "{body}"
    );
    let (status, body) = request(
        "POST",
        &format!("{base}/v1/skills?file=../x.wasm"),
        ADMIN,
        "application/wasm",
        &bytes,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("INVALID_INPUT")),
        "{body}"
    );
    let (status, body) = request(
        "POST",
        &format!("{base}/v1/skills"),
        ADMIN,
        "text/plain",
        b"hello",
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("INVALID_INPUT")),
        "{body}"
    );

    // Listed with where each came from; updated (the tag has not moved); uninstalled.
    let (status, body) = request("GET", &format!("{base}/v1/installed"), ADMIN, "", b"");
    assert_eq!(status, 200, "{body}");
    let listed = body["skills"].as_array().unwrap();
    let io = listed.iter().find(|s| s["name"] == "io").unwrap();
    let bare = reference.strip_prefix("oci://").unwrap();
    assert_eq!(io["source"]["reference"], bare, "{body}");
    assert!(
        listed
            .iter()
            .any(|s| s["name"] == "up" && s.get("source").is_none()),
        "{body}"
    );
    let (status, body) = post_json(&format!("{base}/v1/skills/io/update"), ADMIN, &json!({}));
    assert_eq!((status, &body["moved"]), (200, &json!(false)), "{body}");
    for name in ["io", "up"] {
        let (status, body) = request(
            "DELETE",
            &format!("{base}/v1/skills/{name}"),
            ADMIN,
            "",
            b"",
        );
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = read_file(base, "io__read-file");
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("SKILL_NOT_FOUND")),
        "{body}"
    );

    // Every change, and every refusal of one, is a row of the security log by `http`.
    let (_, calls) = request(
        "GET",
        &format!("{base}/v1/calls?caller=http&limit=100"),
        ADMIN,
        "",
        b"",
    );
    let rows: Vec<(String, String)> = calls
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["skill"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for expected in [
        ("skill_install", "success"),
        ("skill_grant", "success"),
        ("skill_grant", "error"),
        ("skill_revoke", "success"),
        ("skill_revoke", "error"),
        ("skill_update", "success"),
        ("skill_uninstall", "success"),
        ("skill_install", "error"),
    ] {
        assert!(
            rows.iter()
                .any(|(s, st)| s == expected.0 && st == expected.1),
            "{expected:?} not in {rows:?}"
        );
    }
}

#[test]
fn an_unsigned_artifact_under_require_signature_is_refused_over_http_too_with_nothing_installed() {
    let home = home("[trust]\nrequire_signature = true\n");
    let reference = published(home.path(), "unsigned");
    let server = HttpServer::start(home.path(), &["--admin-token", ADMIN]);
    let (status, body) = post_json(
        &format!("{}/v1/skills", server.base),
        ADMIN,
        &json!({ "reference": reference }),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("SIGNATURE_REQUIRED")),
        "{body}"
    );
    let (_, skills) = request("GET", &format!("{}/v1/skills", server.base), ADMIN, "", b"");
    assert!(
        !skills
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "io__read-file"),
        "nothing installed: {skills}"
    );
    // A server started without an admin token changes nothing over HTTP.
    let plain = HttpServer::start(home.path(), &[]);
    let (status, body) = post_json(
        &format!("{}/v1/skills", plain.base),
        "",
        &json!({ "reference": reference }),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("ADMIN_REQUIRED")),
        "{body}"
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("started without an admin token"),
        "{body}"
    );
}

fn manage_script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/manage.py")
}

/// The Python SDK as an agent with `evo serve --http --manage`: (mode, answer) → report.
fn agent(
    server: &HttpServer,
    token: &str,
    mode: &str,
    answer: &str,
    reference: &str,
    data: &str,
) -> Value {
    crate::serve::run_python(
        &manage_script(),
        &[
            &format!("{}/mcp", server.base),
            token,
            mode,
            answer,
            reference,
            data,
        ],
    )
}

#[test]
fn an_agent_installs_grants_and_revokes_over_mcp_with_its_user_confirming_each_change() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the plan").unwrap();
    let bind = format!("{}::/data:ro", data.display());
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let home = home(&format!(
            "[serve]\ngrant_dirs = [{:?}]\n",
            root.path().display().to_string()
        ));
        let reference = published(home.path(), mode);
        let server = HttpServer::start(home.path(), &["--manage", "--admin-token", ADMIN]);
        let report = agent(&server, ADMIN, mode, "accept", &reference, &bind);
        assert_eq!(report["protocol"], protocol, "{report:#}");
        let before = report["tools_before"].as_array().unwrap();
        for tool in [
            "evo_install_skill",
            "evo_uninstall_skill",
            "evo_list_skills",
            "evo_skill_grants",
            "evo_grant",
            "evo_revoke",
        ] {
            assert!(before.iter().any(|t| t == tool), "{tool}: {report:#}");
        }
        // install → tools/list_changed → the new tool is listed and answers.
        assert_eq!(report["install"]["isError"], false, "{report:#}");
        assert!(
            ["ToolsListChanged", "ToolListChangedNotification"]
                .contains(&report["event"].as_str().unwrap_or("")),
            "{report:#}"
        );
        assert!(
            report["tools_after"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "io__read-file"),
            "{report:#}"
        );
        assert_eq!(
            report["read_before"]["isError"], true,
            "nothing granted yet: {report:#}"
        );
        // grant → the call sees the directory; revoke → it does not.
        assert_eq!(report["grant"]["isError"], false, "{report:#}");
        assert_eq!(report["read_granted"]["text"], "\"the plan\"", "{report:#}");
        assert_eq!(report["revoke"]["isError"], false, "{report:#}");
        assert_eq!(report["read_revoked"]["isError"], true, "{report:#}");
        // A directory the operator did not open to grants is refused before asking.
        assert!(
            report["outside"]["text"]
                .as_str()
                .unwrap()
                .starts_with("error[GRANT_OUTSIDE]"),
            "{report:#}"
        );
        assert_eq!(report["uninstall"]["isError"], false, "{report:#}");
        assert!(
            !report["tools_end"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "io__read-file"),
            "{report:#}"
        );
        // The user was asked four times (install, grant, revoke, uninstall), and the
        // install's question named the digest, the signer and what it asks for.
        let asked: Vec<&str> = report["asked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(asked.len(), 4, "{asked:#?}");
        assert!(
            asked[0].starts_with("evo_install_skill wants to run (high risk): install io from ")
                && asked[0].contains("digest sha256:")
                && asked[0].contains("signed by nobody (unsigned)")
                && asked[0].contains("it asks for: nothing"),
            "{}",
            asked[0]
        );
        assert!(
            asked[1].contains("grant io") && asked[1].contains(&bind),
            "{}",
            asked[1]
        );
    }
}

#[test]
fn a_declined_or_unaskable_change_over_mcp_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let home = home("");
    let reference = published(home.path(), "declined");
    let server = HttpServer::start(
        home.path(),
        &["--manage", "--admin-token", ADMIN, "--token", CALL],
    );
    for answer in ["decline", "none"] {
        let report = agent(&server, ADMIN, "auto", answer, &reference, "/x::/data");
        let text = report["install"]["text"].as_str().unwrap();
        assert!(
            text.starts_with("error[TOOL_BLOCKED]: evo_install_skill: not done: "),
            "{answer}: {text}"
        );
        let why = if answer == "decline" {
            "the user declined it"
        } else {
            "this client cannot be asked"
        };
        assert!(text.contains(why), "{answer}: {text}");
        assert!(
            !report["tools_after"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "io__read-file"),
            "{report:#}"
        );
    }
    // Over HTTP the tools are the admin token's: a session with the call token does not
    // see them, and calling one is refused.
    let report = agent(&server, CALL, "auto", "accept", &reference, "/x::/data");
    assert!(
        !report["tools_before"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "evo_install_skill"),
        "{report:#}"
    );
    assert!(
        report["direct"]["text"]
            .as_str()
            .unwrap()
            .contains("need the admin token"),
        "{report:#}"
    );
    assert!(!root.path().join("home").exists());
}

#[test]
fn a_change_made_on_one_node_is_seen_by_every_node_sharing_the_catalogue() {
    use evo_tests::shared::eventually;
    let url = crate::storage::postgres_url();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the plan").unwrap();
    let settings = format!(
        "[registries]\ninsecure = [{:?}]\n[serve]\ngrant_dirs = [{:?}]\n",
        open(),
        root.path().display().to_string()
    );
    let homes: Vec<_> = ["one", "two"]
        .iter()
        .map(|name| {
            let home = crate::nodes::node_home(root.path(), name, &url);
            let mut config = std::fs::read_to_string(home.join("evo.toml")).unwrap();
            config.push_str(&settings);
            std::fs::write(home.join("evo.toml"), config).unwrap();
            home
        })
        .collect();
    let reference = published(&homes[0], "nodes");
    let nodes: Vec<HttpServer> = homes
        .iter()
        .map(|h| HttpServer::start(h, &["--token", CALL, "--admin-token", ADMIN]))
        .collect();
    let (one, two) = (&nodes[0].base, &nodes[1].base);

    // Installed through node one: node two pulls the same digest and serves it.
    let (status, body) = post_json(
        &format!("{one}/v1/skills"),
        ADMIN,
        &json!({ "reference": reference }),
    );
    assert_eq!(status, 201, "{body}");
    eventually("node two serves the skill node one installed", || {
        let (status, _) = read_file(two, "io__read-file");
        (status != 404).then_some(())
    });
    let (status, _) = read_file(two, "io__read-file");
    assert_eq!(status, 500, "nothing granted yet");

    // Granted through node one: the call through node two sees the directory.
    let grant = json!({ "dirs": [format!("{}::/data:ro", data.display())] });
    let (status, body) = post_json(&format!("{one}/v1/skills/io/grants"), ADMIN, &grant);
    assert_eq!(status, 200, "{body}");
    let read = eventually("node two has the grant node one made", || {
        let (status, body) = read_file(two, "io__read-file");
        (status == 200).then_some(body)
    });
    assert_eq!(read["output"], "the plan");
    let config = std::fs::read_to_string(homes[1].join("evo.toml")).unwrap();
    assert!(
        config.contains("[grants.skill.io]"),
        "kept in node two's evo.toml: {config}"
    );

    // Revoked through node two: node one refuses it.
    let (status, body) = post_json(
        &format!("{two}/v1/skills/io/grants/revoke"),
        ADMIN,
        &json!({ "dirs": ["/data"] }),
    );
    assert_eq!(status, 200, "{body}");
    eventually("node one no longer has the grant", || {
        let (status, _) = read_file(one, "io__read-file");
        (status == 500).then_some(())
    });

    // A row written straight into the database, binding a directory outside the
    // nodes' [serve] grant_dirs, binds nothing.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "planted").unwrap();
    let planted =
        json!({ "dirs": [format!("{}::/data:ro", outside.path().display())] }).to_string();
    let pg = evo_host::storage::Pg::connect(&url, None).unwrap();
    pg.run(move |client| async move {
        client
            .execute(
                "UPDATE skill_grants SET entry = $1, changed_at = changed_at + 1 WHERE name = 'io'",
                &[&planted],
            )
            .await
    })
    .unwrap();
    // Refused, and written to the security log; the call still finds no directory.
    eventually("node two refuses the planted row", || {
        let (_, rows) = request(
            "GET",
            &format!("{two}/v1/calls?skill=skill_grant&caller=shared%20storage"),
            ADMIN,
            "",
            b"",
        );
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["status"] == "error" && r["code"] == "GRANT_OUTSIDE")
            .then_some(())
    });
    let (status, body) = read_file(two, "io__read-file");
    assert_eq!(status, 500, "the planted directory is not bound: {body}");

    // Uninstalled through node two: gone from node one.
    let (status, body) = request("DELETE", &format!("{two}/v1/skills/io"), ADMIN, "", b"");
    assert_eq!(status, 200, "{body}");
    eventually("node one no longer serves it", || {
        let (status, _) = read_file(one, "io__read-file");
        (status == 404).then_some(())
    });
}

#[test]
fn the_console_installs_grants_revokes_and_uninstalls_with_the_admin_token_only() {
    use crate::browser::Browser;
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the plan").unwrap();
    let home = home(&format!(
        "[serve]\ngrant_dirs = [{:?}]\n",
        root.path().display().to_string()
    ));
    let reference = published(home.path(), "console");
    let server = HttpServer::start(home.path(), &["--token", CALL, "--admin-token", ADMIN]);
    let base = server.base.clone();
    let mut browser = Browser::start(1280, 900);
    let sign_in = |browser: &mut Browser, token: &str, next: &str| {
        browser.open(&format!("{base}/login?next={next}"));
        browser.wait_for("document.querySelector('#token')");
        browser.eval("document.querySelector('#token').focus(); true");
        browser.type_text(token);
        browser.press("Enter", 0);
        browser.wait_for(&format!(
            "location.pathname === {} && document.querySelector('main h1')",
            json!(next)
        ));
    };

    // Signed in with the token that calls: no form to change anything, and the way out.
    sign_in(&mut browser, CALL, "/skills");
    browser
        .wait_for_text("Changing the server needs the admin token: sign out and sign in with it.");
    assert_eq!(
        browser.eval("document.querySelector('#install-reference') === null"),
        json!(true)
    );
    browser.open(&format!("{base}/skills/calculate"));
    browser.wait_for("document.querySelector('#manage')");
    browser.wait_for_text("Changing the server needs the admin token");

    // Signed in with the admin token: install, grant, call, revoke, uninstall.
    browser.eval("fetch('/logout', { method: 'POST' }).then(() => true)");
    sign_in(&mut browser, ADMIN, "/skills");
    browser.wait_for("document.querySelector('#install-reference')");
    browser.eval(&format!(
        "document.querySelector('#install-reference').value = {}; true",
        json!(reference)
    ));
    browser.eval("document.querySelector('#install-form button').click(); true");
    browser.wait_for_text("Installed io");
    browser.open(&format!("{base}/skills/io__read-file"));
    browser.wait_for("document.querySelector('#grant-form')");
    browser.wait_for_text("it gets all that is granted to io by name");
    let bind = format!("{}::/data:ro", data.display());
    browser.eval(&format!(
        "document.querySelector('#grant-kind').value = 'dirs'; document.querySelector('#grant-value').value = {}; document.querySelector('#grant-form button').click(); true",
        json!(bind)
    ));
    browser.wait_for_text("Done: the next call has it.");
    browser.wait_for_text(&format!("dirs: {bind}"));
    let (status, body) = read_file(&base, "io__read-file");
    assert_eq!(
        (status, &body["output"]),
        (200, &json!("the plan")),
        "{body}"
    );
    browser.screenshot(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots/manage.png"),
    );
    browser.eval("document.querySelector('#grant-values button').click(); true");
    browser.wait_for_text("Nothing granted to it by name.");
    let (status, _) = read_file(&base, "io__read-file");
    assert_eq!(status, 500, "revoked");
    // Outside [serve] grant_dirs: refused on the page, with the code.
    browser.eval("document.querySelector('#grant-value').value = '/etc::/data:ro'; document.querySelector('#grant-form button').click(); true");
    browser.wait_for_text("[GRANT_OUTSIDE]");
    browser.eval("document.querySelector('#uninstall').click(); true");
    browser.wait_for_text("Click again to uninstall io");
    browser.eval("document.querySelector('#uninstall').click(); true");
    browser.wait_for("location.pathname === '/skills' && document.querySelector('main h1')");
    let (status, _) = read_file(&base, "io__read-file");
    assert_eq!(status, 404, "uninstalled");
    let errors: Vec<_> = browser
        .take_errors()
        .into_iter()
        .filter(|e| {
            !e.contains("status of 401")
                && !e.contains("status of 403")
                && !e.contains("status of 400")
        })
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");

    // A page of another origin (another port of this machine) cannot change the
    // server, even with the admin session's cookie.
    let port = base.rsplit(':').next().unwrap();
    let other = if port == "1" { "2" } else { "1" };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .post(&format!("{base}/v1/skills"))
        .header("authorization", &format!("Bearer {ADMIN}"))
        .header("origin", &format!("http://localhost:{other}"))
        .header("content-type", "application/json")
        .send(json!({ "reference": reference }).to_string())
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    let text = response.into_body().read_to_string().unwrap();
    assert!(text.contains("ORIGIN_REFUSED"), "{text}");
}

#[test]
fn a_search_of_the_registries_finds_what_was_published_and_says_which_offer_no_listing() {
    use evo_tests::cli::{evo, stderr, stdout};
    let unique = format!("findme{}", std::process::id());
    let home = home("");
    let reference = format!("oci://{}/manage/{unique}-io:1.0", open());
    ok(
        home.path(),
        &["skill", "publish", skills::PLAIN_IO, &reference],
    );
    // Another HTTP server that is no registry: it offers no listing.
    let elsewhere = HttpServer::start(home.path(), &[]);
    let elsewhere_host = elsewhere.base.trim_start_matches("http://").to_owned();
    let mut config = std::fs::read_to_string(home.path().join("evo.toml")).unwrap();
    config = config.replace("insecure = [", &format!("insecure = [{elsewhere_host:?}, "));
    std::fs::write(home.path().join("evo.toml"), config).unwrap();

    let search = |words: &str, refresh: bool| -> (Value, String) {
        let mut args = vec!["--json", "skill", "search", "--registry", words, "-n", "50"];
        if refresh {
            args.push("--refresh");
        }
        let out = evo(home.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
        (serde_json::from_str(&stdout(&out)).unwrap(), stderr(&out))
    };
    let (found, notes) = search(&format!("{unique} webassembly"), false);
    let hit = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["reference"] == reference.as_str());
    let hit = hit.unwrap_or_else(|| panic!("{found:#}"));
    // Named after the repository it was published to, as publishing names a component.
    let name = format!("{unique}-io");
    assert_eq!(hit["title"], name.as_str(), "{hit}");
    assert_eq!(
        hit["description"],
        format!("The WebAssembly component {name}."),
        "{hit}"
    );
    assert_eq!(
        found["hits"][0]["reference"],
        reference.as_str(),
        "best first: {found:#}"
    );
    assert!(
        notes.contains(&format!(
            "note: {elsewhere_host} offers no listing of its repositories"
        )),
        "{notes}"
    );
    assert!(
        notes.contains("[REGISTRY_AUTH]"),
        "the guarded registry refused: {notes}"
    );

    // The listing is kept: a repository pushed since shows after --refresh.
    let later = format!("oci://{}/manage/{unique}-later:1.0", open());
    ok(home.path(), &["skill", "publish", skills::PLAIN_IO, &later]);
    let (found, _) = search(&unique, false);
    assert!(
        !found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["reference"] == later.as_str()),
        "cached: {found:#}"
    );
    let (found, _) = search(&unique, true);
    assert!(
        found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["reference"] == later.as_str()),
        "{found:#}"
    );

    // What it found installs.
    let out = evo(home.path(), &["skill", "install", &reference]);
    assert!(out.status.success(), "{}", stderr(&out));
    // No registry configured at all: said, with how to name one.
    let bare = tempfile::tempdir().unwrap();
    let out = evo(bare.path(), &["skill", "search", "--registry", "anything"]);
    assert!(
        stderr(&out).contains("error[NO_REGISTRIES]"),
        "{}",
        stderr(&out)
    );
}
