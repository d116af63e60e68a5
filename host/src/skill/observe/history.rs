//! The call history: every call the kernel makes, kept in the host database.
//!
//! [`History::record`] appends to a buffer on the call path (no I/O); [`History::flush`]
//! writes the buffer in one transaction (with the statistics, at the end of a CLI command
//! and every few seconds under `evo serve`) and trims the table to the configured cap,
//! oldest first. Arguments are stored with secrets redacted ([`redact`]).

use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::skill::observe::store::CallStore;
pub use crate::skill::observe::store::{Filter, Record, Status};

/// Default number of calls kept: months of interactive use, a few MB on disk.
pub const DEFAULT_HISTORY_CAP: u64 = 100_000;
/// Longest stored argument text; a call's arguments can hold a whole file (`write`), and
/// the history is for finding calls, not for replaying them.
pub const MAX_ARGUMENT_CHARS: usize = 2_000;
/// Calls slower than this are logged as warnings: half a second is when a person
/// waiting notices, and an agent's round trip is a few of those.
pub const SLOW_CALL_MS: f64 = 500.0;

/// Per-tool figures computed from the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolStats {
    /// The tool.
    pub tool: String,
    /// Calls.
    pub calls: u64,
    /// Mean duration, ms.
    pub average_ms: f64,
    /// 95th percentile duration, ms.
    pub p95_ms: f64,
    /// Longest call, ms.
    pub max_ms: f64,
    /// Share of calls that failed or were blocked, in [0, 1].
    pub failure_rate: f64,
}

/// Calls buffered before the host is asked to write them ([`History::when_due`]).
pub const FLUSH_EVERY: usize = 1_000;
/// The most calls buffered at all: when writing them keeps failing (a full disk), the
/// oldest are dropped rather than the process's memory growing without end.
pub const MAX_PENDING: usize = 100_000;

/// The buffer of calls not yet written.
#[derive(Debug, Default)]
pub struct History {
    pending: Mutex<Vec<Record>>,
    due: std::sync::OnceLock<Due>,
}

/// What to do when [`FLUSH_EVERY`] calls are buffered.
struct Due(Box<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Due {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Due")
    }
}

impl History {
    /// Appends one call to the buffer.
    pub fn record(&self, record: Record) {
        if record.duration_ms > SLOW_CALL_MS {
            tracing::warn!(
                target: "evo::tools",
                tool = %record.tool,
                "{} took {:.0} ms (over {SLOW_CALL_MS} ms)",
                record.tool,
                record.duration_ms
            );
        }
        let buffered = {
            let mut pending = self.lock();
            if pending.len() >= MAX_PENDING {
                pending.drain(..FLUSH_EVERY);
                tracing::warn!(
                    "the call history could not be written for {MAX_PENDING} calls; the oldest {FLUSH_EVERY} are dropped"
                );
            }
            pending.push(record);
            pending.len()
        };
        if buffered % FLUSH_EVERY == 0
            && let Some(due) = self.due.get()
        {
            (due.0)();
        }
    }

    /// Calls `due` each time another [`FLUSH_EVERY`] calls are buffered (the host
    /// writes them in the background): a long-lived embedder's memory stays flat. Set
    /// once; later calls are ignored.
    pub fn when_due(&self, due: impl Fn() + Send + Sync + 'static) {
        let _ = self.due.set(Due(Box::new(due)));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Record>> {
        // A push cannot be interrupted halfway: a poisoned buffer is still whole.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Calls recorded and not yet flushed.
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests call it")
    )]
    pub fn pending(&self) -> usize {
        self.lock().len()
    }

    /// Writes the buffered calls to `store` and keeps only the newest `cap`. On error
    /// the calls stay buffered for the next flush.
    pub fn flush(&self, store: &dyn CallStore, cap: u64) -> Result<()> {
        let pending = std::mem::take(&mut *self.lock());
        if pending.is_empty() {
            return Ok(());
        }
        let result = store.append_calls(&pending, cap);
        if result.is_err() {
            let mut buffer = self.lock();
            let newer = std::mem::replace(&mut *buffer, pending);
            buffer.extend(newer);
        }
        result
    }

