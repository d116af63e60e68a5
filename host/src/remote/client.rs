//! The connection to a remote node (with the `remotes` feature): one WebSocket per
//! remote, made on first use and again after it drops, and its skills as executors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::protocol::{self, Reply, Request, SkillInfo};
use super::{RemoteSpec, keep_list, lists, ws_url};
use crate::error::{Error, Result};
use crate::secrets::SecretStore;
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::manifest::SkillMeta;

/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a `list` may take at start-up before the remote's skills are left out.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(3);
/// The most bytes one frame may have.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// One remote node: a connection made on first use and again after it drops.
#[derive(Debug)]
pub struct Remote {
    spec: RemoteSpec,
    data_dir: PathBuf,
    secrets: Arc<SecretStore>,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    next_id: AtomicU64,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;

#[derive(Debug)]
struct Connection {
    out: mpsc::Sender<Message>,
    pending: Pending,
    closed: tokio_util::sync::CancellationToken,
}

impl Remote {
    /// The remote `spec`, its token read from `secrets` when it names one.
    pub fn new(data_dir: &Path, spec: RemoteSpec, secrets: Arc<SecretStore>) -> Self {
        Self {
            spec,
            data_dir: data_dir.to_owned(),
            secrets,
            connection: tokio::sync::Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    /// The remote's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    fn unavailable(&self, message: String, transient: bool) -> Error {
        Error::Remote {
            remote: self.spec.name.clone(),
            code: "REMOTE_UNAVAILABLE",
            message,
            transient,
        }
    }

    async fn connect(&self) -> Result<Arc<Connection>> {
        let url = ws_url(&self.spec.url).map_err(|m| self.unavailable(m, false))?;
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| self.unavailable(format!("{url}: {e}"), false))?;
        if let Some(name) = &self.spec.token_secret {
            let secrets = self.secrets.snapshot()?;
            let token = secrets.value(name).ok_or_else(|| {
                self.unavailable(
                    format!(
                        "its token, secret {name}, is not set; set it with `evo secret set {name}`"
                    ),
                    false,
                )
            })?;
            let value = format!("Bearer {token}").parse().map_err(|_| {
                self.unavailable(format!("secret {name} is not a valid token"), false)
            })?;
            request.headers_mut().insert("authorization", value);
        }
        let mut config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default();
        config.max_message_size = Some(MAX_FRAME_BYTES);
        config.max_frame_size = Some(MAX_FRAME_BYTES);
        let connected = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio_tungstenite::connect_async_with_config(request, Some(config), false),
        )
        .await;
        let (socket, _) = match connected {
            Ok(Ok(socket)) => socket,
            Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
                let status = response.status();
                return Err(self.unavailable(
                    if status == 401 && self.spec.token_secret.is_none() {
                        format!(
                            "{} asks for a token (401) and none is configured for this remote; add it again with one: `evo remote add {} {} --token-secret NAME`",
                            self.spec.url, self.spec.name, self.spec.url
                        )
                    } else if status == 401 {
                        format!("{} refused the token (401); check the token secret (`evo remote list`) against the node's --token", self.spec.url)
                    } else {
                        format!("{} answered {status} instead of opening {}; is it `evo serve --http` of this version?", self.spec.url, protocol::PATH)
                    },
                    false,
                ));
            }
            Ok(Err(e)) => {
                return Err(self.unavailable(
                    format!(
                        "cannot reach {}: {e}; is `evo serve --http` running there?",
                        self.spec.url
                    ),
                    true,
                ));
            }
            Err(_) => {
                return Err(self.unavailable(
                    format!(
                        "{} did not answer within {} s",
                        self.spec.url,
                        CONNECT_TIMEOUT.as_secs()
                    ),
                    true,
                ));
            }
        };
        let (mut sink, mut stream) = socket.split();
        let (out, mut outgoing) = mpsc::channel::<Message>(64);
        let pending: Pending = Arc::default();
        let closed = tokio_util::sync::CancellationToken::new();
        let connection = Arc::new(Connection {
            out,
            pending: pending.clone(),
            closed: closed.clone(),
        });
        let name = self.spec.name.clone();
        tokio::spawn({
            let closed = closed.clone();
            async move {
                loop {
                    tokio::select! {
                        () = closed.cancelled() => break,
                        message = outgoing.recv() => match message {
                            Some(message) => if sink.send(message).await.is_err() { break },
                            None => break,
                        },
                    }
                }
                let _ = sink.close().await;
                closed.cancel();
            }
        });
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else {
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                    continue;
                };
                match serde_json::from_str::<Reply>(&text) {
                    Ok(reply) => {
                        let waiting = pending
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .remove(&reply.id);
                        if let Some(waiting) = waiting {
                            let _ = waiting.send(reply);
                        }
                    }
                    Err(e) => tracing::warn!(remote = %name, "a frame that is not a reply: {e}"),
                }
            }
            tracing::info!(remote = %name, "connection closed");
            closed.cancel();
            // Dropping the senders fails every call still waiting.
            pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clear();
        });
        Ok(connection)
    }

    /// The open connection, or a new one.
    async fn connection(&self) -> Result<Arc<Connection>> {
        let mut current = self.connection.lock().await;
        if let Some(connection) = current.as_ref()
            && !connection.closed.is_cancelled()
        {
            return Ok(connection.clone());
        }
        let connection = self.connect().await?;
        *current = Some(connection.clone());
        Ok(connection)
    }

    /// Sends `request` (made with a fresh id) and waits up to `wait` for its reply.
    async fn request(&self, make: impl FnOnce(u64) -> Request, wait: Duration) -> Result<Reply> {
        let connection = self.connection().await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        connection
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, tx);
        let text = serde_json::to_string(&make(id)).map_err(|e| Error::Engine(e.to_string()))?;
        if connection.out.send(Message::text(text)).await.is_err() {
            return Err(self.unavailable(
                format!(
                    "the connection to {} closed before the request was sent",
                    self.spec.url
                ),
                true,
            ));
        }
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(self.unavailable(
                format!(
                    "the connection to {} was lost during the call; it may or may not have finished there",
                    self.spec.url
                ),
                false,
            )),
            Err(_) => {
                connection
                    .pending
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&id);
                Err(self.unavailable(
                    format!("{} did not answer within {} ms", self.spec.url, wait.as_millis()),
                    false,
                ))
            }
        }
    }

    fn failed(&self, reply: Reply) -> Error {
        match reply.error {
            Some(error) => Error::Remote {
                remote: self.spec.name.clone(),
                code: Error::intern_code(&error.code),
                message: match error.hint {
                    Some(hint) => {
                        format!("{} (hint from {}: {hint})", error.message, self.spec.name)
                    }
                    None => error.message,
                },
                transient: error.transient,
            },
            None => self.unavailable("the node sent an empty reply".into(), false),
        }
    }

    /// The skills the node serves, asked now; the list is kept for the next start.
    pub async fn list(&self) -> Result<Vec<SkillInfo>> {
        let reply = self
            .request(|id| Request::List { id }, LIST_TIMEOUT)
            .await?;
        match reply.skills {
            Some(skills) => {
                keep_list(&self.data_dir, &self.spec, &skills);
                Ok(skills)
            }
            None => Err(self.failed(reply)),
        }
    }

    /// The list kept from the last time the node was asked, if it was asked at this URL.
    fn kept_list(&self) -> Option<Vec<SkillInfo>> {
        lists(&self.data_dir)
            .remove(&self.spec.name)
            .filter(|l| l.url == self.spec.url)
            .map(|l| l.skills)
    }

    /// Calls `skill` there with `input`, waiting up to `deadline`.
    pub async fn call(&self, skill: &str, input: Value, deadline: Duration) -> Result<Value> {
        let deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX);
        // The node gives up at the deadline and says so; wait a little past it for that.
        let wait = deadline + Duration::from_secs(2);
        let reply = self
            .request(
                |id| Request::Call {
                    id,
                    skill: skill.to_owned(),
                    input,
                    deadline_ms: Some(deadline_ms),
                },
                wait,
            )
            .await?;
        match reply.output {
            Some(output) if reply.error.is_none() => Ok(output),
            _ => Err(self.failed(reply)),
        }
    }

    /// The node's skills as skills of this host, named `NAME/skill`: from the list kept
    /// at the last `list` (no connection, so a host starts without waiting on its
    /// remotes), else asked now. `evo remote add` and `evo remote list` ask again.
    pub async fn skills(self: &Arc<Self>) -> Result<Vec<(SkillMeta, Arc<dyn Executor>)>> {
        let infos = match self.kept_list() {
            Some(kept) => kept,
            None => self.list().await?,
        };
        Ok(infos
            .into_iter()
            .map(|info| {
                let mut meta = SkillMeta::remote(&format!("{}/{}", self.spec.name, info.name));
                meta.description = info.description;
                meta.version = info.version;
                meta.category = info.category;
                meta.tags = info.tags;
                meta.input = info.input;
                meta.output = info.output;
                meta.timeout_ms = info.timeout_ms;
                // What the skill can do there is what a call of it can do from here.
                meta.permission = Some(info.permission);
                let executor: Arc<dyn Executor> = Arc::new(RemoteSkill {
                    remote: self.clone(),
                    skill: info.name,
                    timeout: Duration::from_millis(info.timeout_ms),
                });
                (meta, executor)
            })
            .collect())
    }
}

/// A skill of a remote node.
#[derive(Debug)]
pub struct RemoteSkill {
    remote: Arc<Remote>,
    skill: String,
    timeout: Duration,
}

impl Executor for RemoteSkill {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Remote
    }

    fn execute(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(async move {
            self.remote
                .call(&self.skill, input, self.timeout)
                .await
                .map(SkillOutput::from)
        })
    }

    /// The node enforces the skill's timeout and reports it in its words.
    fn owns_deadline(&self) -> bool {
        true
    }
}
