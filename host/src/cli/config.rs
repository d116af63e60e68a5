//! `evo config show`: the effective configuration, and where each value came from.

use clap::Subcommand;
use serde_json::json;

use super::args::{self, Grants, Sources};
use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print every setting, its value, and where it came from (default, a line of
    /// evo.toml, an environment variable, or a flag).
    Show,
    /// Print the path of the configuration file this invocation reads.
    Path,
}

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
        ConfigCommand::Show => {
            let entries = config.entries();
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
            let width = entries
                .iter()
                .map(|(k, v, _)| k.len() + v.to_string().len() + 3)
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
