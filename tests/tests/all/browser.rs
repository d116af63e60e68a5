//! A real headless Chromium driven over the Chrome DevTools Protocol, for the console's
//! tests: load a page, wait for what it shows, type and press keys, take screenshots,
//! and collect every console error, uncaught exception and failed load on the way.
//!
//! The protocol is a few JSON messages over one WebSocket; the calls below are all
//! the tests need. (A client crate generates bindings for the whole protocol, minutes
//! of compiling on every cold CI run for the six methods used here.)

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// The Chromium binary: `EVO_TEST_CHROMIUM` (set by `scripts/chromium.sh`), else
/// `chromium` on the `PATH`.
pub fn chromium() -> PathBuf {
    std::env::var_os("EVO_TEST_CHROMIUM").map_or_else(|| PathBuf::from("chromium"), PathBuf::from)
}

/// What went wrong in a page: a console error, an uncaught exception, a failed load.
#[derive(Debug)]
struct PageError {
    /// The page's address when it happened.
    url: String,
    /// The message.
    text: String,
}

/// A headless Chromium with one page; killed when dropped.
pub struct Browser {
    child: Child,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    errors: Vec<PageError>,
    url: String,
    _profile: tempfile::TempDir,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser").field("url", &self.url).finish()
    }
}

/// How long one step (a load, a wait for what a page shows) may take.
const STEP: Duration = Duration::from_secs(20);

/// How long Chromium may take to open its DevTools port. Start-up waits for the port
/// or for Chromium to exit; this bound only catches a hang, and is wide because a
/// loaded CI machine has been seen to take over 20 s to start it.
const LAUNCH: Duration = Duration::from_secs(180);

