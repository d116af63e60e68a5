//! `evo completions` and `evo man`: the CLI describing itself.

use clap::CommandFactory as _;

use super::{Cli, Failure, out};

/// Prints the completion script for `shell`.
pub(super) fn completions(shell: clap_complete::Shell) {
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "evo", &mut buffer);
    out!("{}", String::from_utf8_lossy(&buffer).trim_end());
}

/// Prints the man page.
pub(super) fn man() -> Result<(), Failure> {
    let mut buffer = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buffer)
        .map_err(|e| {
            Failure::usage(
                "INTERNAL_ERROR",
                format!("could not render the man page: {e}"),
                None,
            )
        })?;
    out!("{}", String::from_utf8_lossy(&buffer).trim_end());
    Ok(())
}
