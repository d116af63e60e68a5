//! Listing what is installed: one record per skill, filtered and paged, and install
//! statistics by tag, day and week.

use super::*;

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
    /// How it runs (empty for a skill copied in by hand).
    pub kind: String,
    /// When it was installed, ms since the Unix epoch.
    pub installed_at: u64,
    /// The registry it was installed from (reference, manifest digest, signer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::skill::manifest::package::RegistrySource>,
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

impl SkillManager {
    /// The record of installed skill `name` in `dir`; for a skill copied in by hand or
    /// installed by an older version, what its SKILL.md says.
    pub(super) fn record(&self, dir: &Path, name: &str) -> InstallRecord {
        InstallRecord::read(dir).unwrap_or_else(|| legacy_record(dir, name, Holds::UNKNOWN))
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
            if name.starts_with('.') || query.name.as_deref().is_some_and(|n| !name.contains(n)) {
                continue;
            }
            if let Some(record) = installed_record(
                &dir,
                &name,
                InstallRecord::read(&dir),
                false,
                Holds::UNKNOWN,
            ) {
                skills.push(ListedSkill::of(name, record));
            }
        }
        Ok(Listing::of(skills, query))
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
}

/// Which of the files that describe a skill without an install record a directory
/// holds (as a listing of it found), so that none is looked for in vain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Holds {
    /// Its SKILL.md.
    pub(crate) skill_md: bool,
    /// An older version's install record ([`MARKER`]), with dates and a digest.
    pub(crate) marker: bool,
}

impl Holds {
    /// Not known: each file is tried.
    pub(crate) const UNKNOWN: Self = Self {
        skill_md: true,
        marker: true,
    };
}

/// The record of the installed directory `dir` (named `name`), given what its install
/// record file held: that record says it is a skill; without one, its files must
/// (unless `loaded_skills` says it loaded as one already), and what those it `holds`
/// say stands in for it. `None`: not a skill.
pub(crate) fn installed_record(
    dir: &Path,
    name: &str,
    record: Option<InstallRecord>,
    loaded_skills: bool,
    holds: Holds,
) -> Option<InstallRecord> {
    match record {
        Some(record) => Some(record),
        None if loaded_skills || is_skill_dir(dir) => Some(legacy_record(dir, name, holds)),
        None => None,
    }
}

impl ListedSkill {
    /// Skill `name` as its install record describes it.
    pub(crate) fn of(name: String, record: InstallRecord) -> Self {
        Self {
            name,
            description: record.description,
            version: record.version,
            tags: record.tags,
            kind: record.kind,
            installed_at: record.installed_at,
            source: record.source,
        }
    }
}

impl Listing {
    /// The page `query` asks for of `skills`, those it filters out left out, sorted by
    /// name; the total counts every match.
    pub(crate) fn of(mut skills: Vec<ListedSkill>, query: &ListQuery) -> Self {
        skills.retain(|s| {
            query.name.as_deref().is_none_or(|n| s.name.contains(n))
                && query.tags.iter().all(|t| s.tags.contains(t))
        });
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        let total = skills.len();
        if let Some(limit) = query.limit.filter(|l| *l > 0) {
            let page = query.page.unwrap_or(1).max(1);
            skills = skills
                .into_iter()
                .skip((page - 1) * limit)
                .take(limit)
                .collect();
        }
        Self { skills, total }
    }
}

/// What SKILL.md (and an older marker's dates and digest) say of a skill copied in by
/// hand or installed by an older version, which has no install record.
fn legacy_record(dir: &Path, name: &str, holds: Holds) -> InstallRecord {
    let read = |held: bool, file: &str| {
        held.then(|| std::fs::read_to_string(dir.join(file)).ok())
            .flatten()
    };
    let doc = read(holds.skill_md, SKILL_MD).and_then(|text| SkillDoc::parse(&text).ok());
    let old: serde_json::Value = read(holds.marker, MARKER)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let raw = doc.map(|d| d.raw).unwrap_or_default();
    InstallRecord {
        name: name.to_owned(),
        description: raw.description.unwrap_or_default(),
        version: raw.version.unwrap_or_else(|| DEFAULT_VERSION.to_owned()),
        tags: raw.tags.unwrap_or_default(),
        requests: raw.requests.unwrap_or_default(),
        installed_at: old["installedAt"].as_u64().unwrap_or(0),
        updated_at: old["updatedAt"].as_u64().unwrap_or(0),
        digest: old["digest"].as_str().unwrap_or_default().to_owned(),
        ..InstallRecord::default()
    }
}