    /// The stored calls `filter` selects, newest first.
    pub fn query(store: &dyn CallStore, filter: &Filter) -> Result<Vec<Record>> {
        store.calls(filter)
    }

    /// Per-tool figures over every stored call (or those since `since_ms`), by name.
    pub fn stats(store: &dyn CallStore, since_ms: Option<i64>) -> Result<Vec<ToolStats>> {
        let rows = store.durations(since_ms)?;
        let mut stats = Vec::new();
        for group in rows.chunk_by(|a, b| a.0 == b.0) {
            let durations: Vec<f64> = group.iter().map(|r| r.1).collect();
            let n = durations.len();
            let failed = group.iter().filter(|r| r.2).count();
            // Nearest-rank percentile on the sorted durations.
            let rank = (n * 95).div_ceil(100).max(1) - 1;
            stats.push(ToolStats {
                tool: group[0].0.clone(),
                calls: n as u64,
                average_ms: durations.iter().sum::<f64>() / n as f64,
                p95_ms: durations[rank],
                max_ms: durations[n - 1],
                failure_rate: failed as f64 / n as f64,
            });
        }
        Ok(stats)
    }
}

/// Calls a tool must have had, and the mean it must exceed, before Evo suggests how to
/// make it faster: one slow call is noise, ten are a habit.
pub const SUGGEST_AFTER_CALLS: u64 = 10;

/// Advice for tools that are called often and are slow
/// (`Grep 工具执行缓慢，建议使用更具体的路径或模式`), in `locale`.
pub fn suggestions(stats: &[ToolStats], locale: crate::skill::permission::Locale) -> Vec<String> {
    use crate::skill::permission::Locale;
    stats
        .iter()
        .filter(|s| s.calls >= SUGGEST_AFTER_CALLS && s.average_ms > SLOW_CALL_MS)
        .map(|s| {
            let display = display_name(&s.tool);
            let advice = advice(&s.tool, locale);
            match locale {
                Locale::Zh => format!("{display} 工具执行缓慢，{advice}"),
                Locale::En => format!(
                    "{display} is slow ({:.0} ms on average over {} calls): {advice}",
                    s.average_ms, s.calls
                ),
            }
        })
        .collect()
}

/// `grep` → `Grep`, as coding agents name their built-in tools.
fn display_name(tool: &str) -> String {
    let mut chars = tool.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn advice(tool: &str, locale: crate::skill::permission::Locale) -> &'static str {
    use crate::skill::permission::Locale;
    match (tool, locale) {
        ("grep" | "glob" | "search", Locale::Zh) => "建议使用更具体的路径或模式",
        ("grep" | "glob" | "search", Locale::En) => "use a more specific path or pattern",
        ("bash", Locale::Zh) => "建议缩短命令或设置更小的超时",
        ("bash", Locale::En) => "run shorter commands or set a smaller timeout",
        ("read", Locale::Zh) => "建议用 offset 和 limit 只读取需要的行",
        ("read", Locale::En) => "read only the lines needed with offset and limit",
        (_, Locale::Zh) => "建议检查其输入或限制",
        (_, Locale::En) => "check its input and limits",
    }
}

