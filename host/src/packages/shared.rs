//! The catalogue several nodes share, in PostgreSQL: each installed skill's package
//! stored once by its digest (`packages`), and what is installed under each name
//! (`installs`). An install or uninstall on any node is announced on the
//! `evo_catalogue` channel; every node then brings its skills directory, which becomes
//! a cache, in line with it ([`Host::refresh`](crate::Host::refresh)): it extracts a
//! new package through the ordinary install (the same checks, its own compile cache),
//! verifies the digest, and removes what was uninstalled elsewhere.
//!
//! A node remembers which of its skills came from the shared catalogue (`.shared` in
//! the skills directory): one of those that is no longer there was uninstalled on
//! another node and goes; a skill the node had before it joined is published instead,
//! so that switching a machine to shared storage loses none of its skills.
//!
//! Needs the `postgres` feature of evo-host (on by default).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::archive;
use super::{InstallRecord, MARKER};
use crate::error::{Error, Result};
use crate::storage::Pg;
use crate::storage::listen::Listening;

/// The channel installs and uninstalls are announced on.
pub const CHANNEL: &str = "evo_catalogue";
/// Deletes the packages no name is installed under any more.
const DROP_UNUSED_PACKAGES: &str =
    "DELETE FROM packages p WHERE NOT EXISTS (SELECT 1 FROM installs i WHERE i.digest = p.digest)";

/// The file in the skills directory naming the skills that came from the shared
/// catalogue.
pub const SEEN_FILE: &str = ".shared";

/// The shared catalogue, as one node sees it.
#[derive(Debug)]
pub struct SharedCatalogue {
    pg: Arc<Pg>,
    listening: Listening,
    /// Notifications heard when the node last synced; `u64::MAX` before the first sync.
    synced: AtomicU64,
    root: PathBuf,
    /// Digests of packages this node refused (not the skill and digest they were stored
    /// as, or not a valid skill): not fetched again.
    refused: std::sync::Mutex<BTreeSet<String>>,
}

impl SharedCatalogue {
    /// The catalogue in `pg`, for the node whose skills directory is `root`.
    pub fn new(pg: Arc<Pg>, root: &Path) -> Self {
        Self {
            listening: pg.listen(CHANNEL),
            pg,
            synced: AtomicU64::new(u64::MAX),
            root: root.to_owned(),
            refused: std::sync::Mutex::default(),
        }
    }

    /// Whether this node refused the package `digest` before.
    pub fn refused(&self, digest: &str) -> bool {
        self.refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(digest)
    }

    /// Notes that this node refuses the package `digest`.
    pub fn refuse(&self, digest: &str) {
        self.refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(digest.to_owned());
    }

    /// Whether another node may have changed the catalogue since [`Self::synced`]
    /// (always, while the listening connection is down).
    pub fn stale(&self) -> bool {
        let notices = self.listening.notices();
        !notices.live() || notices.heard() != self.synced.load(Ordering::Acquire)
    }

    /// What has been heard so far, to pass to [`Self::synced`] after a sync that
    /// started now.
    pub fn heard(&self) -> u64 {
        self.listening.notices().heard()
    }

    /// Notes a sync that started when `heard` had been heard.
    pub fn synced(&self, heard: u64) {
        self.synced.store(heard, Ordering::Release);
    }

    /// Stores the package of the skill installed in `root/NAME` (once per digest) and
    /// installs it under its name for every node.
    pub fn publish(&self, record: &InstallRecord) -> Result<()> {
        let dir = self.root.join(&record.name);
        let zip = archive::zip_dir_except(&dir, &[MARKER, ".evo"])?;
        let record_json = serde_json::to_string(record)
            .map_err(|e| Error::Engine(format!("cannot write the install record: {e}")))?;
        let (name, digest) = (record.name.clone(), record.digest.clone());
        let now = i64::try_from(crate::unix_millis()).unwrap_or(i64::MAX);
        self.pg.run(move |mut client| async move {
            let tx = client.transaction().await?;
            tx.execute(
                "INSERT INTO packages (digest, bytes, stored_at) VALUES ($1, $2, $3)
                 ON CONFLICT (digest) DO NOTHING",
                &[&digest, &zip, &now],
            )
            .await?;
            tx.execute(
                "INSERT INTO installs (name, digest, record, installed_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (name) DO UPDATE SET digest = excluded.digest,
                     record = excluded.record, installed_at = excluded.installed_at",
                &[&name, &digest, &record_json, &now],
            )
            .await?;
            // The version it replaced, if no other name uses it.
            tx.execute(DROP_UNUSED_PACKAGES, &[]).await?;
            tx.commit().await
        })?;
        self.note_seen(&record.name, true)
    }

