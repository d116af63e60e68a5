//! A table of `evo.toml` as the subsystem it configures owns it: typed settings with
//! their defaults, written beside that subsystem's code and read by serde (a key the
//! file leaves out keeps its default, a key nobody knows is refused), and the
//! subsystem's own check of what was read. `config` only composes the tables; adding
//! a setting is a field, its default and, if it has a range, a line of `check`, all in
//! the subsystem's file.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A value of `evo.toml` that does not hold: its dotted key, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The dotted key (`engine.pool_slots`).
    pub key: String,
    /// What is wrong, and what to write instead.
    pub message: String,
}

impl Invalid {
    /// The value of `key` does not hold, for `message`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// One table of `evo.toml`, owned by the subsystem it configures.
pub trait Section: Default + Serialize + DeserializeOwned {
    /// Its name in `evo.toml` (`engine` for `[engine]`).
    const TABLE: &'static str;

    /// Checks the values just read, and makes their relative paths relative to `base`
    /// (the directory of the file). The error names the key.
    fn check(&mut self, base: &Path) -> Result<(), Invalid> {
        let _ = base;
        Ok(())
    }
}

/// Whether `value` of `key` is within `min..=max`; the error says the range.
pub fn in_range(key: &str, value: impl TryInto<u64>, min: u64, max: u64) -> Result<(), Invalid> {
    let value = value.try_into().unwrap_or(u64::MAX);
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(Invalid::new(
        key,
        if max == u64::MAX {
            format!("{value} is too small; the least is {min}")
        } else {
            format!("{value} is out of range; use {min} to {max}")
        },
    ))
}

/// A relative path of the file, made relative to its directory `base`.
pub fn beside(base: &Path, path: &mut std::path::PathBuf) {
    if path.is_relative() {
        *path = base.join(&*path);
    }
}

/// Reads a word that `parse` knows; else the error says what the value is not and which
/// words there are (`"retry" is not a fallback; use throw, return_raw or
/// return_partial`). For a field's `#[serde(deserialize_with)]`.
pub fn word<'de, D, T>(
    d: D,
    parse: impl Fn(&str) -> Option<T>,
    what: &str,
    words: &str,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text = <String as serde::Deserialize>::deserialize(d)?;
    parse(&text)
        .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not {what}; use {words}")))
}
