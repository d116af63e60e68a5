//! One language server: a child process spoken to in JSON-RPC over stdio with LSP's
//! `Content-Length` framing.
//!
//! A reader task routes what the server writes: answers to their waiting requests,
//! diagnostics into a table, progress into a "busy" count, and the server's own requests
//! (`workspace/configuration`, `window/workDoneProgress/create`, …) answered at once so
//! it never waits on us.

use crate::lock;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

/// The largest message accepted from a server: a workspace's symbols can be large, a
/// runaway server must not exhaust memory.
const MAX_MESSAGE_BYTES: usize = 64 << 20;

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, String>>>>>;

/// What the reader task learns.
#[derive(Debug, Default)]
struct Seen {
    /// Published diagnostics by document URI.
    diagnostics: Mutex<HashMap<String, Value>>,
    /// Work-done progress begun and not ended.
    busy: AtomicI64,
    /// rust-analyzer's `experimental/serverStatus`: `Some(quiescent)` once it reports.
    quiescent: Mutex<Option<bool>>,
    /// When progress or status last changed.
    changed: Mutex<Option<Instant>>,
    /// The server closed its output.
    gone: AtomicBool,
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// The program, for messages.
    pub program: String,
    child: tokio::sync::Mutex<Child>,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    next_id: AtomicI64,
    pending: Pending,
    seen: Arc<Seen>,
    /// Documents opened, by URI, with their version.
    opened: tokio::sync::Mutex<HashMap<String, (i64, String)>>,
    last_used: Mutex<Instant>,
    /// Calls using the server now; the idle reaper leaves it alone while any is.
    in_use: Arc<AtomicI64>,
}

/// A call's hold on a server (see [`Server::using`]).
#[derive(Debug)]
pub struct Using(Arc<AtomicI64>);

