//! The PostgreSQL side of [`super::Storage`]: a pool of connections (deadpool over
//! tokio-postgres) on threads of its own, numbered migrations run under an advisory lock
//! (several nodes may start at once), and errors that say what to do.
//!
//! The stores above it are synchronous, as the SQLite ones are (a call's memory write
//! runs inline): [`Pg::run`] hands a future to the pool's runtime and waits for its
//! answer, which is safe from any thread, inside a Tokio runtime or not.
//!
//! Needs the `postgres` feature of evo-host (on by default).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

use crate::error::{Error, Result};

pub use deadpool_postgres::Client;

pub(crate) use super::migrations::MIGRATIONS;

/// Connections one node holds at most.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a statement waits for a free connection before failing (transient).
pub const POOL_WAIT: Duration = Duration::from_secs(10);
/// How long opening a connection may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The advisory lock held while migrating ("evo" in ASCII).
const MIGRATION_LOCK: i64 = 0x0065_766f;

/// A PostgreSQL database shared by the nodes.
pub struct Pg {
    pool: Pool,
    /// Migrations this handle applied when it connected.
    migrated: usize,
    runtime: Option<tokio::runtime::Runtime>,
    pub(super) config: tokio_postgres::Config,
    /// How connections are made: plain, or TLS as the URL's `sslmode` says.
    pub(super) tls: tokio_postgres_rustls::MakeRustlsConnect,
    pub(super) url: String,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg").field("url", &self.url).finish()
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which a runtime thread may not do.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Pg {
    /// Connects to `url` (with `password` when the URL has none) and brings the schema
    /// up to date.
    pub fn connect(url: &str, password: Option<String>) -> Result<Arc<Self>> {
        super::check_url(url).map_err(super::config_error)?;
        let (plain, tls) = super::tls::from_url(url)
            .map_err(|e| super::config_error(format!("{}: {e}", super::redact(url))))?;
        let mut config: tokio_postgres::Config = plain
            .parse()
            .map_err(|e| super::config_error(format!("{}: {e}", super::redact(url))))?;
        config.ssl_mode(tls.mode);
        if config.get_password().is_none()
            && let Some(password) = password
        {
            config.password(password);
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("evo");
        // Evo's statements are short; compiling one with JIT took 0.45 s (PostgreSQL
        // turns it on by cost, and a join over the keyword index looks costly).
        config.options("-c jit=off");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("evo-pg")
            .enable_all()
            .build()
            .map_err(|e| Error::Database {
                message: format!("cannot start the PostgreSQL client's thread: {e}"),
                transient: true,
            })?;
        let manager = Manager::from_config(
            config.clone(),
            tls.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(MAX_CONNECTIONS)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| super::config_error(format!("{}: {e}", super::redact(url))))?;
        let mut pg = Self {
            pool,
            migrated: 0,
            runtime: Some(runtime),
            config,
            tls: tls.connector,
            url: super::redact(url),
        };
        pg.migrated = pg.migrate()?;
        Ok(Arc::new(pg))
    }

    /// How many migrations this handle applied when it connected (0 when another
    /// node, or an earlier start, had applied them all).
    pub fn migrated(&self) -> usize {
        self.migrated
    }

    /// The migrations this version of Evo knows.
    pub fn latest_version() -> usize {
        MIGRATIONS.len()
    }

    /// Whether the server offers the pgvector extension (`vector`), and whether it is
    /// installed in this database.
    pub fn pgvector(&self) -> Result<(bool, bool)> {
        self.run(|client| async move {
            let row = client
                .query_one(
                    "SELECT count(*) > 0, bool_or(installed_version IS NOT NULL)
                     FROM pg_available_extensions WHERE name = 'vector'",
                    &[],
                )
                .await?;
            Ok((row.get(0), row.get::<_, Option<bool>>(1).unwrap_or(false)))
        })
    }

    /// The URL, without its password.
    pub fn describe(&self) -> String {
        self.url.clone()
    }

    /// The runtime the pool's connections run on.
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as the handle")
            .handle()
    }

    /// Runs `f` with a pooled connection on the pool's runtime and waits for it.
    pub fn run<T, F>(&self, f: impl FnOnce(Client) -> F + Send + 'static) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, tokio_postgres::Error>> + Send,
    {
        let pool = self.pool.clone();
        let url = self.url.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let result = match pool.get().await {
                Ok(client) => f(client).await.map_err(|e| error(&url, &e)),
                Err(e) => Err(pool_error(&url, &e)),
            };
            let _ = tx.send(result);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(Error::Database {
                message: format!("{}: the PostgreSQL client stopped", self.url),
                transient: true,
            })
        })
    }

