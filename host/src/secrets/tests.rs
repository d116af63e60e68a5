//! The secret store and the scanner: values found as written and in disguise.

use super::*;

fn secrets(pairs: &[(&str, &str)]) -> Secrets {
    Secrets::new(
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

#[test]
fn a_value_is_found_in_the_common_encodings_of_any_text_that_carries_it() {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let value = "sk-live_4f9a/8b7c+6d5e?x=1";
    let s = secrets(&[("API_KEY", value)]);
    let percent = |text: &str| -> String {
        text.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02x}")
                }
            })
            .collect()
    };
    // At every alignment a longer text can give it.
    for prefix in ["", "a", "ab", "abc", "Authorization: Bearer "] {
        let text = format!("{prefix}{value}; and then some");
        for encoded in [
            STANDARD.encode(&text),
            URL_SAFE_NO_PAD.encode(&text),
            hex::encode(&text),
            hex::encode_upper(&text),
            percent(&text),
        ] {
            assert_eq!(
                s.find(encoded.as_bytes()),
                Some("API_KEY"),
                "{prefix:?}: {encoded}"
            );
            let mut body = encoded.clone().into_bytes();
            assert_eq!(s.mask(&mut body), ["API_KEY"]);
            let masked = String::from_utf8(body).unwrap();
            // What is left cannot be decoded back into the value.
            let decoded = STANDARD
                .decode(masked.trim_end_matches('='))
                .or_else(|_| URL_SAFE_NO_PAD.decode(&masked))
                .or_else(|_| hex::decode(&masked))
                .unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&decoded).contains(value),
                "{masked}"
            );
        }
    }
    assert_eq!(s.find(b"an ordinary answer, 0123456789abcdef"), None);
    // A stream holds back enough to find the longest form: the value with every
    // byte a JSON escape (`\u0041`), with room for quoted-printable's line breaks.
    assert_eq!(s.longest(), 6 * value.len() + 3 * (value.len() / 12 + 1));
}

#[test]
fn a_value_escaped_byte_by_byte_is_redacted_in_place() {
    let s = secrets(&[("API_KEY", "sk-0123456789")]);
    let every_byte: String = "sk-0123456789"
        .bytes()
        .map(|b| format!("%{b:02x}"))
        .collect();
    let text = format!("before {every_byte} after");
    let (text, found) = s.redact(&text);
    assert_eq!(text, "before [REDACTED:API_KEY] after");
    assert_eq!(found, ["API_KEY"]);
    // JSON escapes and quoted-printable, mixed with plain bytes, in one text with the
    // plain value: each is found where it is.
    let text = "a=\\u0073k-0123456789 b=sk-0123=\r\n456789=2E c=sk-0123456789";
    let (redacted, _) = s.redact(text);
    assert_eq!(
        redacted,
        "a=[REDACTED:API_KEY] b=[REDACTED:API_KEY]=2E c=[REDACTED:API_KEY]"
    );
    let mut body = b"x%73%6B-0123456789y".to_vec();
    assert_eq!(s.mask(&mut body), ["API_KEY"]);
    assert_eq!(body, b"x*****************y");
}

#[test]
fn the_store_keeps_values_owner_only_and_lists_no_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path());
    assert!(store.snapshot().unwrap().is_empty());
    store.set("GITHUB_TOKEN", "ghp_0123456789abcdef\n").unwrap();
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].name.as_str(), listed[0].chars),
        ("GITHUB_TOKEN", 20)
    );
    assert_eq!(
        store.snapshot().unwrap().value("GITHUB_TOKEN"),
        Some("ghp_0123456789abcdef")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    store.set("GITHUB_TOKEN", "ghp_changed_0123456789").unwrap();
    assert_eq!(
        store.snapshot().unwrap().value("GITHUB_TOKEN"),
        Some("ghp_changed_0123456789")
    );
    store.remove("GITHUB_TOKEN").unwrap();
    assert!(store.snapshot().unwrap().is_empty());
    assert_eq!(
        store.remove("GITHUB_TOKEN").unwrap_err().to_string(),
        "secret: no secret named GITHUB_TOKEN is set; set it with `evo secret set GITHUB_TOKEN`"
    );
}

#[test]
fn bad_names_and_values_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path());
    let err = store.set("github-token", "0123456789").unwrap_err();
    assert_eq!(err.code(), "SECRET_INVALID");
    assert!(
        err.to_string()
            .contains("use capital letters, digits and `_`")
    );
    let err = store.set("SHORT", "abc").unwrap_err();
    assert_eq!(
        err.to_string(),
        "secret: the value of SHORT has 3 characters; a secret needs at least 8, or redacting it would mangle ordinary text"
    );
    assert!(store.set("TWO", "line one\nline two").is_err());
    assert!(!store.path().exists(), "nothing written");
}

#[test]
fn values_are_found_and_redacted_wherever_they_are() {
    let s = secrets(&[("A_KEY", "alpha-secret-1"), ("B_KEY", "beta-secret-22")]);
    assert_eq!(s.find(b"x alpha-secret-1 y"), Some("A_KEY"));
    assert_eq!(s.find(b"nothing here"), None);
    let (text, found) = s.redact("a=alpha-secret-1, b=beta-secret-22, a=alpha-secret-1");
    assert_eq!(
        text,
        "a=[REDACTED:A_KEY], b=[REDACTED:B_KEY], a=[REDACTED:A_KEY]"
    );
    assert_eq!(found, ["A_KEY", "B_KEY"]);
    assert!(matches!(s.redact("clean").0, Cow::Borrowed(_)));
    assert_eq!(
        s.redact_bytes(b"<beta-secret-22>").unwrap(),
        b"<[REDACTED:B_KEY]>"
    );
    assert!(Secrets::default().redact_bytes(b"alpha-secret-1").is_none());
    let mut body = *b"[alpha-secret-1]";
    assert_eq!(s.mask(&mut body), ["A_KEY"]);
    assert_eq!(&body, b"[**************]");
}

#[test]
fn placeholders_are_replaced_only_when_allowed() {
    let value = |name: &str| match name {
        "GITHUB_TOKEN" => Ok("ghp_value".to_owned()),
        other => Err(format!("{other} is not granted")),
    };
    assert_eq!(
        substitute("Bearer {{secret:GITHUB_TOKEN}}", value).unwrap(),
        Some("Bearer ghp_value".to_owned())
    );
    assert_eq!(substitute("no placeholder", value).unwrap(), None);
    assert_eq!(
        substitute("{{secret:OTHER}}", value).unwrap_err(),
        "OTHER is not granted"
    );
    assert!(substitute("{{secret:GITHUB_TOKEN", value).is_err());
    assert_eq!(placeholder("GITHUB_TOKEN"), "{{secret:GITHUB_TOKEN}}");
}
