//! `fixture-probe`: a test fixture that probes its sandbox. It writes to stdout and
//! stderr, reports the environment and arguments it sees, tries to open a network
//! connection, and can panic — so the tests can check what the host captures, caps,
//! reports and refuses.

use std::collections::BTreeMap;
use std::io::Write;

use evo_guest::{Access, Error, JsonSchema, LogLevel, Manifest, MemoryAccess, Skill, memory};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Bytes of `x` to write to stdout, in lines of 64.
    #[serde(default)]
    stdout_bytes: usize,
    /// A line to write to stderr.
    #[serde(default)]
    stderr_line: Option<String>,
    /// Bytes of `e` to write to stderr, in lines of 64.
    #[serde(default)]
    stderr_bytes: usize,
    /// Log one line of this many bytes first (`log_bytes`), emit one event carrying a
    /// string of this many bytes (`emit_bytes`), then log `logs` lines and emit `emits`
    /// events (`{"n": i}`), in that order.
    #[serde(default)]
    log_bytes: usize,
    /// See `log_bytes`.
    #[serde(default)]
    emit_bytes: usize,
    /// See `log_bytes`.
    #[serde(default)]
    logs: u32,
    /// See `log_bytes`.
    #[serde(default)]
    emits: u32,
    /// An address (`127.0.0.1:8080`) to try to connect to.
    #[serde(default)]
    connect: Option<String>,
    /// Try every host call of the context and report how each ended.
    #[serde(default)]
    host_calls: bool,
    /// Record this many steps (`evo_guest::step`), each with an input of `step_bytes`.
    #[serde(default)]
    steps: u32,
    /// Size of each step's input.
    #[serde(default)]
    step_bytes: usize,
    /// Fail with an error message of this many bytes.
    #[serde(default)]
    error_bytes: usize,
    /// Write this many scratch values of 1,000,000 bytes each, then count those kept.
    #[serde(default)]
    scratch_values: u32,
    /// Call this skill itself with the same request, and report how deep the chain went.
    #[serde(default)]
    recurse: bool,
    /// Open this file (a path under `/data`) this many times and keep every handle.
    #[serde(default)]
    open_file: Option<String>,
    /// How many times to open `open_file`.
    #[serde(default)]
    open_times: u32,
    /// Write `write_text` to this file (a path under `/data`), then read it back.
    #[serde(default)]
    write_file: Option<String>,
    /// What to write to `write_file`.
    #[serde(default)]
    write_text: String,
    /// Create a symbolic link in the first preopened directory: `[link, target]`.
    #[serde(default)]
    symlink: Option<(String, String)>,
    /// Panic with this message after everything else.
    #[serde(default)]
    panic: Option<String>,
    /// Leave this text in the instance's memory, where a later call in the same
    /// instance would find it (`left`).
    #[serde(default)]
    leave: Option<String>,
    /// Report a fingerprint of the instance's whole linear memory as the call found it
    /// (`memory`), before doing anything else.
    #[serde(default)]
    fingerprint: bool,
}

#[derive(Serialize, JsonSchema)]
struct Output {
    /// Bytes written to stdout.
    written: usize,
    /// Environment variables visible to the guest.
    env: Vec<String>,
    /// Command-line arguments visible to the guest.
    args: Vec<String>,
    /// The connection attempt's outcome: `connected` or the error.
    connect: Option<String>,
    /// Each host call's outcome (`ok` or the error), by name.
    host_calls: BTreeMap<String, String>,
    /// How many of the scratch values written could be read back.
    scratch_kept: u32,
    /// Handles of `open_file` held at once before an open failed (or all of them).
    opened: u32,
    /// Why an open failed, if one did.
    open_error: Option<String>,
    /// How the write to `write_file` ended: `wrote N bytes, read back M` or the error.
    write: Option<String>,
    /// Nested calls below this one that returned (with `recurse`).
    depth: u32,
    /// How the deepest call of the chain failed (with `recurse`).
    recursion_error: Option<String>,
    /// What an earlier call left in this instance's memory (`leave`), if anything.
    left: Option<String>,
    /// How creating `symlink` ended: `linked` or the error.
    symlink: Option<String>,
    /// With `fingerprint`: the memory's size in pages and a hash of all its bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<String>,
}

