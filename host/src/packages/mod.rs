//! The skill manager (seed: skill-manager): install skills from ZIP archives, uninstall
//! them, change a description, list what is installed.
//!
//! Installing is atomic: the archive is checked entry by entry (no absolute paths, no
//! `..`, no symlinks, caps on entries, sizes and compression ratio), extracted into a
//! temporary directory inside the skills directory, validated, and only then renamed into
//! place; a failure at any point leaves nothing behind and the previous version (when
//! overwriting) untouched until the new one is complete.

mod archive;
pub mod index;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::skill::frontmatter::SkillDoc;

pub use archive::{MAX_ENTRIES, MAX_ENTRY_BYTES, MAX_RATIO, MAX_TOTAL_BYTES};

/// Written into each installed skill: when it was installed (or its description last
/// changed) and the content digest, marking the skill as indexed.
pub const MARKER: &str = ".vectorized";

/// What install, uninstall and update return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Always true (failures are errors).
    pub success: bool,
    /// The skill.
    pub name: String,
    /// `Skill installed successfully`, `Skill uninstalled successfully`, `Description updated`.
    pub message: String,
    /// SHA-256 over the skill's files (paths and contents, not ZIP timestamps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// One installed skill in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedSkill {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its version.
    pub version: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// When it was installed, ms since the Unix epoch.
    pub installed_at: u64,
}

/// Filters and paging for [`SkillManager::list_skills`].
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Names containing this.
    pub name: Option<String>,
    /// Skills carrying all of these tags.
    pub tags: Vec<String>,
    /// Page, from 1.
    pub page: Option<usize>,
    /// Page size.
    pub limit: Option<usize>,
}

/// A page of skills and how many match in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// This page.
    pub skills: Vec<ListedSkill>,
    /// All matches.
    pub total: usize,
}

/// Installs counted for one day or week.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DateCount {
    /// `YYYY-MM-DD` (for a week, its Monday), local time.
    pub date: String,
    /// Installs.
    pub count: usize,
}

/// What is installed, by tag and by install date.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Statistics {
    /// Installed skills.
    pub total: usize,
    /// Skills per tag.
    pub by_tag: std::collections::BTreeMap<String, usize>,
    /// Installs per day, oldest first.
    pub installs_per_day: Vec<DateCount>,
    /// Installs per week (weeks start on Monday), oldest first.
    pub installs_per_week: Vec<DateCount>,
}

/// Installs and manages the skills of one data directory (`<data>/skills/<name>/`).
#[derive(Debug)]
pub struct SkillManager {
    root: PathBuf,
    index: Option<std::sync::Mutex<index::SkillIndex>>,
}

fn structure(problem: impl Into<String>) -> Error {
    Error::InvalidSkillStructure(problem.into())
}

