//! `evo secret set|list|rm`: the secrets skills may have put into their requests. No
//! command prints a value.

use std::io::{BufRead as _, IsTerminal as _};

use clap::Subcommand;
use evo_host::secrets::SecretStore;
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum SecretCommand {
    /// Set a secret. The value is read from stdin (asked for without echo on a
    /// terminal), never from the command line, where other users could see it.
    Set {
        /// The name: capital letters, digits and `_` (GITHUB_TOKEN).
        name: String,
    },
    /// List the secrets: names, when set, and length; never values.
    #[command(alias = "ls")]
    List,
    /// Remove a secret.
    #[command(alias = "remove")]
    Rm {
        /// The name.
        name: String,
    },
}

pub(crate) fn run(command: SecretCommand, globals: &Globals) -> Result<(), Failure> {
    let store = SecretStore::new(&globals.data_dir);
    match command {
        SecretCommand::Set { name } => {
            // Checked before the value is read, with the library's own error and hint.
            evo_host::secrets::check_name(&name).map_err(|message| evo_host::Error::Secret {
                code: "SECRET_INVALID",
                message,
            })?;
            let value = read_value(&name)?;
            store.set(&name, &value)?;
            if globals.json {
                out!("{}", json!({ "name": name, "set": true }));
            } else {
                out!(
                    "{name}: set ({} characters); skills granted it put it into requests to their hosts",
                    value.trim_end_matches(['\r', '\n']).chars().count()
                );
            }
        }
        SecretCommand::List => {
            let secrets = store.list()?;
            if globals.json {
                out!("{}", json!({ "secrets": secrets }));
            } else if secrets.is_empty() {
                out!("no secrets set; `evo secret set NAME` sets one");
            } else {
                for secret in secrets {
                    let when = chrono::DateTime::from_timestamp_millis(
                        i64::try_from(secret.set_at).unwrap_or(0),
                    )
                    .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                    .unwrap_or_default();
                    out!("{}  set {when}, {} characters", secret.name, secret.chars);
                }
            }
        }
        SecretCommand::Rm { name } => {
            store.remove(&name)?;
            if globals.json {
                out!("{}", json!({ "name": name, "removed": true }));
            } else {
                out!("{name}: removed");
            }
        }
    }
    Ok(())
}

/// The value: asked for without echo on a terminal, else the first line of stdin.
fn read_value(name: &str) -> Result<String, Failure> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("value of {name} (not shown): ")).map_err(|e| {
            Failure::usage(
                "SECRET_INVALID",
                format!("cannot read the value: {e}"),
                None,
            )
        })?
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map_err(|e| {
            Failure::usage(
                "SECRET_INVALID",
                format!("cannot read the value from stdin: {e}"),
                None,
            )
        })?;
        line
    };
    if value.trim().is_empty() {
        return Err(Failure::usage(
            "SECRET_INVALID",
            format!("no value for {name} on stdin"),
            Some("pipe it in: `printenv GITHUB_TOKEN | evo secret set GITHUB_TOKEN`"),
        ));
    }
    Ok(value)
}
