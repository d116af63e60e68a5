use super::*;
use crate::capabilities::MemoryAccess;

fn parse(text: &str) -> Result<Config> {
    Config::from_toml(Path::new("/etc/evo/evo.toml"), text)
}

fn invalid(text: &str) -> (Option<usize>, Option<String>, String) {
    match parse(text).unwrap_err() {
        Error::Config {
            line, key, message, ..
        } => (line, key, message),
        other => panic!("expected CONFIG_INVALID, got {other:?}"),
    }
}

#[test]
fn an_empty_file_is_every_default() {
    let config = parse("").unwrap();
    assert_eq!(config.engine.pool_slots, DEFAULT_POOL_SLOTS);
    assert_eq!(config.kernel.max_input_attempts, 3);
    assert_eq!(config.native.isolation, Isolation::BestEffort);
    assert!(
        config
            .entries()
            .iter()
            .all(|(_, _, s)| *s == Source::Default)
    );
}

#[test]
fn values_come_with_the_line_they_were_read_from() {
    let config = parse(
        "skill_dirs = [\"skills\"]\n\n[engine]\npool_slots = 4\n\n[native]\nisolation = \"required\"\n",
    )
    .unwrap();
    assert_eq!(config.engine.pool_slots, 4);
    assert_eq!(config.native.isolation, Isolation::Required);
    assert_eq!(config.skill_dirs, [PathBuf::from("/etc/evo/skills")]);
    let file = |line| Source::File {
        path: "/etc/evo/evo.toml".into(),
        line,
    };
    assert_eq!(config.source("skill_dirs"), file(1));
    assert_eq!(config.source("engine.pool_slots"), file(4));
    assert_eq!(config.source("native.isolation"), file(7));
    assert_eq!(config.source("engine.pooling"), Source::Default);
    let shown = config
        .entries()
        .into_iter()
        .find(|(k, _, _)| k == "engine.pool_slots")
        .unwrap();
    assert_eq!(
        (shown.1, shown.2.to_string()),
        (serde_json::json!(4), "/etc/evo/evo.toml:4".to_owned())
    );
}

#[test]
fn an_unknown_key_names_its_line_and_key() {
    let (line, key, message) = invalid("[engine]\npool_slots = 4\npool_sots = 5\n");
    assert_eq!(line, Some(3));
    assert_eq!(key.as_deref(), Some("engine.pool_sots"));
    assert!(message.contains("unknown field `pool_sots`"), "{message}");
}