impl SkillManager {
    /// The manager of the skills under `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            root: crate::paths::skills_dir(data_dir),
            index: None,
        }
    }

    /// Keeps `index` up to date on install, uninstall and description changes.
    pub fn with_index(mut self, index: index::SkillIndex) -> Self {
        self.index = Some(std::sync::Mutex::new(index));
        self
    }

    fn reindex(&self, name: &str, doc: Option<&SkillDoc>) -> Result<()> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        let mut index = index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match doc {
            Some(doc) => index.index_skill(
                name,
                doc.raw.description.as_deref().unwrap_or_default(),
                doc.raw.tags.as_deref().unwrap_or_default(),
            ),
            None => index.remove_skill(name),
        }
    }

    /// The skills most relevant to `query` (needs [`SkillManager::with_index`]).
    pub fn search_skills(&self, query: &str, k: usize) -> Result<Vec<index::SkillHit>> {
        match &self.index {
            Some(index) => index
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .search_skills(query, k),
            None => Ok(Vec::new()),
        }
    }

    /// The skills directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Installs the skill in `zip` (see the module docs); with `overwrite`, replaces an
    /// installed skill of the same name.
    pub fn install_skill(&self, zip: &[u8], overwrite: bool) -> Result<Outcome> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| Error::Io { path, source }
        };
        std::fs::create_dir_all(&self.root).map_err(io(&self.root))?;
        // Staging inside the skills directory, so the final rename stays on one file system.
        let staging = tempfile::Builder::new()
            .prefix(".install-")
            .tempdir_in(&self.root)
            .map_err(io(&self.root))?;
        let skill_dir = archive::extract(zip, staging.path())?;
        let name = skill_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| structure("Invalid ZIP structure: missing root directory"))?;
        let doc = validate(&skill_dir, &name)?;
        let digest = digest(&skill_dir)?;
        let target = self.root.join(&name);
        if target.exists() && !overwrite {
            return Err(Error::SkillAlreadyExists { name });
        }
        write_marker(&skill_dir, &digest)?;
        if target.exists() {
            // Move the old version aside first, so a failed rename can put it back.
            let old = staging.path().join(".previous");
            std::fs::rename(&target, &old).map_err(io(&target))?;
            if let Err(source) = std::fs::rename(&skill_dir, &target) {
                let _ = std::fs::rename(&old, &target);
                return Err(Error::Io {
                    path: target,
                    source,
                });
            }
        } else {
            std::fs::rename(&skill_dir, &target).map_err(io(&target))?;
        }
        self.reindex(&name, Some(&doc))?;
        tracing::info!(skill = %name, version = ?doc.raw.version, "installed");
        Ok(Outcome {
            success: true,
            name,
            message: "Skill installed successfully".into(),
            digest: Some(digest),
        })
    }

    /// Removes skill `name` (`Skills not found: <name>`, `SKILL_NOT_FOUND`, if it is not
    /// installed).
    pub fn uninstall_skill(&self, name: &str) -> Result<Outcome> {
        let dir = self.installed(name)?;
        // Rename first so a half-deleted skill is never loaded; then delete.
        let doomed = self.root.join(format!(".uninstall-{name}-{}", now_ms()));
        std::fs::rename(&dir, &doomed).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        std::fs::remove_dir_all(&doomed).map_err(|source| Error::Io {
            path: doomed,
            source,
        })?;
        self.reindex(name, None)?;
        Ok(Outcome {
            success: true,
            name: name.to_owned(),
            message: "Skill uninstalled successfully".into(),
            digest: None,
        })
    }

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
        let path = dir.join("SKILL.md");
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let updated = replace_description(&text, description).ok_or_else(|| {
            structure(format!(
                "Invalid skill structure: {name}/SKILL.md has no description in its frontmatter"
            ))
        })?;
        let staged = dir.join(".SKILL.md.tmp");
        std::fs::write(&staged, &updated).map_err(|source| Error::Io {
            path: staged.clone(),
            source,
        })?;
        std::fs::rename(&staged, &path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        write_marker(&dir, &digest(&dir)?)?;
        let doc = SkillDoc::parse(&updated).map_err(|p| structure(p.message))?;
        self.reindex(name, Some(&doc))?;
        Ok(Outcome {
            success: true,
            name: name.to_owned(),
            message: "Description updated".into(),
            digest: None,
        })
    }

    /// Installed skills sorted by name, filtered and paged.
    pub fn list_skills(&self, query: &ListQuery) -> Result<Listing> {
        let mut skills = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Listing { skills, total: 0 });
            }
            Err(source) => {
                return Err(Error::Io {
                    path: self.root.clone(),
                    source,
                });
            }
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !dir.is_dir() {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(dir.join("SKILL.md")) else {
                continue;
            };
            let Ok(doc) = SkillDoc::parse(&text) else {
                continue;
            };
            skills.push(ListedSkill {
                name,
                description: doc.raw.description.unwrap_or_default(),
                version: doc
                    .raw
                    .version
                    .unwrap_or_else(|| crate::skill::meta::DEFAULT_VERSION.to_owned()),
                tags: doc.raw.tags.unwrap_or_default(),
                installed_at: installed_at(&dir),
            });
        }
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        skills.retain(|s| {
            query.name.as_deref().is_none_or(|n| s.name.contains(n))
                && query.tags.iter().all(|t| s.tags.contains(t))
        });
        let total = skills.len();
        if let Some(limit) = query.limit.filter(|l| *l > 0) {
            let page = query.page.unwrap_or(1).max(1);
            skills = skills
                .into_iter()
                .skip((page - 1) * limit)
                .take(limit)
                .collect();
        }
        Ok(Listing { skills, total })
    }

    /// Counts of what is installed.
    pub fn statistics(&self) -> Result<Statistics> {
        use chrono::{Datelike, TimeZone};
        let listing = self.list_skills(&ListQuery::default())?;
        let mut by_tag = std::collections::BTreeMap::new();
        let mut per_day = std::collections::BTreeMap::<String, usize>::new();
        let mut per_week = std::collections::BTreeMap::<String, usize>::new();
        for skill in &listing.skills {
            for tag in &skill.tags {
                *by_tag.entry(tag.clone()).or_insert(0) += 1;
            }
            let millis = i64::try_from(skill.installed_at).unwrap_or(0);
            let Some(time) = chrono::Local.timestamp_millis_opt(millis).single() else {
                continue;
            };
            let day = time.date_naive();
            *per_day
                .entry(day.format("%Y-%m-%d").to_string())
                .or_insert(0) += 1;
            let monday = day - chrono::Days::new(u64::from(day.weekday().num_days_from_monday()));
            *per_week
                .entry(monday.format("%Y-%m-%d").to_string())
                .or_insert(0) += 1;
        }
        let counts = |map: std::collections::BTreeMap<String, usize>| {
            map.into_iter()
                .map(|(date, count)| DateCount { date, count })
                .collect()
        };
        Ok(Statistics {
            total: listing.total,
            by_tag,
            installs_per_day: counts(per_day),
            installs_per_week: counts(per_week),
        })
    }

    fn installed(&self, name: &str) -> Result<PathBuf> {
        let dir = self.root.join(name);
        if crate::skill::meta::is_valid_name(name) && dir.join("SKILL.md").is_file() {
            Ok(dir)
        } else {
            Err(Error::SkillNotFound {
                name: name.to_owned(),
            })
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn installed_at(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join(MARKER))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["installedAt"].as_u64())
        .unwrap_or(0)
}

