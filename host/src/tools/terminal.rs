//! `terminal` (alias `Terminal`): persistent shell sessions on a pseudo-terminal, for
//! programs that need one (REPLs, prompts, `top`, a dev server left running).
//!
//! `start` opens a session — `bash` in the project directory, confined by the native
//! sandbox's launcher like `bash` (namespaces, Landlock, seccomp; the project the only
//! writable directory) — and returns its id; `send` types into it; `read` returns the
//! screen as a terminal would show it (rendered with `vt100`); `stop` kills the session
//! and everything it started. A session unused for [`IDLE_TIMEOUT`] is stopped.
//!
//! What is typed at the shell's prompt is judged like a `bash` command line (every
//! command of it must be in the allowlist); what is typed while a program runs in the
//! foreground (answering its prompt) goes to that program, which was allowed to start.
//!
//! Needs the `dev-tools` feature of evo-host (on by default).

use crate::lock;
use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::bash::Bash;
use super::{BoxFuture, TypedTool, invalid};
use crate::engine::native::cgroup::{CallCgroup, Limits};
use crate::engine::native::confine::launcher;
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;

/// A session unused this long is stopped.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Sessions one host keeps at once: each is a shell and a pty.
pub const MAX_SESSIONS: usize = 8;
/// The screen's size unless `start` asks for another.
pub const DEFAULT_ROWS: u16 = 24;
/// See [`DEFAULT_ROWS`].
pub const DEFAULT_COLUMNS: u16 = 100;
/// Lines kept above the screen.
const SCROLLBACK: usize = 1_000;
/// How long `read` waits for output to stop changing by default.
const DEFAULT_WAIT_MS: u64 = 300;
/// Quiet this long counts as "the program is waiting".
const QUIET: Duration = Duration::from_millis(100);

