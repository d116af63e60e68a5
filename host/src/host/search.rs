//! Finding skills in the configured registries: their repository listings, read and
//! kept for a while, matched against a query's words.

use serde::Serialize;

use super::Host;
use super::oci::blocking;
use crate::error::Result;
use crate::oci::Reference;
use crate::oci::lock::Lock;

/// What a search of the configured registries found.
#[derive(Debug, Clone, Serialize)]
pub struct RegistrySearch {
    /// The matches, best first: each repository's newest artifact.
    pub hits: Vec<crate::oci::Listed>,
    /// The registries searched.
    pub registries: Vec<String>,
    /// What could not be searched, and why (a registry that offers no listing, or did
    /// not answer).
    pub notes: Vec<String>,
}

/// How long a registry's listing is reused before it is read again.
pub const LISTING_TTL: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// The listings read, by registry, with when: `registry-listings.json` in the data
/// directory.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
struct Listings {
    #[serde(default)]
    registries: std::collections::BTreeMap<String, Listing>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
struct Listing {
    at_ms: u64,
    /// `None`: the registry offers no listing.
    repositories: Option<Vec<crate::oci::Listed>>,
}

impl Host {
    /// The registries a search reads: those `[registries]` names (plain HTTP or with
    /// credentials) and those the lock file's skills came from.
    pub fn search_registries_list(&self) -> Vec<String> {
        let settings = &self.config().registries;
        let mut hosts: std::collections::BTreeSet<String> =
            settings.insecure.iter().cloned().collect();
        hosts.extend(settings.credentials.keys().cloned());
        if let Ok(lock) = Lock::read(&self.lock_path()) {
            hosts.extend(
                lock.skills()
                    .iter()
                    .filter_map(|l| Reference::parse(&l.reference).ok())
                    .map(|r| r.registry),
            );
        }
        hosts.into_iter().collect()
    }

    /// The repositories of the configured registries whose name, title, description
    /// or keywords hold `query`'s words, best first. Each registry's listing is reused
    /// for [`LISTING_TTL`] unless `fresh`; one that offers no listing, or does not
    /// answer, is a note, not a failure.
    pub async fn search_registries(&self, query: &str, fresh: bool) -> Result<RegistrySearch> {
        let registries = self.search_registries_list();
        let path = self.inner.data_dir.join("registry-listings.json");
        let mut cache: Listings = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let now = crate::unix_millis();
        let ttl = LISTING_TTL.as_millis() as u64;
        let mut notes = Vec::new();
        let mut read_now = false;
        for registry in &registries {
            let cached = cache
                .registries
                .get(registry)
                .filter(|l| !fresh && now.saturating_sub(l.at_ms) < ttl);
            if cached.is_some() {
                continue;
            }
            let session = self.registry_session()?;
            let host = registry.clone();
            match blocking(move || session.listing(&host)).await {
                Ok(repositories) => {
                    cache.registries.insert(
                        registry.clone(),
                        Listing {
                            at_ms: now,
                            repositories,
                        },
                    );
                    read_now = true;
                }
                Err(e) => notes.push(format!("{registry}: not searched: [{}] {e}", e.code())),
            }
        }
        if read_now {
            let bytes = serde_json::to_vec(&cache).unwrap_or_default();
            if let Err(e) = crate::paths::write_atomic(&path, &bytes) {
                tracing::warn!("the registry listings could not be kept: {e}");
            }
        }
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut scored = Vec::new();
        for registry in &registries {
            match cache.registries.get(registry).map(|l| &l.repositories) {
                Some(Some(listed)) => {
                    for item in listed {
                        let text = format!(
                            "{} {} {} {}",
                            item.reference,
                            item.title.as_deref().unwrap_or(""),
                            item.description.as_deref().unwrap_or(""),
                            item.keywords.join(" ")
                        )
                        .to_lowercase();
                        let score = words.iter().filter(|w| text.contains(w.as_str())).count();
                        if score > 0 || words.is_empty() {
                            scored.push((score, item.clone()));
                        }
                    }
                }
                Some(None) => notes.push(format!(
                    "{registry} offers no listing of its repositories (no /v2/_catalog): install from it by a reference you know"
                )),
                None => {}
            }
        }
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| a.1.reference.cmp(&b.1.reference))
        });
        Ok(RegistrySearch {
            hits: scored.into_iter().map(|(_, item)| item).collect(),
            registries,
            notes,
        })
    }
}
