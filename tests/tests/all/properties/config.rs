//! `evo.toml`.

use super::*;
use evo_host::Config;

const TOML: &[&str] = &[
    "[llm]\n",
    "[grants]\n",
    "[engine]\n",
    "[native]\n",
    "[agent]\n",
    "[memory]\n",
    "[remotes.b]\n",
    "[[x]]\n",
    "model = ",
    "\"ollama:llama3.2\"",
    "hosts = ",
    "dirs = ",
    "[\"https://api.example.com\"]",
    "skill_dirs = ",
    "compile_deadline_ms = ",
    "0",
    "-1",
    "18446744073709551616",
    "isolation = ",
    "\"required\"",
    "memory = \"read\"",
    "true",
    "\n",
    "=",
    "\"",
    "'",
    "#",
    "{ a = 1 }",
    "1979-05-27T07:32:00Z",
];

fn config_checks(text: &str) {
    if let Err(e) = Config::from_toml(Path::new("evo.toml"), text) {
        assert_eq!(e.code(), "CONFIG_INVALID", "{text:?}: {e}");
        assert!(e.to_string().contains("evo.toml"), "{e}");
    }
}

/// An evo.toml shaped like one: known sections and keys with values of any type.
fn evo_toml() -> impl Strategy<Value = String> {
    let section = prop::sample::select(
        &[
            "", "[llm]", "[grants]", "[engine]", "[native]", "[agent]", "[memory]", "[limits]",
        ][..],
    );
    let key = prop::sample::select(
        &[
            "model",
            "base_url",
            "hosts",
            "dirs",
            "memory",
            "llm",
            "exec",
            "skill_dirs",
            "compile_deadline_ms",
            "max_concurrent_calls",
            "isolation",
            "timeout_ms",
            "max_concurrency",
            "shortlist",
            "auto_recall",
            "embedder",
            "x",
        ][..],
    );
    let value = prop_oneof![
        Just("\"ollama:llama3.2\"".to_owned()),
        Just("[\"https://api.example.com\", \"*\"]".to_owned()),
        Just("\"read\"".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        "\"[ -~]{0,16}\"",
        text_of(TOML),
    ];
    prop::collection::vec((section, prop::collection::vec((key, value), 0..4)), 0..4).prop_map(
        |sections| {
            sections
                .iter()
                .map(|(header, pairs)| {
                    let lines: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    format!("{header}\n{}\n", lines.join("\n"))
                })
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(seeded(4_000))]

    #[test]
    fn any_evo_toml_loads_or_says_where_it_is_wrong(
        text in prop_oneof![text_of(TOML), evo_toml()],
    ) {
        config_checks(&text);
    }
}

#[test]
fn the_evo_toml_corpus_loads_or_says_where_it_is_wrong() {
    for (_, bytes) in corpus("evo_toml") {
        config_checks(&String::from_utf8_lossy(&bytes));
    }
}
