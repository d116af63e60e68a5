//! MCP over stdio: one JSON-RPC message per line.
//!
//! The SDK's own stdio transport ignores a line that is not JSON; the JSON-RPC spec
//! answers it with a parse error, and a client (or a person typing) should learn that
//! its line was lost. This transport answers every line it cannot take — not JSON
//! (`-32700`), not a JSON-RPC message (`-32600`), too long (`-32600`) — and goes on.
//! It also reports end of input at once, so the server can stop its calls and exit,
//! and keeps the requests it read until each is answered: on SIGTERM, every request
//! read before the signal runs to its answer (within [`GRACE`]) and every one read after
//! it is refused as it is read.
//!
//! Once the session has begun, `tools/call` requests are answered beside the SDK's
//! service loop, on a task of their own (`direct`); everything else goes through the loop.

mod direct;
mod streams;

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientNotification, ClientRequest, ErrorCode,
    JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc, watch};
use tokio_util::sync::CancellationToken;

use direct::Direct;
pub use streams::{Reader, StdStreams, Writer, std_streams};

use super::refusal::SHUTTING_DOWN;
use super::{Server, Shared};

/// How long calls still running get to finish after SIGTERM before they are stopped.
pub const GRACE: Duration = Duration::from_secs(10);

/// JSON-RPC's "Parse error".
const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i32 = -32600;

type SharedWriter = Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// A line-delimited JSON-RPC transport over any reader and writer.
pub struct LineTransport {
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    writer: SharedWriter,
    requests: Requests,
    direct: Arc<OnceLock<Arc<Direct>>>,
}

/// The requests read and not yet answered, and whether new ones are still taken.
#[derive(Clone)]
struct Requests {
    unanswered: Arc<watch::Sender<HashSet<RequestId>>>,
    closed: CancellationToken,
}

impl Requests {
    fn new() -> Self {
        Self {
            unanswered: Arc::new(watch::Sender::new(HashSet::new())),
            closed: CancellationToken::new(),
        }
    }

    fn read(&self, id: &RequestId) {
        self.unanswered.send_modify(|ids| {
            ids.insert(id.clone());
        });
    }

    fn answered(&self, id: &RequestId) {
        self.unanswered.send_if_modified(|ids| ids.remove(id));
    }

    /// Resolves once every request read has been answered.
    async fn all_answered(&self) {
        let mut ids = self.unanswered.subscribe();
        let _ = ids.wait_for(HashSet::is_empty).await;
    }
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
        let writer: SharedWriter = Arc::new(Mutex::new(Box::new(write)));
        let (tx, messages) = mpsc::channel(64);
        let eof = CancellationToken::new();
        let requests = Requests::new();
        let direct = Arc::new(OnceLock::new());
        tokio::spawn(read_lines(
            BufReader::new(read),
            max_bytes,
            Lines {
                messages: tx,
                writer: writer.clone(),
                requests: requests.clone(),
                direct: direct.clone(),
            },
            eof.clone(),
        ));
        let transport = Self {
            messages,
            writer,
            requests,
            direct,
        };
        (transport, eof)
    }
}

async fn write_line(writer: &SharedWriter, message: &impl serde::Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

fn error(id: Value, code: i32, message: String) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// `text` read as a `tools/call` request, when it is one: the message on every call's
/// path, read directly and in one pass. The SDK's reader tries each kind of client
/// request in turn, making and dropping an error for each it is not (~18 % of the
/// server's CPU on an echo call), and reads the params through a buffer to take their
/// `_meta` apart. `None` for anything else, read the SDK's way.
fn call_request(text: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    /// Whether a field is present, `null` included (as the SDK tells a request from a
    /// response).
    #[derive(Default)]
    struct Present(bool);
    impl<'de> serde::Deserialize<'de> for Present {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(d).map(|_| Self(true))
        }
    }
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        // Another method's params need not read as a call's: then the message is
        // left to the SDK.
        params: CallToolRequestParams,
        #[serde(default)]
        result: Present,
        #[serde(default)]
        error: Present,
    }
    let Call {
        jsonrpc,
        id,
        method,
        mut params,
        result,
        error,
    } = serde_json::from_slice(text).ok()?;
    if method != "tools/call" || result.0 || error.0 {
        return None;
    }
    // Where the SDK keeps a request's `_meta`: in its extensions, not its params.
    let meta = params.meta.take();
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::CallToolRequest(request),
    }))
}

/// The answer to a line that is not a message: not JSON, or not JSON-RPC that MCP knows.
fn refusal(text: &[u8]) -> Value {
    match serde_json::from_slice::<Value>(text) {
        Err(e) => error(
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: the line is not JSON ({e})"),
        ),
        Ok(value) => {
            let id = value.get("id").cloned().unwrap_or(Value::Null);
            // A JSON-RPC 2.0 request whose params the SDK cannot read at all (not an
            // object): what is wrong with the params.
            if let Some(refused) = value
                .get("method")
                .and_then(Value::as_str)
                .filter(|_| !id.is_null() && value["jsonrpc"] == "2.0")
                .and_then(|method| super::mcp_params::wrong(method, value.get("params")))
            {
                return error(id, refused.code.0, refused.message.into_owned());
            }
            let reason = serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value)
                .err()
                .map_or_else(|| "not a message".to_owned(), |e| e.to_string());
            error(
                id,
                INVALID_REQUEST,
                format!("Invalid Request: not a JSON-RPC 2.0 message MCP knows ({reason})"),
            )
        }
    }
}

/// Where the lines read go.
struct Lines {
    /// The messages for the SDK's service loop.
    messages: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    writer: SharedWriter,
    requests: Requests,
    /// The calls answered beside the loop, once the session has begun.
    direct: Arc<OnceLock<Arc<Direct>>>,
}