/// One session.
struct Session {
    child: Mutex<Box<dyn portable_pty::Child + Send + Sync>>,
    writer: Mutex<Box<dyn std::io::Write + Send>>,
    master: Mutex<Box<dyn MasterPty + Send>>,
    screen: Arc<Mutex<vt100::Parser>>,
    /// Bytes read so far: changes whenever output arrives.
    received: Arc<AtomicU64>,
    /// The shell's process group, foreground while it waits at its prompt.
    shell_group: Mutex<Option<i32>>,
    last_used: Mutex<Instant>,
    /// The session's cgroup (memory, tasks and CPU capped as a script call's), whose
    /// members are killed and which is removed when the session goes.
    cgroup: Option<CallCgroup>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl Session {
    fn kill(&self) {
        let mut child = lock(&self.child);
        if let Some(pid) = child
            .process_id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            // The session leader's group: the shell and what it started in the
            // foreground; the sandbox's PID namespace takes the rest with its init.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        // And whatever left the group (a `setsid` daemon): the cgroup holds it too.
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    fn foreground(&self) -> Option<i32> {
        lock(&self.master).process_group_leader()
    }
}

/// Terminal sessions in one project directory.
#[derive(Debug, Clone)]
pub struct Terminal {
    root: PathBuf,
    launcher: Option<PathBuf>,
    /// The caps of each session's cgroup (a script call's), where one can be made.
    limits: Option<Limits>,
    bash: Bash,
    sessions: Arc<Mutex<HashMap<String, Arc<Session>>>>,
    next: Arc<AtomicU64>,
    reaper: Arc<std::sync::Once>,
}

impl Terminal {
    /// Sessions in `root`, confined by `launcher` (the `evo` binary) when given, typed
    /// input judged by `bash`'s allowlist.
    pub fn new(root: impl Into<PathBuf>, launcher: Option<PathBuf>, bash: Bash) -> Self {
        Self {
            root: root.into(),
            launcher,
            limits: None,
            bash,
            sessions: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
            reaper: Arc::new(std::sync::Once::new()),
        }
    }

    /// Puts each session in a cgroup of its own with `limits` (a script call's caps),
    /// where the host may make one and a launcher joins it.
    pub fn with_cgroup_limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }

    fn session(&self, input: &TerminalInput) -> Result<Arc<Session>> {
        let id = input.session_id.as_deref().unwrap_or_default();
        let session = lock(&self.sessions).get(id).cloned().ok_or_else(|| Error::Skill {
            skill: "terminal".into(),
            kind: FailureKind::NotFound,
            message: format!("no session {id:?}; start one with {{\"action\": \"start\"}} (sessions end after {} minutes unused)", IDLE_TIMEOUT.as_secs() / 60),
        })?;
        *lock(&session.last_used) = Instant::now();
        Ok(session)
    }

    fn start(&self, input: &TerminalInput) -> Result<TerminalOutput> {
        if lock(&self.sessions).len() >= MAX_SESSIONS {
            return Err(failed(format!(
                "{MAX_SESSIONS} sessions are open; stop one first ({{\"action\": \"stop\", \"session_id\": …}})"
            )));
        }
        let rows = input.rows.map_or(DEFAULT_ROWS, |r| r.clamp(5, 200));
        let cols = input.columns.map_or(DEFAULT_COLUMNS, |c| c.clamp(20, 400));
        let root = self.root.canonicalize().map_err(Error::io_at(&self.root))?;
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| failed(format!("could not open a pseudo-terminal: {e}")))?;
        let shell = ["bash", "--norc", "--noprofile", "-i"];
        let cgroup = self
            .limits
            .filter(|_| self.launcher.is_some())
            .and_then(CallCgroup::create);
        let mut command = match &self.launcher {
            Some(launcher) => {
                let mut command = CommandBuilder::new(launcher);
                command.args([launcher::EXEC, "--workspace"]);
                command.arg(&root);
                for procs in cgroup.iter().flat_map(CallCgroup::procs) {
                    command.arg("--cgroup");
                    command.arg(procs);
                }
                command.arg("--");
                command.args(shell);
                command
            }
            None => {
                let mut command = CommandBuilder::new(shell[0]);
                command.args(&shell[1..]);
                command
            }
        };
        command.cwd(&root);
        command.env_clear();
        command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        command.env("TERM", "xterm-256color");
        command.env("PS1", "$ ");
        let child = pair
            .slave
            .spawn_command(command)
            .map_err(|e| failed(format!("could not start the shell: {e}")))?;
        drop(pair.slave);
        let mut reader = pair
            .master
            .try_clone_reader()
            .map_err(|e| failed(e.to_string()))?;
        let writer = pair
            .master
            .take_writer()
            .map_err(|e| failed(e.to_string()))?;
        let size = |n: u16| std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            size(rows),
            size(cols),
            SCROLLBACK,
        )));
        let received = Arc::new(AtomicU64::new(0));
        {
            let screen = screen.clone();
            let received = received.clone();
            std::thread::spawn(move || {
                let mut buffer = [0_u8; 8192];
                while let Ok(n) = reader.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    lock(&screen).process(&buffer[..n]);
                    received.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
        let id = format!("term-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let session = Arc::new(Session {
            child: Mutex::new(child),
            writer: Mutex::new(writer),
            master: Mutex::new(pair.master),
            screen,
            received,
            shell_group: Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
            cgroup,
        });
        lock(&self.sessions).insert(id.clone(), session);
        self.reap_idle();
        Ok(TerminalOutput::Started {
            session_id: id,
            rows,
            columns: cols,
        })
    }

    async fn send(&self, input: &TerminalInput, ctx: &SkillContext) -> Result<TerminalOutput> {
        let session = self.session(input)?;
        let text = input.input.as_deref().unwrap_or_default();
        let enter = input.enter.unwrap_or(true);
        let keys = input.keys.as_deref().unwrap_or_default();
        // The shell waits at its prompt once its output has settled after start.
        settle(&session, Duration::from_secs(2)).await;
        let at_prompt = {
            let foreground = session.foreground();
            let mut shell = lock(&session.shell_group);
            if shell.is_none() {
                *shell = foreground;
            }
            foreground.is_some() && foreground == *shell
        };
        if at_prompt
            && !text.trim().is_empty()
            && let Err(message) = self.bash.judge(text, ctx.locale())
        {
            tracing::warn!(target: "evo::security", tool = "terminal", input = %text, "blocked: {message}");
            return Err(Error::Blocked {
                tool: "terminal".into(),
                message,
                reason: crate::error::BlockReason::Allowlist,
            });
        }
        let mut bytes = text.as_bytes().to_vec();
        if enter && !text.is_empty() {
            bytes.push(b'\r');
        }
        for key in keys {
            bytes.extend_from_slice(key_bytes(key).ok_or_else(|| {
                invalid("terminal", &format!("{key:?} is not a key; use enter, tab, escape, backspace, up, down, left, right, ctrl-c, ctrl-d or ctrl-z"))
            })?);
        }
        let mut writer = lock(&session.writer);
        writer
            .write_all(&bytes)
            .and_then(|()| writer.flush())
            .map_err(|e| failed(format!("the session has ended: {e}")))?;
        Ok(TerminalOutput::Sent {
            sent: bytes.len(),
            judged: at_prompt,
        })
    }

    async fn read(&self, input: &TerminalInput) -> Result<TerminalOutput> {
        let session = self.session(input)?;
        let wait = Duration::from_millis(input.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(30_000));
        settle(&session, wait).await;
        let (contents, cursor) = {
            let parser = lock(&session.screen);
            let screen = parser.screen();
            (screen.contents(), screen.cursor_position())
        };
        let status = lock(&session.child).try_wait().ok().flatten();
        Ok(TerminalOutput::Screen {
            screen: contents.trim_end().to_owned(),
            cursor: Cursor {
                row: cursor.0 + 1,
                column: cursor.1 + 1,
            },
            alive: status.is_none(),
            exit_code: status.map(|s| s.exit_code()),
        })
    }

    fn stop(&self, input: &TerminalInput) -> Result<TerminalOutput> {
        let id = input.session_id.as_deref().unwrap_or_default();
        let session = lock(&self.sessions).remove(id);
        match session {
            Some(session) => {
                session.kill();
                Ok(TerminalOutput::Stopped {
                    stopped: id.to_owned(),
                })
            }
            None => Err(Error::Skill {
                skill: "terminal".into(),
                kind: FailureKind::NotFound,
                message: format!("no session {id:?}"),
            }),
        }
    }

    /// Starts (once) the task that stops idle sessions.
    fn reap_idle(&self) {
        let sessions = Arc::downgrade(&self.sessions);
        self.reaper.call_once(|| {
            std::thread::spawn(move || {
                loop {
                    std::thread::sleep(IDLE_TIMEOUT / 20);
                    let Some(sessions) = sessions.upgrade() else {
                        return;
                    };
                    let idle: Vec<Arc<Session>> = {
                        let mut table = lock(&sessions);
                        let ids: Vec<String> = table
                            .iter()
                            .filter(|(_, s)| lock(&s.last_used).elapsed() >= IDLE_TIMEOUT)
                            .map(|(id, _)| id.clone())
                            .collect();
                        ids.iter().filter_map(|id| table.remove(id)).collect()
                    };
                    for session in idle {
                        session.kill();
                    }
                }
            });
        });
    }

    /// Stops every session.
    #[cfg(feature = "internals")]
    pub fn stop_all(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.kill();
        }
    }
}

