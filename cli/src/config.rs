//! `evo config show`: the effective configuration, and where each value came from.

use clap::Subcommand;
use serde_json::json;

use super::args::{self, Grants, Sources};
use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print every setting, its value, and where it came from (default, a line of
    /// evo.toml, an environment variable, or a flag).
    Show {
        /// Only the settings under this key or table, e.g. `tools` or `engine.pool_slots`.
        key: Option<String>,
    },
    /// Print the path of the configuration file this invocation reads.
    Path,
}

/// The widest `key = value` the comments are aligned after; a longer line's comment
/// follows it. 60 keeps `key = value  # source` within 100 columns for the usual keys.
const COMMENT_COLUMN: usize = 60;

pub(crate) fn run(command: ConfigCommand, globals: &Globals) -> Result<(), Failure> {
    let config = args::config(globals, &Sources::default(), &Grants::default())?;
    let file = config.file.clone().unwrap_or_else(|| {
        globals
            .config
            .clone()
            .unwrap_or_else(|| globals.data_dir.join(evo_host::config::CONFIG_FILE))
    });
    match command {
        ConfigCommand::Path => {
            if globals.json {
                out!(
                    "{}",
                    json!({ "path": file, "exists": config.file.is_some() })
                );
            } else {
                out!("{}", file.display());
            }
        }
        ConfigCommand::Show { key } => {
            let mut entries = config.entries();
            if let Some(key) = &key {
                let table = format!("{key}.");
                entries.retain(|(k, _, _)| k == key || k.starts_with(&table));
                if entries.is_empty() {
                    return Err(Failure::usage(
                        "CONFIG_INVALID",
                        format!("there is no setting `{key}`"),
                        Some("`evo config show` lists every setting"),
                    ));
                }
            }
            if globals.json {
                let values: serde_json::Map<_, _> = entries
                    .iter()
                    .map(|(key, value, source)| {
                        (
                            key.clone(),
                            json!({ "value": value, "source": source.to_string() }),
                        )
                    })
                    .collect();
                out!("{}", json!({ "file": config.file, "settings": values }));
                return Ok(());
            }
            match &config.file {
                Some(path) => out!("# read from {}", path.display()),
                None => out!(
                    "# no configuration file ({} does not exist); defaults and environment",
                    file.display()
                ),
            }
            // Comments line up in one column, which a long value (a list of commands)
            // does not push out: it keeps its comment two spaces after it.
            let width = entries
                .iter()
                .map(|(k, v, _)| k.len() + v.to_string().len() + 3)
                .filter(|w| *w <= COMMENT_COLUMN)
                .max()
                .unwrap_or(0);
            for (key, value, source) in &entries {
                let line = format!("{key} = {value}");
                out!("{line:width$}  # {source}");
            }
        }
    }
    Ok(())
}
