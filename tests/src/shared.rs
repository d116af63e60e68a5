//! Fixtures for the storage tests and benches: fresh PostgreSQL databases on the
//! throwaway cluster `scripts/postgres.sh` starts, and the memory benches' corpus.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use evo_host::memory::{HashEmbedder, MemoryConfig, MemoryManager};
use evo_host::storage::{Pg, Storage};

/// The URL of a fresh, empty database on the cluster `EVO_TEST_POSTGRES` names.
pub fn postgres_url() -> String {
    let admin = std::env::var("EVO_TEST_POSTGRES").expect(
        "EVO_TEST_POSTGRES is not set: this needs PostgreSQL; run ./scripts/test (or ./scripts/nodes --bench), or `source scripts/postgres.sh` first",
    );
    evo_host::storage::pg::scratch_database(&admin).expect("a scratch database")
}

/// SQLite in `dir`, then PostgreSQL on a fresh database, each with its name: the
/// backends the storage tests and benches run on.
pub fn backends(dir: &Path) -> [(&'static str, Storage); 2] {
    [
        ("sqlite", Storage::Local(dir.to_owned())),
        (
            "postgres",
            Storage::Shared(Pg::connect(&postgres_url(), None).expect("connects")),
        ),
    ]
}

/// A memory on `storage` with the built-in embedder. Each call opens another, with its
/// own connection, listener and vector index, as a second node (or process) would.
pub fn memory(storage: &Storage, dir: &Path) -> MemoryManager {
    MemoryManager::open_in(
        storage,
        dir,
        Arc::new(HashEmbedder),
        MemoryConfig::default(),
    )
    .expect("memory opens")
}

/// A component answering `{"n": answer}`, written as `dir/NAME.wasm` (`answer` takes
/// one or two digits).
pub fn answer_component(dir: &Path, name: &str, answer: u8) -> PathBuf {
    assert!(answer < 100);
    let manifest = serde_json::json!({ "name": name, "description": format!("answers {answer}") });
    // Ok(skill-output { output: the text at 1024, no memory writes, no steps }).
    let text = format!("{{\"n\":{answer}}}");
    let mut word = [b' '; 8];
    word[..text.len()].copy_from_slice(text.as_bytes());
    let body = format!(
        "(i32.store8 (i32.const 0) (i32.const 0))
         (i64.store (i32.const 1024) (i64.const {}))
         (i32.store (i32.const 4) (i32.const 1024))
         (i32.store (i32.const 8) (i32.const 8))
         (i64.store (i32.const 12) (i64.const 0))
         (i64.store (i32.const 20) (i64.const 0))
         (i32.const 0)",
        i64::from_le_bytes(word)
    );
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, crate::wat_skill(&manifest.to_string(), &body)).expect("writes");
    path
}

/// The memory benches' corpus: `n` sentences of words drawn with a Zipf-like skew from
/// a 5,000-word vocabulary, and two words ("project", "update") in 40 % of them, the
/// case that makes plain bm25 slow. The same every run.
pub fn zipf_corpus(n: usize) -> Vec<String> {
    let vocabulary: Vec<String> = (0..5000).map(|i| format!("w{i:04}x")).collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let mut words = Vec::new();
            if i % 5 < 2 {
                words.push("project".to_owned());
                words.push("update".to_owned());
            }
            for _ in 0..10 {
                // Squaring a uniform draw skews towards low ranks, like word frequencies.
                let u = (next() % 10_000) as f64 / 10_000.0;
                words.push(vocabulary[(u * u * 5000.0) as usize].clone());
            }
            format!("entry {i}: {}", words.join(" "))
        })
        .collect()
}

/// How long a change may take to reach another node before a test gives up: a guard
/// against a test hanging forever, never a speed check (how soon is measured by the
/// storage bench and `./scripts/nodes --bench`: ~4 ms at the median, BENCHMARKS.md).
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// Polls `probe` until it gives `Some` and returns that; fails the test, naming
/// `what`, if it has not after [`HANG_GUARD`].
pub fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "{what}: not after {HANG_GUARD:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A PostgreSQL cluster of one test's own, which it may stop and start (the shared one
/// serves every other test): made with `initdb` in a temporary directory and run on a
/// free loopback port with the programs `scripts/postgres.sh` found; removed when
/// dropped.
#[derive(Debug)]
pub struct OwnCluster {
    dir: tempfile::TempDir,
    port: u16,
    /// Whether it serves TLS (with `server.crt` and `server.key` in its data directory).
    tls: bool,
}

impl OwnCluster {
    /// Makes and starts one.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// Makes and starts one that serves TLS with certificate `cert_pem` and key
    /// `key_pem`.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> Self {
        Self::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().expect("a directory for the cluster");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cluster = Self {
            dir,
            port,
            tls: tls.is_some(),
        };
        if let Some(user) = Self::user() {
            cluster.run(
                "chmod",
                &["755".as_ref(), cluster.dir.path().as_os_str()],
                false,
            );
            cluster.run(
                "chown",
                &[user.as_ref(), cluster.dir.path().as_os_str()],
                false,
            );
        }
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-U".as_ref(),
                "evo".as_ref(),
                "--no-sync".as_ref(),
            ],
            true,
        );
        if let Some((cert, key)) = tls {
            use std::os::unix::fs::PermissionsExt as _;
            for (file, pem) in [("server.crt", cert), ("server.key", key)] {
                let path = data.join(file);
                std::fs::write(&path, pem).unwrap();
                // The server refuses a key others may read.
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
                if let Some(user) = Self::user() {
                    cluster.run("chown", &[user.as_ref(), path.as_os_str()], false);
                }
            }
        }
        cluster.resume();
        cluster
    }

    /// Its URL, for `[storage] url`.
    pub fn url(&self) -> String {
        self.url_at("127.0.0.1")
    }

    /// Its URL with `host` (a name that resolves to 127.0.0.1) as the host.
    pub fn url_at(&self, host: &str) -> String {
        format!("postgres://evo@{host}:{}/postgres", self.port)
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`): connections drop, and
    /// new ones are refused.
    pub fn stop(&self) {
        let data = self.data();
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "stop".as_ref(),
            ],
            true,
        );
    }

    /// Starts the server (again).
    pub fn resume(&self) {
        let (data, log) = (self.data(), self.dir.path().join("server.log"));
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        if self.tls {
            options.push_str(" -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key");
        }
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "-o".as_ref(),
                options.as_ref(),
                "start".as_ref(),
            ],
            true,
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The user the server runs as, when this runs as root.
    fn user() -> Option<String> {
        std::env::var("EVO_TEST_PG_USER")
            .ok()
            .filter(|u| !u.is_empty())
    }

    /// Runs `program` (one of the server's when `server`), failing the test if it fails.
    fn run(&self, program: &str, args: &[&std::ffi::OsStr], server: bool) {
        let out = Self::command(program, server)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program} could not run: {e}"));
        assert!(
            out.status.success(),
            "{program} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `program`: one of the server's, run as the server's user, when `server`.
    fn command(program: &str, server: bool) -> std::process::Command {
        if !server {
            return std::process::Command::new(program);
        }
        let bin = std::env::var("EVO_TEST_PG_BIN").expect(
            "EVO_TEST_PG_BIN is not set: run ./scripts/test, or `source scripts/postgres.sh` first",
        );
        let program = Path::new(&bin).join(program);
        match Self::user() {
            Some(user) => {
                let mut command = std::process::Command::new("runuser");
                command.args(["-u", &user, "--"]).arg(program);
                command
            }
            None => std::process::Command::new(program),
        }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Self::command("pg_ctl", true)
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .output();
    }
}
