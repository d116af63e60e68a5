//! `notes`: keeps a list of notes in the run's scratch space.
//!
//! Exercises the host context: `scratch` carries the notes between calls of one run,
//! `emit` tells a UI that a note was added, `log!` explains what happened, and
//! `remember` suggests keeping notes marked important in long-term memory.

use evo_guest::{Error, JsonSchema, Manifest, Skill, scratch};
use serde::{Deserialize, Serialize};

/// The scratch key the notes live under.
const KEY: &str = "notes";

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Op {
    /// Append `text` to the notes.
    Add,
    /// Return the notes.
    List,
    /// Remove every note.
    Clear,
}

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// What to do.
    op: Op,
    /// The note to add (for `add`).
    #[serde(default)]
    text: Option<String>,
    /// Also suggest keeping the note in long-term memory.
    #[serde(default)]
    important: bool,
}

#[derive(Serialize, JsonSchema)]
struct Output {
    /// All notes of this run, oldest first.
    notes: Vec<String>,
}

struct Notes;

impl Skill for Notes {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "notes",
            "Keeps a list of notes for the current task: add a note, list them, or clear them.",
        )
        .category("productivity")
        .tags(["notes", "scratch"])
        .requests([
            "scribble a reminder to renew the certificate",
            "add 'check the logs' to my scratch list",
            "what's on my to-do list for this job?",
            "wipe the scratch list",
            "keep track of this for now: the bug is in parser.rs",
            "show what I've written down so far",
        ])
        .timeout_ms(1_000)
        // `important` notes are suggested for long-term memory, which needs the grant.
        .memory(evo_guest::MemoryAccess::ReadWrite)
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let mut notes: Vec<String> = scratch::get(KEY)?.unwrap_or_default();
        match input.op {
            Op::Add => {
                let text = input
                    .text
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| Error::invalid_input("`text` is required to add a note"))?;
                if input.important {
                    evo_guest::remember(text.clone(), Some("fact"));
                }
                notes.push(text);
                scratch::set(KEY, &notes)?;
                evo_guest::emit(&serde_json::json!({ "type": "note_added", "count": notes.len() }));
                evo_guest::log!("added note {}", notes.len());
            }
            Op::List => evo_guest::log!(debug, "listing {} notes", notes.len()),
            Op::Clear => {
                evo_guest::log!("cleared {} notes", notes.len());
                notes.clear();
                scratch::set(KEY, &notes)?;
            }
        }
        Ok(Output { notes })
    }
}

evo_guest::export_skill!(Notes);
