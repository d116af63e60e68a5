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

#[cfg(feature = "remotes")]
mod client;
// Both ends speak it: the client here, the server in `serve::ws`.
#[cfg_attr(
    not(any(feature = "remotes", feature = "serve")),
    allow(
        dead_code,
        reason = "a build with neither end has only `SkillInfo` to name"
    )
)]
pub mod protocol;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[cfg(feature = "remotes")]
pub use self::client::Remote;
use self::protocol::SkillInfo;
use crate::error::{Error, Result};

/// The file, inside the data directory.
pub const REMOTES_FILE: &str = "remotes.json";
/// The last skill list of each remote, inside the data directory.
pub const LISTS_FILE: &str = "remote-skills.json";

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
#[cfg(feature = "remotes")]
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
    if !crate::skill::manifest::is_valid_name(&spec.name) {
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

/// Where the remotes file is.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(REMOTES_FILE)
}

#[cfg(test)]
mod tests {
    // Run by CI's build without default features.
    #[cfg(not(feature = "remotes"))]
    #[tokio::test]
    async fn a_build_without_remotes_keeps_the_list_and_says_what_a_remote_needs() {
        use serde_json::json;

        use super::{RemoteSpec, add, load};
        use crate::Host;

        let data = tempfile::tempdir().unwrap();
        let spec = RemoteSpec {
            name: "work".into(),
            url: "http://127.0.0.1:9".into(),
            token_secret: None,
        };
        add(data.path(), spec.clone()).unwrap();
        assert_eq!(load(data.path()).unwrap(), [spec]);

        let host = Host::builder().data_dir(data.path()).build().await.unwrap();
        let errors = host.load_errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].remote.as_deref(), Some("work"));
        assert_eq!(errors[0].code, "FEATURE_NOT_BUILT");
        assert!(
            errors[0].error.contains("`remotes` feature"),
            "{}",
            errors[0].error
        );

        // What `evo skill run work/echo` asks first.
        let err = host.resolve("work/echo").await.unwrap_err();
        assert_eq!(err.code(), "FEATURE_NOT_BUILT");
        assert_eq!(
            err.to_string(),
            "work/echo, a skill of remote work, is not in this build of Evo: it needs evo-host's `remotes` feature"
        );
        // The host's own skills are there as ever.
        let out = host
            .call("calculate", json!({ "expression": "1 + 1" }))
            .await
            .unwrap();
        assert_eq!(out, json!({ "result": 2 }));
    }
}