#[test]
fn a_wrong_type_names_its_line_and_key() {
    let (line, key, message) = invalid("[kernel]\n\nmax_depth = \"deep\"\n");
    assert_eq!((line, key.as_deref()), (Some(3), Some("kernel.max_depth")));
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn out_of_range_and_unknown_words_are_refused_not_defaulted() {
    for (text, expected_key, expected) in [
        (
            "[engine]\npool_slots = 0\n",
            "engine.pool_slots",
            "0 is out of range; use 1 to 1024",
        ),
        (
            "[kernel]\nfallback = \"retry\"\n",
            "kernel.fallback",
            "\"retry\" is not a fallback; use throw, return_raw or return_partial",
        ),
        (
            "[grants]\nmemory = \"all\"\n",
            "grants.memory",
            "\"all\" is not a memory access; use none, read or read-write",
        ),
        (
            "[grants]\nhosts = [\"ftp://example.com\"]\n",
            "grants.hosts",
            "\"ftp://example.com\": the scheme \"ftp\" is not allowed; use http or https; e.g. \"https://api.github.com\", \"https://*.example.com\" or \"http://127.0.0.1:8080\"",
        ),
        (
            "[grants]\nsecrets = [\"github-token\"]\n",
            "grants.secrets",
            "\"github-token\" is not a secret name: use capital letters, digits and `_`, starting with a letter, at most 64 (GITHUB_TOKEN)",
        ),
        (
            "[grants]\nllm = \"yes\"\n",
            "grants.llm",
            "expected true or false, found a string",
        ),
        (
            "[grants]\nnetwork = true\n",
            "grants.network",
            "unknown field `network`; a grant is one of dirs, llm, memory, exec, hosts, secrets, or a [grants.skill.NAME] table",
        ),
        (
            "[grants.skill.notes]\nnetwork = true\n",
            "grants.skill.notes.network",
            "unknown field `network`; a grant is one of dirs, llm, memory, exec, hosts, secrets",
        ),
        (
            "[llm]\nmodel = \"gpt-4o\"\n",
            "llm.model",
            "\"gpt-4o\" is not provider:model, e.g. \"ollama:llama3.2\"",
        ),
        (
            "[tools]\nlocale = \"fr\"\n",
            "tools.locale",
            "\"fr\" is not a locale; use en, zh or auto",
        ),
        (
            "[tools]\nprofile = \"reviewer\"\n",
            "tools.profile",
            "\"reviewer\" is not a profile; use explore, edit, full, admin or one under [tools.profiles]",
        ),
        (
            "[tools.profiles.reviewer]\nlevel = \"root\"\n",
            "tools.profiles.reviewer.level",
            "\"root\" is not a permission level; use read_only, read_write, execute or admin",
        ),
        (
            "[native]\nmax_tasks = 8\n",
            "native.max_tasks",
            "8 is out of range; use 16 to 4194304",
        ),
        (
            "[agent]\nshortlist = 0\n",
            "agent.shortlist",
            "0 is out of range; use 1 to 10000",
        ),
        (
            "[serve]\nmax_calls = 5000\n",
            "serve.max_calls",
            "5000 is out of range; use 1 to 4096",
        ),
        (
            "[grants.skill.Bad]\nllm = true\n",
            "grants.skill.Bad",
            "\"Bad\" is not a skill name (lower-case letters, digits, `_` and `-`)",
        ),
    ] {
        let (line, key, message) = invalid(text);
        assert_eq!(
            (key.as_deref(), message.as_str()),
            (Some(expected_key), expected)
        );
        // A key is on line 2; a table is named on its header, line 1.
        let expected_line =
            if expected_key.starts_with("grants.skill") && expected_key.matches('.').count() == 2 {
                1
            } else {
                2
            };
        assert_eq!(line, Some(expected_line), "{text}");
    }
}

#[test]
fn a_syntax_error_names_its_line() {
    let (line, key, message) = invalid("[engine]\npool_slots = = 4\n");
    assert_eq!((line, key), (Some(2), None));
    assert!(!message.is_empty());
}

#[test]
fn grants_have_a_default_and_per_skill_entries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    let path = dir.path().join("evo.toml");
    let config = Config::from_toml(
        &path,
        "[grants]\ndirs = [\"docs::/data:ro\"]\nhosts = [\"https://*.github.com\"]\nsecrets = [\"GITHUB_TOKEN\"]\n\n[grants.skill.notes]\nllm = true\nmemory = \"read-write\"\n",
    )
    .unwrap();
    let default = config.grants.for_skill("calculate");
    assert_eq!(default.dirs.len(), 1);
    assert_eq!(default.hosts[0].to_string(), "https://*.github.com");
    assert_eq!(default.secrets, ["GITHUB_TOKEN"]);
    assert_eq!(default.dirs[0].guest, "/data");
    assert!(!default.llm);
    let notes = config.grants.for_skill("notes");
    assert!(notes.llm);
    assert_eq!(notes.memory, MemoryAccess::ReadWrite);
    assert!(
        notes.dirs.is_empty(),
        "a skill's entry replaces the default"
    );
    assert!(matches!(
        config.source("grants.skill.notes.memory"),
        Source::File { line: 8, .. }
    ));
}

#[test]
fn the_environment_overrides_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(CONFIG_FILE),
        "[llm]\nmodel = \"ollama:qwen3\"\n[native]\nisolation = \"best-effort\"\n",
    )
    .unwrap();
    let env = |name: &str| match name {
        "EVO_LLM" => Some("openai:gpt-4o-mini".to_owned()),
        "EVO_NATIVE_ISOLATION" => Some("required".to_owned()),
        _ => None,
    };
    let config = Config::load_with_env(dir.path(), None, env).unwrap();
    assert_eq!(config.llm.model.as_deref(), Some("openai:gpt-4o-mini"));
    assert_eq!(config.source("llm.model").to_string(), "env EVO_LLM");
    assert_eq!(config.native.isolation, Isolation::Required);
}

