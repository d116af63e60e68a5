//! `evo remote add|list|rm`: other Evo nodes whose skills this one lists and calls as
//! `NAME/skill`.

use clap::Subcommand;
use evo_host::remotes::RemoteSpec;
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum RemoteCommand {
    /// Add a node (or replace one of that name): its skills are listed and called as
    /// `NAME/skill`. The node runs `evo serve --http`; its token is kept as a secret.
    Add {
        /// The name its skills go by here.
        name: String,
        /// Where the node's `evo serve --http` listens: `http://HOST:PORT`.
        url: String,
        /// The secret holding the node's token (`evo secret set NAME`), when it has one.
        #[arg(long, value_name = "SECRET")]
        token_secret: Option<String>,
    },
    /// List the nodes, and whether each answers (and with how many skills).
    #[command(alias = "ls")]
    List,
    /// Remove a node.
    #[command(alias = "remove")]
    Rm {
        /// The name.
        name: String,
    },
}

pub(crate) async fn run(command: RemoteCommand, globals: &Globals) -> Result<(), Failure> {
    let data = &globals.data_dir;
    match command {
        RemoteCommand::Add {
            name,
            url,
            token_secret,
        } => {
            let spec = RemoteSpec {
                name: name.clone(),
                url,
                token_secret,
            };
            evo_host::remotes::check(&spec).map_err(|message| {
                Failure::usage(
                    "INVALID_ARGUMENT",
                    message,
                    Some("evo remote add NAME http://HOST:PORT [--token-secret SECRET]"),
                )
            })?;
            evo_host::remotes::add(data, spec.clone())?;
            // Say at once whether it answers: a typo in the URL shows now, not at the
            // first call.
            let reached = probe(globals, spec).await;
            if globals.json {
                out!(
                    "{}",
                    json!({ "name": name, "added": true, "reached": reached.as_ref().ok(), "error": reached.as_ref().err() })
                );
            } else {
                match reached {
                    Ok(count) => out!("{name}: added; {count} skills, called as {name}/SKILL"),
                    Err(e) => out!("{name}: added, but it does not answer now: {e}"),
                }
            }
        }
        RemoteCommand::List => {
            let remotes = evo_host::remotes::load(data)?;
            let mut rows = Vec::new();
            for spec in remotes {
                let reached = probe(globals, spec.clone()).await;
                rows.push((spec, reached));
            }
            if globals.json {
                let list: Vec<_> = rows
                    .iter()
                    .map(|(spec, reached)| {
                        json!({ "name": spec.name, "url": spec.url, "tokenSecret": spec.token_secret,
                                "skills": reached.as_ref().ok(), "error": reached.as_ref().err() })
                    })
                    .collect();
                out!("{}", json!({ "remotes": list }));
            } else if rows.is_empty() {
                out!("no remotes; `evo remote add NAME http://HOST:PORT` adds one");
            } else {
                for (spec, reached) in rows {
                    let token = spec
                        .token_secret
                        .map(|t| format!(", token from secret {t}"))
                        .unwrap_or_default();
                    match reached {
                        Ok(count) => out!("{}  {}{token}: {count} skills", spec.name, spec.url),
                        Err(e) => out!("{}  {}{token}: unreachable: {e}", spec.name, spec.url),
                    }
                }
            }
        }
        RemoteCommand::Rm { name } => {
            if !evo_host::remotes::remove(data, &name)? {
                return Err(Failure::usage(
                    "REMOTE_NOT_FOUND",
                    format!("no remote named {name}"),
                    Some("`evo remote list` shows the remotes"),
                ));
            }
            if globals.json {
                out!("{}", json!({ "name": name, "removed": true }));
            } else {
                out!("{name}: removed");
            }
        }
    }
    Ok(())
}

/// How many skills the node serves, or why it cannot be asked.
#[cfg(feature = "full")]
async fn probe(globals: &Globals, spec: RemoteSpec) -> Result<usize, String> {
    use std::sync::Arc;

    let remote = Arc::new(evo_host::remotes::Remote::new(
        &globals.data_dir,
        spec,
        Arc::new(evo_host::secrets::SecretStore::new(&globals.data_dir)),
    ));
    remote
        .list()
        .await
        .map(|s| s.len())
        .map_err(|e| e.to_string())
}

/// A build without remotes keeps the list but cannot ask a node.
#[cfg(not(feature = "full"))]
async fn probe(_globals: &Globals, spec: RemoteSpec) -> Result<usize, String> {
    Err(evo_host::Error::FeatureNotBuilt {
        feature: "remotes",
        what: format!("remote {}", spec.name),
    }
    .to_string())
}
