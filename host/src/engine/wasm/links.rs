//! Symbolic links a guest creates in a read-write grant point down, never out.
//!
//! WASI never follows a link out of a preopened directory, but the next reader of the
//! directory may: a native script, a built-in tool, the user's editor. A link planted as
//! `notes -> ../../.ssh/id_ed25519` would hand them a file the skill was never granted.
//! So `symlink-at` accepts only a relative target without `..`: resolved from the
//! directory that holds the link, such a target can only name something beneath it,
//! whatever other links say now or later (a check that resolved `..` against today's
//! tree could be undone by a link made afterwards). Absolute targets were already
//! refused by WASI.

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode, HostDescriptor};

use super::state::HostState;

/// The filesystem interface whose `symlink-at` is replaced (the version wasmtime-wasi
/// defines; guests importing an older 0.2 version are linked to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Replaces WASI's `symlink-at` with one that refuses links leaving their directory,
/// or every link unless `allowed` (the operator's `[engine] symlinks`). Call after WASI
/// is added to `linker` ([`super::state::add_to_linker`]).
pub(super) fn add_to_linker(linker: &mut Linker<HostState>, allowed: bool) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let replaced = linker.instance(FILESYSTEM_TYPES)?.func_wrap_async(
        "[method]descriptor.symlink-at",
        move |mut store, (dir, target, link): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                let state = super::state::reached(store.data_mut());
                if !allowed || !points_down(&target) {
                    tracing::warn!(
                        skill = %state.skill,
                        link,
                        target,
                        "refused a symbolic link: {}",
                        if allowed {
                            "it points up or out of its directory"
                        } else {
                            "[engine] symlinks = false"
                        }
                    );
                    return Ok((Err(ErrorCode::NotPermitted),));
                }
                let mut view = state.filesystem();
                match HostDescriptor::symlink_at(&mut view, dir, target, link).await {
                    Ok(()) => Ok((Ok(()),)),
                    Err(e) => Ok((Err(types::Host::convert_error_code(&mut view, e)?),)),
                }
            })
        },
    );
    linker.allow_shadowing(false);
    replaced
}

/// Whether a link to `target` can only name something beneath the link's directory:
/// relative, with no `..` component.
fn points_down(target: &str) -> bool {
    !target.is_empty()
        && !target.starts_with('/')
        && target.split('/').all(|component| component != "..")
}

#[cfg(test)]
mod tests {
    use super::points_down;

    #[test]
    fn a_link_may_point_down_but_not_up_or_out() {
        for down in [
            "notes.txt",
            "sub/dir/file",
            "./file",
            "a//b",
            ".hidden",
            "...",
        ] {
            assert!(points_down(down), "{down} stays beneath the link");
        }
        for out in ["..", "../x", "a/../../x", "sub/..", "/etc/passwd", ""] {
            assert!(!points_down(out), "{out} may leave the link's directory");
        }
    }
}
