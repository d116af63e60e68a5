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
