//! `evo skill grants`, `evo skill grant` and `evo skill revoke`: what a skill is granted
//! by name, in its own entry of evo.toml.

use evo_host::{grants::SkillGrants, manage::Asking, manage::Change, manage::Operator};

use crate::args::{self, GrantFlags, Grants, Sources};
use crate::{Failure, Globals, internal, out};

pub(super) async fn show(globals: &Globals, name: &str) -> Result<(), Failure> {
    let host = args::host(globals, &Sources::default(), &Grants::default()).await?;
    print(globals, &host.skill_grants(name)?, &host.secrets())
}

pub(super) async fn change(
    globals: &Globals,
    name: &str,
    change: Change,
    flags: &GrantFlags,
) -> Result<(), Failure> {
    let values = flags.values();
    if values.is_empty() {
        return Err(Failure::usage(
            "INVALID_ARGUMENT",
            "name what to change: --dir, --allow-host, --allow-secret, --allow-memory or --allow-llm".into(),
            Some("`evo skill grant --help` shows each"),
        ));
    }
    let host = args::host(globals, &Sources::default(), &Grants::default()).await?;
    let grants = host
        .change_grants(name, change, &values, &Operator::local("cli"))
        .await?;
    if !globals.json {
        let verb = match change {
            Change::Grant => "granted to",
            Change::Revoke => "revoked from",
        };
        eprintln!(
            "{} {verb} {} in {} [grants.skill.{}]",
            values.len(),
            grants.skill,
            host.config_path().display(),
            grants.kept_under
        );
    }
    print(globals, &grants, &host.secrets())
}

fn print(
    globals: &Globals,
    grants: &SkillGrants,
    secrets: &evo_host::secrets::Secrets,
) -> Result<(), Failure> {
    if globals.json {
        out!("{}", serde_json::to_value(grants).map_err(internal)?);
        return Ok(());
    }
    let how = match grants.asking {
        Asking::Asks => "gets what its manifest asks for, within its policy",
        Asking::ByName => "has no manifest to ask with: gets all that is granted to it by name",
    };
    out!("{} {how}", grants.skill);
    match &grants.entry {
        Some(entry) => out!(
            "  entry:      [grants.skill.{}] {}",
            grants.kept_under,
            entry_text(entry)
        ),
        None => out!(
            "  entry:      none ([grants.skill.{}]); {}",
            grants.kept_under,
            match grants.asking {
                Asking::Asks => "the [grants] every skill shares apply",
                Asking::ByName => "nothing reaches it",
            }
        ),
    }
    super::info::print_held(&grants.granted, secrets);
    Ok(())
}

/// An entry's values that allow something, as `key = value` pairs.
fn entry_text(entry: &serde_json::Value) -> String {
    let parts: Vec<String> = entry
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| {
            !matches!(v, serde_json::Value::Bool(false))
                && v.as_array().is_none_or(|a| !a.is_empty())
                && v.as_str() != Some("none")
        })
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    if parts.is_empty() {
        "(empty: nothing)".to_owned()
    } else {
        parts.join(", ")
    }
}