/// `arguments` as stored: values under secret-looking keys, and strings shaped like
/// API tokens, replaced by `[REDACTED]`; cut at [`MAX_ARGUMENT_CHARS`].
pub fn redact(arguments: &Value) -> String {
    // Written out as it is walked: no copy of the arguments is made first.
    let text = serde_json::to_string(&Redacted(arguments)).unwrap_or_default();
    if text.chars().count() > MAX_ARGUMENT_CHARS {
        let mut cut: String = text.chars().take(MAX_ARGUMENT_CHARS).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// A value serialized as [`redact`] stores it.
struct Redacted<'a>(&'a Value);

impl Serialize for Redacted<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    if secret_key(key) && !value.is_null() {
                        out.serialize_entry(key, REDACTED)?;
                    } else {
                        out.serialize_entry(key, &Redacted(value))?;
                    }
                }
                out.end()
            }
            Value::Array(items) => serializer.collect_seq(items.iter().map(Redacted)),
            Value::String(text) => {
                // A whole file's content (`write`) is cut first, so that it is neither
                // scanned nor written out in full on every call.
                let kept = if text.len() > MAX_ARGUMENT_CHARS {
                    text.char_indices()
                        .nth(MAX_ARGUMENT_CHARS)
                        .map_or(text.as_str(), |(end, _)| &text[..end])
                } else {
                    text
                };
                serializer.serialize_str(if token_shaped(kept) { REDACTED } else { kept })
            }
            other => other.serialize(serializer),
        }
    }
}

const REDACTED: &str = "[REDACTED]";

fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "authorization",
        "credential",
    ]
    .iter()
    .any(|k| key.contains(k))
}

