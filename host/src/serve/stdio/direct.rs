//! The path `tools/call` takes once the session has begun: beside the SDK's service
//! loop, on a task of its own.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use rmcp::model::{
    ClientNotification, ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, JsonRpcRequest,
    ProtocolVersion, RequestId,
};
use rmcp::service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{Peer, RoleServer, Service};
use tokio_util::sync::CancellationToken;

use super::{Requests, SharedWriter, write_line};
use crate::serve::Server;

/// Answers `tools/call` beside the SDK's service loop, once the session has begun.
///
/// The loop takes each request from the reader through a channel, runs it on a task
/// of its own, takes the answer back through another channel and writes it from a
/// third task, with a cancellation token, a tracing span and a table entry made for
/// each. A call here goes
/// from the line read to a task of its own, which runs the SDK's own request handler
/// (its checks of protocol version and metadata included) and writes the answer. The
/// session's peer is shared: what a call sends the client (progress, log messages,
/// the questions it asks and the answers to them) still goes through the loop.
pub(super) struct Direct {
    server: Server,
    peer: Peer<RoleServer>,
    /// Cancelled when the session ends.
    stop: CancellationToken,
    /// The calls running, by request id: what cancels each.
    running: std::sync::Mutex<HashMap<RequestId, CancellationToken>>,
}

impl Direct {
    /// Calls answered for the session `server` and `peer` serve, until `stop`.
    pub(super) fn new(server: Server, peer: Peer<RoleServer>, stop: CancellationToken) -> Self {
        Self {
            server,
            peer,
            stop,
            running: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Takes `message` when it is for this path: a call (then run) or the cancellation
    /// of one running here. Any other message is given back, for the loop.
    pub(super) fn take(
        self: &Arc<Self>,
        message: RxJsonRpcMessage<RoleServer>,
        writer: &SharedWriter,
        requests: &Requests,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        match message {
            JsonRpcMessage::Request(JsonRpcRequest {
                id,
                request: request @ ClientRequest::CallToolRequest(_),
                jsonrpc,
            }) => {
                if !self.serves(&request) {
                    return Some(JsonRpcMessage::Request(JsonRpcRequest {
                        jsonrpc,
                        id,
                        request,
                    }));
                }
                self.run(id, request, writer.clone(), requests.clone());
                None
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                    && let Some(call) = self.calls().remove(id)
                {
                    // A cancelled request is not answered.
                    call.cancel();
                    return None;
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            other => Some(other),
        }
    }

    /// Whether the call is answered here. The loop runs a request's handler knowing
    /// the protocol version its `_meta` names, and refuses a request to the client
    /// from a session on 2026-07-28 or later only by that version; here the session's
    /// version stands in. The two agree unless the call names an earlier version
    /// than the session's: such a call goes to the loop.
    fn serves(&self, request: &ClientRequest) -> bool {
        match request.get_meta().protocol_version() {
            None => true,
            Some(named) => {
                named >= ProtocolVersion::V_2026_07_28
                    || self
                        .peer
                        .peer_info()
                        .is_some_and(|info| info.protocol_version == named)
            }
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs the call on a task of its own and writes its answer, unless it was
    /// cancelled meanwhile.
    fn run(
        self: &Arc<Self>,
        id: RequestId,
        mut request: ClientRequest,
        writer: SharedWriter,
        requests: Requests,
    ) {
        let cancel = self.stop.child_token();
        self.calls().insert(id.clone(), cancel.clone());
        let mut context = RequestContext::new(id.clone(), self.peer.clone());
        context.ct = cancel;
        context.meta = std::mem::take(request.get_meta_mut());
        context.extensions = std::mem::take(request.extensions_mut());
        let this = self.clone();
        tokio::spawn(async move {
            let answer: TxJsonRpcMessage<RoleServer> =
                match this.server.handle_request(request, context).await {
                    Ok(result) => JsonRpcMessage::response(result, id.clone()),
                    Err(error) => JsonRpcMessage::error(error, Some(id.clone())),
                };
            let Some(call) = this.calls().remove(&id) else {
                return;
            };
            // What the call left running (a heartbeat) stops with it.
            call.cancel();
            if let Err(e) = write_line(&writer, &answer).await {
                tracing::debug!("stdout: {e}");
            }
            requests.answered(&id);
        });
    }
}
