//! The project directory the file tools work in, opened as a capability.
//!
//! Every path a tool is given — relative, or absolute inside the project — is resolved
//! *within* the project's [`Dir`] by `cap-std`: `..` past the top,
//! absolute paths elsewhere and symlinks that lead out are refused by the resolution
//! itself, with no window between a check and the use. The refusal is
//! `文件路径超出项目目录范围` (or its English form), code `TOOL_BLOCKED`.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::permission::{Locale, outside_message};
use crate::error::{Error, FailureKind, Result};

/// One project directory.
#[derive(Debug, Clone)]
pub struct Project {
    root: PathBuf,
}

impl Project {
    /// The project at `root` (resolved when a tool is called, so it may not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The project's root as given.
    #[cfg(any(test, feature = "dev-tools", feature = "internals"))]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root, opened.
    pub fn open(&self) -> Result<Dir> {
        Dir::open_ambient_dir(&self.root, ambient_authority()).map_err(Error::io_at(&self.root))
    }

    /// `requested` relative to the root: absolute paths must lie inside it, and no
    /// path may climb above it. `tool` and `locale` word the refusal.
    pub fn relative(&self, tool: &str, requested: &str, locale: Locale) -> Result<PathBuf> {
        let path = Path::new(requested);
        let relative = if path.is_absolute() {
            let root = self.root.canonicalize().map_err(Error::io_at(&self.root))?;
            match path.strip_prefix(&root) {
                Ok(inside) => inside.to_owned(),
                Err(_) => return Err(self.outside(tool, requested, locale)),
            }
        } else {
            path.to_owned()
        };
        // Lexically: `a/../..` climbs out even if `a` exists; cap-std would refuse it too,
        // with a less helpful error.
        let mut depth = 0_i32;
        for part in relative.components() {
            match part {
                Component::ParentDir => depth -= 1,
                Component::Normal(_) => depth += 1,
                _ => {}
            }
            if depth < 0 {
                return Err(self.outside(tool, requested, locale));
            }
        }
        Ok(if relative.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            relative
        })
    }

    /// The refusal of `requested`, logged to the security log.
    pub fn outside(&self, tool: &str, requested: &str, locale: Locale) -> Error {
        tracing::warn!(target: "evo::security", tool, path = requested, "blocked: outside the project");
        Error::Blocked {
            tool: tool.to_owned(),
            message: outside_message(locale, requested),
            reason: crate::error::BlockReason::OutsideProject,
        }
    }

    /// Maps an I/O error on `requested` to the tool's error: cap-std's refusal of an
    /// escaping path (a symlink out) is [`Project::outside`]; a missing file is
    /// `NOT_FOUND`; anything else keeps its cause.
    pub fn io_error(
        &self,
        tool: &str,
        requested: &str,
        locale: Locale,
        e: std::io::Error,
    ) -> Error {
        match e.kind() {
            std::io::ErrorKind::PermissionDenied
                if e.to_string().contains("outside of the filesystem") =>
            {
                self.outside(tool, requested, locale)
            }
            std::io::ErrorKind::NotFound => Error::Skill {
                skill: tool.to_owned(),
                kind: FailureKind::NotFound,
                message: format!("{requested} does not exist"),
            },
            _ => Error::Skill {
                skill: tool.to_owned(),
                kind: FailureKind::Failed,
                message: format!("{requested}: {e}"),
            },
        }
    }
}

/// Writes `bytes` to `path` in `dir` atomically: a temporary file beside it, synced,
/// then renamed over it, so a reader or a crash sees the old file or the new one.
pub fn write_atomic(dir: &Dir, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("not a file name"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let temp = {
        let mut name = PathBuf::from(format!(
            ".{}.evo-tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        if let Some(parent) = parent {
            name = parent.join(name);
        }
        name
    };
    let result = (|| {
        let mut file = dir.create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        dir.rename(&temp, dir, path)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_inside_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::new(dir.path());
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            project
                .relative(
                    "read",
                    root.join("src/main.rs").to_str().unwrap(),
                    Locale::En
                )
                .unwrap(),
            Path::new("src/main.rs")
        );
        assert_eq!(
            project.relative("read", "a/../b", Locale::En).unwrap(),
            Path::new("a/../b")
        );
        for escape in ["/etc/passwd", "../x", "a/../../x"] {
            let err = project.relative("read", escape, Locale::Zh).unwrap_err();
            assert_eq!(err.code(), "TOOL_BLOCKED");
            assert_eq!(
                err.to_string(),
                format!("read: 文件路径超出项目目录范围: {escape}")
            );
        }
    }

    #[test]
    fn a_symlink_out_is_refused_by_the_resolution() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let project = Project::new(dir.path());
        let root = project.open().unwrap();
        let e = root.read_to_string("out/secret").unwrap_err();
        let err = project.io_error("read", "out/secret", Locale::En, e);
        assert_eq!(
            err.to_string(),
            "read: out/secret is outside the project directory"
        );
    }

    #[test]
    fn atomic_writes_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::new(dir.path());
        let root = project.open().unwrap();
        root.create_dir_all("src").unwrap();
        write_atomic(&root, Path::new("src/a.rs"), b"one").unwrap();
        write_atomic(&root, Path::new("src/a.rs"), b"two").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/a.rs")).unwrap(),
            "two"
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("src")).unwrap().count(),
            1
        );
    }
}