impl Browser {
    /// Starts Chromium headless with a fresh profile, its window `width`×`height`.
    pub fn start(width: u32, height: u32) -> Self {
        let profile = tempfile::tempdir().expect("a profile directory");
        let binary = chromium();
        let log = tempfile::NamedTempFile::new().expect("a file for Chromium's stderr");
        let mut child = Command::new(&binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                &format!("--window-size={width},{height}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("Chromium's stderr file"))
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "could not start {} ({e}): the console tests need Chromium (scripts/chromium.sh installs Debian's package)",
                    binary.display()
                )
            });
        let port = wait_for_port(profile.path(), &mut child, log.path());
        let targets: Value = ureq::get(&format!("http://127.0.0.1:{port}/json/list"))
            .call()
            .expect("Chromium lists its pages")
            .into_body()
            .read_json()
            .expect("the page list is JSON");
        let page = targets
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("Chromium has a page")
            .to_owned();
        let (socket, _) = tungstenite::connect(page).expect("the page's DevTools socket");
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream
                .set_read_timeout(Some(Duration::from_millis(200)))
                .expect("a read timeout");
        }
        let mut browser = Self {
            child,
            socket,
            next_id: 0,
            errors: Vec::new(),
            url: "about:blank".into(),
            _profile: profile,
        };
        for method in ["Runtime.enable", "Log.enable", "Page.enable"] {
            browser.send(method, json!({}));
        }
        browser
    }

    /// Sends a DevTools command and returns its result, collecting the page's errors
    /// that arrive meanwhile.
    pub fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({ "id": id, "method": method, "params": params }).to_string();
        self.socket
            .send(Message::text(message))
            .expect("a DevTools command is sent");
        let deadline = Instant::now() + STEP;
        loop {
            assert!(Instant::now() < deadline, "{method}: no answer in {STEP:?}");
            let Some(message) = self.read() else {
                continue;
            };
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    panic!("{method} failed: {error}");
                }
                return message["result"].clone();
            }
        }
    }

    /// One message from the page, noting errors; `None` when none came in 200 ms.
    fn read(&mut self) -> Option<Value> {
        let message = match self.socket.read() {
            Ok(Message::Text(text)) => serde_json::from_str::<Value>(&text).ok()?,
            Ok(_) => return None,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            Err(e) => panic!("the DevTools socket failed: {e}"),
        };
        let params = &message["params"];
        let text = match message["method"].as_str() {
            Some("Runtime.exceptionThrown") => Some(format!(
                "uncaught: {}",
                params["exceptionDetails"]["exception"]["description"]
                    .as_str()
                    .or(params["exceptionDetails"]["text"].as_str())
                    .unwrap_or("?")
            )),
            Some("Runtime.consoleAPICalled") if params["type"] == "error" => Some(format!(
                "console.error: {}",
                params["args"]
                    .as_array()
                    .map(|args| args
                        .iter()
                        .map(|a| a["value"].to_string())
                        .collect::<Vec<_>>()
                        .join(" "))
                    .unwrap_or_default()
            )),
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => Some(format!(
                "{}: {} ({})",
                params["entry"]["source"].as_str().unwrap_or("log"),
                params["entry"]["text"].as_str().unwrap_or("?"),
                params["entry"]["url"].as_str().unwrap_or("")
            )),
            _ => None,
        };
        if let Some(text) = text {
            self.errors.push(PageError {
                url: self.url.clone(),
                text,
            });
        }
        Some(message)
    }

    /// Loads `url` and waits until its document has loaded.
    pub fn open(&mut self, url: &str) {
        self.url = url.to_owned();
        self.send("Page.navigate", json!({ "url": url }));
        self.wait_for("document.readyState === 'complete'");
    }

    /// The value of the JavaScript `expression` in the page (awaited if a promise).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.send(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until `condition` (JavaScript) is true in the page; panics after a while
    /// with the page's text, so a failure shows what the page said instead.
    pub fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + STEP;
        while Instant::now() < deadline {
            if self.eval(&format!("Boolean({condition})")) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let text = self.eval("document.body ? document.body.innerText : ''");
        panic!(
            "{}: waited {STEP:?} for `{condition}`; the page says:\n{}\nerrors: {:?}",
            self.url,
            text.as_str().unwrap_or_default(),
            self.errors
        );
    }

    /// Waits until the page's visible text contains `text`.
    pub fn wait_for_text(&mut self, text: &str) {
        self.wait_for(&format!(
            "document.body && document.body.innerText.includes({})",
            json!(text)
        ));
    }

    /// Presses `key` (`Tab`, `Enter`) with `modifiers` (DevTools' bits: 2 Ctrl, 8 Shift),
    /// as a keyboard would, in the focused element.
    pub fn press(&mut self, key: &str, modifiers: u32) {
        let (code, text) = match key {
            "Enter" => (13, "\r"),
            "Tab" => (9, ""),
            other => panic!("no key code for {other}"),
        };
        for kind in ["rawKeyDown", "char", "keyUp"] {
            if kind == "char" && (text.is_empty() || modifiers & 2 != 0) {
                continue;
            }
            self.send(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code,
                        "nativeVirtualKeyCode": code, "modifiers": modifiers, "text": if kind == "char" { text } else { "" } }),
            );
        }
    }

    /// Types `text` into the focused element.
    pub fn type_text(&mut self, text: &str) {
        self.send("Input.insertText", json!({ "text": text }));
    }

    /// The page laid out `width` pixels wide (a phone: 390), or back to the window.
    pub fn set_width(&mut self, width: Option<(u32, u32)>) {
        match width {
            Some((width, height)) => self.send(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": width, "height": height, "deviceScaleFactor": 2, "mobile": true }),
            ),
            None => self.send("Emulation.clearDeviceMetricsOverride", json!({})),
        };
    }

    /// Saves a PNG of what the page shows (the whole page, not just the window) to
    /// `path`.
    pub fn screenshot(&mut self, path: &Path) {
        use base64::Engine as _;
        let shot = self.send(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("a screenshot"))
            .expect("the screenshot is base64");
        std::fs::write(path, png).expect("the screenshot is written");
    }

    /// Reads what arrived since the last command (events only), then returns the
    /// errors seen since the last time this was asked.
    pub fn take_errors(&mut self) -> Vec<String> {
        while self.read().is_some() {}
        std::mem::take(&mut self.errors)
            .into_iter()
            .map(|e| format!("{}: {}", e.url, e.text))
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The DevTools port Chromium writes to `DevToolsActivePort` in its profile, waited
/// for until it is there or Chromium has exited (then what it printed is shown).
fn wait_for_port(profile: &Path, child: &mut Child, log: &Path) -> u16 {
    let file = profile.join("DevToolsActivePort");
    let printed = || std::fs::read_to_string(log).unwrap_or_default();
    let deadline = Instant::now() + LAUNCH;
    while Instant::now() < deadline {
        if let Some(port) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse().ok())
        {
            return port;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "Chromium exited ({status}) before opening its DevTools port; it printed:\n{}",
                printed()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "Chromium did not open its DevTools port within {LAUNCH:?}; it printed:\n{}",
        printed()
    );
}
