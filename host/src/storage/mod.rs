//! Where a host keeps what outlives a call: the call statistics, the call history (with
//! the security log's refusals), memory, and the catalogue of installed skills.
//!
//! One machine keeps them in SQLite files in its data directory (the default). Several
//! `evo serve` nodes behind a load balancer keep them in one PostgreSQL database
//! (`[storage] url = "postgres://…"` in `evo.toml`, or `EVO_STORAGE_URL`), and each node
//! is stateless: its data directory holds only caches it can rebuild (compiled
//! components, materialised packages, the skill index).
//!
//! Each kind of state goes through a trait of its own module with both backends behind
//! it (`CallStore` for statistics and history, the
//! memory's `MemoryDb`, the shared catalogue); front ends never see which one is in use,
//! and the behaviour tests run against both. This module holds what they share: the
//! settings and the connection to PostgreSQL.

#[cfg(feature = "postgres")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod listen;
#[cfg(feature = "postgres")]
#[cfg(not(feature = "internals"))]
pub(crate) mod listen;
#[cfg(feature = "postgres")]
mod migrations;
#[cfg(feature = "postgres")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod pg;
#[cfg(feature = "postgres")]
#[cfg(not(feature = "internals"))]
pub(crate) mod pg;
#[cfg(feature = "postgres")]
mod tls;

use std::path::{Path, PathBuf};
#[cfg(feature = "postgres")]
use std::sync::Arc;

use serde::Serialize;

#[cfg(feature = "postgres")]
pub use listen::{Listening, Notices};
#[cfg(feature = "postgres")]
pub use pg::{Conn, Params, Pg};

use crate::error::{Error, Result};

/// The environment variable holding the PostgreSQL password when the URL has none; a
/// secret of the same name (`evo secret set EVO_STORAGE_PASSWORD`) is used after it.
pub const PASSWORD_VAR: &str = "EVO_STORAGE_PASSWORD";
/// The environment variable that sets `[storage] url`.
pub const URL_VAR: &str = "EVO_STORAGE_URL";

/// `[storage]` in `evo.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// A PostgreSQL URL (`postgres://user@host:port/db`): shared state lives there.
    /// None: SQLite files in the data directory.
    #[serde(serialize_with = "redacted_url")]
    pub url: Option<String>,
}

impl crate::settings::Section for StorageSettings {
    const TABLE: &'static str = "storage";

    fn check(&mut self, _: &Path) -> std::result::Result<(), crate::settings::Invalid> {
        match &self.url {
            Some(url) => check_url(url)
                .map_err(|message| crate::settings::Invalid::new("storage.url", message)),
            None => Ok(()),
        }
    }
}

fn redacted_url<S: serde::Serializer>(url: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    url.as_deref().map(redact).serialize(s)
}

/// `url` without its password (`user:PASSWORD@`, or `?password=` among its
/// parameters), for messages and `evo config show`.
pub fn redact(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut redacted = match (base.find("://"), base.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => match base[scheme + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &base[..scheme + 3], &base[at..]),
            None => base.to_owned(),
        },
        _ => base.to_owned(),
    };
    if let Some(query) = query {
        let parameters: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => p.to_owned(),
            })
            .collect();
        redacted = format!("{redacted}?{}", parameters.join("&"));
    }
    redacted
}

