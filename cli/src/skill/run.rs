//! `evo skill run`.

use std::io::Read as _;

use evo_host::skills::ExecutorKind;
use evo_host::{EventSink, RunEvent};
use serde_json::json;

use crate::args::{self, Grants, Sources};
use crate::{Failure, Globals, internal, out};

pub(super) async fn run(
    globals: &Globals,
    skill: &str,
    input: String,
    sources: &Sources,
    grants: &Grants,
) -> Result<(), Failure> {
    let input = read_input(input)?;
    let (host, given) = args::host_for(globals, sources, grants, skill).await?;
    let name = args::resolve(&host, skill).await?;
    args::warn_unapplied(&host, &name, &given);
    let native = host
        .skill(&name)
        .is_some_and(|s| s.kind() == ExecutorKind::Native);
    if native && !globals.json {
        // No probe here: it would start a sandbox just to describe one.
        eprintln!(
            "note: {name} is a native script skill: a Node process, less isolated than a Wasm skill (`evo doctor` shows how it is confined here)"
        );
    }
    let events = (!globals.json).then(|| EventSink::new(show));
    let started = std::time::Instant::now();
    let context = host.run_context(evo_host::RunOptions {
        events,
        caller: Some("cli".into()),
        single_call: true,
        ..Default::default()
    });
    let result = context.call_full(&name, input).await;
    if let Err(e) = host.flush_stats() {
        eprintln!("warning: could not record statistics: {e}");
    }
    let outcome = result?;
    if globals.json {
        let mut value = serde_json::to_value(&outcome).map_err(internal)?;
        value["success"] = json!(true);
        value["skill"] = json!(name);
        value["duration"] = json!(started.elapsed().as_secs_f64() * 1000.0);
        out!("{value}");
    } else {
        out!(
            "{}",
            serde_json::to_string_pretty(&outcome.output).map_err(internal)?
        );
    }
    Ok(())
}

/// Shows what a skill emits and the calls it makes, on stderr.
fn show(event: RunEvent) {
    match event {
        RunEvent::Emit { skill, output, .. } => eprintln!("event from {skill}: {output}"),
        RunEvent::SkillCall {
            skill,
            input,
            depth,
            ..
        } if depth > 1 => eprintln!("{}→ {skill} {input}", "  ".repeat(depth as usize - 2)),
        RunEvent::MemoryWrites { writes, .. } => {
            for write in &writes {
                eprintln!("{}", crate::memory::write_line(write));
            }
        }
        _ => {}
    }
}

pub(crate) fn read_input(input: String) -> Result<serde_json::Value, Failure> {
    let from_stdin = input == "-";
    let input = if from_stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            Failure::usage(
                "INVALID_INPUT",
                format!("could not read the input from stdin: {e}"),
                None,
            )
        })?;
        text
    } else {
        input
    };
    serde_json::from_str(&input).map_err(|e| {
        if from_stdin {
            Failure::usage(
                "INVALID_INPUT",
                format!("the input read from stdin (--input -) is not valid JSON: {e}"),
                Some("send one JSON value on stdin, e.g. echo '{\"expression\":\"1+2\"}' | evo skill run calculate --input -"),
            )
        } else {
            Failure::usage(
                "INVALID_INPUT",
                format!("--input is not valid JSON: {e}"),
                Some("quote the JSON for your shell, e.g. --input '{\"expression\":\"1+2\"}'"),
            )
        }
    })
}
