//! The Markdown side of memory: `MEMORY.md` (long-term, edited by people) and the daily
//! logs `memory/YYYY-MM-DD.md` (append-only, written by the kernel).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The long-term memory file in the data directory.
pub const MEMORY_MD: &str = "MEMORY.md";
/// The directory of daily logs in the data directory.
pub const DAILY_DIR: &str = "memory";
/// Longest daily-log entry; a log line records an event, not a document.
pub const MAX_LOG_ENTRY_BYTES: usize = 16 * 1024;
/// Largest daily log that is indexed for search (a day of agent runs is a few hundred
/// KiB; a file far beyond that was not written by the kernel and would cost every
/// open minutes of embedding).
pub const MAX_LOG_FILE_BYTES: u64 = 8 << 20;

/// Path of the daily log of `date` (`YYYY-MM-DD`).
pub fn daily_log_path(data_dir: &Path, date: &str) -> PathBuf {
    data_dir.join(DAILY_DIR).join(format!("{date}.md"))
}

/// Today's date in local time, as `YYYY-MM-DD`.
pub fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

/// Checks that `date` is a real `YYYY-MM-DD` date.
pub fn check_date(date: &str) -> Result<()> {
    chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .map(drop)
        .map_err(|_| Error::InvalidInput {
            skill: "memory".into(),
            reason: format!("{date:?} is not a date; use YYYY-MM-DD, e.g. 2026-11-22"),
        })
}

/// Appends `entry` to today's log as `- HH:MM:SS entry`, creating the file (with a
/// heading) on the first entry of the day. One `write` per entry in append mode, so
/// entries from several processes interleave whole, never torn.
pub fn append_daily_log(data_dir: &Path, entry: &str) -> Result<PathBuf> {
    let entry = entry.trim();
    if entry.is_empty() {
        return Err(Error::InvalidInput {
            skill: "memory".into(),
            reason: "the log entry is empty".into(),
        });
    }
    if entry.len() > MAX_LOG_ENTRY_BYTES {
        return Err(Error::InvalidInput {
            skill: "memory".into(),
            reason: format!(
                "the log entry is {} bytes; entries are at most {MAX_LOG_ENTRY_BYTES}",
                entry.len()
            ),
        });
    }
    let now = chrono::Local::now();
    let path = daily_log_path(data_dir, &now.format("%Y-%m-%d").to_string());
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(path.parent().unwrap_or(data_dir)).map_err(io)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    let mut text = String::new();
    if file.metadata().map_err(io)?.len() == 0 {
        text.push_str(&format!("# {}\n\n", now.format("%Y-%m-%d")));
    }
    // One line per entry: continuation lines are indented under the bullet.
    let body = entry.lines().collect::<Vec<_>>().join("\n  ");
    text.push_str(&format!("- {} {body}\n", now.format("%H:%M:%S")));
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(path)
}

/// The log of `date` (today when `None`); empty if nothing was logged that day.
pub fn load_daily_log(data_dir: &Path, date: Option<&str>) -> Result<String> {
    let date = match date {
        Some(date) => {
            check_date(date)?;
            date.to_owned()
        }
        None => today(),
    };
    read_or_empty(&daily_log_path(data_dir, &date))
}

/// The contents of `MEMORY.md` (empty if there is none).
pub fn load_long_term(data_dir: &Path) -> Result<String> {
    read_or_empty(&data_dir.join(MEMORY_MD))
}

fn read_or_empty(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(Error::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The days that have a log in `dir` (the files named `YYYY-MM-DD.md`), in order.
pub fn log_days(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut days: Vec<String> = entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let day = name.strip_suffix(".md")?;
            check_date(day).ok().map(|()| day.to_owned())
        })
        .collect();
    days.sort_unstable();
    Ok(days)
}

/// One entry of a daily log: its `HH:MM:SS` (when it has one) and its text, with
/// continuation lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBullet {
    /// The time written before the text.
    pub time: Option<String>,
    /// The text.
    pub text: String,
}

/// The entries of a daily log, in order: each `- ` line with the indented lines under
/// it. The heading and blank lines are structure; any other line (written by hand)
/// is an entry of its own.
pub fn log_bullets(text: &str) -> Vec<LogBullet> {
    let mut bullets: Vec<LogBullet> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            let (time, body) = match item.split_once(' ') {
                Some((time, body))
                    if chrono::NaiveTime::parse_from_str(time, "%H:%M:%S").is_ok() =>
                {
                    (Some(time.to_owned()), body)
                }
                _ => (None, item),
            };
            bullets.push(LogBullet {
                time,
                text: body.trim().to_owned(),
            });
        } else if line.starts_with([' ', '\t']) && !bullets.is_empty() {
            if let Some(last) = bullets.last_mut() {
                last.text.push('\n');
                last.text.push_str(trimmed);
            }
        } else {
            bullets.push(LogBullet {
                time: None,
                text: trimmed.to_owned(),
            });
        }
    }
    bullets.retain(|b| !b.text.is_empty());
    bullets
}

