//! `evo skill list`, `search` and `stats`.

use evo_host::packages::ListQuery;
use serde_json::json;

use crate::args::{self, Grants, Sources};
use crate::{Failure, Globals, internal, out};

/// Which skills `evo skill list` shows.
pub(super) struct Filter {
    pub(super) name: Option<String>,
    pub(super) tags: Vec<String>,
    pub(super) page: usize,
    pub(super) limit: Option<usize>,
}

pub(super) async fn list(
    globals: &Globals,
    filter: &Filter,
    sources: &Sources,
) -> Result<(), Failure> {
    let host = args::host(globals, sources, &Grants::default()).await?;
    let installed: std::collections::HashMap<String, evo_host::packages::ListedSkill> = host
        .list_installed(&ListQuery::default())?
        .skills
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    // A plain component's functions (`PACKAGE__FUNCTION`) were installed with it.
    let package = |name: &str| {
        installed.get(name).or_else(|| {
            name.split_once(evo_host::wasm::COMPONENT_SEPARATOR)
                .and_then(|(package, _)| installed.get(package))
        })
    };
    let mut skills = host.skills();
    skills.retain(|s| {
        filter
            .name
            .as_deref()
            .is_none_or(|n| s.meta.name.contains(n))
            && filter.tags.iter().all(|t| s.meta.tags.contains(t))
    });
    let total = skills.len();
    if let Some(limit) = filter.limit.filter(|l| *l > 0) {
        skills = skills
            .into_iter()
            .skip((filter.page.max(1) - 1) * limit)
            .take(limit)
            .collect();
    }
    if globals.json {
        let items: Vec<_> = skills
            .iter()
            .map(|s| {
                let installed = package(&s.meta.name);
                let mut item = json!({
                    "name": s.meta.name,
                    "kind": s.kind(),
                    "category": s.meta.category,
                    "version": s.meta.version,
                    "description": s.meta.description,
                    "tags": s.meta.tags,
                    "installedAt": installed.map(|i| i.installed_at),
                });
                if let Some(source) = installed.and_then(|i| i.source.as_ref()) {
                    item["source"] = json!(source);
                }
                item
            })
            .collect();
        out!(
            "{}",
            json!({ "skills": items, "total": total, "errors": host.load_errors() })
        );
        exit_without_freeing(host);
        return Ok(());
    }
    if total == 0 {
        out!("{}", nothing_matches(filter));
        exit_without_freeing(host);
        return Ok(());
    }
    let width = skills.iter().map(|s| s.meta.name.len()).max().unwrap_or(0);
    for skill in &skills {
        out!(
            "{:width$}  {:9}  {}",
            skill.meta.name,
            skill.kind().as_str(),
            first_sentence(&skill.meta.description)
        );
    }
    if skills.len() < total {
        out!(
            "({} of {total}; --page and --limit show others)",
            skills.len()
        );
    }
    exit_without_freeing(host);
    Ok(())
}

/// What `evo skill list` says when no skill passes `filter`, rather than nothing.
fn nothing_matches(filter: &Filter) -> String {
    let mut asked: Vec<String> = filter
        .name
        .iter()
        .map(|n| format!("a name containing {n:?}"))
        .collect();
    asked.extend(filter.tags.iter().map(|t| format!("the tag {t:?}")));
    if asked.is_empty() {
        "no skills are loaded; `evo skill install SOURCE` installs one".to_owned()
    } else {
        format!(
            "no skill has {}; `evo skill list` shows them all, `evo skill stats` their tags",
            asked.join(" and ")
        )
    }
}

/// Leaves `host` to the end of the process instead of dropping it. This command ran
/// nothing (no call, no tool, no child process): what the host holds is memory, the
/// database's connections and the engine's threads, which the process's exit releases
/// at once, where dropping a catalogue of a thousand skills frees each one's
/// description piece by piece first. SQLite keeps a connection that was not closed
/// safe: its next open reads the write-ahead log.
fn exit_without_freeing(host: evo_host::Host) {
    std::mem::forget(host);
}