#[test]
fn a_missing_file_is_an_error_only_when_named() {
    let dir = tempfile::tempdir().unwrap();
    let none = |_: &str| None;
    assert!(
        Config::load_with_env(dir.path(), None, none)
            .unwrap()
            .file
            .is_none()
    );
    let named = dir.path().join("other.toml");
    let err = Config::load_with_env(dir.path(), Some(&named), none).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(
        err.to_string()
            .contains("cannot read the configuration file"),
        "{err}"
    );
}

#[test]
fn serve_tools_match_names_and_prefixes() {
    let mut serve = Config::default().serve;
    assert!(serve.serves("anything"), "empty: everything");
    serve.tools = vec!["calculate".into(), "pdf*".into()];
    assert!(serve.serves("calculate"));
    assert!(serve.serves("pdf-fill"));
    assert!(!serve.serves("calculator"));
    assert!(!serve.serves("read"));
}

#[test]
fn the_serve_table_is_read_and_checked() {
    let config =
        parse("[serve]\ntools = [\"calculate\", \"pdf*\"]\nmax_calls = 8\nmax_message_kb = 64\n")
            .unwrap();
    assert_eq!(config.serve.tools, ["calculate", "pdf*"]);
    assert_eq!(
        (config.serve.max_calls, config.serve.max_message_kb),
        (8, 64)
    );
    let (line, key, message) = invalid("[serve]\nmax_calls = 0\n");
    assert_eq!(
        (line, key.as_deref(), message.as_str()),
        (
            Some(2),
            Some("serve.max_calls"),
            "0 is out of range; use 1 to 4096"
        )
    );
}

#[test]
fn registries_and_trust_are_read_with_keys_beside_the_file() {
    let config = parse(
        "[registries]\ninsecure = [\"127.0.0.1:5000\"]\n\n[registries.credentials.\"ghcr.io\"]\nusername = \"alice\"\nsecret = \"GHCR_TOKEN\"\n\n[trust]\nkeys = [\"keys/alice.pub\"]\nrequire_signature = true\n",
    )
    .unwrap();
    assert_eq!(config.registries.insecure, ["127.0.0.1:5000"]);
    let ghcr = &config.registries.credentials["ghcr.io"];
    assert_eq!(
        (ghcr.username.as_str(), ghcr.secret.as_str()),
        ("alice", "GHCR_TOKEN")
    );
    assert_eq!(
        config.trust.keys,
        [PathBuf::from("/etc/evo/keys/alice.pub")]
    );
    assert!(config.trust.require_signature);
    assert!(matches!(
        config.source("trust.require_signature"),
        Source::File { line: 10, .. }
    ));

    let (line, key, message) = invalid("[registries]\ninsecure = [\"http://127.0.0.1:5000\"]\n");
    assert_eq!(
        (line, key.as_deref()),
        (Some(2), Some("registries.insecure"))
    );
    assert!(message.contains("write host or host:port"), "{message}");
    let (_, key, message) = invalid(
        "[registries.credentials.\"ghcr.io\"]\nusername = \"alice\"\nsecret = \"ghcr token\"\n",
    );
    assert_eq!(key.as_deref(), Some("registries.credentials.ghcr.io"));
    assert!(
        message.contains("the `evo secret` holding the password or token"),
        "{message}"
    );
    let (_, key, _) = invalid("[trust]\nrequire_signatures = true\n");
    assert_eq!(key.as_deref(), Some("trust.require_signatures"));
}

#[test]
fn every_key_of_a_table_read_says_it_came_from_the_file() {
    let config = parse(
        "[registries.credentials.\"ghcr.io\"]\nusername = \"alice\"\nsecret = \"GHCR_TOKEN\"\n\n[tools.profiles.reviewer]\nlevel = \"read_only\"\n",
    )
    .unwrap();
    for (key, line) in [
        ("registries.credentials.ghcr.io.username", 2),
        ("registries.credentials.ghcr.io.secret", 3),
        ("tools.profiles.reviewer.level", 6),
    ] {
        assert_eq!(
            config.source(key),
            Source::File {
                path: PathBuf::from("/etc/evo/evo.toml"),
                line
            },
            "{key}"
        );
    }
    assert_eq!(config.source("tools.locale"), Source::Default);
    assert_eq!(config.source("engine.pool_slots"), Source::Default);
}
