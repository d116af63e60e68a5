//! Which provider to use, from the environment, with the official SDKs' variable names:
//!
//! - `EVO_LLM=openai:<model>` (`OPENAI_API_KEY`, `OPENAI_BASE_URL`),
//! - `EVO_LLM=anthropic:<model>` (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`),
//! - `EVO_LLM=ollama:<model>` (no key; `OLLAMA_BASE_URL`, else `http://localhost:11434/v1`),
//! - `EVO_LLM=scripted:<file>` (replays a script; for tests and demos).
//!
//! Without `EVO_LLM`, `evo.toml` in the data directory may name one (keys stay in the
//! environment, never in the file):
//!
//! ```toml
//! [llm]
//! model = "ollama:llama3.2"                 # provider:model, as EVO_LLM
//! base_url = "http://gpu-box:11434/v1"      # optional: overrides the provider's URL
//! ```

use std::sync::Arc;

use super::LlmProvider;
use super::anthropic::{ANTHROPIC_BASE_URL, AnthropicProvider};
use super::openai::{OLLAMA_BASE_URL, OPENAI_BASE_URL, OpenAiProvider};
use super::scripted::ScriptedProvider;
use crate::error::{Error, Result};

/// How to configure a provider, for messages that find none.
pub const HOW_TO_CONFIGURE: &str = "set EVO_LLM to openai:<model> (with OPENAI_API_KEY), anthropic:<model> (with ANTHROPIC_API_KEY) or ollama:<model> (a local Ollama), e.g. EVO_LLM=ollama:llama3.2, or put [llm] model = \"…\" in evo.toml in the data directory";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The provider `EVO_LLM` names, or `None` when it is unset.
pub fn from_env() -> Result<Option<Arc<dyn LlmProvider>>> {
    let Some(spec) = var("EVO_LLM") else {
        return Ok(None);
    };
    parse(&spec, var).map(Some)
}

/// Name of the configuration file in the data directory.
pub const CONFIG_FILE: &str = "evo.toml";

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    llm: Option<LlmSection>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmSection {
    model: String,
    #[serde(default)]
    base_url: Option<String>,
}

/// The provider `EVO_LLM` names, else the one `evo.toml` in `data_dir` names, else `None`.
pub fn load(data_dir: &std::path::Path) -> Result<Option<Arc<dyn LlmProvider>>> {
    if let Some(provider) = from_env()? {
        return Ok(Some(provider));
    }
    let path = data_dir.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::Io { path, source }),
    };
    let file: File = toml::from_str(&text).map_err(|e| Error::InvalidInput {
        skill: "config".into(),
        reason: format!("{}: {e}", path.display()),
    })?;
    let Some(llm) = file.llm else {
        return Ok(None);
    };
    let base_url = llm.base_url;
    parse(&llm.model, |name| match name {
        "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" | "OLLAMA_BASE_URL" if base_url.is_some() => {
            base_url.clone()
        }
        other => var(other),
    })
    .map(Some)
}

/// The provider for `spec` (`provider:model`), reading keys and URLs through `env`.
pub fn parse(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<Arc<dyn LlmProvider>> {
    let bad = |reason: String| Error::Llm {
        message: format!("EVO_LLM={spec}: {reason}; {HOW_TO_CONFIGURE}"),
        transient: false,
    };
    let (provider, model) = spec
        .split_once(':')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
        .ok_or_else(|| bad("expected provider:model".into()))?;
    Ok(match provider {
        "openai" => {
            let key = env("OPENAI_API_KEY");
            let base = env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_owned());
            if key.is_none() && base == OPENAI_BASE_URL {
                return Err(bad("OPENAI_API_KEY is not set".into()));
            }
            Arc::new(OpenAiProvider::new(&base, model, key))
        }
        "ollama" => {
            let base = env("OLLAMA_BASE_URL").unwrap_or_else(|| OLLAMA_BASE_URL.to_owned());
            Arc::new(OpenAiProvider::new(&base, model, None).labelled("ollama"))
        }
        "anthropic" => {
            let key = env("ANTHROPIC_API_KEY")
                .ok_or_else(|| bad("ANTHROPIC_API_KEY is not set".into()))?;
            let base = env("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
            Arc::new(AnthropicProvider::new(&base, model, key))
        }
        "scripted" => ScriptedProvider::from_file(std::path::Path::new(model))?,
        other => return Err(bad(format!("unknown provider {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn specs_name_provider_and_model() {
        assert_eq!(
            parse("ollama:llama3.2", env(&[])).unwrap().describe(),
            "ollama:llama3.2"
        );
        assert_eq!(
            parse("openai:gpt-4o-mini", env(&[("OPENAI_API_KEY", "sk")]))
                .unwrap()
                .describe(),
            "openai:gpt-4o-mini"
        );
        let local = parse(
            "openai:qwen",
            env(&[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")]),
        )
        .unwrap();
        assert_eq!(
            local.describe(),
            "openai:qwen",
            "a local server needs no key"
        );
        assert_eq!(
            parse(
                "anthropic:claude-sonnet-4-5",
                env(&[("ANTHROPIC_API_KEY", "k")])
            )
            .unwrap()
            .describe(),
            "anthropic:claude-sonnet-4-5"
        );
    }

    #[test]
    fn evo_toml_names_a_provider_when_evo_llm_does_not() {
        if std::env::var_os("EVO_LLM").is_some() {
            return; // The environment wins; this test is about the file.
        }
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[llm]\nmodel = \"ollama:qwen3\"\nbase_url = \"http://gpu:11434/v1\"\n",
        )
        .unwrap();
        assert_eq!(
            load(dir.path()).unwrap().unwrap().describe(),
            "ollama:qwen3"
        );
        std::fs::write(dir.path().join(CONFIG_FILE), "[llm]\nmodle = \"x\"\n").unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("unknown field `modle`"), "{err}");
    }

    #[test]
    fn missing_keys_and_bad_specs_say_how_to_configure() {
        for (spec, expected) in [
            ("openai:gpt-4o", "OPENAI_API_KEY is not set"),
            ("anthropic:claude", "ANTHROPIC_API_KEY is not set"),
            ("gpt-4o", "expected provider:model"),
            ("mistral:large", "unknown provider \"mistral\""),
        ] {
            let err = parse(spec, env(&[])).unwrap_err().to_string();
            assert!(
                err.contains(expected) && err.contains("set EVO_LLM to"),
                "{spec}: {err}"
            );
        }
    }
}