pub(super) async fn search(globals: &Globals, query: &str, limit: usize) -> Result<(), Failure> {
    let hits = args::bare_host(globals)
        .await?
        .manager()?
        .search_skills(query, limit)?;
    if globals.json {
        out!("{}", json!({ "results": hits }));
    } else if hits.is_empty() {
        out!("no installed skill matches");
    } else {
        for hit in &hits {
            out!("{:.2}  {}", hit.score, hit.name);
        }
    }
    Ok(())
}

pub(super) async fn search_registries(
    globals: &Globals,
    query: &str,
    limit: usize,
    refresh: bool,
) -> Result<(), Failure> {
    let host = args::bare_host(globals).await?;
    let mut found = host.search_registries(query, refresh).await?;
    found.hits.truncate(limit);
    for note in &found.notes {
        eprintln!("note: {note}");
    }
    if globals.json {
        out!("{}", serde_json::to_value(&found).map_err(internal)?);
        return Ok(());
    }
    if found.registries.is_empty() {
        return Err(Failure::usage(
            "NO_REGISTRIES",
            "no registry to search: evo.toml names none, and no installed skill came from one"
                .into(),
            Some(
                "list a registry under [registries] insecure (plain HTTP) or [registries.credentials.\"HOST\"], or install one skill from it by reference",
            ),
        ));
    }
    if found.hits.is_empty() {
        out!("nothing in {} matches", found.registries.join(", "));
    }
    for hit in &found.hits {
        let title = hit
            .title
            .as_deref()
            .map(|t| format!("  {t}"))
            .unwrap_or_default();
        out!("{}{title}", hit.reference);
        if let Some(description) = &hit.description {
            out!("    {description}");
        }
    }
    Ok(())
}

pub(super) async fn stats(
    globals: &Globals,
    skill: Option<&str>,
    installs: bool,
) -> Result<(), Failure> {
    if installs {
        return install_stats(globals);
    }
    let host = args::bare_host(globals).await?;
    let mut stats = host.skill_stats()?;
    if let Some(name) = skill {
        stats.retain(|k, _| k == name);
        if stats.is_empty() {
            return Err(Failure::usage(
                "SKILL_NOT_FOUND",
                format!(
                    "no calls of {name} are recorded in {}",
                    host.storage().describe()
                ),
                Some("statistics are recorded by `evo skill run` and agent runs"),
            ));
        }
    }
    if globals.json {
        out!("{}", serde_json::to_value(&stats).map_err(internal)?);
    } else if stats.is_empty() {
        out!("no calls recorded yet");
    } else {
        let width = stats.keys().map(String::len).max().unwrap_or(5).max(5);
        out!(
            "{:width$}  {:>7}  {:>8}  {:>9}  {:>9}",
            "skill",
            "calls",
            "success",
            "avg ms",
            "max ms"
        );
        for (name, s) in &stats {
            out!(
                "{name:width$}  {:>7}  {:>7.1}%  {:>9.2}  {:>9.2}",
                s.call_count,
                s.success_rate * 100.0,
                s.average_duration,
                s.max_duration
            );
        }
    }
    Ok(())
}

fn install_stats(globals: &Globals) -> Result<(), Failure> {
    let stats = evo_host::packages::SkillManager::new(&globals.data_dir).statistics()?;
    if globals.json {
        out!("{}", serde_json::to_value(&stats).map_err(internal)?);
        return Ok(());
    }
    out!(
        "{} skill{} installed",
        stats.total,
        if stats.total == 1 { "" } else { "s" }
    );
    for (tag, count) in &stats.by_tag {
        out!("  tag {tag}: {count}");
    }
    for day in &stats.installs_per_day {
        out!("  {}: {} installed", day.date, day.count);
    }
    Ok(())
}

/// The first sentence of `text`, on one line.
pub(crate) fn first_sentence(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // A sentence ends at ". " before a capital letter, not at "e.g. ".
    let end = line
        .match_indices(". ")
        .map(|(i, _)| i)
        .find(|&i| line[i + 2..].chars().next().is_some_and(char::is_uppercase));
    match end {
        Some(end) => line[..=end].to_owned(),
        None => line,
    }
}
