//! The published figures and their records, for `./scripts/bench` and the measuring
//! scripts:
//!
//! ```text
//! evo-figures check                 every quoted number against its record (exit 1 if any differs)
//! evo-figures stale                 records taken before a change to the code they measure
//! evo-figures quote                 rewrite each quoted number from its record
//! evo-figures record NAME KEY VALUE UNIT --command CMD [--path P]...
//!                                   record one figure measured by a script
//! ```

use std::process::ExitCode;

use evo_tests::figures::{self, Recorder};

const USAGE: &str = "usage: evo-figures check | stale | quote | record NAME KEY VALUE UNIT --command CMD [--path P]...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workspace = figures::workspace();
    match args.first().map(String::as_str) {
        Some("check") => {
            let problems = figures::check(&workspace);
            for p in &problems {
                println!("{p}");
            }
            if problems.is_empty() {
                println!("every quoted figure agrees with its record");
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "{} problem(s); re-run the bench that records the figure, or `./scripts/bench --quote` to copy the records into the text",
                    problems.len()
                );
                ExitCode::FAILURE
            }
        }
        Some("stale") => {
            let stale = figures::stale(&workspace);
            for (name, command, keys, since) in &stale {
                let since = if *since == usize::MAX {
                    "its commit is not in this history".to_owned()
                } else {
                    format!("{since} commit(s) since changed what it measures")
                };
                println!("{name}: {since}; re-run `{command}`");
                for key in keys {
                    println!("  {key}");
                }
            }
            if stale.is_empty() {
                println!("no record is older than the code it measures");
            }
            ExitCode::SUCCESS
        }
        Some("quote") => {
            let changed = figures::quote(&workspace);
            println!("{changed} quoted number(s) rewritten from their records");
            ExitCode::SUCCESS
        }
        Some("record") => record(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn record(args: &[String]) -> ExitCode {
    let [name, key, value, unit, rest @ ..] = args else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let Ok(value) = value.parse::<f64>() else {
        eprintln!("error: {value:?} is not a number\n{USAGE}");
        return ExitCode::from(2);
    };
    let mut command = None;
    let mut paths = Vec::new();
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        match (flag.as_str(), rest.next()) {
            ("--command", Some(c)) => command = Some(c.as_str()),
            ("--path", Some(p)) => paths.push(p.as_str()),
            _ => {
                eprintln!("error: unexpected {flag:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(command) = command else {
        eprintln!("error: --command is required: the command that measured the figure\n{USAGE}");
        return ExitCode::from(2);
    };
    Recorder::new(name, command, &paths).value(key, value, unit);
    ExitCode::SUCCESS
}
