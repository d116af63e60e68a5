//! Changing an installed skill's description: only that field changes; the rest of its
//! SKILL.md (or skill.json) stays byte for byte.

use super::*;

impl SkillManager {
    /// Changes the `description` in skill `name`'s SKILL.md frontmatter, leaving every
    /// other byte of the file as it was, and refreshes its marker. `field` must be
    /// `description` (`Only description field can be modified`).
    pub fn update_skill_field(&self, name: &str, field: &str, value: &str) -> Result<Outcome> {
        if field != "description" {
            return Err(Error::InvalidInput {
                skill: name.to_owned(),
                reason: "Only description field can be modified".into(),
            });
        }
        self.update_skill_description(name, value)
    }

    /// Changes skill `name`'s description (see [`SkillManager::update_skill_field`]).
    pub fn update_skill_description(&self, name: &str, description: &str) -> Result<Outcome> {
        let description = description.trim();
        if description.is_empty() || description.contains('\n') {
            return Err(Error::InvalidInput {
                skill: name.to_owned(),
                reason: "the description must be one non-empty line".into(),
            });
        }
        let dir = self.installed(name)?;
        // The loader takes the description from skill.json first, then SKILL.md: change
        // it wherever it is written, each file otherwise byte for byte as it was.
        let mut rewrites = Vec::new();
        let json_path = dir.join(SKILL_JSON);
        if let Ok(text) = std::fs::read_to_string(&json_path)
            && let Some(updated) = replace_json_description(&text, description)
        {
            rewrites.push((json_path, updated));
        }
        let md_path = dir.join(SKILL_MD);
        if let Ok(text) = std::fs::read_to_string(&md_path)
            && let Some(updated) = replace_description(&text, description)
        {
            SkillDoc::parse(&updated).map_err(|p| structure(p.message))?;
            rewrites.push((md_path, updated));
        }
        if rewrites.is_empty() {
            return Err(Error::InvalidInput {
                skill: name.to_owned(),
                reason: format!(
                    "{name} has no description in SKILL.md or {SKILL_JSON} (a Wasm skill's is in its component); rebuild it with the new description and reinstall"
                ),
            });
        }
        for (path, text) in &rewrites {
            let staged = dir.join(".update.tmp");
            std::fs::write(&staged, text).map_err(Error::io_at(&staged))?;
            std::fs::rename(&staged, path).map_err(Error::io_at(path))?;
        }
        let mut record = self.record(&dir, name);
        record.description = description.to_owned();
        record.digest = digest(&dir)?;
        record.updated_at = crate::unix_millis();
        if record.installed_at == 0 {
            record.installed_at = record.updated_at;
        }
        record.write(&dir)?;
        self.reindex(name, Some(&record))?;
        Ok(Outcome {
            success: true,
            name: name.to_owned(),
            message: "Description updated".into(),
            digest: None,
            skill: None,
            warnings: Vec::new(),
        })
    }
}

/// The JSON object `text` with its top-level `"description"` string replaced by `value`;
/// every other byte as it was. `None` if there is no such string.
fn replace_json_description(text: &str, value: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0_usize, 0_usize);
    // The span of the last string read at depth 1, and whether it was a key.
    let mut key: Option<(usize, usize)> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = (i + 1).min(bytes.len());
                if depth == 1 {
                    let rest = text[end..].trim_start();
                    if rest.starts_with(':') {
                        key = Some((start, end));
                    } else if let Some((ks, ke)) = key.take()
                        && serde_json::from_str::<String>(&text[ks..ke])
                            .ok()
                            .as_deref()
                            == Some("description")
                    {
                        let quoted = serde_json::to_string(value).ok()?;
                        let updated = format!("{}{quoted}{}", &text[..start], &text[end..]);
                        return serde_json::from_str::<serde_json::Value>(&updated)
                            .is_ok()
                            .then_some(updated);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `text` with the frontmatter's `description` replaced by `value`; everything else,
/// including the other fields and the body, byte for byte as it was.
fn replace_description(text: &str, value: &str) -> Option<String> {
    let rest = text.strip_prefix("---")?;
    let end = rest.find("\n---")?;
    let front = &rest[..end];
    let mut lines: Vec<&str> = front.split('\n').collect();
    let start = lines.iter().position(|l| l.starts_with("description:"))?;
    // A block scalar or a wrapped value continues on indented lines.
    let mut stop = start + 1;
    while stop < lines.len() && (lines[stop].starts_with(' ') || lines[stop].starts_with('\t')) {
        stop += 1;
    }
    let quoted = serde_json::to_string(value).ok()?;
    let replacement = format!("description: {quoted}");
    lines.splice(start..stop, [replacement.as_str()]);
    Some(format!("---{}{}", lines.join("\n"), &rest[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_json_description_changes() {
        let text = "{\n  \"name\": \"x\",\n  \"input\": { \"description\": \"nested\" },\n  \"description\" :  \"Old \\\"quoted\\\" text\",\n  \"tags\": [\"a\"]\n}\n";
        assert_eq!(
            replace_json_description(text, "New: \"text\"").unwrap(),
            "{\n  \"name\": \"x\",\n  \"input\": { \"description\": \"nested\" },\n  \"description\" :  \"New: \\\"text\\\"\",\n  \"tags\": [\"a\"]\n}\n"
        );
        assert_eq!(replace_json_description("{\"name\": \"x\"}", "d"), None);
        assert_eq!(
            replace_json_description("{\"description\": 3}", "d"),
            None,
            "not a string"
        );
    }

    #[test]
    fn only_the_description_changes() {
        let text = "---\nname: git-commit\ndescription: >\n  Old text\n  on two lines\nversion: 1.0.0\ntags: [git]\n---\n# Body\nkept: as is\n";
        let updated = replace_description(
            text,
            "自动生成Git提交信息，支持emoji和conventional commits格式",
        )
        .unwrap();
        assert_eq!(
            updated,
            "---\nname: git-commit\ndescription: \"自动生成Git提交信息，支持emoji和conventional commits格式\"\nversion: 1.0.0\ntags: [git]\n---\n# Body\nkept: as is\n"
        );
        let doc = SkillDoc::parse(&updated).unwrap();
        assert_eq!(
            doc.raw.description.as_deref(),
            Some("自动生成Git提交信息，支持emoji和conventional commits格式")
        );
    }
}
