//! The skill index: installed skills' names, tags and
//! descriptions in `evo.db`, searchable by keywords (FTS5) and meaning (embeddings),
//! fused as the memory kernel fuses them ([`rank::fuse`]).

use std::sync::Arc;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::db::Db;
use crate::error::Result;
use crate::retrieval::embed::{Embedder, dot};
use crate::retrieval::rank;
use crate::retrieval::{from_blob, to_blob};

/// A skill found for a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillHit {
    /// The skill.
    pub name: String,
    /// Relevance in [0, 1].
    pub score: f32,
}

/// The index of one data directory.
#[derive(Debug)]
pub struct SkillIndex {
    db: Db,
    embedder: Arc<dyn Embedder>,
    /// The decoded embeddings and the `data_version` they were read at (it changes when
    /// another connection commits; this one's own writes clear the cache).
    vectors: Option<(i64, Vectors)>,
}

/// Each indexed skill's name and embedding.
type Vectors = Arc<Vec<(String, Vec<f32>)>>;

/// What is indexed of a skill: its name as words, its description, its tags.
fn indexed_text(name: &str, description: &str, tags: &[String]) -> String {
    format!(
        "{} {} {}",
        name.replace(['-', '_'], " "),
        description,
        tags.join(" ")
    )
}

impl SkillIndex {
    internal! {
        /// Opens the index in `db` with `embedder`.
        pub fn new(db: Db, embedder: Arc<dyn Embedder>) -> Self {
            Self {
                db,
                embedder,
                vectors: None,
            }
        }
    }

    /// Indexes (or re-indexes) skill `name`.
    pub fn index_skill(&mut self, name: &str, description: &str, tags: &[String]) -> Result<()> {
        self.write(&[(name.to_owned(), indexed_text(name, description, tags))])
    }

    /// Makes sure each of `skills` (name, description, tags) is indexed as it is now,
    /// embedding only those that are new, changed, or embedded with another model; the
    /// others are left as they are. Returns how many were (re-)indexed.
    pub fn sync<'a>(
        &mut self,
        skills: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>,
    ) -> Result<usize> {
        let model = self.embedder.model();
        let current: std::collections::HashMap<String, (String, String)> = self.db.read(|c| {
            let mut q = c.prepare("SELECT name, text, model FROM skill_index")?;
            let rows = q.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
            rows.collect()
        })?;
        let stale: Vec<(String, String)> = skills
            .into_iter()
            .map(|(name, description, tags)| {
                (name.to_owned(), indexed_text(name, description, tags))
            })
            .filter(|(name, text)| {
                current
                    .get(name)
                    .is_none_or(|(t, m)| t != text || *m != model)
            })
            .collect();
        self.write(&stale)?;
        Ok(stale.len())
    }

    fn write(&mut self, skills: &[(String, String)]) -> Result<()> {
        if skills.is_empty() {
            return Ok(());
        }
        self.vectors = None;
        let texts: Vec<&str> = skills.iter().map(|(_, text)| text.as_str()).collect();
        let vectors = self.embedder.embed(&texts)?;
        let model = self.embedder.model();
        self.db.transaction(|tx| {
            for ((name, text), vector) in skills.iter().zip(&vectors) {
                tx.execute("DELETE FROM skill_index_fts WHERE name = ?1", [name])?;
                tx.execute("INSERT INTO skill_index_fts (name, text) VALUES (?1, ?2)", params![name, text])?;
                tx.execute(
                    "INSERT INTO skill_index (name, text, model, embedding) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT(name) DO UPDATE SET text = excluded.text, model = excluded.model, embedding = excluded.embedding",
                    params![name, text, model, to_blob(vector)],
                )?;
            }
            Ok(())
        })
    }

    /// Removes skill `name` from the index.
    pub fn remove_skill(&mut self, name: &str) -> Result<()> {
        self.vectors = None;
        self.db.transaction(|tx| {
            tx.execute("DELETE FROM skill_index_fts WHERE name = ?1", [name])?;
            tx.execute("DELETE FROM skill_index WHERE name = ?1", [name])?;
            Ok(())
        })
    }

    /// Removes what the package `name` put in the index: its skill, or a plain
    /// component's functions (`name__…`).
    pub fn remove_package(&mut self, name: &str) -> Result<()> {
        self.vectors = None;
        let prefix = format!("{name}{}", crate::skill::manifest::COMPONENT_SEPARATOR);
        self.db.transaction(|tx| {
            for table in ["skill_index_fts", "skill_index"] {
                tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE name = ?1 OR substr(name, 1, length(?2)) = ?2"
                    ),
                    params![name, prefix],
                )?;
            }
            Ok(())
        })
    }

    /// Whether skill `name` is indexed.
    pub fn contains(&self, name: &str) -> Result<bool> {
        self.db.read(|c| {
            c.query_row("SELECT 1 FROM skill_index WHERE name = ?1", [name], |_| {
                Ok(())
            })
            .optional()
            .map(|r| r.is_some())
        })
    }

    /// Every skill's embedding, decoded once and read again only after another process
    /// changed the index.
    fn vectors(&mut self) -> Result<Vectors> {
        let version: i64 = self.db.read(|c| {
            c.prepare_cached("PRAGMA data_version")?
                .query_row([], |r| r.get(0))
        })?;
        if let Some((cached, vectors)) = &self.vectors
            && *cached == version
        {
            return Ok(vectors.clone());
        }
        let rows: Vec<(String, Vec<u8>)> = self.db.read(|c| {
            let mut q = c.prepare("SELECT name, embedding FROM skill_index")?;
            let rows = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })?;
        let vectors = Arc::new(
            rows.into_iter()
                .map(|(name, blob)| (name, from_blob(&blob)))
                .collect(),
        );
        self.vectors = Some((version, Arc::clone(&vectors)));
        Ok(vectors)
    }

    /// The `k` installed skills most relevant to `query`, best first.
    pub fn search_skills(&mut self, query: &str, k: usize) -> Result<Vec<SkillHit>> {
        self.search_skills_where(query, k, |_| true)
    }

    /// The `k` skills most relevant to `query` among those `keep` accepts, best first.
    pub fn search_skills_where(
        &mut self,
        query: &str,
        k: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<SkillHit>> {
        let vector = self.embedder.embed(&[query])?.pop().unwrap_or_default();
        let terms = rank::query_terms(query);
        let keyword: Vec<(String, f32)> = if terms.is_empty() {
            Vec::new()
        } else {
            self.db.read(|c| {
                let mut q = c.prepare_cached(
                    "SELECT name, -bm25(skill_index_fts) FROM skill_index_fts WHERE skill_index_fts MATCH ?1",
                )?;
                let rows = q.query_map([rank::fts_any(&terms)], |r| Ok((r.get(0)?, r.get::<_, f64>(1)? as f32)))?;
                rows.collect()
            })?
        };
        let best = keyword.iter().map(|(_, s)| *s).fold(0.0_f32, f32::max);
        let keyword: std::collections::HashMap<String, f32> = keyword.into_iter().collect();
        let vectors = self.vectors()?;
        let scored = vectors
            .iter()
            .filter(|(name, _)| keep(name))
            .map(|(name, embedding)| {
                let cosine = if embedding.len() == vector.len() {
                    dot(embedding, &vector)
                } else {
                    0.0
                };
                (
                    rank::fuse(cosine, keyword.get(name).copied(), best),
                    name.as_str(),
                )
            });
        Ok(rank::top(scored, k)
            .into_iter()
            .map(|(score, name)| SkillHit {
                name: name.to_owned(),
                score,
            })
            .collect())
    }
}
