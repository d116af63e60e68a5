//! `file-head`: reads the first lines of a text file under `/data`.
//!
//! The skill asks for read-only access to `/data`; the operator decides which host
//! directory that is (`evo skill run … --dir ./docs::/data`). Without the grant, or for a
//! path outside it, the read is refused by the sandbox, not by this code.

use std::io::{BufRead, BufReader};

use evo_guest::{Access, Error, JsonSchema, Manifest, Skill};
use serde::{Deserialize, Serialize};

/// Lines returned when the input does not say.
const DEFAULT_LINES: usize = 10;
/// Upper bound on `lines`, so one call cannot return a whole large file.
const MAX_LINES: usize = 1_000;

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Path of the file, e.g. `/data/README.md` (relative paths are taken under `/data`).
    path: String,
    /// How many lines to return (default 10, at most 1000).
    #[serde(default)]
    lines: Option<usize>,
}

#[derive(Serialize, JsonSchema)]
struct Output {
    /// The first lines, without line endings.
    lines: Vec<String>,
    /// Whether the file has more lines than were returned.
    truncated: bool,
}

struct FileHead;

impl Skill for FileHead {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "file-head",
            "Reads the first lines of a text file in the granted /data directory.",
        )
        .category("files")
        .tags(["files", "readonly"])
        .requests([
            "what is at the very beginning of /data/events.log?",
            "preview the beginning of the dataset in /data",
            "the first 10 lines of /data/input.csv",
            "peek at the start of the report in /data",
            "what do the opening lines of /data/notes.txt say?",
        ])
        .timeout_ms(5_000)
        .dir("/data", Access::Read, "the files it is asked to read")
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let limit = input.lines.unwrap_or(DEFAULT_LINES);
        if limit == 0 || limit > MAX_LINES {
            return Err(Error::invalid_input(format!(
                "`lines` must be between 1 and {MAX_LINES}, got {limit}"
            )));
        }
        let path = if input.path.starts_with('/') {
            input.path.clone()
        } else {
            format!("/data/{}", input.path)
        };
        let file = std::fs::File::open(&path).map_err(|e| describe(&path, e))?;
        let mut lines = Vec::new();
        let mut truncated = false;
        for line in BufReader::new(file).lines() {
            let line = line.map_err(|e| describe(&path, e))?;
            if lines.len() == limit {
                truncated = true;
                break;
            }
            lines.push(line);
        }
        Ok(Output { lines, truncated })
    }
}

/// Maps I/O errors to the skill's error kinds. The sandbox answers "not found" for a
/// path under no granted directory, so "not found" with no `/data` at all means the
/// operator did not grant it.
fn describe(path: &str, error: std::io::Error) -> Error {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::NotFound if !std::path::Path::new("/data").exists() => Error::denied(format!(
            "/data was not granted to this skill, so {path} cannot be read"
        )),
        ErrorKind::NotFound if !path.starts_with("/data/") => {
            Error::denied(format!("{path} is outside the granted directory /data"))
        }
        ErrorKind::NotFound => Error::not_found(format!("{path} does not exist")),
        ErrorKind::PermissionDenied => {
            Error::denied(format!("access to {path} was denied: {error}"))
        }
        _ => Error::failed(format!("could not read {path}: {error}")),
    }
}

evo_guest::export_skill!(FileHead);
