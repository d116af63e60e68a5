//! Which provider to use, from the environment, with the official SDKs' variable names:
//!
//! - `EVO_LLM=openai:<model>` (`OPENAI_API_KEY`, `OPENAI_BASE_URL`),
//! - `EVO_LLM=anthropic:<model>` (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`),
//! - `EVO_LLM=ollama:<model>` (no key; `OLLAMA_BASE_URL`, else `http://localhost:11434/v1`),
//! - `EVO_LLM=scripted:<file>` (replays a script; for tests and demos).

use std::sync::Arc;

use super::LlmProvider;
use super::anthropic::{ANTHROPIC_BASE_URL, AnthropicProvider};
use super::openai::{OLLAMA_BASE_URL, OPENAI_BASE_URL, OpenAiProvider};
use super::scripted::ScriptedProvider;
use crate::error::{Error, Result};

/// How to configure a provider, for messages that find none.
pub const HOW_TO_CONFIGURE: &str = "set EVO_LLM to openai:<model> (with OPENAI_API_KEY), anthropic:<model> (with ANTHROPIC_API_KEY) or ollama:<model> (a local Ollama), e.g. EVO_LLM=ollama:llama3.2";

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
