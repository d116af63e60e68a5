//! MCP over stdio: one JSON-RPC message per line.
//!
//! The SDK's own stdio transport ignores a line that is not JSON; the JSON-RPC spec
//! answers it with a parse error, and a client (or a person typing) should learn that
//! its line was lost. This transport answers every line it cannot take — not JSON
//! (`-32700`), not a JSON-RPC message (`-32600`), too long (`-32600`) — and goes on.
//! It also reports end of input at once, so the server can stop its calls and exit.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use super::{Server, Shared};

/// How long calls still running get to finish after SIGTERM before they are stopped.
pub const GRACE: Duration = Duration::from_secs(10);

/// JSON-RPC's "Parse error".
const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i32 = -32600;

type Writer = Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// A line-delimited JSON-RPC transport over any reader and writer.
pub struct LineTransport {
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    writer: Writer,
}

impl std::fmt::Debug for LineTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineTransport")
    }
}

impl LineTransport {
    /// Reads messages from `read` (at most `max_bytes` each) and writes to `write`.
    /// The token returned is cancelled when `read` ends.
    pub fn new(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
        max_bytes: usize,
    ) -> (Self, CancellationToken) {
        let writer: Writer = Arc::new(Mutex::new(Box::new(write)));
        let (tx, messages) = mpsc::channel(64);
        let eof = CancellationToken::new();
        tokio::spawn(read_lines(
            BufReader::new(read),
            max_bytes,
            tx,
            writer.clone(),
            eof.clone(),
        ));
        (Self { messages, writer }, eof)
    }
}

async fn write_line(writer: &Writer, message: &impl serde::Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

fn error(id: Value, code: i32, message: String) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Reads lines until the end of input, handing on the messages and answering the
/// lines that are not.
async fn read_lines(
    mut read: BufReader<impl AsyncRead + Unpin>,
    max_bytes: usize,
    messages: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    writer: Writer,
    eof: CancellationToken,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        let too_long = match read_line(&mut read, &mut line, max_bytes).await {
            Ok(Some(too_long)) => too_long,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("stdin: {e}");
                break;
            }
        };
        let answer = if too_long {
            Some(error(
                Value::Null,
                INVALID_REQUEST,
                format!(
                    "message refused: longer than {max_bytes} bytes (`serve.max_message_kb` in evo.toml sets the limit)"
                ),
            ))
        } else {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Value>(text) {
                Err(e) => Some(error(
                    Value::Null,
                    PARSE_ERROR,
                    format!("Parse error: the line is not JSON ({e})"),
                )),
                Ok(value) => {
                    let id = value.get("id").cloned().unwrap_or(Value::Null);
                    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
                        Ok(message) => {
                            if messages.send(message).await.is_err() {
                                break;
                            }
                            None
                        }
                        Err(e) => Some(error(
                            id,
                            INVALID_REQUEST,
                            format!("Invalid Request: not a JSON-RPC 2.0 message MCP knows ({e})"),
                        )),
                    }
                }
            }
        };
        if let Some(answer) = answer
            && write_line(&writer, &answer).await.is_err()
        {
            break;
        }
    }
    eof.cancel();
}

/// Reads one line into `line`, keeping at most `max` bytes: `Some(true)` when it was
/// longer (the rest is skipped), `None` at the end of input.
async fn read_line(
    read: &mut BufReader<impl AsyncRead + Unpin>,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    let mut too_long = false;
    loop {
        let available = read.fill_buf().await?;
        if available.is_empty() {
            return Ok((!line.is_empty() || too_long).then_some(too_long));
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !too_long && line.len() + take <= max {
            line.extend_from_slice(&available[..take]);
        } else {
            too_long = true;
            line.clear();
        }
        read.consume(take);
        if newline.is_some() {
            return Ok(Some(too_long));
        }
    }
}

impl Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move { write_line(&writer, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.messages.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.messages.close();
        Ok(())
    }
}

/// Serves one MCP session on `read`/`write` until the input ends or `shutdown`
/// resolves. At the end of input the calls still running are stopped (nobody is
/// left to answer); on `shutdown` no new call is taken and those running get
/// [`GRACE`] to finish.
pub async fn serve(
    shared: Arc<Shared>,
    read: impl AsyncRead + Send + Unpin + 'static,
    write: impl AsyncWrite + Send + Unpin + 'static,
    shutdown: impl Future<Output = ()>,
) {
    let max_bytes = shared.settings.max_message_kb << 10;
    let (transport, eof) = LineTransport::new(read, write, max_bytes);
    let stop = CancellationToken::new();
    tokio::spawn(shared.clone().watch_catalogue(stop.clone()));
    let session = {
        let stop = stop.clone();
        let server = Server::new(shared.clone());
        async move {
            match rmcp::service::serve_server_with_ct(server, transport, stop).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::debug!("session ended before it began: {e}"),
            }
        }
    };
    tokio::pin!(session);
    let mut finished = tokio::select! {
        () = &mut session => true,
        () = eof.cancelled() => {
            shared.abort();
            false
        }
        () = shutdown => {
            shared.drain();
            let deadline = tokio::time::Instant::now() + GRACE;
            while !shared.idle() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            shared.abort();
            false
        }
    };
    // Answers already produced still go out; then the session ends.
    if !finished {
        finished = tokio::time::timeout(Duration::from_millis(50), &mut session)
            .await
            .is_ok();
    }
    stop.cancel();
    if !finished {
        let _ = tokio::time::timeout(Duration::from_millis(50), &mut session).await;
    }
    shared.flush_stats().await;
}
