//! `fixture-stdio`: a test fixture that writes to stdout and stderr and can panic, so
//! the tests can check how the host captures, caps and reports guest output.

use std::io::Write;

use evo_guest::{Error, JsonSchema, Manifest, Skill};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Bytes of `x` to write to stdout, in lines of 64.
    #[serde(default)]
    stdout_bytes: usize,
    /// A line to write to stderr.
    #[serde(default)]
    stderr_line: Option<String>,
    /// Panic with this message after writing.
    #[serde(default)]
    panic: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct Output {
    /// Bytes written to stdout.
    written: usize,
}

struct FixtureStdio;

impl Skill for FixtureStdio {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "fixture-stdio",
            "Test fixture: writes to stdout and stderr, optionally panics.",
        )
        .category("testing")
        .tags(["fixture"])
        .timeout_ms(5_000)
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let line = [b'x'; 63];
        let mut stdout = std::io::stdout();
        let mut written = 0;
        while written < input.stdout_bytes {
            stdout
                .write_all(&line)
                .and_then(|()| stdout.write_all(b"\n"))
                .map_err(|e| Error::failed(e.to_string()))?;
            written += 64;
        }
        stdout.flush().map_err(|e| Error::failed(e.to_string()))?;
        if let Some(line) = input.stderr_line {
            eprintln!("{line}");
        }
        if let Some(message) = input.panic {
            panic!("{message}");
        }
        Ok(Output { written })
    }
}

evo_guest::export_skill!(FixtureStdio);
