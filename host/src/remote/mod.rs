//! Remotes: skills that run on another Evo node (`distributed` in the execution-result
//! seed).
//!
//! Node B runs `evo serve --http` (with a token off loopback); node A adds it with
//! `evo remote add NAME URL` and lists and calls its skills as `NAME/skill`, through
//! the same kernel gates as its own. The nodes talk over one WebSocket per remote
//! (`/v1/ws`; docs/decisions.md says why a WebSocket), JSON frames matched by id
//! ([`protocol`]), so calls run side by side on one connection.
//!
//! - A call carries its deadline; B gives up then and says so.
//! - B's error codes come back as A's (`INVALID_INPUT` stays `INVALID_INPUT`).
//! - A connection that drops fails the calls in flight with `REMOTE_UNAVAILABLE`
//!   (which B may or may not have finished); the next call connects again.

pub mod protocol;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use self::protocol::{Reply, Request, SkillInfo};
use crate::error::{Error, Result};
use crate::secrets::SecretStore;
use crate::skill::context::BoxFuture;
use crate::skill::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::kernel::SkillContext;
use crate::skill::meta::SkillMeta;

/// The file, inside the data directory.
pub const REMOTES_FILE: &str = "remotes.json";
/// The last skill list of each remote, inside the data directory.
pub const LISTS_FILE: &str = "remote-skills.json";
/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a `list` may take at start-up before the remote's skills are left out.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(3);
/// The most bytes one frame may have.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// A remote as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSpec {
    /// The name its skills are listed under (`NAME/skill`).
    pub name: String,
    /// Where `evo serve --http` listens there (`http://host:port`).
    pub url: String,
    /// The secret (`evo secret set`) holding its token, if it needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_secret: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    remotes: Vec<RemoteSpec>,
}

/// The remotes of a data directory.
pub fn load(data_dir: &Path) -> Result<Vec<RemoteSpec>> {
    let path = data_dir.join(REMOTES_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice::<File>(&bytes)
            .map(|f| f.remotes)
            .map_err(|e| Error::Config {
                path,
                line: Some(e.line()),
                key: None,
                message: format!(
                    "not a valid remotes file: {e}; fix it or remove it and add the remotes again"
                ),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io_at(&path)(e)),
    }
}

fn save(data_dir: &Path, remotes: Vec<RemoteSpec>) -> Result<()> {
    std::fs::create_dir_all(data_dir).map_err(Error::io_at(data_dir))?;
    let path = data_dir.join(REMOTES_FILE);
    let mut temp = tempfile::NamedTempFile::new_in(data_dir).map_err(Error::io_at(data_dir))?;
    let bytes =
        serde_json::to_vec_pretty(&File { remotes }).map_err(|e| Error::Engine(e.to_string()))?;
    temp.write_all(&bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(Error::io_at(temp.path()))?;
    temp.persist(&path)
        .map_err(|e| Error::io_at(&path)(e.error))?;
    Ok(())
}

/// The last list of one remote's skills, and where it came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Listed {
    url: String,
    listed_at: u64,
    skills: Vec<SkillInfo>,
}

/// The last lists of the remotes' skills (empty when none was kept).
fn lists(data_dir: &Path) -> std::collections::BTreeMap<String, Listed> {
    std::fs::read(data_dir.join(LISTS_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Keeps `skills` as the last list of `remote`; a failure to write only costs the next
/// start a connection, so it is logged, not returned.
fn keep_list(data_dir: &Path, remote: &RemoteSpec, skills: &[SkillInfo]) {
    let configured = load(data_dir).unwrap_or_default();
    let mut all = lists(data_dir);
    all.insert(
        remote.name.clone(),
        Listed {
            url: remote.url.clone(),
            listed_at: crate::unix_millis(),
            skills: skills.to_vec(),
        },
    );
    all.retain(|name, _| configured.iter().any(|s| &s.name == name));
    let written = serde_json::to_vec_pretty(&all)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            let mut temp = tempfile::NamedTempFile::new_in(data_dir)?;
            temp.write_all(&bytes)?;
            temp.persist(data_dir.join(LISTS_FILE))
                .map(|_| ())
                .map_err(|e| e.error)
        });
    if let Err(e) = written {
        tracing::warn!("cannot keep the skill list of remote {}: {e}", remote.name);
    }
}

/// Checks a remote's name and URL.
pub fn check(spec: &RemoteSpec) -> std::result::Result<(), String> {
    if !crate::skill::meta::is_valid_name(&spec.name) {
        return Err(format!(
            "{:?} is not a remote name: lower-case letters, digits, `_` and `-`, starting with a letter",
            spec.name
        ));
    }
    ws_url(&spec.url).map(|_| ())?;
    if let Some(secret) = &spec.token_secret {
        crate::secrets::check_name(secret)?;
    }
    Ok(())
}

/// Adds (or replaces) a remote.
pub fn add(data_dir: &Path, spec: RemoteSpec) -> Result<()> {
    check(&spec).map_err(|message| Error::Config {
        path: data_dir.join(REMOTES_FILE),
        line: None,
        key: Some(spec.name.clone()),
        message,
    })?;
    let mut remotes = load(data_dir)?;
    remotes.retain(|r| r.name != spec.name);
    remotes.push(spec);
    remotes.sort_by(|a, b| a.name.cmp(&b.name));
    save(data_dir, remotes)
}

/// Removes a remote; false when there was none of that name.
pub fn remove(data_dir: &Path, name: &str) -> Result<bool> {
    let mut remotes = load(data_dir)?;
    let before = remotes.len();
    remotes.retain(|r| r.name != name);
    if remotes.len() == before {
        return Ok(false);
    }
    save(data_dir, remotes)?;
    let mut kept = lists(data_dir);
    if kept.remove(name).is_some() {
        let path = data_dir.join(LISTS_FILE);
        let bytes = serde_json::to_vec_pretty(&kept).map_err(|e| Error::Engine(e.to_string()))?;
        let mut temp = tempfile::NamedTempFile::new_in(data_dir).map_err(Error::io_at(data_dir))?;
        temp.write_all(&bytes).map_err(Error::io_at(temp.path()))?;
        temp.persist(&path)
            .map_err(|e| Error::io_at(&path)(e.error))?;
    }
    Ok(true)
}

/// `http://host:port[/]` as the WebSocket URL of its `/v1/ws`.
fn ws_url(url: &str) -> std::result::Result<String, String> {
    let base = url.trim_end_matches('/');
    if let Some(rest) = base.strip_prefix("http://") {
        if rest.is_empty() || rest.contains('/') {
            return Err(format!(
                "{url:?}: give the server's address only, as http://HOST:PORT"
            ));
        }
        Ok(format!("ws://{rest}{}", protocol::PATH))
    } else if base.starts_with("https://") {
        Err(format!(
            "{url:?}: https is not supported for remotes yet; reach the node over a private network, an SSH tunnel or a TLS-terminating proxy on the same machine"
        ))
    } else {
        Err(format!(
            "{url:?} is not an http:// URL of an `evo serve --http` node"
        ))
    }
}

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

/// Where the remotes file is.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(REMOTES_FILE)
}
