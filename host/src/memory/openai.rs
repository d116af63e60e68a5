//! An embedder for any OpenAI-compatible `/v1/embeddings` endpoint: OpenAI, Ollama,
//! llama.cpp's server, vLLM, and hosted APIs that speak the same wire format.
//!
//! Configured from the environment by [`OpenAiEmbedder::from_env`]:
//!
//! - `EVO_EMBED_MODEL`: the model (e.g. `nomic-embed-text`, `text-embedding-3-small`);
//!   unset means the built-in offline embedder;
//! - `EVO_EMBED_BASE_URL`: the API base, else `OPENAI_BASE_URL`, else
//!   `https://api.openai.com/v1` (Ollama: `http://localhost:11434/v1`);
//! - `EVO_EMBED_API_KEY`, else `OPENAI_API_KEY` (not needed by local servers).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::error::{Error, Result};
use crate::retrieval::embed::{Embedder, normalize};

/// Default API base.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Longest wait for one embeddings request; a local model on a CPU can take seconds for
/// a batch, a hung server should not hang the agent.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Texts sent per request (OpenAI accepts up to 2048; smaller batches keep a slow local
/// server's requests under the timeout).
pub const BATCH: usize = 64;

/// Embeds texts with a remote (or local) model over HTTP.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    agent: ureq::Agent,
    url: String,
    model: String,
    api_key: Option<String>,
    dim: usize,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: usize,
}

impl OpenAiEmbedder {
    /// An embedder for `model` at `base_url`; asks the server once to learn the
    /// dimension, so a wrong URL, model or key is reported here, not at the first search.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Result<Self> {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut embedder = Self {
            agent,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            model: model.to_owned(),
            api_key,
            dim: 0,
        };
        let probe = embedder.request(&["dimension probe"])?;
        embedder.dim = probe.first().map_or(0, Vec::len);
        if embedder.dim == 0 {
            return Err(embedding_error(
                &embedder.url,
                "the server returned an empty vector",
                false,
            ));
        }
        Ok(embedder)
    }

    /// The embedder the environment configures, or `None` when `EVO_EMBED_MODEL` is unset.
    pub fn from_env() -> Result<Option<Self>> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let Some(model) = var("EVO_EMBED_MODEL") else {
            return Ok(None);
        };
        let base = var("EVO_EMBED_BASE_URL")
            .or_else(|| var("OPENAI_BASE_URL"))
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let key = var("EVO_EMBED_API_KEY").or_else(|| var("OPENAI_API_KEY"));
        Self::new(&base, &model, key).map(Some)
    }

    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let headers: Vec<(&str, String)> = self
            .api_key
            .iter()
            .map(|key| ("Authorization", format!("Bearer {key}")))
            .collect();
        let hints = crate::http::Hints {
            auth: "set EVO_EMBED_API_KEY or OPENAI_API_KEY",
            not_found: "check EVO_EMBED_MODEL and EVO_EMBED_BASE_URL (it should end in /v1)",
        };
        let body = json!({ "model": self.model, "input": texts });
        let mut response = crate::http::post_json(&self.agent, &self.url, &headers, &body, hints)
            .map_err(|failure| Error::Embedding {
            transient: failure.is_transient(),
            message: failure.message,
        })?;
        let parsed: Response = response.body_mut().read_json().map_err(|e| {
            embedding_error(
                &self.url,
                &format!("the answer is not an embeddings response: {e}"),
                false,
            )
        })?;
        if parsed.data.len() != texts.len() {
            return Err(embedding_error(
                &self.url,
                &format!(
                    "asked for {} vectors, got {}",
                    texts.len(),
                    parsed.data.len()
                ),
                false,
            ));
        }
        let mut data = parsed.data;
        data.sort_by_key(|d| d.index);
        Ok(data
            .into_iter()
            .map(|d| {
                let mut v = d.embedding;
                normalize(&mut v);
                v
            })
            .collect())
    }
}

fn embedding_error(url: &str, message: &str, transient: bool) -> Error {
    Error::Embedding {
        message: format!("{url}: {message}"),
        transient,
    }
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> String {
        format!("openai:{}:{}", self.model, self.dim)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let batch_vectors = self.request(batch)?;
            if let Some(bad) = batch_vectors.iter().find(|v| v.len() != self.dim) {
                return Err(embedding_error(
                    &self.url,
                    &format!(
                        "the model's dimension changed from {} to {}",
                        self.dim,
                        bad.len()
                    ),
                    false,
                ));
            }
            vectors.extend(batch_vectors);
        }
        Ok(vectors)
    }
}