/// Text a call leaves behind (`leave`): its length, then its bytes, in one static.
static LEFT: std::sync::Mutex<(usize, [u8; 64])> = std::sync::Mutex::new((0, [0; 64]));

/// What an earlier call left, replaced by `leave`.
fn swap_left(leave: Option<&str>) -> Option<String> {
    let mut left = LEFT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (len, bytes) = &mut *left;
    let found = (*len > 0).then(|| String::from_utf8_lossy(&bytes[..(*len).min(64)]).into_owned());
    if let Some(text) = leave {
        let text = &text.as_bytes()[..text.len().min(64)];
        bytes[..text.len()].copy_from_slice(text);
        *len = text.len();
    }
    found
}

/// The linear memory's size in pages and an FNV-1a hash of every byte of it (but the
/// first, at the null address): what the instance held when the call began, its
/// globals' values (the stack pointer, the heap's end) among them.
#[cfg(target_arch = "wasm32")]
#[expect(
    unsafe_code,
    reason = "reads the whole of linear memory, which no Rust object spans"
)]
fn memory_fingerprint() -> String {
    let pages = core::arch::wasm32::memory_size(0);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for address in 1..pages * 65_536 {
        // SAFETY: every address below the memory's size is in bounds in Wasm, and a
        // volatile read of a byte has no alignment to respect or object to alias.
        let byte = unsafe { core::ptr::read_volatile(address as *const u8) };
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{pages} pages, {hash:016x}")
}

#[cfg(not(target_arch = "wasm32"))]
fn memory_fingerprint() -> String {
    String::from("no linear memory outside Wasm")
}

struct FixtureProbe;

impl Skill for FixtureProbe {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "fixture-probe",
            "Test fixture: probes the sandbox (stdio, env, network, panics).",
        )
        .category("testing")
        .tags(["fixture"])
        .timeout_ms(5_000)
        .calls("calculate")
        .calls("fixture-probe")
        .llm()
        .memory(MemoryAccess::ReadWrite)
        .dir(
            "/data",
            Access::ReadWrite,
            "files to open or write when asked to (descriptor floods, write grants)",
        )
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let memory = input.fingerprint.then(memory_fingerprint);
        let left = swap_left(input.leave.as_deref());
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
        let line = [b'e'; 63];
        let mut stderr = std::io::stderr();
        for _ in 0..input.stderr_bytes.div_ceil(64) {
            stderr
                .write_all(&line)
                .and_then(|()| stderr.write_all(b"\n"))
                .map_err(|e| Error::failed(e.to_string()))?;
        }
        if input.log_bytes > 0 {
            evo_guest::log(LogLevel::Info, &"l".repeat(input.log_bytes));
        }
        if input.emit_bytes > 0 {
            evo_guest::emit(&serde_json::json!({ "big": "e".repeat(input.emit_bytes) }));
        }
        for i in 0..input.logs {
            evo_guest::log(LogLevel::Info, &format!("log {i}"));
        }
        for n in 0..input.emits {
            evo_guest::emit(&serde_json::json!({ "n": n }));
        }
        let connect = input
            .connect
            .map(|address| match std::net::TcpStream::connect(&address) {
                Ok(_) => "connected".to_owned(),
                Err(e) => e.to_string(),
            });
        let mut host_calls = BTreeMap::new();
        if input.host_calls {
            // Each call's answer as the guest got it (`ok: …`), or its error.
            let mut record = |name: &str, result: Result<String, Error>| {
                host_calls.insert(
                    name.to_owned(),
                    result.map_or_else(|e| e.to_string(), |v| format!("ok: {v}")),
                );
            };
            let calculate = serde_json::json!({ "expression": "1 + 1" });
            record(
                "call-listed",
                evo_guest::call::<_, serde_json::Value>("calculate", &calculate)
                    .map(|v| v.to_string()),
            );
            record(
                "call-unlisted",
                evo_guest::call::<_, serde_json::Value>("notes", &calculate).map(|v| v.to_string()),
            );
            record("llm", evo_guest::llm("hello"));
            record(
                "memory-store",
                memory::store("a fact", Some("fact")).map(|o| format!("stored: {}", o.stored)),
            );
            record(
                "memory-search",
                memory::search("a fact", 3).map(|hits| {
                    let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
                    format!("{texts:?}")
                }),
            );
            // Since evo:skill 0.2.0: a filtered search that sees superseded entries,
            // and the run's environment.
            record(
                "memory-query",
                memory::query(
                    &memory::Query::new("a fact", 3)
                        .source("user")
                        .include_superseded(),
                )
                .map(|hits| {
                    let found: Vec<String> = hits
                        .iter()
                        .map(|h| format!("{} ({:?})", h.text, h.source))
                        .collect();
                    format!("{found:?}")
                }),
            );
            record(
                "env",
                Ok(serde_json::Value::Object(evo_guest::env()).to_string()),
            );
            record(
                "memory-forget",
                memory::forget("a fact").map(|n| format!("forgot {n}")),
            );
        }
        for n in 1..=input.steps {
            let payload = "s".repeat(input.step_bytes);
            evo_guest::step(&format!("probe {n}"), &payload, || Ok(n * 10))?;
        }
        let value = "x".repeat(if input.scratch_values > 0 {
            1_000_000
        } else {
            0
        });
        for n in 0..input.scratch_values {
            evo_guest::scratch::set(&format!("probe-{n}"), &value)?;
        }
        let mut scratch_kept = 0;
        for n in 0..input.scratch_values {
            if evo_guest::scratch::get::<String>(&format!("probe-{n}"))?.is_some() {
                scratch_kept += 1;
            }
        }
        let mut handles = Vec::new();
        let mut open_error = None;
        if let Some(path) = &input.open_file {
            for _ in 0..input.open_times {
                match std::fs::File::open(path) {
                    Ok(file) => handles.push(file),
                    Err(e) => {
                        open_error = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        let opened = u32::try_from(handles.len()).unwrap_or(u32::MAX);
        let write = input.write_file.as_deref().map(|path| {
            let wrote = std::fs::write(path, &input.write_text)
                .and_then(|()| std::fs::read_to_string(path));
            match wrote {
                Ok(back) => format!(
                    "wrote {} bytes, read back {}",
                    input.write_text.len(),
                    back.len()
                ),
                Err(e) => e.to_string(),
            }
        });
        let symlink =
            input.symlink.map(
                |(link, target)| match wasip2::filesystem::preopens::get_directories().first() {
                    Some((dir, _)) => dir
                        .symlink_at(&target, &link)
                        .map_or_else(|e| e.to_string(), |()| "linked".to_owned()),
                    None => "no directory was granted".to_owned(),
                },
            );
        let (depth, recursion_error) = if input.recurse {
            let again = serde_json::json!({ "recurse": true });
            match evo_guest::call::<_, serde_json::Value>("fixture-probe", &again) {
                Ok(below) => (
                    below["depth"].as_u64().map_or(0, |d| d as u32 + 1),
                    below["recursion_error"].as_str().map(str::to_owned),
                ),
                Err(e) => (0, Some(e.to_string())),
            }
        } else {
            (0, None)
        };
        if input.error_bytes > 0 {
            return Err(Error::failed("e".repeat(input.error_bytes)));
        }
        if let Some(message) = input.panic {
            panic!("{message}");
        }
        Ok(Output {
            written,
            env: std::env::vars().map(|(k, _)| k).collect(),
            args: std::env::args().collect(),
            connect,
            host_calls,
            scratch_kept,
            opened,
            open_error,
            write,
            depth,
            recursion_error,
            left,
            symlink,
            memory,
        })
    }
}

evo_guest::export_skill!(FixtureProbe);