/// Prefixes of widely used API tokens (OpenAI, Anthropic, GitHub, Slack, AWS access keys).
fn token_shaped(s: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk-",
        "ghp_",
        "gho_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "AKIA",
    ];
    s.split_whitespace().any(|word| {
        PREFIXES
            .iter()
            .any(|p| word.starts_with(p) && word.len() >= p.len() + 16)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::skill::permission::Locale;

    fn record(tool: &str, status: Status, ms: f64, at_ms: i64) -> Record {
        Record {
            id: 0,
            at_ms,
            caller: "explore".into(),
            task_id: "task-1".into(),
            tool: tool.into(),
            arguments: "{}".into(),
            status,
            duration_ms: ms,
            error: None,
            hint: None,
            node: String::new(),
        }
    }

    #[test]
    fn a_full_buffer_asks_to_be_written_and_never_grows_without_end() {
        let history = History::default();
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        history.when_due({
            let asked = asked.clone();
            move || {
                asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        for i in 0..MAX_PENDING + 10 {
            history.record(record("read", Status::Success, 1.0, i as i64));
        }
        // Asked at every FLUSH_EVERY calls; nobody wrote them, so the oldest went.
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::Relaxed),
            MAX_PENDING / FLUSH_EVERY
        );
        assert_eq!(history.pending(), MAX_PENDING - FLUSH_EVERY + 10);
        assert_eq!(history.lock()[0].at_ms, FLUSH_EVERY as i64);
    }

    #[test]
    fn the_newest_ten_read_calls_of_a_hundred() {
        // 100 records; the latest 10 calls of Read, newest first.
        let dir = tempfile::tempdir().unwrap();
        for storage in crate::storage::testing::both(dir.path()) {
            let store = crate::skill::observe::store::store_for(&storage);
            let history = History::default();
            for i in 0..100 {
                let tool = if i % 2 == 0 { "read" } else { "grep" };
                history.record(record(tool, Status::Success, 1.0, 1_000 + i));
            }
            history.flush(store.as_ref(), 1_000).unwrap();
            let filter = Filter {
                tool: Some("read".into()),
                limit: Some(10),
                ..Filter::default()
            };
            let got = History::query(store.as_ref(), &filter).unwrap();
            assert_eq!(got.len(), 10);
            assert!(
                got.iter()
                    .all(|r| r.tool == "read" && r.caller == "explore")
            );
            let times: Vec<i64> = got.iter().map(|r| r.at_ms).collect();
            assert_eq!(times, (0..10).map(|i| 1_098 - 2 * i).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_cap_drops_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        for storage in crate::storage::testing::both(dir.path()) {
            let store = crate::skill::observe::store::store_for(&storage);
            let history = History::default();
            for i in 0..30 {
                history.record(record("read", Status::Success, 1.0, i));
            }
            history.flush(store.as_ref(), 20).unwrap();
            let all = History::query(store.as_ref(), &Filter::default()).unwrap();
            assert_eq!(all.len(), 20);
            assert_eq!(all.last().unwrap().at_ms, 10);
        }
    }

    #[test]
    fn stats_give_p95_and_failure_rate_and_suggest_for_slow_frequent_tools() {
        let dir = tempfile::tempdir().unwrap();
        for storage in crate::storage::testing::both(dir.path()) {
            let store = crate::skill::observe::store::store_for(&storage);
            let history = History::default();
            for i in 1..=20 {
                let status = if i <= 2 {
                    Status::Error
                } else {
                    Status::Success
                };
                history.record(record("grep", status, 600.0 + f64::from(i), 0));
            }
            history.record(record("read", Status::Blocked, 2.0, 0));
            history.flush(store.as_ref(), 1_000).unwrap();
            let stats = History::stats(store.as_ref(), None).unwrap();
            assert_eq!(stats.len(), 2);
            let grep = &stats[0];
            assert_eq!((grep.tool.as_str(), grep.calls), ("grep", 20));
            assert_eq!((grep.p95_ms, grep.max_ms), (619.0, 620.0));
            assert!((grep.failure_rate - 0.1).abs() < 1e-9);
            assert_eq!(stats[1].failure_rate, 1.0);
            assert_eq!(
                suggestions(&stats, Locale::Zh),
                ["Grep 工具执行缓慢，建议使用更具体的路径或模式"]
            );
            assert!(
                suggestions(&stats, Locale::En)[0]
                    .starts_with("Grep is slow (610 ms on average over 20 calls)")
            );
        }
    }

    #[test]
    fn secrets_are_redacted() {
        let text = redact(&json!({
            "command": "curl -H 'x: sk-abcdefghijklmnopqrstuvwxyz' example.com",
            "api_key": "hunter2",
            "nested": [{ "password": "p" }],
            "file_path": "src/main.rs"
        }));
        assert!(
            !text.contains("hunter2") && !text.contains("sk-abc") && !text.contains("\"p\""),
            "{text}"
        );
        assert!(text.contains("src/main.rs"));
        let long = redact(&json!({ "content": "x".repeat(10_000) }));
        assert_eq!(long.chars().count(), MAX_ARGUMENT_CHARS + 1);
    }

    /// What `redact` stored when it copied the arguments with each value replaced, then
    /// wrote the copy out.
    fn redacted_by_copy(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = if secret_key(k) && !v.is_null() {
                            Value::String(REDACTED.into())
                        } else {
                            redacted_by_copy(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(redacted_by_copy).collect()),
            Value::String(s) => {
                let kept: String = if s.len() > MAX_ARGUMENT_CHARS {
                    s.chars().take(MAX_ARGUMENT_CHARS).collect()
                } else {
                    s.clone()
                };
                Value::String(if token_shaped(&kept) {
                    REDACTED.into()
                } else {
                    kept
                })
            }
            other => other.clone(),
        }
    }

    #[test]
    fn arguments_are_stored_as_a_redacted_copy_would_be() {
        let token = "sk-abcdefghijklmnopqrstuvwxyz";
        for arguments in [
            json!(null),
            json!({}),
            json!([1, -2.5, true, null, "plain"]),
            json!({ "z": 1, "a": { "token": token, "password": null, "list": [token, "ok"] } }),
            json!({ "content": "é".repeat(MAX_ARGUMENT_CHARS + 7), "n": 3 }),
            json!({ "head": format!("{}{token}", "x".repeat(MAX_ARGUMENT_CHARS - 4)) }),
            json!({ "quote\"d": "line\nbreak \u{1}", "API_KEY": ["a", "b"] }),
        ] {
            let copy = redacted_by_copy(&arguments).to_string();
            let expected = if copy.chars().count() > MAX_ARGUMENT_CHARS {
                copy.chars().take(MAX_ARGUMENT_CHARS).chain(['…']).collect()
            } else {
                copy
            };
            assert_eq!(redact(&arguments), expected, "{arguments}");
        }
    }
}