fn write_marker(dir: &Path, digest: &str) -> Result<()> {
    let path = dir.join(MARKER);
    let previous = installed_at(dir);
    let now = now_ms();
    let marker = serde_json::json!({
        "installedAt": if previous > 0 { previous } else { now },
        "updatedAt": now,
        "digest": digest,
    });
    std::fs::write(&path, marker.to_string()).map_err(|source| Error::Io { path, source })
}

/// Checks what the seed requires, reporting every problem at once.
fn validate(dir: &Path, name: &str) -> Result<SkillDoc> {
    let md = dir.join("SKILL.md");
    let text = std::fs::read_to_string(&md)
        .map_err(|_| structure("Invalid skill structure: SKILL.md is missing"))?;
    let doc = SkillDoc::parse(&text)
        .map_err(|p| structure(format!("Invalid skill structure: SKILL.md: {}", p.message)))?;
    let mut problems = Vec::new();
    let missing: Vec<&str> = [
        ("name", doc.raw.name.is_none()),
        ("description", doc.raw.description.is_none()),
    ]
    .into_iter()
    .filter_map(|(field, absent)| absent.then_some(field))
    .collect();
    if !missing.is_empty() {
        problems.push(format!("Missing required fields: {}", missing.join(", ")));
    }
    if let Some(declared) = &doc.raw.name
        && declared != name
    {
        return Err(structure(format!(
            "Skill name mismatch: expected \"{name}\", got \"{declared}\""
        )));
    }
    if !crate::skill::meta::is_valid_name(name) {
        problems.push(format!("{name:?} is not a valid skill name (a lowercase letter, then lowercase letters, digits, - or _)"));
    }
    if dir.join("scripts").is_dir() && !dir.join("scripts/execute.js").is_file() {
        problems.push("scripts/ must contain execute.js".into());
    }
    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(structure(format!(
            "Invalid skill structure: {}",
            problems.join("; ")
        )))
    }
}

/// SHA-256 over the skill's files: relative paths and contents, in path order, so the
/// same skill zipped at another time gives the same digest.
fn digest(dir: &Path) -> Result<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        let entries = std::fs::read_dir(&current).map_err(|source| Error::Io {
            path: current.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name() == MARKER {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        let relative = file.strip_prefix(dir).unwrap_or(&file);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        let bytes = std::fs::read(&file).map_err(|source| Error::Io {
            path: file.clone(),
            source,
        })?;
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex::encode(hasher.finalize()))
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
