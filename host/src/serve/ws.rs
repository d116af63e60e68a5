//! `/v1/ws`: the endpoint other Evo nodes call this one's skills through (see
//! [`crate::remote`]). One connection carries many calls at once; a call that outlives
//! the caller's deadline ends with `SKILL_TIMEOUT`; a connection that closes cancels
//! the calls still running for it.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::refusal::Refusal;
use super::shared::Shared;
use crate::error::Error;
use crate::remote::protocol::{RemoteError, Reply, Request, SkillInfo};

pub(super) async fn upgrade(State(shared): State<Arc<Shared>>, ws: WebSocketUpgrade) -> Response {
    let limit = shared.settings.max_message_kb << 10;
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| serve(shared, socket))
}

async fn serve(shared: Arc<Shared>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (replies, mut outgoing) = mpsc::channel::<Reply>(64);
    let writer = tokio::spawn(async move {
        while let Some(reply) = outgoing.recv().await {
            let Ok(text) = serde_json::to_string(&reply) else {
                continue;
            };
            if sink.send(Message::text(text)).await.is_err() {
                break;
            }
        }
    });
    // Cancelled when the caller goes away: its calls stop with it.
    let gone = CancellationToken::new();
    while let Some(Ok(message)) = stream.next().await {
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => break,
            _ => continue,
        };
        let request = match serde_json::from_str::<Request>(&text) {
            Ok(request) => request,
            Err(e) => {
                let id = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v["id"].as_u64())
                    .unwrap_or(0);
                let _ = replies
                    .send(error_reply(
                        id,
                        RemoteError {
                            code: "INVALID_REQUEST".into(),
                            message: format!("not a request frame: {e}"),
                            hint: Some("send {\"op\":\"list\",\"id\":1} or {\"op\":\"call\",\"id\":2,\"skill\":…,\"input\":…}".into()),
                            transient: false,
                        },
                    ))
                    .await;
                continue;
            }
        };
        match request {
            Request::List { id } => {
                let skills = shared
                    .served_skills()
                    .iter()
                    .map(|s| SkillInfo {
                        name: s.meta.name.clone(),
                        description: s.meta.description.clone(),
                        version: s.meta.version.clone(),
                        category: s.meta.category.clone(),
                        tags: s.meta.tags.clone(),
                        input: s.meta.input.clone(),
                        output: s.meta.output.clone(),
                        timeout_ms: s.meta.timeout_ms,
                        permission: s.permission(),
                    })
                    .collect();
                let _ = replies
                    .send(Reply {
                        id,
                        skills: Some(skills),
                        ..Reply::default()
                    })
                    .await;
            }
            Request::Call {
                id,
                skill,
                input,
                deadline_ms,
            } => {
                let (shared, replies, gone) = (shared.clone(), replies.clone(), gone.clone());
                tokio::spawn(async move {
                    let reply = call(&shared, id, &skill, input, deadline_ms, &gone).await;
                    let _ = replies.send(reply).await;
                });
            }
        }
    }
    gone.cancel();
    drop(replies);
    let _ = writer.await;
}

async fn call(
    shared: &Shared,
    id: u64,
    skill: &str,
    input: serde_json::Value,
    deadline_ms: Option<u64>,
    gone: &CancellationToken,
) -> Reply {
    let Some(found) = shared.served(skill) else {
        return failed(
            id,
            &Error::SkillNotFound {
                name: skill.to_owned(),
            },
        );
    };
    let call = shared.call(&found.meta.name, input, None, None, gone);
    let result = match deadline_ms {
        Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), call).await {
            Ok(result) => result,
            Err(_) => {
                return failed(
                    id,
                    &Error::Timeout {
                        skill: skill.to_owned(),
                        limit_ms: ms,
                    },
                );
            }
        },
        None => call.await,
    };
    match result {
        // The memory writes were kept on this node, whose memory they belong to.
        Ok(out) => Reply {
            id,
            output: Some(out.output),
            ..Reply::default()
        },
        Err(Refusal::Failed(error)) => failed(id, &error),
        Err(Refusal::Busy { waiting }) => error_reply(
            id,
            RemoteError {
                code: "SERVER_BUSY".into(),
                message: format!(
                    "the node is busy: every slot is taken and {waiting} calls already wait for one"
                ),
                hint: Some("retry in a moment, or against another node".into()),
                transient: true,
            },
        ),
        Err(Refusal::Cancelled | Refusal::ShuttingDown) => error_reply(
            id,
            RemoteError {
                code: "SHUTTING_DOWN".into(),
                message: "the node is shutting down and takes no more calls".into(),
                hint: Some("retry against a running node".into()),
                transient: true,
            },
        ),
    }
}

fn failed(id: u64, error: &Error) -> Reply {
    error_reply(
        id,
        RemoteError {
            code: error.code().to_owned(),
            message: error.to_string(),
            hint: error.hint().map(str::to_owned),
            transient: error.is_transient(),
        },
    )
}

fn error_reply(id: u64, error: RemoteError) -> Reply {
    Reply {
        id,
        error: Some(error),
        ..Reply::default()
    }
}