    /// Notes whether `name` is one of the skills this node has from the catalogue.
    pub fn note_seen(&self, name: &str, seen: bool) -> Result<()> {
        let mut names = self.seen()?;
        let changed = if seen {
            names.insert(name.to_owned())
        } else {
            names.remove(name)
        };
        if changed {
            self.save_seen(&names)?;
        }
        Ok(())
    }

    /// Uninstalls `name` for every node; false when it was not in the catalogue.
    pub fn withdraw(&self, name: &str) -> Result<bool> {
        let name = name.to_owned();
        let removed = self.pg.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let removed = tx
                .execute("DELETE FROM installs WHERE name = $1", &[&name])
                .await?;
            tx.execute(DROP_UNUSED_PACKAGES, &[]).await?;
            tx.commit().await?;
            Ok(removed > 0)
        })?;
        Ok(removed)
    }

    /// Every installed skill's name and digest.
    pub fn installs(&self) -> Result<BTreeMap<String, String>> {
        self.pg.run(|client| async move {
            let rows = client
                .query("SELECT name, digest FROM installs", &[])
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// The registry skill `name` was installed from on the node that installed it.
    pub fn source(
        &self,
        name: &str,
    ) -> Result<Option<crate::skill::manifest::package::RegistrySource>> {
        let key = name.to_owned();
        let record: Option<String> = self.pg.run(move |client| async move {
            let row = client
                .query_opt("SELECT record FROM installs WHERE name = $1", &[&key])
                .await?;
            Ok(row.map(|r| r.get(0)))
        })?;
        Ok(record
            .and_then(|text| serde_json::from_str::<InstallRecord>(&text).ok())
            .and_then(|record| record.source))
    }

    /// The package stored under `digest`.
    pub fn package(&self, digest: &str) -> Result<Vec<u8>> {
        let key = digest.to_owned();
        let bytes: Option<Vec<u8>> = self.pg.run(move |client| async move {
            let row = client
                .query_opt("SELECT bytes FROM packages WHERE digest = $1", &[&key])
                .await?;
            Ok(row.map(|r| r.get(0)))
        })?;
        bytes.ok_or_else(|| Error::Database {
            message: format!(
                "the package {digest} is no longer stored (uninstalled or replaced meanwhile)"
            ),
            transient: true,
        })
    }

    /// Every skill's own grants as the nodes share them: its entry (the `[grants]`
    /// keys and values, as JSON), or `None` where a node removed it.
    pub fn grants(&self) -> Result<BTreeMap<String, Option<serde_json::Value>>> {
        let rows: Vec<(String, Option<String>)> = self.pg.run(|client| async move {
            let rows = client
                .query("SELECT name, entry FROM skill_grants", &[])
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })?;
        Ok(rows
            .into_iter()
            .map(|(name, entry)| (name, entry.and_then(|e| serde_json::from_str(&e).ok())))
            .collect())
    }

    /// Sets skill `name`'s own grants for every node (`None` removes its entry).
    pub fn set_grants(&self, name: &str, entry: Option<&serde_json::Value>) -> Result<()> {
        let (name, entry) = (name.to_owned(), entry.map(ToString::to_string));
        let now = i64::try_from(crate::unix_millis()).unwrap_or(i64::MAX);
        self.pg.run(move |client| async move {
            client
                .execute(
                    "INSERT INTO skill_grants (name, entry, changed_at) VALUES ($1, $2, $3)
                     ON CONFLICT (name) DO UPDATE SET entry = excluded.entry,
                         changed_at = excluded.changed_at",
                    &[&name, &entry, &now],
                )
                .await?;
            Ok(())
        })
    }

    /// The skills this node took from the shared catalogue.
    pub fn seen(&self) -> Result<BTreeSet<String>> {
        let path = self.root.join(SEEN_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text.lines().map(str::to_owned).collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
            Err(source) => Err(Error::Io { path, source }),
        }
    }

    /// Writes [`Self::seen`] (atomically).
    pub fn save_seen(&self, seen: &BTreeSet<String>) -> Result<()> {
        let text: String = seen.iter().map(|name| format!("{name}\n")).collect();
        crate::paths::write_atomic(&self.root.join(SEEN_FILE), text.as_bytes())
    }
}
