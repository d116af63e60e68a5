//! SKILL.md: YAML frontmatter (the metadata) and a Markdown body (the instructions).
//!
//! Read leniently, so skills written for the public Agent Skills format and for the
//! skill manager's own archives both load: `version` and `tags` may be top-level or under
//! `metadata`; `description` may be plain, quoted or a block scalar; `tags` may be a list
//! or a comma-separated string. Fields Evo does not know are ignored.
//!
//! ```
//! use evo_host::skill::manifest::frontmatter::SkillDoc;
//!
//! let doc = SkillDoc::parse("---\nname: git-commit\ndescription: >\n  Builds a commit\n  message.\nmetadata:\n  version: 1.2.0\n---\n# Steps\n").unwrap();
//! assert_eq!(doc.raw.name.as_deref(), Some("git-commit"));
//! assert_eq!(doc.raw.description.as_deref(), Some("Builds a commit message."));
//! assert_eq!(doc.raw.version.as_deref(), Some("1.2.0"));
//! assert_eq!(doc.body, "# Steps\n");
//! ```

use serde_json::Value;

use crate::skill::manifest::{Problem, RawMeta};

/// A parsed SKILL.md.
#[derive(Debug, Clone, Default)]
pub struct SkillDoc {
    /// The metadata from the frontmatter, not yet validated.
    pub raw: RawMeta,
    /// The Markdown after the frontmatter.
    pub body: String,
}

impl SkillDoc {
    /// Splits `text` into frontmatter and body and reads the frontmatter.
    pub fn parse(text: &str) -> Result<Self, Problem> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = text
            .strip_prefix("---")
            .filter(|r| r.starts_with(['\n', '\r']))
        else {
            return Err(Problem {
                field: "(frontmatter)".into(),
                message: "SKILL.md does not start with YAML frontmatter".into(),
                fix: "start the file with `---`, then `name:` and `description:`, then `---`"
                    .into(),
            });
        };
        let (yaml, body) = split_closing_fence(rest).ok_or_else(|| Problem {
            field: "(frontmatter)".into(),
            message: "the frontmatter is never closed".into(),
            fix: "end the frontmatter with a line holding only `---`".into(),
        })?;
        let value: Value = if yaml.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_yaml_ng::from_str(yaml).map_err(|e| Problem {
                field: "(frontmatter)".into(),
                message: format!("not valid YAML: {e}"),
                fix: "check indentation and quote values that contain `:`".into(),
            })?
        };
        let Value::Object(map) = value else {
            return Err(Problem {
                field: "(frontmatter)".into(),
                message: "the frontmatter is not a mapping".into(),
                fix: "write `key: value` lines".into(),
            });
        };
        let metadata = map.get("metadata").and_then(Value::as_object);
        let field = |key: &str| {
            map.get(key)
                .filter(|v| !v.is_null())
                .or_else(|| metadata.and_then(|m| m.get(key)))
                .cloned()
        };
        let text_field = |key: &str| {
            field(key).and_then(|v| match v {
                Value::String(s) => Some(fold_description(&s)),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
        };
        let tags = field("tags").and_then(|v| match v {
            Value::Array(items) => Some(
                items
                    .into_iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect(),
            ),
            Value::String(s) => Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
            _ => None,
        });
        // Sentences hold commas: only a list is read.
        let requests = field("requests").and_then(|v| match v {
            Value::Array(items) => Some(
                items
                    .into_iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        });
        let raw = RawMeta {
            name: text_field("name"),
            description: text_field("description"),
            category: text_field("category"),
            version: text_field("version").map(|v| pad_version(&v)),
            author: text_field("author"),
            tags,
            requests,
            input: field("input"),
            output: field("output"),
            mode: field("mode"),
            timeout: field("timeout"),
            retry: field("retry"),
            ..RawMeta::default()
        };
        Ok(Self {
            raw,
            body: body.to_owned(),
        })
    }
}

/// Splits after the closing `---` line: `(yaml, body)`.
fn split_closing_fence(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" && offset > 0 {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// `1` and `1.2` as SemVer (`1.0.0`, `1.2.0`): YAML reads an unquoted `1.0` as a
/// number, and authors often write two parts.
fn pad_version(version: &str) -> String {
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() < 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        let mut padded = parts.join(".");
        for _ in parts.len()..3 {
            padded.push_str(".0");
        }
        padded
    } else {
        version.to_owned()
    }
}

/// A description as one paragraph: block scalars (`|`) keep their line breaks in YAML,
/// but a description is read as prose.
fn fold_description(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_and_agent_skills_layouts_both_load() {
        // The skill manager's format: version and tags at the top level.
        let doc = SkillDoc::parse(
            "---\nname: git-commit\ndescription: \"Commit: with a message\"\nversion: 2.0.0\ntags: [git, vcs]\n---\nBody",
        )
        .unwrap();
        assert_eq!(
            doc.raw.description.as_deref(),
            Some("Commit: with a message")
        );
        assert_eq!(doc.raw.version.as_deref(), Some("2.0.0"));
        assert_eq!(doc.raw.tags, Some(vec!["git".into(), "vcs".into()]));
        assert_eq!(doc.body, "Body");
        let doc = SkillDoc::parse(
            "---\nname: x\ndescription: d\nrequests:\n  - word my commit, please\n  - is this message fine?\n---\n",
        )
        .unwrap();
        assert_eq!(
            doc.raw.requests,
            Some(vec![
                "word my commit, please".into(),
                "is this message fine?".into()
            ]),
            "a list, commas kept"
        );
        let doc = SkillDoc::parse("---\nname: x\ndescription: d\nversion: 1.0\n---\n").unwrap();
        assert_eq!(
            doc.raw.version.as_deref(),
            Some("1.0.0"),
            "YAML's number 1.0"
        );

        // Agent Skills format: extra fields, version under metadata, literal block.
        let doc = SkillDoc::parse(
            "---\nname: pdf\ndescription: |\n  Extract text.\n  Fill forms.\nlicense: MIT\nmetadata:\n  version: \"1.0\"\n  tags: pdf, documents\n---\n",
        )
        .unwrap();
        assert_eq!(
            doc.raw.description.as_deref(),
            Some("Extract text. Fill forms.")
        );
        assert_eq!(doc.raw.version.as_deref(), Some("1.0.0"));
        assert_eq!(doc.raw.tags, Some(vec!["pdf".into(), "documents".into()]));
    }

    #[test]
    fn broken_frontmatter_says_how_to_fix_it() {
        assert_eq!(
            SkillDoc::parse("# no frontmatter").unwrap_err().field,
            "(frontmatter)"
        );
        assert_eq!(
            SkillDoc::parse("---\nname: x\n").unwrap_err().message,
            "the frontmatter is never closed"
        );
        assert!(
            SkillDoc::parse("---\nname: [x\n---\n")
                .unwrap_err()
                .message
                .starts_with("not valid YAML")
        );
    }
}