/// Reads lines until the end of input, handing on the messages and answering the
/// lines that are not.
async fn read_lines(
    mut read: BufReader<impl AsyncRead + Unpin>,
    max_bytes: usize,
    lines: Lines,
    eof: CancellationToken,
) {
    let Lines {
        messages,
        writer,
        requests,
        direct,
    } = lines;
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
            // A message is read in one pass; a line that is not one is read again to
            // say why.
            match call_request(text)
                .map_or_else(|| serde_json::from_slice(text), Ok::<_, serde_json::Error>)
            {
                Ok(message) => match taken(&message, &requests) {
                    Err(refused) => Some(refused),
                    Ok(()) => {
                        let message = match direct.get() {
                            Some(direct) => direct.take(message, &writer, &requests),
                            None => Some(message),
                        };
                        if let Some(message) = message
                            && messages.send(message).await.is_err()
                        {
                            break;
                        }
                        None
                    }
                },
                Err(_) => Some(refusal(text)),
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

/// Notes a request read (or a cancelled one given up); a request read once the session
/// is closing is refused instead, with the answer to write.
fn taken(message: &RxJsonRpcMessage<RoleServer>, requests: &Requests) -> Result<(), Value> {
    match message {
        JsonRpcMessage::Request(request) if requests.closed.is_cancelled() => Err(error(
            serde_json::to_value(&request.id).unwrap_or(Value::Null),
            ErrorCode::INTERNAL_ERROR.0,
            SHUTTING_DOWN.to_owned(),
        )),
        JsonRpcMessage::Request(request) => {
            requests.read(&request.id);
            Ok(())
        }
        JsonRpcMessage::Notification(notification) => {
            if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                && let Some(id) = &cancelled.params.request_id
            {
                requests.answered(id);
            }
            Ok(())
        }
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => Ok(()),
    }
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
        let answer = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let requests = self.requests.clone();
        async move {
            let written = write_line(&writer, &item).await;
            if let Some(id) = answer {
                requests.answered(&id);
            }
            written
        }
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
/// left to answer); on `shutdown` a request read from then on is refused, and those
/// read before it (running or waiting for a slot) get [`GRACE`] to be answered.
pub async fn serve(
    shared: Arc<Shared>,
    read: impl AsyncRead + Send + Unpin + 'static,
    write: impl AsyncWrite + Send + Unpin + 'static,
    shutdown: impl Future<Output = ()>,
) {
    let max_bytes = shared.settings.max_message_kb << 10;
    let (transport, eof) = LineTransport::new(read, write, max_bytes);
    let requests = transport.requests.clone();
    let direct = transport.direct.clone();
    let stop = CancellationToken::new();
    tokio::spawn(shared.clone().watch_catalogue(stop.clone()));
    let session = {
        let stop = stop.clone();
        let server = Server::new(shared.clone());
        async move {
            match rmcp::service::serve_server_with_ct(server, transport, stop.clone()).await {
                Ok(running) => {
                    let _ = direct.set(Arc::new(Direct::new(
                        running.service().clone(),
                        running.peer().clone(),
                        stop,
                    )));
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
            requests.closed.cancel();
            let _ = tokio::time::timeout(GRACE, requests.all_answered()).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the SDK's own reader makes of `line`.
    fn sdk(line: &str) -> Option<RxJsonRpcMessage<RoleServer>> {
        serde_json::from_str(line).ok()
    }

    #[test]
    fn a_call_read_directly_is_what_the_sdk_reads() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"v":"hi","n":[1,2.5,-3],"o":{"x":null}}}}"#,
            r#"{"id":"a-1","method":"tools/call","jsonrpc":"2.0","params":{"name":"write","arguments":{},"_meta":{"progressToken":3,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{"path":"n"},"requestState":"ab12","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}}}"#,
        ] {
            let direct = call_request(line.as_bytes());
            assert!(direct.is_some(), "{line}");
            // Written back out, with the `_meta` each keeps in its extensions.
            let written = |message: &Option<_>| serde_json::to_value(message).unwrap();
            assert_eq!(written(&direct), written(&sdk(line)), "{line}");
            assert!(
                matches!(
                    direct,
                    Some(JsonRpcMessage::Request(JsonRpcRequest {
                        request: ClientRequest::CallToolRequest(_),
                        ..
                    }))
                ),
                "{line}"
            );
        }
    }

    #[test]
    fn a_calls_meta_is_where_the_server_gives_it_to_the_tool() {
        use rmcp::model::GetMeta;
        // The serve loop hands a tool the request's `_meta` (its progress token among
        // it) from the request's own meta, which a call read directly must keep there.
        let line = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":"p-7"},"name":"echo","arguments":{}}}"#;
        let Some(JsonRpcMessage::Request(JsonRpcRequest { mut request, .. })) =
            call_request(line.as_bytes())
        else {
            panic!("{line} is a call");
        };
        assert_eq!(
            request.get_meta_mut().get_progress_token(),
            Some(rmcp::model::ProgressToken(RequestId::String("p-7".into()))),
        );
        let ClientRequest::CallToolRequest(call) = request else {
            panic!("{line} is a call");
        };
        assert_eq!(call.params.meta, None, "the meta is kept once, not twice");
        assert_eq!(call.params.name, "echo");
    }

    #[test]
    fn anything_but_a_well_formed_call_is_left_to_the_sdk() {
        for line in [
            // A response or an error that names a method is not a request.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"error":{"code":1,"message":"x"}}"#,
            // Not JSON-RPC 2.0, no id (a notification), another method, no tool name.
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            "[1, 2]",
        ] {
            assert!(call_request(line.as_bytes()).is_none(), "{line}");
        }
    }
}
