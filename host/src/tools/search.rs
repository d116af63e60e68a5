//! `search` (alias `Search`): one project-wide search that ranks files whose *name*
//! matches beside files whose *content* matches, for "where is X?" questions.
//!
//! Each word of the query is matched case-insensitively against the file's path and
//! content (ripgrep's walk and searcher: `.gitignore` respected, binary files skipped).
//! A file scores for every word its name holds (most for the file name itself, less for
//! a directory), and for each content line that holds a word (up to
//! [`MAX_LINE_SCORE`] lines per file, so one huge file cannot drown the rest); the best
//! come first with their first matching lines.

use std::path::PathBuf;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{BoxFuture, TypedTool, contained, invalid};
use crate::error::Result;
use crate::skill::kernel::SkillContext;

/// Results unless `limit` says otherwise.
pub const DEFAULT_LIMIT: u64 = 20;
/// Content lines that count towards a file's score.
pub const MAX_LINE_SCORE: u64 = 10;
/// Matching lines shown per file.
const SHOWN_LINES: usize = 3;
/// A query word in the file name is worth this many matching lines.
const NAME_SCORE: u64 = 20;
/// A query word in a directory name.
const DIR_SCORE: u64 = 5;

/// Searches one project directory.
#[derive(Debug, Clone)]
pub struct Search {
    root: PathBuf,
}

/// `search`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// words to look for, e.g. `tool registry`
    #[schemars(length(min = 1))]
    pub query: String,
    /// only under this directory
    #[serde(default)]
    pub path: Option<String>,
    /// the most files to return
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u64,
}

fn default_limit() -> u64 {
    DEFAULT_LIMIT
}

/// `search`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// the files, best first
    pub results: Vec<Hit>,
    /// how many files matched
    pub total: usize,
    /// whether more matched than `limit`
    pub truncated: bool,
}

/// One file `search` found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    /// the file, relative to the project directory
    pub path: String,
    /// its score: matching lines, and more for a word in its name
    pub score: u64,
    /// whether a word is in its name or a directory's
    pub name_match: bool,
    /// its first matching lines
    pub lines: Vec<Line>,
}

/// A matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Line {
    /// its number (1-based)
    pub line: u64,
    /// its text
    pub text: String,
}

impl Search {
    /// `search` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Runs the search `input` describes.
    pub fn search(&self, input: &SearchInput) -> Result<SearchOutput> {
        let query = input.query.as_str();
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return Err(invalid("search", "the query is empty; give a word or two"));
        }
        let limit = usize::try_from(input.limit).unwrap_or(usize::MAX);
        let root = contained("search", &self.root, "".as_ref())?;
        let base = match &input.path {
            Some(path) => contained("search", &self.root, path.as_ref())?,
            None => root.clone(),
        };
        let pattern = words
            .iter()
            .map(|w| regex_syntax_escape(w))
            .collect::<Vec<_>>()
            .join("|");
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(true)
            .build(&pattern)
            .map_err(|e| invalid("search", &e.to_string()))?;
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let mut hits = Vec::new();
        let walk = super::walk(&base).build();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let relative = path
                .strip_prefix(&root)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned();
            let lower = relative.to_lowercase();
            let (dirs, name) = lower.rsplit_once('/').unwrap_or(("", &lower));
            let mut score = 0;
            let mut name_match = false;
            for word in &words {
                if name.contains(word.as_str()) {
                    score += NAME_SCORE;
                    name_match = true;
                } else if dirs.contains(word.as_str()) {
                    score += DIR_SCORE;
                    name_match = true;
                }
            }
            let mut lines = Vec::new();
            let mut matched = 0_u64;
            // An unreadable file scores by its name only.
            let _ = searcher.search_path(
                &matcher,
                path,
                UTF8(|number, text| {
                    matched += 1;
                    if lines.len() < SHOWN_LINES {
                        lines.push(Line {
                            line: number,
                            text: text.trim_end().to_owned(),
                        });
                    }
                    Ok(matched < MAX_LINE_SCORE)
                }),
            );
            score += matched;
            if score > 0 {
                hits.push((score, relative, name_match, lines));
            }
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = hits.len();
        let results = hits
            .into_iter()
            .take(limit)
            .map(|(score, path, name_match, lines)| Hit {
                path,
                score,
                name_match,
                lines,
            })
            .collect();
        Ok(SearchOutput {
            results,
            total,
            truncated: total > limit,
        })
    }
}

/// `word` as a regex matching it literally.
fn regex_syntax_escape(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl TypedTool for Search {
    const NAME: &'static str = "search";
    type Input = SearchInput;
    type Output = SearchOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Searches the whole project for a word or two, in file names and contents at once, best matches first. Use it to find where something lives; use grep for exact patterns.",
            "category": "file",
            "tags": ["file", "search", "readonly"],
            "requests": [
                "which module takes care of user sign-in?",
                "where is the configuration loaded?",
                "which part of the project deals with payments?",
                "look around the codebase for anything about caching",
                "where is the database pool set up?",
                "is there something in the repo about retries?"
            ],
            "permission": "read_only",
            "timeout": 30_000,
            "examples": [
                { "description": "Where the configuration is read", "input": { "query": "config" } },
                { "description": "Two words, either may match", "input": { "query": "tool registry", "limit": 5 } },
                { "description": "Only under one directory", "input": { "query": "main", "path": "src" } }
            ],
            "notes": [
                "A word in a file's name counts as much as 20 matching lines; at most 10 lines per file count, so one large file cannot push out the rest.",
                "Respects .gitignore and skips hidden and binary files, as ripgrep does.",
                "Paths are resolved inside the project directory."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Search"]
    }

    fn run(&self, input: SearchInput, _ctx: SkillContext) -> BoxFuture<'_, Result<SearchOutput>> {
        Box::pin(std::future::ready(self.search(&input)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_and_contents_rank_together() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (file, text) in [
            ("src/config.rs", "pub struct Settings;\n"),
            (
                "src/main.rs",
                "fn main() { let config = load(); }\n// config again\n",
            ),
            ("README.md", "nothing here\n"),
            ("target/config.rs", "ignored\n"),
        ] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), text).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let out = Search::new(root)
            .search(&serde_json::from_value(json!({ "query": "Config" })).unwrap())
            .unwrap();
        let out = serde_json::to_value(out).unwrap();
        let results = out["results"].as_array().unwrap();
        assert_eq!(out["total"], 2);
        assert_eq!(results[0]["path"], "src/config.rs");
        assert_eq!(results[0]["name_match"], true);
        assert_eq!(results[1]["path"], "src/main.rs");
        assert_eq!(results[1]["score"], 2);
        assert_eq!(results[1]["lines"][0]["line"], 1);
    }
}
