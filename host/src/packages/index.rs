//! The skill index: installed skills' names, tags, descriptions and requests in
//! `evo.db`, searchable by keywords (FTS5) and meaning (embeddings), fused as the memory
//! kernel fuses them ([`rank::fuse_weighted`]), with less weight on wording.
//!
//! A skill's meaning is several vectors: its name, description and tags as one text, and
//! each of its requests (what a user might say when they want it) on its own. A message
//! scores the cosine of the closest of them, so "how long would this take to read?"
//! finds a skill whose description says "estimates reading time" through a request
//! worded like it, and one sentence of a skill never dilutes another.

use std::sync::Arc;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::db::Db;
use crate::error::Result;
use crate::retrieval::embed::{Embedder, dot};
use crate::retrieval::rank;
use crate::retrieval::{from_blob, to_blob};
use crate::skill::manifest::SkillMeta;
use crate::skill::manifest::package::InstallRecord;

/// Weight of the keyword (bm25) score in a skill's rank; the rest is its closest cosine.
/// Lower than memory's ([`rank::KEYWORD_WEIGHT`]): a skill's requests are written to be
/// found by meaning, and a message shares few words with them. Fitted on the fitting half
/// of the routing bench's messages (`./scripts/bench routing`): 0.2 ranked the most first
/// picks right there with MiniLM (0.0, 0.1, 0.2 and 0.3 tried).
const KEYWORD_WEIGHT: f32 = 0.2;

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

/// Each indexed skill's name and embeddings, one after the other (see
/// [`Indexed::texts`]).
type Vectors = Arc<Vec<(String, Vec<f32>)>>;

/// What the index holds of a skill.
#[derive(Debug, Clone, Copy)]
pub struct Indexed<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its tags.
    pub tags: &'a [String],
    /// What a user might say when they want it.
    pub requests: &'a [String],
}

impl<'a> From<&'a SkillMeta> for Indexed<'a> {
    fn from(meta: &'a SkillMeta) -> Self {
        Self {
            name: &meta.name,
            description: &meta.description,
            tags: &meta.tags,
            requests: &meta.requests,
        }
    }
}

/// A registered skill's manifest ([`RegisteredSkill::meta`](crate::skills::RegisteredSkill::meta)).
impl<'a> From<&'a Arc<SkillMeta>> for Indexed<'a> {
    fn from(meta: &'a Arc<SkillMeta>) -> Self {
        Self::from(&**meta)
    }
}

impl<'a> From<&'a InstallRecord> for Indexed<'a> {
    fn from(record: &'a InstallRecord) -> Self {
        Self {
            name: &record.name,
            description: &record.description,
            tags: &record.tags,
            requests: &record.requests,
        }
    }
}

impl Indexed<'_> {
    /// The texts embedded, each a vector of its own: the name as words with the
    /// description and the tags, then each request.
    fn texts(&self) -> Vec<String> {
        let main = format!(
            "{} {} {}",
            self.name.replace(['-', '_'], " "),
            self.description,
            self.tags.join(" ")
        );
        std::iter::once(main)
            .chain(self.requests.iter().cloned())
            .collect()
    }
}

/// A skill as stored: its name, and its texts one per line (what keywords match, and
/// what tells [`SkillIndex::sync`] that it changed).
struct Stored {
    name: String,
    texts: Vec<String>,
}

impl From<Indexed<'_>> for Stored {
    fn from(skill: Indexed<'_>) -> Self {
        Self {
            name: skill.name.to_owned(),
            // A request is one line: a line break in one would split it in two.
            texts: skill
                .texts()
                .into_iter()
                .map(|t| t.replace(['\n', '\r'], " "))
                .collect(),
        }
    }
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

    /// Indexes (or re-indexes) `skill`.
    pub fn index_skill(&mut self, skill: Indexed<'_>) -> Result<()> {
        self.write(&[skill.into()])
    }

    /// Makes sure each of `skills` is indexed as it is now, embedding only those that
    /// are new, changed, or embedded with another model; the others are left as they
    /// are. Returns how many were (re-)indexed.
    pub fn sync<'a>(&mut self, skills: impl IntoIterator<Item = Indexed<'a>>) -> Result<usize> {
        let model = self.embedder.model();
        let current: std::collections::HashMap<String, (String, String)> = self.db.read(|c| {
            let mut q = c.prepare("SELECT name, text, model FROM skill_index")?;
            let rows = q.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
            rows.collect()
        })?;
        let stale: Vec<Stored> = skills
            .into_iter()
            .map(Stored::from)
            .filter(|skill| {
                current
                    .get(&skill.name)
                    .is_none_or(|(t, m)| *t != skill.texts.join("\n") || *m != model)
            })
            .collect();
        self.write(&stale)?;
        Ok(stale.len())
    }

    fn write(&mut self, skills: &[Stored]) -> Result<()> {
        if skills.is_empty() {
            return Ok(());
        }
        self.vectors = None;
        let texts: Vec<&str> = skills
            .iter()
            .flat_map(|s| s.texts.iter().map(String::as_str))
            .collect();
        let mut vectors = self.embedder.embed(&texts)?.into_iter();
        let model = self.embedder.model();
        let rows: Vec<(&str, String, Vec<f32>)> = skills
            .iter()
            .map(|s| {
                let vector = vectors.by_ref().take(s.texts.len()).flatten().collect();
                (s.name.as_str(), s.texts.join("\n"), vector)
            })
            .collect();
        self.db.transaction(|tx| {
            for (name, text, vector) in &rows {
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
            .map(|(name, embeddings)| {
                // The closest of the skill's vectors; none when they were made by an
                // embedder of another size.
                let cosine = if vector.is_empty() || embeddings.len() % vector.len() != 0 {
                    0.0
                } else {
                    embeddings
                        .chunks_exact(vector.len())
                        .map(|e| dot(e, &vector))
                        .fold(0.0_f32, f32::max)
                };
                (
                    rank::fuse_weighted(cosine, keyword.get(name).copied(), best, KEYWORD_WEIGHT),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::embed::HashEmbedder;

    #[test]
    fn a_message_worded_like_a_request_finds_its_skill() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = SkillIndex::new(Db::open(dir.path()).unwrap(), Arc::new(HashEmbedder));
        let requests = ["how long would this essay take me to get through?".to_owned()];
        let skills = [
            Indexed {
                name: "text-stats",
                description: "Counts words and sentences and estimates reading time.",
                tags: &[],
                requests: &requests,
            },
            Indexed {
                name: "timer",
                description: "Tells how long a task took, from its start and end.",
                tags: &[],
                requests: &[],
            },
        ];
        assert_eq!(index.sync(skills).unwrap(), 2);
        assert_eq!(index.sync(skills).unwrap(), 0, "nothing changed");
        let hits = index
            .search_skills("how long would my essay take to get through", 2)
            .unwrap();
        assert_eq!(hits[0].name, "text-stats", "{hits:?}");
        assert!(hits[0].score > hits[1].score + 0.2, "{hits:?}");

        // Without the request, its words find the other skill: the request was the way.
        let [stats, timer] = skills;
        let bare = Indexed {
            requests: &[],
            ..stats
        };
        assert_eq!(index.sync([bare, timer]).unwrap(), 1, "a request removed");
        let hits = index
            .search_skills("how long would my essay take to get through", 2)
            .unwrap();
        assert_eq!(hits[0].name, "timer", "{hits:?}");
    }
}
