//! A quantised Llama-family model from one GGUF file, run in this process with candle:
//! the weights and the tokenizer both come from the file. One generation at a time per
//! model (its attention cache is one conversation's); tokens are handed out as they are
//! made, and generation stops at the end token, the token budget, the context's end, a
//! deadline, or when whoever reads the tokens stops reading.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::quantized_llama::ModelWeights;

use super::tokenizer::{self, GgufTokenizer};
use crate::error::{Error, Result};

/// Tokens looked back over for the repeat penalty: small models loop without one.
const REPEAT_WINDOW: usize = 64;
/// How much a token seen in the window is held back.
const REPEAT_PENALTY: f32 = 1.1;

/// How to generate.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// The most tokens to generate.
    pub max_tokens: usize,
    /// Sampling temperature; 0 always takes the likeliest token (the same answer every
    /// time).
    pub temperature: f64,
    /// When to stop whatever has been generated.
    pub deadline: Option<Instant>,
    /// The seed of the sampler (with a temperature above 0).
    pub seed: u64,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            max_tokens: 512,
            temperature: 0.0,
            deadline: None,
            seed: 299_792_458,
        }
    }
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The model ended its answer.
    End,
    /// The token budget was spent.
    Length,
    /// The reader stopped reading.
    Cancelled,
    /// The deadline passed.
    Deadline,
}

/// What one generation made.
#[derive(Debug, Clone)]
pub struct Generation {
    /// The text.
    pub text: String,
    /// Tokens of the prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub tokens: usize,
    /// Why it stopped.
    pub stop: Stop,
    /// Time to read the prompt.
    pub prompt_time: Duration,
    /// Time to generate the tokens after it.
    pub generation_time: Duration,
}

