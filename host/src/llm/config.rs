//! Which provider to use, with the official SDKs' variable names:
//!
//! - `EVO_LLM=openai:<model>` (`OPENAI_API_KEY`, `OPENAI_BASE_URL`),
//! - `EVO_LLM=anthropic:<model>` (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`),
//! - `EVO_LLM=ollama:<model>` (no key; `OLLAMA_BASE_URL`, else `http://localhost:11434/v1`),
//! - `EVO_LLM=scripted:<file>` (replays a script; for tests and demos).
//!
//! Without `EVO_LLM`, `evo.toml` may name one (keys stay in the environment, never in
//! the file; see [`crate::config`]):
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
use crate::settings::Invalid;
use crate::skill::kernel::HOW_TO_CONFIGURE_LLM as HOW_TO_CONFIGURE;

/// The language model to use: `[llm]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    /// `provider:model` (`openai:gpt-4o-mini`, `anthropic:…`, `ollama:…`, `scripted:FILE`).
    pub model: Option<String>,
    /// Overrides the provider's base URL.
    pub base_url: Option<String>,
    /// Models a run (the HTTP API's `model`) or an llm skill (its manifest's `model`)
    /// may ask for instead of the configured one, by the provider's name for them.
    pub models: Vec<String>,
}

impl crate::settings::Section for LlmSettings {
    const TABLE: &'static str = "llm";

    fn check(&mut self, _: &std::path::Path) -> std::result::Result<(), Invalid> {
        if let Some(model) = &self.model
            && !model
                .split_once(':')
                .is_some_and(|(p, m)| !p.is_empty() && !m.is_empty())
        {
            return Err(Invalid::new(
                "llm.model",
                format!("{model:?} is not provider:model, e.g. \"ollama:llama3.2\""),
            ));
        }
        if let Some(empty) = self.models.iter().find(|m| m.trim().is_empty()) {
            return Err(Invalid::new(
                "llm.models",
                format!("{empty:?} is not a model name, e.g. \"gpt-4o-mini\""),
            ));
        }
        Ok(())
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The provider `settings` name (from `evo.toml`, `EVO_LLM` or a flag; see
/// [`crate::config`]), or `None` when they name none. Keys come from the environment;
/// `settings.base_url` overrides the provider's URL variable. A local model (`local`,
/// `local:FILE`) needs the data directory: [`provider_in`].
pub fn provider(settings: &LlmSettings) -> Result<Option<Arc<dyn LlmProvider>>> {
    provider_in(settings, None)
}

/// [`provider`] for the data directory `data_dir`, where local models are installed:
/// `local` is its default weights, `local:FILE` a file there (or a path), and with no
/// model named the default weights are used when they are installed.
pub fn provider_in(
    settings: &LlmSettings,
    data_dir: Option<&std::path::Path>,
) -> Result<Option<Arc<dyn LlmProvider>>> {
    if let Some(local) = local(settings.model.as_deref(), data_dir)? {
        return Ok(Some(local));
    }
    let Some(model) = &settings.model else {
        return Ok(None);
    };
    let base_url = settings.base_url.clone();
    parse(model, |name| match name {
        "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" | "OLLAMA_BASE_URL" if base_url.is_some() => {
            base_url.clone()
        }
        other => var(other),
    })
    .map(Some)
}

/// The local provider `spec` names (`local`, `local:FILE`), or the installed default
/// when `spec` names nothing.
fn local(
    spec: Option<&str>,
    data_dir: Option<&std::path::Path>,
) -> Result<Option<Arc<dyn LlmProvider>>> {
    let installed = data_dir.and_then(super::local::installed);
    let file = match spec {
        // The model installed last, else the default's name (for the message saying
        // how to install it).
        Some("local") => Some(
            installed
                .as_ref()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or(super::local::MODEL_FILE),
        ),
        Some(spec) => match spec.strip_prefix("local:") {
            Some(file) => Some(file),
            None => return Ok(None),
        },
        None => None,
    };
    let path = match (file, data_dir) {
        (Some(file), _) if file.contains('/') => std::path::PathBuf::from(file),
        (Some(file), Some(dir)) => super::local::model_path(dir, file),
        (Some(_), None) => {
            return Err(Error::Llm {
                message: "a local model is read from the data directory, which is not known here"
                    .into(),
                transient: false,
            });
        }
        (None, Some(_)) => match installed.clone() {
            Some(path) => path,
            None => return Ok(None),
        },
        (None, None) => return Ok(None),
    };
    local_provider(path)
}

#[cfg(feature = "local-llm")]
fn local_provider(path: std::path::PathBuf) -> Result<Option<Arc<dyn LlmProvider>>> {
    Ok(Some(Arc::new(super::local::LocalProvider::new(path)?)))
}

#[cfg(not(feature = "local-llm"))]
fn local_provider(_path: std::path::PathBuf) -> Result<Option<Arc<dyn LlmProvider>>> {
    Err(Error::FeatureNotBuilt {
        feature: "local-llm",
        what: "the local model".to_owned(),
    })
}

/// Longest wait for [`probe`]: a doctor's check, not a request a user waits on.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Asks the configured provider's server whether it is there and takes the key
/// (`GET {base}/models`), for `evo doctor`. `Ok` says what answered; `Err` says what is
/// wrong. A scripted provider is checked by loading its file.
pub fn probe(settings: &LlmSettings) -> std::result::Result<String, String> {
    let Some(spec) = &settings.model else {
        return Err("no model is configured".into());
    };
    provider(settings).map_err(|e| e.to_string())?;
    let env = |name: &str| match name {
        "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" | "OLLAMA_BASE_URL"
            if settings.base_url.is_some() =>
        {
            settings.base_url.clone()
        }
        other => var(other),
    };
    let (base, headers): (String, Vec<(&str, String)>) = match spec.split_once(':') {
        Some(("openai", _)) => (
            env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
            env("OPENAI_API_KEY")
                .map(|k| vec![("authorization", format!("Bearer {k}"))])
                .unwrap_or_default(),
        ),
        Some(("ollama", _)) => (
            env("OLLAMA_BASE_URL").unwrap_or_else(|| OLLAMA_BASE_URL.to_owned()),
            Vec::new(),
        ),
        Some(("anthropic", _)) => (
            env("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned()),
            vec![
                ("x-api-key", env("ANTHROPIC_API_KEY").unwrap_or_default()),
                ("anthropic-version", "2023-06-01".to_owned()),
            ],
        ),
        _ => return Ok(format!("{spec} (replays a file)")),
    };
    let url = format!("{}/models", base.trim_end_matches('/'));
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(PROBE_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut request = agent.get(&url);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    match request.call() {
        Ok(response) => match response.status().as_u16() {
            401 | 403 => Err(format!(
                "{url} refused the API key (HTTP {})",
                response.status().as_u16()
            )),
            status if status >= 500 => Err(format!("{url} answered HTTP {status}")),
            _ => Ok(format!("{spec} at {base}")),
        },
        Err(e) => Err(format!("{url} is not reachable: {e}")),
    }
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
    fn settings_name_a_provider_and_override_its_url() {
        assert!(provider(&LlmSettings::default()).unwrap().is_none());
        let settings = LlmSettings {
            model: Some("ollama:qwen3".into()),
            base_url: Some("http://gpu:11434/v1".into()),
            models: Vec::new(),
        };
        assert_eq!(
            provider(&settings).unwrap().unwrap().describe(),
            "ollama:qwen3"
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
