//! `evo skill publish`, `install oci://…`, `install --locked`, `update` and `keygen`.

use std::path::Path;

use evo_host::{registry::RegistryInstall, registry::RegistryInstalled};
use serde_json::json;

use crate::args;
use crate::{Failure, Globals, internal, out};

pub(super) async fn publish(
    globals: &Globals,
    path: &Path,
    reference: &str,
    key: Option<&Path>,
) -> Result<(), Failure> {
    if !path.exists() {
        return Err(Failure::usage(
            "INVALID_ARGUMENT",
            format!("{}: no such file or directory", path.display()),
            Some("give a .wasm component, a skill directory, or a skill's .zip archive"),
        ));
    }
    let host = args::bare_host(globals).await?;
    let published = host.publish(path, reference, key).await?;
    if globals.json {
        out!("{}", serde_json::to_value(&published).map_err(internal)?);
        return Ok(());
    }
    let what = match published.kind {
        evo_host::registry::ArtifactKind::Component => "a Wasm component (application/wasm)",
        evo_host::registry::ArtifactKind::Skill => "an Evo skill directory",
    };
    out!("{}: published to {}", published.name, published.reference);
    out!("  artifact:   {what}");
    out!("  digest:     {}", published.digest);
    out!(
        "  signed:     {}",
        if published.signed {
            "yes (a Sigstore bundle among its referrers and a cosign .sig tag)"
        } else {
            "no"
        }
    );
    let pinned = published
        .reference
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map_or(published.reference.as_str(), |(name, _)| name);
    out!(
        "  install:    evo skill install oci://{pinned}@{}",
        published.digest
    );
    Ok(())
}

fn report(
    globals: &Globals,
    host: &evo_host::Host,
    installed: &RegistryInstalled,
) -> Result<(), Failure> {
    let mut extra = vec![("source", json!(installed.source))];
    if let Some(moved) = &installed.tag_moved_to {
        extra.push(("tagMovedTo", json!(moved)));
    }
    super::install::report(globals, host, &installed.outcome, &extra)
}

pub(super) async fn install(
    globals: &Globals,
    reference: &str,
    overwrite: bool,
    locked: bool,
    name: Option<String>,
) -> Result<(), Failure> {
    let host = args::bare_host(globals).await?;
    let progress: Option<evo_host::manage::DownloadProgress> = (!globals.json).then(|| {
        let bar = super::install::progress_bar("pulling");
        Box::new(move |done: u64, total: u64| {
            bar.set_length(total);
            bar.set_position(done);
            if done >= total {
                bar.finish_and_clear();
            }
        }) as evo_host::manage::DownloadProgress
    });
    let options = RegistryInstall {
        overwrite,
        locked,
        progress,
        expect_digest: None,
        name,
    };
    let installed = host.install_from_registry(reference, options).await?;
    report(globals, &host, &installed)
}

pub(super) async fn install_locked(globals: &Globals) -> Result<(), Failure> {
    let host = args::bare_host(globals).await?;
    let installed = host.install_locked().await?;
    if globals.json {
        out!("{}", serde_json::to_value(&installed).map_err(internal)?);
        return Ok(());
    }
    let lock = host.lock_path();
    if installed.is_empty() && !lock.exists() {
        out!(
            "{} does not exist: nothing is pinned (`evo skill install oci://…` pins what it installs)",
            lock.display()
        );
    } else if installed.is_empty() {
        out!(
            "every skill in {} is installed at its pinned digest",
            lock.display()
        );
    }
    for each in &installed {
        report(globals, &host, each)?;
    }
    Ok(())
}

pub(super) async fn update(globals: &Globals, names: &[String]) -> Result<(), Failure> {
    let host = args::bare_host(globals).await?;
    let names: Vec<String> = if names.is_empty() {
        host.manager()?
            .list_skills(&evo_host::packages::ListQuery::default())?
            .skills
            .into_iter()
            .filter(|skill| skill.source.is_some())
            .map(|skill| skill.name)
            .collect()
    } else {
        names.to_vec()
    };
    // Each skill on its own: one refused (unsigned, unreachable, moved to something
    // that does not install) neither stops nor hides the others.
    let mut results = Vec::new();
    for name in &names {
        results.push((name, host.update_from_registry(name).await));
    }
    if let [(_, Err(_))] = results.as_slice()
        && let Some((_, Err(e))) = results.pop()
    {
        return Err(e.into());
    }
    let failed = results.iter().find_map(|(_, r)| r.as_ref().err());
    let exit = failed.map(|e| e.answer().exit);
    if globals.json {
        let entries = results
            .iter()
            .map(|(name, result)| match result {
                Ok(update) => serde_json::to_value(update).map_err(internal),
                Err(e) => Ok(json!({
                    "name": name, "success": false, "error": e.to_string(),
                    "code": e.code(), "hint": e.hint(),
                })),
            })
            .collect::<Result<Vec<_>, _>>()?;
        out!("{}", serde_json::Value::Array(entries));
        return exit.map_or(Ok(()), |status| Err(Failure::Reported(status)));
    }
    if results.is_empty() {
        out!("no skill was installed from a registry");
    }
    for (name, result) in &results {
        let update = match result {
            Ok(update) => update,
            Err(e) => {
                eprintln!("error[{}]: {name}: {e}", e.code());
                if let Some(hint) = e.hint() {
                    eprintln!("  hint: {hint}");
                }
                continue;
            }
        };
        if update.from == update.to {
            out!(
                "{}: up to date ({} is {})",
                update.name,
                update.reference,
                update.to
            );
        } else {
            out!(
                "{}: {} moved from {} to {}: installed and pinned",
                update.name,
                update.reference,
                update.from,
                update.to
            );
        }
    }
    if let Some(status) = exit {
        let refused = results.iter().filter(|(_, r)| r.is_err()).count();
        eprintln!(
            "{refused} of {} skills were not updated (each said why above)",
            results.len()
        );
        return Err(Failure::Reported(status));
    }
    Ok(())
}

pub(super) fn keygen(globals: &Globals, path: &Path) -> Result<(), Failure> {
    let private = path.with_extension("key");
    let public = path.with_extension("pub");
    for file in [&private, &public] {
        if file.exists() {
            return Err(Failure::usage(
                "INVALID_ARGUMENT",
                format!("{} exists; a key pair is never overwritten", file.display()),
                Some("choose another PATH, or remove the old pair first"),
            ));
        }
    }
    let (private_pem, public_pem) = evo_host::registry::generate_signing_key()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, &e))?;
    }
    write_private(&private, private_pem.as_bytes())?;
    std::fs::write(&public, public_pem).map_err(|e| io_failure(&public, &e))?;
    if globals.json {
        out!("{}", json!({ "private": private, "public": public }));
    } else {
        out!(
            "private key: {} (sign with `evo skill publish --sign {}`)",
            private.display(),
            private.display()
        );
        out!(
            "public key:  {} (list it in [trust] keys where skills are installed)",
            public.display()
        );
    }
    Ok(())
}

/// Writes `bytes` to a new file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| io_failure(path, &e))?;
    file.write_all(bytes).map_err(|e| io_failure(path, &e))
}

fn io_failure(path: &Path, e: &std::io::Error) -> Failure {
    Failure::usage(
        "IO_ERROR",
        format!("{}: {e}", path.display()),
        Some("check that the directory exists and that you can write to it"),
    )
}