impl Drop for Using {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Server {
    /// Starts `program args` in `root` and initialises it for that workspace with
    /// `settings` (sent as initialization options and as the answer to
    /// `workspace/configuration`).
    pub async fn start(
        program: &str,
        args: &[&str],
        root: &Path,
        settings: Value,
        timeout: Duration,
    ) -> Result<Arc<Self>, String> {
        let mut child = Command::new(program)
            .args(args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start {program}: {e}"))?;
        let stdin = Arc::new(tokio::sync::Mutex::new(
            child.stdin.take().ok_or("no stdin")?,
        ));
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let pending: Pending = Arc::default();
        let seen = Arc::new(Seen::default());
        tokio::spawn(read_loop(
            BufReader::new(stdout),
            stdin.clone(),
            pending.clone(),
            seen.clone(),
            settings.clone(),
        ));
        let server = Arc::new(Self {
            program: program.to_owned(),
            child: tokio::sync::Mutex::new(child),
            stdin,
            next_id: AtomicI64::new(1),
            pending,
            seen,
            opened: tokio::sync::Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            in_use: Arc::default(),
        });
        let uri = file_uri(root);
        let name = root
            .file_name()
            .map_or_else(|| "project".into(), |n| n.to_string_lossy().into_owned());
        server
            .request(
                "initialize",
                json!({
                    "processId": std::process::id(),
                    "rootUri": uri,
                    "workspaceFolders": [{ "uri": uri, "name": name }],
                    "initializationOptions": settings,
                    "capabilities": {
                        "workspace": { "configuration": true, "workspaceFolders": true },
                        "window": { "workDoneProgress": true },
                        "textDocument": {
                            "synchronization": { "didSave": false },
                            "hover": { "contentFormat": ["plaintext", "markdown"] },
                            "definition": { "linkSupport": false },
                            "references": {},
                            "publishDiagnostics": { "relatedInformation": false }
                        },
                        "experimental": { "serverStatusNotification": true }
                    },
                    "clientInfo": { "name": "evo", "version": env!("CARGO_PKG_VERSION") }
                }),
                timeout,
            )
            .await?;
        server.notify("initialized", json!({})).await?;
        Ok(server)
    }

    /// Sends request `method` and waits up to `timeout` for its result.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        self.touch();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let sent = write(
            &self.stdin,
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        )
        .await;
        if let Err(e) = sent {
            lock(&self.pending).remove(&id);
            return Err(format!("{} stopped: {e}", self.program));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!(
                "{} stopped before answering {method}",
                self.program
            )),
            Err(_) => {
                lock(&self.pending).remove(&id);
                let _ = self.notify("$/cancelRequest", json!({ "id": id })).await;
                Err(format!(
                    "{} did not answer {method} within {} ms",
                    self.program,
                    timeout.as_millis()
                ))
            }
        }
    }

    /// Sends notification `method`.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        write(
            &self.stdin,
            &json!({ "jsonrpc": "2.0", "method": method, "params": params }),
        )
        .await
        .map_err(|e| format!("{} stopped: {e}", self.program))
    }

    /// Makes the server see `text` as the content of `path` (opening it, or sending the
    /// new text when it changed since).
    pub async fn open(&self, path: &Path, language: &str, text: String) -> Result<String, String> {
        self.touch();
        let uri = file_uri(path);
        let mut opened = self.opened.lock().await;
        match opened.get_mut(&uri) {
            Some((_, known)) if *known == text => {}
            Some((version, known)) => {
                *version += 1;
                self.notify(
                    "textDocument/didChange",
                    json!({ "textDocument": { "uri": uri, "version": *version }, "contentChanges": [{ "text": text }] }),
                )
                .await?;
                *known = text;
            }
            None => {
                self.notify(
                    "textDocument/didOpen",
                    json!({ "textDocument": { "uri": uri, "languageId": language, "version": 1, "text": text } }),
                )
                .await?;
                opened.insert(uri.clone(), (1, text));
            }
        }
        Ok(uri)
    }

    /// Waits until the server has finished the work it reported (indexing), and its
    /// reports have been still for `settle`, or until `limit`.
    pub async fn settle(&self, settle: Duration, limit: Duration) {
        let deadline = Instant::now() + limit;
        let started = Instant::now();
        while Instant::now() < deadline && !self.seen.gone.load(Ordering::Relaxed) {
            // Waiting on the server is using it: the idle reaper must not stop it.
            self.touch();
            let busy = self.seen.busy.load(Ordering::Relaxed) > 0;
            let quiescent = *lock(&self.seen.quiescent);
            let last = lock(&self.seen.changed).unwrap_or(started);
            if !busy && quiescent != Some(false) && last.elapsed() >= settle {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The diagnostics last published for `uri`, waiting up to `limit` for a first set.
    pub async fn diagnostics(&self, uri: &str, limit: Duration) -> Option<Value> {
        let deadline = Instant::now() + limit;
        loop {
            self.touch();
            if let Some(found) = lock(&self.seen.diagnostics).get(uri) {
                return Some(found.clone());
            }
            if Instant::now() >= deadline || self.seen.gone.load(Ordering::Relaxed) {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Marks the server in use until the guard is dropped.
    pub fn using(&self) -> Using {
        self.in_use.fetch_add(1, Ordering::Relaxed);
        Using(self.in_use.clone())
    }

    /// How long the server has been unused (zero while a call uses it).
    pub fn idle(&self) -> Duration {
        if self.in_use.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        lock(&self.last_used).elapsed()
    }

    /// Whether the server is still running.
    pub fn alive(&self) -> bool {
        !self.seen.gone.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Asks the server to shut down, then makes sure it is gone.
    pub async fn stop(&self) {
        let _ = self
            .request("shutdown", Value::Null, Duration::from_secs(2))
            .await;
        let _ = self.notify("exit", Value::Null).await;
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// `file://` URI of `path` (absolute), with the characters URIs reserve escaped.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path of a `file://` URI.
pub fn uri_path(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let mut bytes = Vec::with_capacity(rest.len());
    let mut iter = rest.bytes();
    while let Some(b) = iter.next() {
        if b == b'%' {
            let hex = [iter.next()?, iter.next()?];
            bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            bytes.push(b);
        }
    }
    Some(std::path::PathBuf::from(String::from_utf8(bytes).ok()?))
}

async fn write(stdin: &tokio::sync::Mutex<ChildStdin>, message: &Value) -> std::io::Result<()> {
    let body = message.to_string();
    let mut stdin = stdin.lock().await;
    stdin
        .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    stdin.write_all(body.as_bytes()).await?;
    stdin.flush().await
}

async fn read_message<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length = length.filter(|l| *l <= MAX_MESSAGE_BYTES)?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    serde_json::from_slice(&body).ok()
}

async fn read_loop<R: tokio::io::AsyncBufRead + Unpin>(
    mut reader: R,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    pending: Pending,
    seen: Arc<Seen>,
    settings: Value,
) {
    while let Some(message) = read_message(&mut reader).await {
        let method = message.get("method").and_then(Value::as_str);
        match (message.get("id"), method) {
            // An answer to one of ours.
            (Some(id), None) => {
                let Some(waiting) = id.as_i64().and_then(|id| lock(&pending).remove(&id)) else {
                    continue;
                };
                let answer = match message.get("error") {
                    Some(error) => Err(error["message"].as_str().unwrap_or("error").to_owned()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = waiting.send(answer);
            }
            // The server asks us something: answer at once.
            (Some(id), Some(method)) => {
                let result = match method {
                    "workspace/configuration" => {
                        let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                        Value::Array(vec![settings.clone(); items])
                    }
                    _ => Value::Null,
                };
                let _ = write(
                    &stdin,
                    &json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                )
                .await;
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                let params = &message["params"];
                if let Some(uri) = params["uri"].as_str() {
                    lock(&seen.diagnostics).insert(uri.to_owned(), params["diagnostics"].clone());
                }
            }
            (None, Some("$/progress")) => {
                match message["params"]["value"]["kind"].as_str() {
                    Some("begin") => {
                        seen.busy.fetch_add(1, Ordering::Relaxed);
                    }
                    Some("end") => {
                        seen.busy.fetch_sub(1, Ordering::Relaxed);
                    }
                    _ => {}
                }
                *lock(&seen.changed) = Some(Instant::now());
            }
            (None, Some("experimental/serverStatus")) => {
                *lock(&seen.quiescent) = message["params"]["quiescent"].as_bool();
                *lock(&seen.changed) = Some(Instant::now());
            }
            _ => {}
        }
    }
    seen.gone.store(true, Ordering::Relaxed);
    // Nobody will answer the requests still waiting.
    lock(&pending).clear();
}
