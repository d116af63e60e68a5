//! `evo serve` on the standard streams an MCP client hands it: pipes (most clients), a
//! socket pair (Node's `child_process`), or a file. Pipes and sockets are read and
//! written by the event loop, which needs them non-blocking; whoever shares them gets
//! them back as they were.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use evo_tests::cli::command;
use evo_tests::skills::PLAIN_KINDS;
use serde_json::{Value, json};

/// `O_NONBLOCK` in the octal `flags:` line of `/proc/self/fdinfo`.
const O_NONBLOCK: u32 = 0o4000;

fn nonblocking(fd: &impl AsRawFd) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
    let flags = info
        .lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .map(|flags| u32::from_str_radix(flags.trim(), 8).unwrap())
        .unwrap();
    flags & O_NONBLOCK != 0
}

/// A skills directory serving `plain-kinds`, whose `echo-string` returns its argument.
fn skills(root: &std::path::Path) -> std::path::PathBuf {
    let skills = root.join("skills");
    std::fs::create_dir_all(skills.join("kinds")).unwrap();
    std::fs::copy(PLAIN_KINDS, skills.join("kinds/skill.wasm")).unwrap();
    skills
}

pub(crate) fn line(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap();
    line.push(b'\n');
    line
}

pub(crate) fn initialize() -> Vec<u8> {
    line(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }),
    )
}

fn echo(id: u64, text: &str) -> Vec<u8> {
    line(
        &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "kinds__kinds__echo-string", "arguments": { "v": text } } }),
    )
}

/// Reads answers until the one with `id`.
pub(crate) fn answer(read: &mut impl BufRead, id: u64) -> Value {
    let mut text = String::new();
    loop {
        text.clear();
        assert!(
            read.read_line(&mut text).unwrap() > 0,
            "evo serve closed its output"
        );
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["id"] == id {
            return message;
        }
    }
}

fn exits(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "evo serve did not exit at the end of its input"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_pipe_shared_with_the_client_is_given_back_blocking() {
    let root = tempfile::tempdir().unwrap();
    let skills = skills(root.path());
    // The client keeps the read end of the server's input open too, as a shell that
    // hands its own standard input on does: both share one open file.
    let (input, mut to_server) = std::io::pipe().unwrap();
    let shared = input.try_clone().unwrap();
    let mut child = command(&root.path().join("home"), &["serve", "--skills-dir"])
        .arg(&skills)
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut from_server = BufReader::new(child.stdout.take().unwrap());
    to_server.write_all(&initialize()).unwrap();
    answer(&mut from_server, 1);
    to_server.write_all(&echo(2, "through a pipe")).unwrap();
    let result = answer(&mut from_server, 2);
    assert_eq!(
        result["result"]["structuredContent"],
        json!({ "result": "through a pipe" }),
        "{result}"
    );
    // While it serves, the event loop reads the pipe: it is non-blocking…
    assert!(
        nonblocking(&shared),
        "evo serve reads its pipe on the event loop"
    );
    drop(to_server);
    assert!(exits(&mut child).success());
    // …and once it is done, blocking again for whoever else reads it.
    assert!(
        !nonblocking(&shared),
        "evo serve left the pipe it shares with its client non-blocking"
    );
}

#[test]
fn a_socket_pair_serves_as_the_standard_streams() {
    let root = tempfile::tempdir().unwrap();
    let skills = skills(root.path());
    let (client, server) = UnixStream::pair().unwrap();
    let shared = server.try_clone().unwrap();
    let mut child = command(&root.path().join("home"), &["serve", "--skills-dir"])
        .arg(&skills)
        .stdin(OwnedFd::from(server.try_clone().unwrap()))
        .stdout(OwnedFd::from(server))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut to_server = client.try_clone().unwrap();
    let mut from_server = BufReader::new(client.try_clone().unwrap());
    to_server.write_all(&initialize()).unwrap();
    answer(&mut from_server, 1);
    for id in 2..12 {
        let text = format!("call {id} over a socket");
        to_server.write_all(&echo(id, &text)).unwrap();
        let result = answer(&mut from_server, id);
        assert_eq!(
            result["result"]["structuredContent"],
            json!({ "result": text }),
            "{result}"
        );
    }
    assert!(
        nonblocking(&shared),
        "evo serve reads its socket on the event loop"
    );
    client.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(exits(&mut child).success());
    // One socket is both its input and its output: given back blocking all the same.
    assert!(
        !nonblocking(&shared),
        "evo serve left the socket it shares with its client non-blocking"
    );
}

#[test]
fn a_file_as_standard_input_is_read_too() {
    // A file cannot be waited on by the event loop: it is read as before, on a thread.
    let root = tempfile::tempdir().unwrap();
    let skills = skills(root.path());
    let mut messages = initialize();
    messages.extend(line(
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    ));
    let file = root.path().join("messages.jsonl");
    std::fs::write(&file, messages).unwrap();
    let mut child = command(&root.path().join("home"), &["serve", "--skills-dir"])
        .arg(&skills)
        .stdin(std::fs::File::open(&file).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut from_server = BufReader::new(child.stdout.take().unwrap());
    let answer = answer(&mut from_server, 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "evo", "{answer}");
    assert!(exits(&mut child).success());
}
