//! The skill index (the seed's ToolRetrievalService): installed skills' names, tags and
//! descriptions in `evo.db`, searchable by keywords (FTS5) and meaning (embeddings),
//! fused as the memory kernel fuses them.

use std::sync::Arc;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::db::Db;
use crate::error::Result;
use crate::memory::embed::{Embedder, dot};
use crate::memory::store::{KEYWORD_WEIGHT, VECTOR_WEIGHT};

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
}

fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

impl SkillIndex {
    /// Opens the index in `db` with `embedder`.
    pub fn new(db: Db, embedder: Arc<dyn Embedder>) -> Self {
        Self { db, embedder }
    }

    /// Indexes (or re-indexes) skill `name`.
    pub fn index_skill(&mut self, name: &str, description: &str, tags: &[String]) -> Result<()> {
        let text = format!(
            "{} {} {}",
            name.replace(['-', '_'], " "),
            description,
            tags.join(" ")
        );
        let vector = self.embedder.embed(&[&text])?.pop().unwrap_or_default();
        let model = self.embedder.model();
        self.db.transaction(|tx| {
            tx.execute("DELETE FROM skill_index_fts WHERE name = ?1", [name])?;
            tx.execute("INSERT INTO skill_index_fts (name, text) VALUES (?1, ?2)", params![name, text])?;
            tx.execute(
                "INSERT INTO skill_index (name, text, model, embedding) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(name) DO UPDATE SET text = excluded.text, model = excluded.model, embedding = excluded.embedding",
                params![name, text, model, to_blob(&vector)],
            )?;
            Ok(())
        })
    }

    /// Removes skill `name` from the index.
    pub fn remove_skill(&mut self, name: &str) -> Result<()> {
        self.db.transaction(|tx| {
            tx.execute("DELETE FROM skill_index_fts WHERE name = ?1", [name])?;
            tx.execute("DELETE FROM skill_index WHERE name = ?1", [name])?;
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

    /// The `k` installed skills most relevant to `query`, best first.
    pub fn search_skills(&self, query: &str, k: usize) -> Result<Vec<SkillHit>> {
        let vector = self.embedder.embed(&[query])?.pop().unwrap_or_default();
        let terms: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{}\"", w.to_lowercase()))
            .collect();
        let keyword: Vec<(String, f32)> = if terms.is_empty() {
            Vec::new()
        } else {
            self.db.read(|c| {
                let mut q = c.prepare(
                    "SELECT name, -bm25(skill_index_fts) FROM skill_index_fts WHERE skill_index_fts MATCH ?1",
                )?;
                let rows = q.query_map([terms.join(" OR ")], |r| Ok((r.get(0)?, r.get::<_, f64>(1)? as f32)))?;
                rows.collect()
            })?
        };
        let best = keyword.iter().map(|(_, s)| *s).fold(0.0_f32, f32::max);
        let rows: Vec<(String, Vec<u8>)> = self.db.read(|c| {
            let mut q = c.prepare("SELECT name, embedding FROM skill_index")?;
            let rows = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })?;
        let mut hits: Vec<SkillHit> = rows
            .into_iter()
            .map(|(name, blob)| {
                let embedding = from_blob(&blob);
                let cosine = if embedding.len() == vector.len() {
                    dot(&embedding, &vector)
                } else {
                    0.0
                };
                let kw = keyword
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or(0.0, |(_, s)| if best > 0.0 { s / best } else { 0.0 });
                let score = (VECTOR_WEIGHT * cosine.max(0.0) + KEYWORD_WEIGHT * kw).clamp(0.0, 1.0);
                SkillHit { name, score }
            })
            .filter(|h| h.score > 0.0)
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(k);
        Ok(hits)
    }
}