/// A loaded model.
pub struct LocalModel {
    path: PathBuf,
    name: String,
    bytes: u64,
    context: usize,
    tokenizer: GgufTokenizer,
    /// Tokens that end an answer besides the end-of-sequence one (`<|im_end|>`).
    stops: Vec<u32>,
    weights: Mutex<ModelWeights>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.path)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn damaged(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::LocalModel {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

impl LocalModel {
    /// Loads the GGUF file at `path`; the error says what is wrong with it.
    pub fn load(path: &Path) -> Result<Self> {
        let mut file = std::fs::File::open(path).map_err(|e| damaged(path, e))?;
        let bytes = file.metadata().map_err(|e| damaged(path, e))?.len();
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| damaged(path, format!("it is not a readable GGUF file ({e})")))?;
        let meta = |key: &str| content.metadata.get(key);
        let architecture = meta("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if architecture != "llama" {
            return Err(damaged(
                path,
                format!(
                    "its architecture is {architecture:?}; only Llama-family models are run"
                ),
            ));
        }
        // The file's name: GGUF's `general.name` is often a training run's label.
        let name = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let context = meta("llama.context_length")
            .and_then(|v| v.to_u32().ok())
            .unwrap_or(2048) as usize;
        let tokenizer = tokenizer::from_gguf(&content).map_err(|e| damaged(path, e))?;
        let stops = ["<|im_end|>", "<|endoftext|>", "<|eot_id|>"]
            .iter()
            .filter_map(|t| tokenizer.tokenizer.token_to_id(t))
            .collect();
        let weights = ModelWeights::from_gguf(content, &mut file, &Device::Cpu)
            .map_err(|e| damaged(path, format!("its weights do not load ({e})")))?;
        Ok(Self {
            path: path.to_owned(),
            name,
            bytes,
            context,
            tokenizer,
            stops,
            weights: Mutex::new(weights),
        })
    }

    /// The model's name (its file's, without `.gguf`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The most tokens a prompt and its answer may have together.
    pub fn context(&self) -> usize {
        self.context
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tokenizer
    }

    /// The ids of `text` (special tokens such as `<|im_start|>` read as themselves).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer
            .tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| damaged(&self.path, format!("its tokenizer failed: {e}")))
    }

    /// Generates after `prompt`, handing each new piece of text to `on_text`, which
    /// returns `false` to stop. Blocks: run it on a thread of its own.
    pub fn generate(
        &self,
        prompt: &str,
        options: &GenerateOptions,
        mut on_text: impl FnMut(&str) -> bool,
    ) -> Result<Generation> {
        let started = Instant::now();
        let prompt_ids = self.encode(prompt)?;
        if prompt_ids.len() >= self.context {
            return Err(Error::InvalidInput {
                skill: "llm".into(),
                reason: format!(
                    "the prompt is {} tokens; {} reads at most {} with its answer",
                    prompt_ids.len(),
                    self.name,
                    self.context
                ),
            });
        }
        let budget = options.max_tokens.min(self.context - prompt_ids.len());
        let sampling = if options.temperature <= 0.0 {
            Sampling::ArgMax
        } else {
            Sampling::TopP {
                p: 0.9,
                temperature: options.temperature,
            }
        };
        let mut sampler = LogitsProcessor::from_sampling(options.seed, sampling);
        let fail = |e: candle_core::Error| damaged(&self.path, format!("generation failed: {e}"));
        let mut weights = self
            .weights
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        weights.clear_kv_cache();
        let input = Tensor::new(prompt_ids.as_slice(), &Device::Cpu)
            .and_then(|t| t.unsqueeze(0))
            .map_err(fail)?;
        let mut logits = weights
            .forward(&input, 0)
            .and_then(|l| l.squeeze(0))
            .map_err(fail)?;
        let prompt_time = started.elapsed();
        let mut generated: Vec<u32> = Vec::new();
        let mut text = String::new();
        let stop = loop {
            let recent = &generated[generated.len().saturating_sub(REPEAT_WINDOW)..];
            let penalised =
                candle_transformers::utils::apply_repeat_penalty(&logits, REPEAT_PENALTY, recent)
                    .map_err(fail)?;
            let next = sampler.sample(&penalised).map_err(fail)?;
            if next == self.tokenizer.eos || self.stops.contains(&next) {
                break Stop::End;
            }
            generated.push(next);
            // Decoded whole each time: a character may take several tokens.
            let so_far = self
                .tokenizer
                .tokenizer
                .decode(&generated, true)
                .unwrap_or_default();
            if so_far.len() > text.len() && so_far.starts_with(&text) && !so_far.ends_with('\u{fffd}') {
                let piece = so_far[text.len()..].to_owned();
                text = so_far;
                if !on_text(&piece) {
                    break Stop::Cancelled;
                }
            }
            if generated.len() >= budget {
                break Stop::Length;
            }
            if options.deadline.is_some_and(|d| Instant::now() >= d) {
                break Stop::Deadline;
            }
            let input = Tensor::new(&[next], &Device::Cpu)
                .and_then(|t| t.unsqueeze(0))
                .map_err(fail)?;
            logits = weights
                .forward(&input, prompt_ids.len() + generated.len() - 1)
                .and_then(|l| l.squeeze(0))
                .map_err(fail)?;
        };
        Ok(Generation {
            text,
            prompt_tokens: prompt_ids.len(),
            tokens: generated.len(),
            stop,
            prompt_time,
            generation_time: started.elapsed() - prompt_time,
        })
    }
}

/// How fast a model runs here.
#[derive(Debug, Clone, Copy)]
pub struct Speed {
    /// Prompt tokens read per second.
    pub prompt_per_second: f64,
    /// Tokens generated per second.
    pub generated_per_second: f64,
}

/// Measures `model` on a short fixed prompt and 32 generated tokens (`evo model show`,
/// `evo doctor`).
pub fn measure(model: &LocalModel) -> Result<Speed> {
    let prompt = "<|im_start|>user\nList the planets of the solar system, one per line, with one fact about each.<|im_end|>\n<|im_start|>assistant\n";
    let made = model.generate(
        prompt,
        &GenerateOptions {
            max_tokens: 32,
            ..GenerateOptions::default()
        },
        |_| true,
    )?;
    let per_second = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
    Ok(Speed {
        prompt_per_second: per_second(made.prompt_tokens, made.prompt_time),
        generated_per_second: per_second(made.tokens, made.generation_time),
    })
}