/// Checks that `url` is a PostgreSQL URL, saying what is wrong with it.
pub(crate) fn check_url(url: &str) -> std::result::Result<(), String> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(format!(
            "{:?} is not a PostgreSQL URL: use postgres://USER@HOST:PORT/DATABASE (without [storage] url, Evo keeps its state in SQLite in the data directory)",
            redact(url)
        ));
    }
    #[cfg(feature = "postgres")]
    return tls::from_url(url)
        .and_then(|(plain, _)| {
            plain
                .parse::<tokio_postgres::Config>()
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .map_err(|e| format!("{:?} is not a valid PostgreSQL URL: {e}", redact(url)));
    #[cfg(not(feature = "postgres"))]
    Ok(())
}

/// The storage of one host: SQLite in its data directory, or a PostgreSQL database
/// shared with other nodes.
#[derive(Debug, Clone)]
pub enum Storage {
    /// SQLite files in this data directory.
    Local(PathBuf),
    /// One PostgreSQL database, shared (the `postgres` feature).
    #[cfg(feature = "postgres")]
    Shared(Arc<Pg>),
}

impl Storage {
    /// The storage `settings` choose for `data_dir`: for PostgreSQL, connected and
    /// migrated, with the password of the URL, else [`PASSWORD_VAR`] in the
    /// environment, else `secret` (the value of the secret of that name, which the
    /// caller looks up).
    pub fn open(
        settings: &StorageSettings,
        data_dir: &Path,
        secret: Option<String>,
    ) -> Result<Self> {
        let Some(url) = &settings.url else {
            return Ok(Self::Local(data_dir.to_owned()));
        };
        #[cfg(not(feature = "postgres"))]
        {
            let _ = (url, secret);
            Err(Error::FeatureNotBuilt {
                feature: "postgres",
                what: "shared storage on PostgreSQL ([storage] url)".to_owned(),
            })
        }
        #[cfg(feature = "postgres")]
        {
            let password = std::env::var(PASSWORD_VAR)
                .ok()
                .filter(|p| !p.is_empty())
                .or(secret);
            Ok(Self::Shared(Pg::connect(url, password)?))
        }
    }

    /// The shared database, if there is one.
    #[cfg(feature = "postgres")]
    pub fn shared(&self) -> Option<&Arc<Pg>> {
        match self {
            Self::Local(_) => None,
            Self::Shared(pg) => Some(pg),
        }
    }

    /// What it is, for `evo doctor` and `/v1/health`: `sqlite:PATH` or the URL without
    /// its password.
    pub fn describe(&self) -> String {
        match self {
            Self::Local(dir) => format!("sqlite:{}", dir.display()),
            #[cfg(feature = "postgres")]
            Self::Shared(pg) => pg.describe(),
        }
    }

    /// Checks that the storage answers: a round trip to PostgreSQL (SQLite is a file
    /// in the data directory, and answers while the disk does).
    pub fn ping(&self) -> Result<()> {
        match self {
            Self::Local(_) => Ok(()),
            #[cfg(feature = "postgres")]
            Self::Shared(pg) => pg.ping(),
        }
    }
}

/// An error of the storage configuration, naming the key.
#[cfg(feature = "postgres")]
pub(crate) fn config_error(message: String) -> Error {
    Error::Database {
        message,
        transient: false,
    }
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            redact("postgres://evo:hunter22@db:5432/evo"),
            "postgres://evo:***@db:5432/evo"
        );
        assert_eq!(redact("postgres://evo@db/evo"), "postgres://evo@db/evo");
        assert_eq!(
            redact("postgres://evo@db/evo?sslmode=disable&password=hunter22"),
            "postgres://evo@db/evo?sslmode=disable&password=***"
        );
        assert_eq!(
            check_url("mysql://x").unwrap_err(),
            "\"mysql://x\" is not a PostgreSQL URL: use postgres://USER@HOST:PORT/DATABASE (without [storage] url, Evo keeps its state in SQLite in the data directory)"
        );
        assert_eq!(check_url("postgres://evo@127.0.0.1:5432/evo"), Ok(()));
    }

    #[test]
    fn nodes_starting_at_once_migrate_the_database_once() {
        let url = testing::postgres_url();
        let nodes: Vec<_> = (0..4)
            .map(|_| {
                let url = url.clone();
                std::thread::spawn(move || Pg::connect(&url, None))
            })
            .collect();
        for node in nodes {
            let pg = node.join().unwrap().unwrap();
            assert_eq!(pg.schema_version().unwrap(), pg::MIGRATIONS.len());
            assert_eq!(pg.migrate().unwrap(), 0, "nothing is left to apply");
        }
    }

    #[test]
    fn an_unreachable_server_is_a_clear_transient_error() {
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let error = Pg::connect(&format!("postgres://evo@127.0.0.1:{port}/evo"), None).unwrap_err();
        assert_eq!(error.code(), "DATABASE_ERROR");
        assert!(error.is_transient(), "{error}");
        let message = error.to_string();
        assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
        assert!(
            message.contains("check that the server is running"),
            "{message}"
        );
    }
}

#[cfg(all(test, not(feature = "postgres")))]
mod without_postgres {
    use super::*;

    #[test]
    fn a_storage_url_says_the_build_left_postgres_out() {
        let settings = StorageSettings {
            url: Some("postgres://evo@127.0.0.1:5432/evo".into()),
        };
        let error = Storage::open(&settings, Path::new("."), None).unwrap_err();
        assert_eq!(error.code(), "FEATURE_NOT_BUILT");
        assert!(
            error
                .to_string()
                .contains("it needs evo-host's `postgres` feature"),
            "{error}"
        );
        let hint = error.hint().unwrap_or_default();
        assert!(
            hint.contains("the `evo` binary (it has every feature)"),
            "{hint}"
        );
    }
}

/// The backends the storage tests run against: SQLite in a temporary directory, and
/// (with the `postgres` feature) a fresh database on the PostgreSQL cluster
/// `scripts/postgres.sh` starts.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The URL of a fresh database, on the cluster named by `EVO_TEST_POSTGRES`.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres_url() -> String {
        let admin = std::env::var("EVO_TEST_POSTGRES").expect(
            "EVO_TEST_POSTGRES is not set: the storage tests need PostgreSQL; run ./scripts/test, or `source scripts/postgres.sh` first",
        );
        pg::scratch_database(&admin).unwrap()
    }

    /// Local storage in `dir`, and shared storage on a fresh database.
    pub(crate) fn both(dir: &Path) -> Vec<Storage> {
        vec![
            Storage::Local(dir.to_owned()),
            #[cfg(feature = "postgres")]
            Storage::Shared(Pg::connect(&postgres_url(), None).unwrap()),
        ]
    }
}
