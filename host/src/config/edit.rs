//! Writing one skill's `[grants.skill.NAME]` table into evo.toml, keeping every other
//! line, comment and format of the file as the operator wrote it.

use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use crate::capabilities::{ALL, Policy};
use crate::error::{Error, Result};

/// Sets skill `name`'s entry in the file at `path` to `policy` (`None` removes it),
/// creating the file if there is none. Written whole to a temporary file beside it and
/// renamed over it: a reader sees the old file or the new one, never half of one.
pub(crate) fn set_skill_grants(path: &Path, name: &str, policy: Option<&Policy>) -> Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io_at(path)(e)),
    };
    let invalid = |message: String| Error::Config {
        path: path.to_owned(),
        line: None,
        key: Some(format!("grants.skill.{name}")),
        message,
    };
    let mut document: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| invalid(format!("cannot be edited: {e}")))?;
    let grants = implicit_table(document.as_table_mut(), "grants")
        .ok_or_else(|| invalid("`grants` is not a table".into()))?;
    let skills = implicit_table(grants, "skill")
        .ok_or_else(|| invalid("`grants.skill` is not a table".into()))?;
    match policy {
        None => {
            skills.remove(name);
        }
        Some(policy) => {
            let mut table = Table::new();
            let nothing = Policy::default();
            for capability in ALL {
                let value = capability.show(policy);
                if value != capability.show(&nothing) {
                    table.insert(capability.key(), Item::Value(toml_value(&value)));
                }
            }
            skills.insert(name, Item::Table(table));
        }
    }
    crate::paths::write_atomic(path, document.to_string().as_bytes())
}

/// The table `key` of `parent`, made (implicit: no header of its own) if missing;
/// `None` when `key` holds something else.
fn implicit_table<'a>(parent: &'a mut Table, key: &str) -> Option<&'a mut Table> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_mut()
}

/// A grant's value (`true`, `"read"`, a list of strings) as TOML.
fn toml_value(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Array(items) => {
            let mut array = Array::new();
            for item in items {
                array.push(toml_value(item));
            }
            Value::Array(array)
        }
        serde_json::Value::String(s) => Value::from(s.as_str()),
        other => Value::from(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{HostPattern, MemoryAccess};

    #[test]
    fn one_skills_entry_is_written_and_the_rest_of_the_file_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evo.toml");
        let before = "# the operator's notes\n[grants]\nllm = true # for everyone\n\n[serve]\nmax_calls = 4\n";
        std::fs::write(&path, before).unwrap();
        let policy = Policy {
            memory: MemoryAccess::Read,
            hosts: vec![HostPattern::parse("https://api.example.com").unwrap()],
            ..Policy::default()
        };
        set_skill_grants(&path, "notes", Some(&policy)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // Every line of the operator's stays, comments included; the entry goes with
        // the table it belongs to.
        let lines = |t: &'static str| t.lines().filter(|l| !l.is_empty());
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.is_empty() && before.contains(l))
            .collect();
        assert_eq!(kept, lines(before).collect::<Vec<_>>(), "{text}");
        assert!(
            text.find("[grants.skill.notes]") < text.find("[serve]"),
            "{text}"
        );
        let config = crate::config::Config::from_toml(&path, &text).unwrap();
        let entry = &config.grants.skills["notes"];
        assert_eq!(entry.memory, MemoryAccess::Read);
        assert_eq!(entry.hosts, policy.hosts);
        assert!(config.grants.llm && config.serve.max_calls == 4);

        set_skill_grants(&path, "notes", None).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let config = crate::config::Config::from_toml(&path, &text).unwrap();
        assert!(
            config.grants.skills.is_empty() && config.grants.llm,
            "{text}"
        );
    }

    #[test]
    fn a_missing_file_is_made_and_a_key_of_another_shape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evo.toml");
        let policy = Policy {
            llm: true,
            ..Policy::default()
        };
        set_skill_grants(&path, "io", Some(&policy)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "[grants.skill.io]\nllm = true\n");

        std::fs::write(&path, "grants = 3\n").unwrap();
        let error = set_skill_grants(&path, "io", Some(&policy)).unwrap_err();
        assert!(
            error.to_string().contains("`grants` is not a table"),
            "{error}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "grants = 3\n",
            "nothing written"
        );
    }
}
