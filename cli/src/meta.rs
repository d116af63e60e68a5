//! `evo completions` and `evo man`: the CLI describing itself.

use clap::CommandFactory as _;

use super::{Cli, Failure, out};

/// Prints the completion script for `shell`.
pub(super) fn completions(shell: clap_complete::Shell) {
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut visible(&Cli::command()), "evo", &mut buffer);
    out!("{}", String::from_utf8_lossy(&buffer).trim_end());
}

/// `command` without the subcommands and flags `--help` hides (the internal
/// `__native-*` subcommands): clap_complete would offer them at a TAB. clap cannot take
/// a subcommand out of a command, so the command is made again from its visible parts.
fn visible(command: &clap::Command) -> clap::Command {
    let mut shown = clap::Command::new(command.get_name().to_owned())
        .args(
            command
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .cloned(),
        )
        .subcommands(
            command
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(visible),
        );
    if let Some(about) = command.get_about() {
        shown = shown.about(about.clone());
    }
    if let Some(about) = command.get_long_about() {
        shown = shown.long_about(about.clone());
    }
    if let Some(version) = command.get_version() {
        shown = shown.version(version.to_owned());
    }
    if command.is_propagate_version_set() {
        shown = shown.propagate_version(true);
    }
    shown.visible_aliases(
        command
            .get_visible_aliases()
            .map(str::to_owned)
            .collect::<Vec<_>>(),
    )
}

/// Prints the man page: the top-level command, then a section for every subcommand
/// (`EVO SKILL RUN`, …) with its description, synopsis and options.
pub(super) fn man() -> Result<(), Failure> {
    let failed = |e: std::io::Error| {
        Failure::usage(
            "INTERNAL_ERROR",
            format!("could not render the man page: {e}"),
            None,
        )
    };
    let mut command = Cli::command();
    command.build();
    let mut buffer = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut buffer)
        .map_err(failed)?;
    subcommand_sections(&command, "evo", &mut buffer).map_err(failed)?;
    out!("{}", one_page(&String::from_utf8_lossy(&buffer)).trim_end());
    Ok(())
}

/// The page clap_mangen renders made one manual: the subcommands it lists as pages of
/// their own (`evo-skill(1)`, which no one installs) named as the sections below, and
/// the examples kept as lines (unfilled) under EXAMPLES.
fn one_page(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut examples = false;
    for line in page.lines() {
        if examples && line.starts_with(".SH ") {
            out.push_str(".fi\n");
            examples = false;
        }
        if line == ".SH EXTRA" {
            out.push_str(".SH EXAMPLES\n.nf\n");
            examples = true;
            continue;
        }
        if examples && line == "Examples:" {
            continue;
        }
        match line
            .strip_prefix("evo\\-")
            .and_then(|name| name.strip_suffix("(1)"))
        {
            Some("help") => out.push_str("\\fBevo help\\fR"),
            Some(name) => out.push_str(&format!(
                "\\fBevo {}\\fR (section EVO {} below)",
                name.replace("\\-", "-"),
                name.replace("\\-", "-").to_uppercase()
            )),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    if examples {
        out.push_str(".fi\n");
    }
    out
}

/// Appends a section for each visible subcommand of `command` (named `path`), depth
/// first; the parts clap_mangen renders as sections become subsections of it.
fn subcommand_sections(
    command: &clap::Command,
    path: &str,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    use std::io::Write as _;
    // `help` repeats, as a command, what each section says already.
    for sub in command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("{path} {}", sub.get_name());
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        let man = clap_mangen::Man::new(sub.clone().bin_name(&name).display_name(&name));
        let mut part = Vec::new();
        man.render_description_section(&mut part)?;
        man.render_synopsis_section(&mut part)?;
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut part)?;
        }
        for line in String::from_utf8_lossy(&part).lines() {
            match line.strip_prefix(".SH ") {
                Some(heading) => writeln!(out, ".SS {heading}")?,
                None => writeln!(out, "{line}")?,
            }
        }
        subcommand_sections(sub, &name, out)?;
    }
    Ok(())
}
