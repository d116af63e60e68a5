//! Where each key of `evo.toml` sits in its text, from the TOML parser's spans: errors
//! name the line and the key, and each setting records where it came from.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use super::Source;
use crate::error::{Error, Result};

/// Where each dotted key sits in the text.
pub(super) struct Spans<'a> {
    path: &'a Path,
    text: &'a str,
    keys: BTreeMap<String, Range<usize>>,
}

impl Spans<'_> {
    pub(super) fn line_at(&self, offset: usize) -> usize {
        line_of(self.text, offset)
    }

    pub(super) fn line(&self, key: &str) -> usize {
        self.keys
            .get(key)
            .map_or(1, |span| self.line_at(span.start))
    }

    pub(super) fn source(&self, key: &str) -> Source {
        Source::File {
            path: self.path.to_owned(),
            line: self.line(key),
        }
    }

    pub(super) fn invalid(&self, key: &str, message: impl Into<String>) -> Error {
        Error::Config {
            path: self.path.to_owned(),
            line: Some(self.line(key)),
            key: Some(key.to_owned()),
            message: message.into(),
        }
    }

    /// Every key under the table `table` (`engine.pool_slots` under `engine`).
    pub(super) fn keys_under(&self, table: &str) -> Vec<String> {
        let prefix = format!("{table}.");
        self.keys
            .keys()
            .filter(|key| key.starts_with(&prefix))
            .cloned()
            .collect()
    }

    /// The innermost key whose entry holds `offset`.
    pub(super) fn key_at(&self, offset: usize) -> Option<&str> {
        self.keys
            .iter()
            .filter(|(_, span)| span.contains(&offset))
            .max_by_key(|(key, _)| key.matches('.').count())
            .map(|(key, _)| key.as_str())
    }
}

/// The spans of every key of the TOML `text` read from `path`.
pub(super) fn spans<'a>(path: &'a Path, text: &'a str) -> Result<Spans<'a>> {
    let table = toml::de::DeTable::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        Error::Config {
            path: path.to_owned(),
            line,
            key: None,
            message: e.message().trim().to_owned(),
        }
    })?;
    let mut keys = BTreeMap::new();
    walk("", table.get_ref(), &mut keys);
    Ok(Spans { path, text, keys })
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

fn walk(prefix: &str, table: &toml::de::DeTable<'_>, keys: &mut BTreeMap<String, Range<usize>>) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        // From the key to the end of its value: an error inside the value names it.
        let span = key.span().start..value.span().end.max(key.span().end);
        keys.insert(name.clone(), span);
        if let toml::de::DeValue::Table(inner) = value.get_ref() {
            walk(&name, inner, keys);
        }
    }
}
