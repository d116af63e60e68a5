//! `evo memory …`: search, store, forget, the daily log, and what memory holds.

use clap::Subcommand;
use evo_host::memory::Category;
use serde_json::json;

use super::{Failure, Globals, out};

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Search memory (keywords and meaning together); best matches first.
    Search {
        /// What to look for, in plain words.
        query: String,
        /// How many results.
        #[arg(long, short = 'n', default_value_t = 5)]
        limit: usize,
    },
    /// Remember something. A near-duplicate of an existing entry is not stored again.
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
    /// Show MEMORY.md and how memory is set up (embedder, vector search, entry count).
    Show,
}

pub(crate) async fn run(command: MemoryCommand, globals: &Globals) -> Result<(), Failure> {
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
        MemoryCommand::Search { query, limit } => {
            let hits = memory.search(&query, limit)?;
            print(json!({ "results": hits, "count": hits.len() }), &|| {
                if hits.is_empty() {
                    out!("nothing found");
                }
                for hit in &hits {
                    out!(
                        "{:.2}  {}  [{}] {}",
                        hit.score,
                        hit.id,
                        hit.category.as_str(),
                        hit.text
                    );
                }
            });
        }
        MemoryCommand::Store { text, category } => {
            let category = Category::parse_checked(&category)?;
            let outcome = memory.store(&text, Some(category))?;
            print(json!(outcome), &|| {
                let verb = if outcome.stored {
                    "stored"
                } else {
                    "not stored"
                };
                out!("{verb}: {}", outcome.reason);
            });
        }
        MemoryCommand::Forget { query } => {
            let outcome = memory.forget(&query)?;
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
                        crate::cli::write_stdout(format_args!("{log}"));
                    }
                });
            }
        },
        MemoryCommand::Show => {
            let status = memory.status()?;
            let long_term = memory.load_long_term()?;
            print(json!({ "status": status, "longTerm": long_term }), &|| {
                out!("database:      {}", status.database.display());
                out!(
                    "embedder:      {} ({} dimensions)",
                    status.embedder,
                    status.dimension
                );
                out!("vector search: {}", status.vector_search);
                out!("entries:       {}", status.entries);
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