/// Waits until no output has arrived for [`QUIET`], or `limit`.
async fn settle(session: &Session, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut seen = session.received.load(Ordering::Relaxed);
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = session.received.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            quiet_since = Instant::now();
        } else if seen > 0 && quiet_since.elapsed() >= QUIET {
            return;
        }
    }
}

fn key_bytes(key: &str) -> Option<&'static [u8]> {
    Some(match key {
        "enter" => b"\r",
        "tab" => b"\t",
        "escape" | "esc" => b"\x1b",
        "backspace" => b"\x7f",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "ctrl-c" => b"\x03",
        "ctrl-d" => b"\x04",
        "ctrl-z" => b"\x1a",
        _ => return None,
    })
}

fn failed(message: String) -> Error {
    Error::Skill {
        skill: "terminal".into(),
        kind: FailureKind::Failed,
        message,
    }
}

/// What `terminal` is asked to do.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// opens a session
    Start,
    /// types into a session
    Send,
    /// reads a session's screen
    Read,
    /// stops a session and everything it started
    Stop,
    /// the open sessions
    List,
}

/// `terminal`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalInput {
    /// what to do
    pub action: Action,
    /// send, read, stop: the session start returned
    #[serde(default)]
    pub session_id: Option<String>,
    /// send: the text to type (Enter is pressed after it unless enter is false)
    #[serde(default)]
    pub input: Option<String>,
    /// send: press Enter after the input (default true)
    #[serde(default)]
    pub enter: Option<bool>,
    /// send: keys after the input: enter, tab, escape, backspace, up, down, left, right, ctrl-c, ctrl-d, ctrl-z
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// read: wait up to this long for the output to settle (300)
    #[serde(default)]
    #[schemars(range(max = 30_000))]
    pub wait_ms: Option<u64>,
    /// start: the screen's height
    #[serde(default)]
    #[schemars(range(min = 5, max = 200))]
    pub rows: Option<u16>,
    /// start: the screen's width
    #[serde(default)]
    #[schemars(range(min = 20, max = 400))]
    pub columns: Option<u16>,
}