    /// [`Pg::run`] for async callers: awaits the answer instead of blocking a thread.
    pub async fn run_async<T, F>(&self, f: impl FnOnce(Client) -> F + Send + 'static) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, tokio_postgres::Error>> + Send,
    {
        let pool = self.pool.clone();
        let url = self.url.clone();
        let task = self.handle().spawn(async move {
            match pool.get().await {
                Ok(client) => f(client).await.map_err(|e| error(&url, &e)),
                Err(e) => Err(pool_error(&url, &e)),
            }
        });
        task.await.unwrap_or_else(|_| {
            Err(Error::Database {
                message: format!("{}: the PostgreSQL client stopped", self.url),
                transient: true,
            })
        })
    }

    /// A round trip to the server.
    pub fn ping(&self) -> Result<()> {
        self.run(|client| async move { client.simple_query("SELECT 1").await.map(drop) })
    }

    /// The schema version (migrations applied).
    pub fn schema_version(&self) -> Result<usize> {
        self.run(|client| async move {
            let row = client
                .query_one("SELECT coalesce(max(version), 0) FROM evo_migrations", &[])
                .await?;
            Ok(usize::try_from(row.get::<_, i32>(0)).unwrap_or(0))
        })
    }

    /// Applies the migrations not yet applied, in one transaction under an advisory
    /// lock: nodes starting at once take turns, and the second finds nothing to do.
    /// Returns how many were applied.
    pub fn migrate(&self) -> Result<usize> {
        self.run(|mut client| async move {
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS evo_migrations (
                    version INTEGER PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )",
            )
            .await?;
            let applied: i32 = tx
                .query_one("SELECT coalesce(max(version), 0) FROM evo_migrations", &[])
                .await?
                .get(0);
            let mut count = 0;
            for (version, migration) in (1_i32..).zip(MIGRATIONS).skip(applied as usize) {
                tx.batch_execute(migration).await?;
                tx.execute(
                    "INSERT INTO evo_migrations (version) VALUES ($1)",
                    &[&version],
                )
                .await?;
                count += 1;
            }
            tx.commit().await?;
            Ok(count)
        })
    }
}

/// A PostgreSQL error as Evo's [`Error::Database`], with what to do, transient when
/// trying again may work (the connection dropped, the server is starting or full, a
/// serialization failure).
pub(crate) fn error(url: &str, error: &tokio_postgres::Error) -> Error {
    use tokio_postgres::error::SqlState;
    let code = error.code();
    // A refused certificate, or a server without TLS, stays so until the configuration
    // changes: not worth a retry, and not "is the server running?".
    let text = error.to_string();
    let tls = code.is_none() && (text.contains("TLS") || text.contains("tls"));
    let transient = !tls
        && (error.is_closed()
            || code.is_none() && std::error::Error::source(error).is_some()
            || code.is_some_and(|c| {
                [
                    SqlState::T_R_SERIALIZATION_FAILURE,
                    SqlState::T_R_DEADLOCK_DETECTED,
                    SqlState::TOO_MANY_CONNECTIONS,
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                ]
                .contains(c)
            }));
    let what_to_do = match code {
        None if tls && text.contains("does not support TLS") => {
            "; the server does not offer TLS: turn `ssl` on in its postgresql.conf, or use sslmode=disable on a trusted network".into()
        }
        None if tls => {
            "; the server's certificate was refused: sslrootcert must name the CA that signed it, and for sslmode=verify-full the URL's host must be a name the certificate is for".into()
        }
        Some(c) if *c == SqlState::INVALID_PASSWORD || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            format!("; check the user in [storage] url and the password ({} or `evo secret set {0}`)", super::PASSWORD_VAR)
        }
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => {
            "; create the database first (`createdb NAME`), or name an existing one in [storage] url".into()
        }
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            "; the user needs to own the database (Evo creates its tables at start-up)".into()
        }
        Some(c) if *c == SqlState::DISK_FULL => {
            "; the database server's disk is full: free some space (the change was rolled back)".into()
        }
        None if transient => {
            "; check that the server is running and that [storage] url points to it".into()
        }
        _ => String::new(),
    };
    let message = match error.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => error.to_string(),
    };
    let cause = std::error::Error::source(error)
        .filter(|_| error.as_db_error().is_none())
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    Error::Database {
        message: format!("{url}: {message}{cause}{what_to_do}"),
        transient,
    }
}

