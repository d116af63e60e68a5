//! `evo db migrate|status`: the shared PostgreSQL database's schema (SQLite files in the
//! data directory migrate themselves whenever they are opened).

use clap::Subcommand;
#[cfg(feature = "full")]
use evo_host::storage::Pg;
use evo_host::storage::Storage;
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    /// Bring the shared database's schema up to date (nodes also do it when they start;
    /// several at once take turns under an advisory lock).
    Migrate,
    /// Say where state is kept, whether it answers, and its schema version.
    Status,
}

pub(crate) fn run(command: DbCommand, globals: &Globals) -> Result<(), Failure> {
    let storage = storage(globals)?;
    #[cfg(feature = "full")]
    if let Some(pg) = storage.shared() {
        return shared(command, globals, pg);
    }
    #[cfg(not(feature = "full"))]
    let _ = (command, storage);
    let message = format!(
        "storage is SQLite in {} ([storage] url is not set): its files migrate themselves when opened, nothing to do",
        globals.data_dir.display()
    );
    if globals.json {
        out!(
            "{}",
            json!({ "kind": "sqlite", "dataDir": globals.data_dir, "message": message })
        );
    } else {
        out!("{message}");
    }
    Ok(())
}

/// `evo db` on the shared database `pg`.
#[cfg(feature = "full")]
fn shared(command: DbCommand, globals: &Globals, pg: &Pg) -> Result<(), Failure> {
    let version = pg.schema_version()?;
    let (available, installed) = pg.pgvector()?;
    if globals.json {
        out!(
            "{}",
            json!({
                "kind": "postgres",
                "url": pg.describe(),
                "version": version,
                "latest": Pg::latest_version(),
                "applied": pg.migrated(),
                "pgvector": { "available": available, "installed": installed },
            })
        );
        return Ok(());
    }
    match command {
        DbCommand::Migrate => out!(
            "{}: schema version {version} of {} ({} applied now)",
            pg.describe(),
            Pg::latest_version(),
            pg.migrated()
        ),
        DbCommand::Status => {
            out!("storage:  postgres {}", pg.describe());
            out!("schema:   version {version} of {}", Pg::latest_version());
            out!("vectors:  {}", vectors(available));
        }
    }
    Ok(())
}

/// The storage this invocation's configuration names, connected (and migrated).
pub(crate) fn storage(globals: &Globals) -> Result<Storage, Failure> {
    let config = super::args::config(globals, &Default::default(), &Default::default())?;
    let secret = evo_host::secrets::SecretStore::new(&globals.data_dir)
        .snapshot()?
        .value(evo_host::storage::PASSWORD_VAR)
        .map(str::to_owned);
    Ok(Storage::open(&config.storage, &globals.data_dir, secret)?)
}

/// How vectors are searched, for `evo db status` and `evo doctor`.
#[cfg(feature = "full")]
pub(crate) fn vectors(available: bool) -> &'static str {
    if available {
        "bytea in the database, searched in each node's process (the server offers pgvector; this version of Evo does not use it yet)"
    } else {
        "bytea in the database, searched in each node's process (the server has no pgvector)"
    }
}
