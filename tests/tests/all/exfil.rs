//! Secrets the guest never sees, through `evo`: a hostile skill granted a secret for one
//! server tries every route it has to get the value anywhere else, and the value is
//! found nowhere but in the one granted request.

use std::io::Write as _;
use std::process::Stdio;

use evo_tests::cli::{command, evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

use crate::fetch::{Server, ok};

const VALUE: &str = "exfil-0123456789-value";

/// The `authorization` header of a request as the test servers receive it.
fn authorization(request: &str) -> String {
    request
        .lines()
        .find_map(|l| l.strip_prefix("authorization: "))
        .unwrap_or("none")
        .to_owned()
}

/// `evo secret set NAME`, the value on stdin.
pub(crate) fn set_secret(home: &std::path::Path, name: &str, value: &str) -> std::process::Output {
    let mut child = command(home, &["secret", "set", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{value}").unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn secrets_are_set_listed_and_removed_without_showing_a_value() {
    let home = tempfile::tempdir().unwrap();
    let out = set_secret(home.path(), "EXFIL_TOKEN", VALUE);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "EXFIL_TOKEN: set (22 characters); skills granted it put it into requests to their hosts\n"
    );
    let out = evo(home.path(), &["secret", "list"]);
    assert!(
        stdout(&out).starts_with("EXFIL_TOKEN  set "),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).ends_with(", 22 characters\n"));
    assert!(!stdout(&out).contains(VALUE));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let file = home.path().join("secrets.json");
        assert_eq!(
            std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    let out = set_secret(home.path(), "bad-name", VALUE);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error[SECRET_INVALID]: secret: \"bad-name\" is not a secret name"),
        "{}",
        stderr(&out)
    );
    let out = set_secret(home.path(), "SHORT", "abc");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[SECRET_INVALID]: secret: the value of SHORT has 3 characters; a secret needs at least 8"),
        "{}",
        stderr(&out)
    );

    assert_eq!(
        stdout(&evo(home.path(), &["secret", "rm", "EXFIL_TOKEN"])),
        "EXFIL_TOKEN: removed\n"
    );
    let out = evo(home.path(), &["secret", "rm", "EXFIL_TOKEN"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[SECRET_NOT_FOUND]: secret: no secret named EXFIL_TOKEN is set; set it with `evo secret set EXFIL_TOKEN`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_skill_that_tries_every_route_never_gets_the_value_out() {
    let home = tempfile::tempdir().unwrap();
    assert!(
        set_secret(home.path(), "EXFIL_TOKEN", VALUE)
            .status
            .success()
    );
    // The granted server echoes the authorization header in its body and a header, as a
    // debugging endpoint might.
    let granted = Server::start_with(|_, request| {
        let auth = authorization(request);
        let body = format!("you sent: {auth}");
        format!(
            "HTTP/1.1 200 OK\r\nx-echo: {auth}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    });
    let other = Server::start_at("127.0.0.2", |_, _| ok("thanks"));
    let input = json!({
        "granted": format!("http://127.0.0.1:{}/echo", granted.port),
        "other": format!("http://127.0.0.2:{}/collect", other.port),
        "leak": VALUE,
    })
    .to_string();
    let grants = |json: bool| {
        let mut args = vec![
            "skill".to_owned(),
            "run".into(),
            skills::EXFIL.into(),
            "--allow-host".into(),
            format!("http://127.0.0.1:{}", granted.port),
            "--allow-host".into(),
            format!("http://127.0.0.2:{}", other.port),
            "--allow-secret".into(),
            "EXFIL_TOKEN".into(),
            "--input".into(),
            input.clone(),
        ];
        if json {
            args.push("--json".into());
        }
        args
    };

    // Once for the whole outcome (output, printed text, steps), once for the events and
    // every log line.
    let args = grants(true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = evo(home.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let outcome: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let args = grants(false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let logged = command(home.path(), &args)
        .env("EVO_LOG", "trace")
        .output()
        .unwrap();
    assert!(logged.status.success(), "{}", stderr(&logged));

    // The granted request carried the value, once per run, and nothing else did.
    let to_granted = granted.received();
    assert_eq!(to_granted.len(), 2, "{to_granted:?}");
    for request in &to_granted {
        assert!(
            request.contains(&format!("authorization: Bearer {VALUE}")),
            "{request}"
        );
    }
    let to_other = other.received().join("\n");
    assert!(!to_other.contains(VALUE), "{to_other}");
    assert!(
        !to_other.contains("exfil-0123456789"),
        "not even a part: {to_other}"
    );

    // The echo reached the guest masked; the placeholder to the other host was refused.
    let output = &outcome["output"];
    assert_eq!(
        output["echoed"],
        format!("you sent: Bearer {}", "*".repeat(VALUE.len()))
    );
    assert_eq!(output["echoed_header"], "[REDACTED]");
    let attempts: Vec<&str> = output["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        attempts[0].starts_with("refused: ") && attempts[0].contains("denied"),
        "{attempts:?}"
    );
    assert!(attempts[1].starts_with("refused: "), "{attempts:?}");
    // The masked echo may go anywhere granted; the value in a body, header or query may not.
    assert_eq!(attempts[2], "sent: 200");
    for attempt in &attempts[5..] {
        assert!(attempt.starts_with("refused: "), "{attempts:?}");
    }
    assert_eq!(output["leak"], "[REDACTED:EXFIL_TOKEN]");

    // Nowhere outside the granted request: output, printed text, steps, events, logs,
    // the call history and the security log.
    let everything = [stdout(&out), stderr(&out), stdout(&logged), stderr(&logged)];
    for text in &everything {
        assert!(!text.contains(VALUE), "leaked: {text}");
    }
    assert!(
        stderr(&logged).contains("event from exfil: {\"leak\":\"[REDACTED:EXFIL_TOKEN]\"}"),
        "{}",
        stderr(&logged)
    );
    let history = evo(
        home.path(),
        &["tool", "history", "--json", "--limit", "100"],
    );
    let history_text = stdout(&history);
    assert!(!history_text.contains(VALUE), "{history_text}");
    let history: Vec<Value> = serde_json::from_str(&history_text).unwrap();
    let blocked: Vec<&Value> = history
        .iter()
        .filter(|r| r["status"] == "blocked")
        .collect();
    let refused = |reason: &str| {
        blocked
            .iter()
            .any(|r| r["tool"] == "http" && r["error"].as_str().unwrap().contains(reason))
    };
    assert!(
        refused(&format!(
            "http://127.0.0.2:{}: secret EXFIL_TOKEN is granted to exfil for http://127.0.0.1:* only, not for this host",
            other.port
        )),
        "{blocked:#?}"
    );
    assert!(
        refused("the request carries the value of secret EXFIL_TOKEN, which exfil was never given"),
        "{blocked:#?}"
    );
    assert!(
        refused("the request body carries the value of secret EXFIL_TOKEN"),
        "{blocked:#?}"
    );
    assert!(
        blocked.iter().any(|r| r["tool"] == "secret"
            && r["error"]
                == "[PERMISSION_DENIED] the skill's output carried the value of secret EXFIL_TOKEN; redacted"),
        "{blocked:#?}"
    );
    let call = history.iter().find(|r| r["tool"] == "exfil").unwrap();
    assert!(
        call["arguments"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:EXFIL_TOKEN]"),
        "{call}"
    );
}

#[test]
fn a_secret_not_granted_or_not_set_is_never_put_in() {
    let home = tempfile::tempdir().unwrap();
    let granted = Server::start_with(|_, request| {
        ok(if request.contains("{{secret:") {
            "placeholder"
        } else {
            "other"
        })
    });
    let input = json!({
        "granted": format!("http://127.0.0.1:{}/echo", granted.port),
        "other": "http://127.0.0.2:1/collect",
    })
    .to_string();
    let allow = format!("http://127.0.0.1:{}", granted.port);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "skill",
            "run",
            skills::EXFIL,
            "--allow-host",
            &allow,
            "--input",
            &input,
        ];
        args.extend_from_slice(extra);
        evo(home.path(), &args)
    };

    // Not granted: the request is refused, the server never sees the placeholder.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!(
            "error[PERMISSION_DENIED]: exfil: denied: http://127.0.0.1:{}",
            granted.port
        )),
        "{}",
        stderr(&out)
    );
    // Granted but not set.
    let out = run(&["--allow-secret", "EXFIL_TOKEN"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(granted.connections(), 0);
    let blocked = evo(
        home.path(),
        &["tool", "history", "--status", "blocked", "--json"],
    );
    let blocked: Vec<Value> = serde_json::from_str(&stdout(&blocked)).unwrap();
    let reasons: Vec<&str> = blocked
        .iter()
        .map(|r| r["error"].as_str().unwrap())
        .collect();
    assert!(
        reasons.contains(&format!(
            "[PERMISSION_DENIED] outbound request refused: http://127.0.0.1:{}: no secret named EXFIL_TOKEN is set; set it with `evo secret set EXFIL_TOKEN`",
            granted.port
        ).as_str()),
        "{reasons:#?}"
    );
    assert!(
        reasons.contains(&format!(
            "[PERMISSION_DENIED] outbound request refused: http://127.0.0.1:{}: secret EXFIL_TOKEN is not granted to exfil; it must ask for it in its manifest (capabilities.secrets) and the operator must allow it (--allow-secret EXFIL_TOKEN or [grants] secrets)",
            granted.port
        ).as_str()),
        "{reasons:#?}"
    );

    // `skill info` says what is granted and that it is not set.
    let out = evo(
        home.path(),
        &[
            "skill",
            "info",
            skills::EXFIL,
            "--allow-host",
            &allow,
            "--allow-secret",
            "EXFIL_TOKEN",
        ],
    );
    assert!(
        stdout(&out).contains("\n  granted:    secret EXFIL_TOKEN for http://127.0.0.1:* (not set: `evo secret set EXFIL_TOKEN`)\n"),
        "{}",
        stdout(&out)
    );
}

/// `evo [FLAGS] skill run exfil --json` with `input`, granted both servers' hosts and
/// the secret; it must succeed.
fn run_exfil(
    home: &std::path::Path,
    flags: &[&str],
    granted: &Server,
    other: &Server,
    input: &str,
) -> std::process::Output {
    let granted_host = format!("http://127.0.0.1:{}", granted.port);
    let other_host = format!("http://127.0.0.2:{}", other.port);
    let mut args = flags.to_vec();
    args.extend([
        "skill",
        "run",
        skills::EXFIL,
        "--allow-host",
        &granted_host,
        "--allow-host",
        &other_host,
        "--allow-secret",
        "EXFIL_TOKEN",
        "--input",
        input,
        "--json",
    ]);
    let out = evo(home, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn a_server_that_echoes_the_key_encoded_hands_the_skill_only_a_mask() {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    let home = tempfile::tempdir().unwrap();
    assert!(
        set_secret(home.path(), "EXFIL_TOKEN", VALUE)
            .status
            .success()
    );
    // A debugging endpoint that answers the request's headers encoded: base64 in a
    // header and the body, hex and percent-encoding in the body.
    let granted = Server::start_with(|_, request| {
        let auth = authorization(request);
        let line = format!("Authorization: {auth}");
        let percent: String = line
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let body = format!(
            "b64={}\nhex={}\npct={percent}",
            STANDARD.encode(&line),
            hex::encode(&line)
        );
        format!(
            "HTTP/1.1 200 OK\r\nx-echo: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            STANDARD.encode(&line),
            body.len()
        )
    });
    let other = Server::start_at("127.0.0.2", |_, _| ok("thanks"));
    // The caller hands the skill the value in disguise too.
    let leak = STANDARD.encode(format!("key={VALUE}"));
    let input = json!({
        "granted": format!("http://127.0.0.1:{}/echo", granted.port),
        "other": format!("http://127.0.0.2:{}/collect", other.port),
        "leak": leak,
    })
    .to_string();
    let out = run_exfil(home.path(), &[], &granted, &other, &input);
    let outcome: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let output = &outcome["output"];

    // Every encoded form reached the guest masked: nothing decodes back to the value.
    let echoed = output["echoed"].as_str().unwrap();
    let line = format!("Authorization: Bearer {VALUE}");
    for form in [STANDARD.encode(&line), hex::encode(&line)] {
        assert!(!echoed.contains(&form), "{echoed}");
    }
    assert!(!echoed.contains("exfil%2D0123456789%2Dvalue"), "{echoed}");
    assert!(echoed.contains("****"), "{echoed}");
    assert_eq!(output["echoed_header"], "[REDACTED]");
    // The disguised value the caller passed is redacted from the output, and never
    // left for the other host.
    let redacted = output["leak"].as_str().unwrap();
    assert!(
        redacted != leak && redacted.contains("[REDACTED:EXFIL_TOKEN]"),
        "{output}"
    );
    let to_other = other.received().join("\n");
    assert!(!to_other.contains(&leak), "{to_other}");
    for text in [stdout(&out), stderr(&out), to_other] {
        assert!(!text.contains(VALUE), "{text}");
    }
}

/// The encodings that may write a byte or every byte escaped, and base32: "Mask
/// percent-encoding of every byte (either case, mixed with literal bytes), base32 (both
/// alphabets, with and without padding), JSON `\u00XX` escapes, and quoted-printable, in
/// responses and in every place output is written; the history must never hold a form
/// the output scanner masks."
#[test]
fn a_value_escaped_byte_by_byte_or_in_base32_is_masked_everywhere_it_could_be_written() {
    let home = tempfile::tempdir().unwrap();
    assert!(
        set_secret(home.path(), "EXFIL_TOKEN", VALUE)
            .status
            .success()
    );
    // Every byte percent-encoded, alternating case, one byte left literal.
    fn percent(text: &str) -> String {
        text.bytes()
            .enumerate()
            .map(|(i, b)| match i % 3 {
                0 => format!("%{b:02X}"),
                1 => format!("%{b:02x}"),
                _ => char::from(b).to_string(),
            })
            .collect()
    }
    fn json_escaped(text: &str) -> String {
        text.bytes().map(|b| format!("\\u{b:04x}")).collect()
    }
    // Quoted-printable: every byte as =XX, with a soft line break in the middle.
    fn quoted_printable(text: &str) -> String {
        let all: String = text.bytes().map(|b| format!("={b:02X}")).collect();
        let (a, b) = all.split_at(all.len() / 2 / 3 * 3);
        format!("{a}=\r\n{b}")
    }
    fn forms(line: &str) -> Vec<String> {
        vec![
            percent(line),
            data_encoding::BASE32.encode(line.as_bytes()),
            data_encoding::BASE32_NOPAD.encode(line.as_bytes()),
            data_encoding::BASE32HEX
                .encode(line.as_bytes())
                .to_lowercase(),
            json_escaped(line),
            quoted_printable(line),
        ]
    }
    let granted = Server::start_with(move |_, request| {
        let line = format!("Authorization: {}", authorization(request));
        let body = forms(&line).join("\n");
        format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    });
    let other = Server::start_at("127.0.0.2", |_, _| ok("thanks"));
    // The caller hands the skill the value escaped byte by byte too.
    let leak = percent(&format!("key={VALUE}"));
    let input = json!({
        "granted": format!("http://127.0.0.1:{}/echo", granted.port),
        "other": format!("http://127.0.0.2:{}/collect", other.port),
        "leak": leak,
    })
    .to_string();
    let out = run_exfil(home.path(), &["-vv"], &granted, &other, &input);
    let outcome: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let echoed = outcome["output"]["echoed"].as_str().unwrap();
    assert!(echoed.contains("****"), "the response was masked: {echoed}");
    let history = stdout(&evo(
        home.path(),
        &["tool", "history", "--json", "--limit", "100"],
    ));
    assert!(history.contains("[REDACTED:EXFIL_TOKEN]"), "{history}");
    let sent = other.received().join("\n");
    let secret_forms: Vec<String> = forms(&format!("Bearer {VALUE}"))
        .into_iter()
        .chain(forms(VALUE))
        .chain([leak.clone()])
        .collect();
    for (place, text) in [
        ("the guest's output", echoed.to_owned()),
        ("--json", stdout(&out)),
        ("the -vv log", stderr(&out)),
        ("the history", history),
        ("the other host", sent),
    ] {
        assert!(!text.contains(VALUE), "{place}: {text}");
        for form in &secret_forms {
            // Base32 of the value alone is aligned differently inside the line: the
            // line's own forms are the ones the server sent.
            assert!(
                !text.contains(form.as_str()),
                "{place} holds {form}: {text}"
            );
        }
    }
}
