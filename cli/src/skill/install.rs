//! `evo skill install`, `uninstall` and `update-description`.

use std::path::Path;

use evo_host::packages::InstallOptions;
use serde_json::json;

use crate::args;
use crate::{Failure, Globals, internal, out};

pub(super) async fn install(
    globals: &Globals,
    source: &Path,
    overwrite: bool,
    native: bool,
    name: Option<String>,
) -> Result<(), Failure> {
    if !source.exists() {
        return Err(Failure::usage(
            "INVALID_ARGUMENT",
            format!("{}: no such file or directory", source.display()),
            Some("give a skill's .zip archive, its directory, or a .wasm component"),
        ));
    }
    let host = args::bare_host(globals).await?;
    let bar = (!globals.json).then(install_bar);
    let mut progress = |done: u64, total: u64| {
        if let Some(bar) = &bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    };
    let options = InstallOptions {
        overwrite,
        progress: Some(&mut progress),
        native,
        name,
        ..InstallOptions::default()
    };
    let result = host.install(source, options).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let outcome = result?;
    report(globals, &host, &outcome, &[])
}

/// Prints what `outcome` installed: as JSON with `extra` fields, or as lines, with
/// `extra`'s after the kind and version.
pub(super) fn report(
    globals: &Globals,
    host: &evo_host::Host,
    outcome: &evo_host::packages::Outcome,
    extra: &[(&str, serde_json::Value)],
) -> Result<(), Failure> {
    let record = outcome.skill.clone().unwrap_or_default();
    // A plain component's functions, each a skill of its own.
    let functions: Vec<String> = host
        .skills()
        .iter()
        .filter(|s| {
            s.executor
                .as_any()
                .and_then(|any| any.downcast_ref::<evo_host::wasm::PlainExecutor>())
                .is_some_and(|plain| plain.component().meta().name == outcome.name)
        })
        .map(|s| s.meta.name.clone())
        .collect();
    if globals.json {
        let mut value = serde_json::to_value(outcome).map_err(internal)?;
        value["kind"] = json!(record.kind);
        value["capabilities"] = json!(record.capabilities);
        if !functions.is_empty() {
            value["skills"] = json!(functions);
        }
        for (key, extra) in extra {
            value[*key] = extra.clone();
        }
        out!("{value}");
        return Ok(());
    }
    out!("{}: {}", outcome.name, outcome.message);
    out!("  kind:       {}", record.kind);
    out!("  version:    {}", record.version);
    if let Some(source) = &record.source {
        super::info::print_source(source);
    }
    if !functions.is_empty() {
        const SHOWN: usize = 3;
        let more = if functions.len() > SHOWN { ", …" } else { "" };
        out!(
            "  skills:     {} functions of a plain component: {}{more} (`evo skill info {}` lists them)",
            functions.len(),
            functions[..functions.len().min(SHOWN)].join(", "),
            outcome.name
        );
    }
    super::info::print_requests(&record.capabilities, &record.kind);
    if record.kind == "native" {
        out!(
            "  trust:      native script: runs as a Node process, less isolated than a Wasm skill"
        );
    }
    if let Some(runs_as) = record.runs_as_text() {
        out!("  runs as:    {runs_as}");
    }
    // `digest:` is what `skill info` prints and `sha256sum` gives for the component
    // installed (not for one built from a script at install, which is no file of the
    // user's); `files:` covers every file the skill was installed with.
    let shipped = record.runs_as.is_empty();
    let component = host.skill(&outcome.name).filter(|_| shipped).and_then(|s| {
        s.executor
            .as_any()
            .and_then(|any| any.downcast_ref::<evo_host::wasm::WasmExecutor>())
            .map(|wasm| wasm.skill().digest().to_owned())
    });
    if let Some(digest) = component {
        out!("  digest:     sha256:{digest}");
    }
    out!("  files:      sha256:{}", record.digest);
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(())
}

/// A bar for installs of large archives (hidden when stderr is not a terminal).
fn install_bar() -> indicatif::ProgressBar {
    progress_bar("installing")
}

/// A bar labelled `what` (hidden when stderr is not a terminal).
pub(super) fn progress_bar(what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::stderr_with_hz(10),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{what} {{bar:30}} {{bytes}}/{{total_bytes}}"
    )) {
        bar.set_style(style);
    }
    bar
}

pub(super) async fn uninstall(globals: &Globals, name: &str) -> Result<(), Failure> {
    let outcome = args::bare_host(globals).await?.uninstall(name)?;
    print_outcome(globals, &outcome)
}

pub(super) async fn update_description(
    globals: &Globals,
    name: &str,
    description: &str,
) -> Result<(), Failure> {
    let outcome = args::bare_host(globals)
        .await?
        .manager()?
        .update_skill_description(name, description)?;
    print_outcome(globals, &outcome)
}

fn print_outcome(globals: &Globals, outcome: &evo_host::packages::Outcome) -> Result<(), Failure> {
    if globals.json {
        out!("{}", serde_json::to_value(outcome).map_err(internal)?);
    } else {
        out!("{}: {}", outcome.name, outcome.message);
    }
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(())
}