/// `terminal`'s output: one shape per action.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum TerminalOutput {
    /// `start`
    Started {
        /// the session's id, for the other actions
        session_id: String,
        /// the screen's height
        rows: u16,
        /// the screen's width
        columns: u16,
    },
    /// `send`
    Sent {
        /// bytes written to the terminal
        sent: usize,
        /// whether the text went to the shell's prompt (and passed the allowlist)
        judged: bool,
    },
    /// `read`
    Screen {
        /// what the screen shows
        screen: String,
        /// where the cursor is (1-based)
        cursor: Cursor,
        /// whether the shell still runs
        alive: bool,
        /// the shell's exit code once it ended
        exit_code: Option<u32>,
    },
    /// `stop`
    Stopped {
        /// the session stopped
        stopped: String,
    },
    /// `list`
    Sessions {
        /// the open sessions
        sessions: Vec<Open>,
    },
}

/// A cursor position.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cursor {
    /// the row (1-based)
    pub row: u16,
    /// the column (1-based)
    pub column: u16,
}

/// An open session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Open {
    /// its id
    pub session_id: String,
    /// how long it has not been used
    pub idle_ms: u64,
}

impl TypedTool for Terminal {
    const NAME: &'static str = "terminal";
    type Input = TerminalInput;
    type Output = TerminalOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "A persistent shell session on a terminal, for interactive programs and long-running commands: start a session, send it input (and keys such as ctrl-c), read its screen, stop it. Use bash for one-off commands.",
            "category": "shell",
            "tags": ["shell", "execute", "terminal"],
            "requests": [
                "start a python REPL and keep it open",
                "open an interactive session and run top",
                "start the dev server and leave it running",
                "press ctrl-c in the running program",
                "type yes into the prompt that is waiting",
                "what is on the session's screen now?",
                "keep a shell open so I can tail the logs"
            ],
            "permission": "execute",
            "timeout": 40_000,
            "examples": [
                { "description": "Open a session", "input": { "action": "start" } },
                { "description": "Run a command in it", "input": { "action": "send", "session_id": "term-1", "input": "cargo test" } },
                { "description": "See the screen after the output settles", "input": { "action": "read", "session_id": "term-1", "wait_ms": 2_000 } }
            ],
            "notes": [
                "The shell runs in the native sandbox (namespaces, Landlock, seccomp where available) with the project as its only writable directory; stop kills it and everything it started.",
                "Text typed at the shell's prompt must pass bash's allowlist; text typed while a program runs goes to that program.",
                format!("At most {MAX_SESSIONS} sessions; one unused for {} minutes is stopped.", IDLE_TIMEOUT.as_secs() / 60)
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Terminal"]
    }

    fn run(
        &self,
        input: TerminalInput,
        ctx: SkillContext,
    ) -> BoxFuture<'_, Result<TerminalOutput>> {
        Box::pin(async move {
            match input.action {
                Action::Start => self.start(&input),
                Action::Send => self.send(&input, &ctx).await,
                Action::Read => self.read(&input).await,
                Action::Stop => self.stop(&input),
                Action::List => {
                    let sessions = lock(&self.sessions)
                        .iter()
                        .map(|(id, s)| Open {
                            session_id: id.clone(),
                            idle_ms: u64::try_from(lock(&s.last_used).elapsed().as_millis())
                                .unwrap_or(u64::MAX),
                        })
                        .collect();
                    Ok(TerminalOutput::Sessions { sessions })
                }
            }
        })
    }
}
