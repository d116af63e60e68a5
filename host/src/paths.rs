//! Where Evo keeps its data.

use std::path::{Path, PathBuf};

/// Environment variable naming the data directory.
pub const EVO_HOME: &str = "EVO_HOME";

/// The data directory: the explicit choice, else `$EVO_HOME`, else the platform data
/// directory (`~/.local/share/evo` on Linux), else `./.evo`.
pub fn data_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_owned();
    }
    if let Some(dir) = std::env::var_os(EVO_HOME).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir().map_or_else(|| PathBuf::from(".evo"), |d| d.join("evo"))
}

/// Environment variable naming the compiled-component cache directory, shared by
/// every data directory that uses it. Compiled artifacts are native code the host
/// loads without re-checking: the directory must be writable by its owner only.
pub const EVO_CACHE_DIR: &str = "EVO_CACHE_DIR";

/// The compiled-component cache: `$EVO_CACHE_DIR`, else `cache/wasm` inside the data
/// directory.
pub fn wasm_cache_dir(data_dir: &Path) -> PathBuf {
    match std::env::var_os(EVO_CACHE_DIR).filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => data_dir.join("cache").join("wasm"),
    }
}

/// Where installed skills live inside a data directory, one directory each.
pub fn skills_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("skills")
}

/// The directory of the Python package `module` as `python` (a command on `PATH`, or a
/// path) has it installed, found without importing it (a package may need a runtime
/// Evo does not install); `None` when it has none.
pub fn python_package_dir(python: &Path, module: &str) -> Option<PathBuf> {
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import importlib.util as u, sys; s = u.find_spec(sys.argv[1]); print(s.submodule_search_locations[0])",
            module,
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .filter(|dir| dir.is_dir())
}

/// Writes `bytes` to `path` whole or not at all: to a temporary file in the same
/// directory (made if missing), then renamed over `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> crate::Result<()> {
    use crate::error::Error;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(Error::io_at(dir))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(Error::io_at(dir))?;
    std::io::Write::write_all(&mut file, bytes).map_err(Error::io_at(file.path()))?;
    file.persist(path).map_err(|e| Error::Io {
        path: path.to_owned(),
        source: e.error,
    })?;
    Ok(())
}