/// When a log entry was written, ms since the Unix epoch: its day and time in local
/// time (the start of the day when it has no time).
pub fn log_time(day: &str, time: Option<&str>) -> i64 {
    use chrono::TimeZone as _;
    let Ok(date) = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d") else {
        return 0;
    };
    let time = time
        .and_then(|t| chrono::NaiveTime::parse_from_str(t, "%H:%M:%S").ok())
        .unwrap_or_default();
    chrono::Local
        .from_local_datetime(&date.and_time(time))
        .earliest()
        .map_or(0, |t| t.timestamp_millis())
}

/// The start (`end` false) or end of a local day, ms since the Unix epoch.
pub fn day_bound(day: &str, end: bool) -> Result<i64> {
    check_date(day)?;
    let start = log_time(day, None);
    Ok(if end {
        start + 24 * 3_600_000 - 1
    } else {
        start
    })
}

/// `text` in pieces of at most `max` bytes, cut at whitespace where there is some.
pub fn chunks(text: &str, max: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = text.trim();
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(space) = rest[..cut]
            .rfind(char::is_whitespace)
            .filter(|&i| i > max / 2)
        {
            cut = space;
        }
        pieces.push(rest[..cut].trim().to_owned());
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() {
        pieces.push(rest.to_owned());
    }
    pieces
}

/// The items of `MEMORY.md` that become searchable entries: each list item, and each
/// paragraph of plain text; headings, code fences and blank lines are structure only.
pub fn memory_md_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut in_code = false;
    let flush = |paragraph: &mut Vec<&str>, items: &mut Vec<String>| {
        if !paragraph.is_empty() {
            items.push(paragraph.join(" "));
            paragraph.clear();
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            flush(&mut paragraph, &mut items);
            continue;
        }
        if in_code || trimmed.is_empty() || trimmed.starts_with('#') {
            flush(&mut paragraph, &mut items);
            continue;
        }
        let bullet = ["- ", "* ", "+ "]
            .iter()
            .find_map(|b| trimmed.strip_prefix(b))
            .or_else(|| {
                let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
                (digits > 0)
                    .then(|| trimmed[digits..].strip_prefix(". "))
                    .flatten()
            });
        match bullet {
            Some(item) => {
                flush(&mut paragraph, &mut items);
                if !item.trim().is_empty() {
                    items.push(item.trim().to_owned());
                }
            }
            // An indented line under a bullet continues it.
            None if line.starts_with([' ', '\t']) && paragraph.is_empty() && !items.is_empty() => {
                if let Some(last) = items.last_mut() {
                    last.push(' ');
                    last.push_str(trimmed);
                }
            }
            None => paragraph.push(trimmed),
        }
    }
    flush(&mut paragraph, &mut items);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_md_items_are_list_items_and_paragraphs() {
        let text = "# About the user\n\n- Prefers dark mode\n- Works at Acme\n  as an engineer\n\nLikes\nlong walks.\n\n```\ncode is ignored\n```\n1. Numbered item\n";
        assert_eq!(
            memory_md_items(text),
            [
                "Prefers dark mode",
                "Works at Acme as an engineer",
                "Likes long walks.",
                "Numbered item"
            ]
        );
    }

    #[test]
    fn log_bullets_keep_times_and_continuations() {
        let text = "# 2026-11-20\n\n- 09:15:02 user: hi\n  agent: hello\n- 10:00:00 second\nwritten by hand\n- no time here\n";
        let bullets = log_bullets(text);
        assert_eq!(
            bullets,
            [
                LogBullet {
                    time: Some("09:15:02".into()),
                    text: "user: hi\nagent: hello".into()
                },
                LogBullet {
                    time: Some("10:00:00".into()),
                    text: "second".into()
                },
                LogBullet {
                    time: None,
                    text: "written by hand".into()
                },
                LogBullet {
                    time: None,
                    text: "no time here".into()
                },
            ]
        );
        assert_eq!(
            log_time("2026-11-20", Some("10:00:00")) - log_time("2026-11-20", None),
            10 * 3_600_000
        );
        assert_eq!(
            day_bound("2026-11-20", true).unwrap() - day_bound("2026-11-20", false).unwrap(),
            86_399_999
        );
    }

    #[test]
    fn long_text_is_cut_at_whitespace_into_bounded_chunks() {
        let text = "word ".repeat(2_000);
        let pieces = chunks(&text, 4096);
        assert!(pieces.iter().all(|p| p.len() <= 4096 && !p.ends_with(' ')));
        assert_eq!(pieces.join(" "), text.trim());
        assert_eq!(chunks("短い", 4), ["短", "い"]);
        assert!(chunks("   ", 10).is_empty());
    }

    #[test]
    fn daily_logs_append_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        append_daily_log(dir.path(), "first").unwrap();
        append_daily_log(dir.path(), "second\nline").unwrap();
        let log = load_daily_log(dir.path(), None).unwrap();
        assert!(log.starts_with(&format!("# {}\n\n- ", today())), "{log}");
        assert!(
            log.contains(" first\n- ") && log.ends_with(" second\n  line\n"),
            "{log}"
        );
        assert_eq!(load_daily_log(dir.path(), Some("2001-01-01")).unwrap(), "");
        assert_eq!(
            load_daily_log(dir.path(), Some("2001-02-30"))
                .unwrap_err()
                .code(),
            "INVALID_INPUT"
        );
        assert_eq!(
            append_daily_log(dir.path(), "  ").unwrap_err().code(),
            "INVALID_INPUT"
        );
    }
}
