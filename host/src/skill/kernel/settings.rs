//! The kernel's tables of `evo.toml`: `[kernel]` (depth, attempts, what an llm skill
//! returns when its output stays invalid, retries) and `[preprocess]`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_INPUT_ATTEMPTS, DEFAULT_MAX_OUTPUT_ATTEMPTS,
    DEFAULT_RETRY_BACKOFF,
};
use crate::settings::{Invalid, Section, in_range, word};

/// What an llm skill returns when its output is still invalid after the last attempt
/// (`[kernel] fallback` in evo.toml: `throw`, `return_raw` or `return_partial`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Fail with `SKILL_VALIDATION_FAILED` (strict; the default).
    #[default]
    Throw,
    /// Return what the model said: the parsed JSON, or the text if it was not JSON.
    ReturnRaw,
    /// Return the valid fields, with the invalid ones listed under `_invalid`.
    ReturnPartial,
}

impl Fallback {
    /// The fallback `evo.toml` names `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "throw" => Some(Self::Throw),
            "return_raw" => Some(Self::ReturnRaw),
            "return_partial" => Some(Self::ReturnPartial),
            _ => None,
        }
    }
}

/// How the kernel runs calls: `[kernel]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelSettings {
    /// Call depth limit.
    pub max_depth: u32,
    /// Tries a model gets to fix a skill's arguments in one run.
    pub max_input_attempts: u32,
    /// Tries an llm skill gets to produce valid output.
    pub max_output_attempts: u32,
    /// What an llm skill returns when its output is still invalid.
    #[serde(deserialize_with = "fallback")]
    pub fallback: Fallback,
    /// First wait before a retry, ms (doubled each time).
    pub retry_backoff_ms: u64,
}

fn fallback<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Fallback, D::Error> {
    word(
        d,
        Fallback::parse,
        "a fallback",
        "throw, return_raw or return_partial",
    )
}

impl Default for KernelSettings {
    /// The kernel's defaults: `DEFAULT_MAX_DEPTH`, `DEFAULT_MAX_INPUT_ATTEMPTS`,
    /// `DEFAULT_MAX_OUTPUT_ATTEMPTS`, [`Fallback::Throw`], `DEFAULT_RETRY_BACKOFF`.
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            max_input_attempts: DEFAULT_MAX_INPUT_ATTEMPTS,
            max_output_attempts: DEFAULT_MAX_OUTPUT_ATTEMPTS,
            fallback: Fallback::Throw,
            retry_backoff_ms: u64::try_from(DEFAULT_RETRY_BACKOFF.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Section for KernelSettings {
    const TABLE: &'static str = "kernel";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        in_range("kernel.max_depth", self.max_depth, 1, 1_000)?;
        in_range("kernel.max_input_attempts", self.max_input_attempts, 1, 100)?;
        in_range(
            "kernel.max_output_attempts",
            self.max_output_attempts,
            1,
            100,
        )?;
        in_range("kernel.retry_backoff_ms", self.retry_backoff_ms, 0, 60_000)
    }
}

/// The skills that preprocess (`[preprocess]` in evo.toml): each is called before what it
/// preprocesses, in the order listed, and its answer replaces what it was given. A
/// preprocessor is any skill that takes and gives these shapes (redaction,
/// normalisation, language detection); what it calls is not preprocessed, and one that
/// fails stops what it preprocesses (`PREPROCESSOR_FAILED`): a redaction that did not
/// happen must not let the text through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Preprocess {
    /// Called with `{"message"}` on every agent message, before recall and routing;
    /// answers `{"message", …}` (the other fields go into the run's scratch under the
    /// preprocessor's name).
    pub message: Vec<String>,
    /// By skill name (`*` for every skill): called with `{"skill", "input"}` before
    /// that skill's input is checked; answers `{"input"}`.
    pub input: std::collections::BTreeMap<String, Vec<String>>,
}

impl Preprocess {
    /// The preprocessors of `skill`'s input: those of `*`, then its own, each once,
    /// itself left out.
    pub fn of_input(&self, skill: &str) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for list in [self.input.get("*"), self.input.get(skill)]
            .into_iter()
            .flatten()
        {
            for name in list {
                if name != skill && !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// Every skill named, each once.
    pub fn named(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for name in self.message.iter().chain(self.input.values().flatten()) {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        names
    }
}

impl Section for Preprocess {
    const TABLE: &'static str = "preprocess";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        let named = self
            .message
            .iter()
            .map(|name| ("preprocess.message".to_owned(), name))
            .chain(self.input.iter().flat_map(|(target, names)| {
                names
                    .iter()
                    .map(move |name| (format!("preprocess.input.{target}"), name))
            }));
        for (key, name) in named {
            if !crate::skill::manifest::is_valid_name(name) {
                return Err(Invalid::new(
                    key,
                    format!(
                        "{name:?} is not a skill name; list the skills that preprocess, e.g. [\"redact-pii\"]"
                    ),
                ));
            }
        }
        Ok(())
    }
}