fn pool_error(url: &str, e: &deadpool_postgres::PoolError) -> Error {
    match e {
        deadpool_postgres::PoolError::Backend(e) => error(url, e),
        other => Error::Database {
            message: format!(
                "{url}: no connection to PostgreSQL ({other}); check that the server is running and that [storage] url points to it"
            ),
            transient: true,
        },
    }
}

/// Creates an empty database beside the one `admin_url` names and returns its URL:
/// each test gets its own, on the throwaway cluster `scripts/postgres.sh` starts.
#[doc(hidden)]
#[cfg(any(test, feature = "internals"))]
pub fn scratch_database(admin_url: &str) -> Result<String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "evo_test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let (base, _) = admin_url
        .rsplit_once('/')
        .filter(|(base, _)| base.contains("://") && !base.ends_with('/'))
        .ok_or_else(|| super::config_error(format!("{admin_url}: no database name")))?;
    let config: tokio_postgres::Config = admin_url
        .parse()
        .map_err(|e| super::config_error(format!("{admin_url}: {e}")))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| super::config_error(e.to_string()))?;
    let statement = format!("CREATE DATABASE {name} TEMPLATE template0");
    let url = admin_url.to_owned();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(&statement).await
        })
    })
    .join()
    .map_err(|_| super::config_error("the database creation panicked".into()))?
    .map_err(|e| error(&url, &e))?;
    Ok(format!("{base}/{name}"))
}

/// One pooled connection held by a synchronous caller (the memory store), for a
/// transaction that runs Rust between its statements. Statements run on the calling
/// thread ([`futures_executor::block_on`]); the connection's socket is driven by the
/// pool's runtime.
pub struct Conn {
    client: Client,
    pub(super) url: String,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("url", &self.url).finish()
    }
}

/// A statement's parameters.
pub type Params<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

impl Conn {
    /// The rows of `sql` (prepared once per connection).
    pub fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<tokio_postgres::Row>> {
        futures_executor::block_on(async {
            let statement = self.client.prepare_cached(sql).await?;
            self.client.query(&statement, params).await
        })
        .map_err(|e| error(&self.url, &e))
    }

    /// The one row of `sql`, if any.
    pub fn query_opt(&self, sql: &str, params: Params<'_>) -> Result<Option<tokio_postgres::Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs `sql`; returns the rows changed.
    pub fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64> {
        futures_executor::block_on(async {
            let statement = self.client.prepare_cached(sql).await?;
            self.client.execute(&statement, params).await
        })
        .map_err(|e| error(&self.url, &e))
    }

    /// Runs statements without parameters (`BEGIN`, `COMMIT`).
    pub fn batch(&self, sql: &str) -> Result<()> {
        futures_executor::block_on(self.client.batch_execute(sql)).map_err(|e| error(&self.url, &e))
    }

    /// Whether the connection broke (a new one is needed).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

impl Pg {
    /// A connection from the pool, held until dropped.
    pub fn conn(&self) -> Result<Conn> {
        let pool = self.pool.clone();
        let url = self.url.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let _ = tx.send(pool.get().await.map_err(|e| pool_error(&url, &e)));
        });
        let client = rx.recv().unwrap_or_else(|_| {
            Err(Error::Database {
                message: format!("{}: the PostgreSQL client stopped", self.url),
                transient: true,
            })
        })?;
        Ok(Conn {
            client,
            url: self.url.clone(),
        })
    }
}
