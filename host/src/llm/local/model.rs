//! A quantised model from one GGUF file (Llama, Qwen2/3, Phi-3, Gemma), run in this
//! process with candle: the weights, the tokenizer
//! and the chat layout all come from the file. One generation at a time per
//! model (its attention cache is one conversation's); tokens are handed out as they are
//! made, and generation stops at the end token, the token budget, the context's end, a
//! deadline, or when whoever reads the tokens stops reading.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};

use super::arch::{self, Weights};
use super::damaged;
use super::template::ChatTemplate;
use super::tokenizer::{self, GgufTokenizer};
use crate::error::{Error, Result};
use crate::llm::constrain::{Grammar, Machine, Vocabulary};

/// Tokens looked back over for the repeat penalty: small models loop without one.
const REPEAT_WINDOW: usize = 64;
/// How much a token seen in the window is held back.
const REPEAT_PENALTY: f32 = 1.1;
/// Texts the repeat penalty leaves alone: the digits. Numbers are written one digit per
/// token, so penalising a repeated digit turned a copied "22" into "23". (JSON's
/// punctuation stays penalised: exempt, the router's constrained answers ran on in
/// repeated array items until their token budget.)
const NEVER_PENALISED: &[&str] = &["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

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
    /// A JSON Schema the text must match: only tokens that keep it a prefix of such JSON
    /// are sampled, and it ends when the JSON does.
    pub schema: Option<serde_json::Value>,
    /// Text that ends the answer where it first appears (left out of it).
    pub stop: Vec<String>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            max_tokens: 512,
            temperature: 0.0,
            deadline: None,
            seed: 299_792_458,
            schema: None,
            stop: Vec::new(),
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
    /// Tokens of [`NEVER_PENALISED`].
    unpenalised: Vec<u32>,
    /// The vocabulary as a trie, built on the first constrained generation.
    vocabulary: std::sync::OnceLock<Vocabulary>,
    /// How a conversation is laid out for this model.
    template: ChatTemplate,
    weights: Mutex<Weights>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.path)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads the model file at `path` after checking it has not changed since it was
    /// installed (see [`super::verify`]): how the agent, `evo model show` and `evo
    /// doctor` load a model.
    pub fn open(path: &Path) -> Result<Self> {
        super::verify::verify(path)?;
        Self::load(path)
    }

    /// Loads the GGUF file at `path` as it is; the error says what is wrong with it.
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
        let Some(family) = arch::family(&architecture) else {
            return Err(damaged(
                path,
                format!(
                    "its architecture is {architecture:?}; Evo runs {}",
                    arch::SUPPORTED
                ),
            ));
        };
        // The file's name: GGUF's `general.name` is often a training run's label.
        let name = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let context = meta(&format!("{architecture}.context_length"))
            .and_then(|v| v.to_u32().ok())
            .unwrap_or(2048) as usize;
        let tokenizer = tokenizer::from_gguf(&content).map_err(|e| damaged(path, e))?;
        let template = ChatTemplate::from_gguf(&content, &tokenizer);
        let stops = END_OF_TURN
            .iter()
            .filter_map(|t| tokenizer.tokenizer.token_to_id(t))
            .collect();
        let unpenalised = NEVER_PENALISED
            .iter()
            .filter_map(|t| tokenizer.tokenizer.token_to_id(t))
            .collect();
        let weights = super::convert::weights_of(path, family, content, &mut file)
            .map_err(|e| damaged(path, format!("its weights do not load ({e})")))?;
        Ok(Self {
            path: path.to_owned(),
            name,
            bytes,
            context,
            tokenizer,
            stops,
            unpenalised,
            vocabulary: std::sync::OnceLock::new(),
            template,
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

    /// `messages` laid out as this model was trained to read a conversation (the
    /// file's chat template, or ChatML without one), ending where the assistant's
    /// answer begins.
    pub fn chat_prompt(&self, messages: &[crate::llm::Message]) -> String {
        self.template.render(messages)
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
        weights.clear();
        let mut logits = weights.forward(&prompt_ids, 0).map_err(fail)?;
        let prompt_time = started.elapsed();
        let mut generated: Vec<u32> = Vec::new();
        let mut text = String::new();
        let mut machine = options.schema.as_ref().map(|s| Grammar::new(s).start());
        let stop = loop {
            let recent: Vec<u32> = generated[generated.len().saturating_sub(REPEAT_WINDOW)..]
                .iter()
                .copied()
                .filter(|t| !self.unpenalised.contains(t))
                .collect();
            let penalised =
                candle_transformers::utils::apply_repeat_penalty(&logits, REPEAT_PENALTY, &recent)
                    .map_err(fail)?;
            let next = match &mut machine {
                None => sampler.sample(&penalised).map_err(fail)?,
                Some(machine) => self.constrained(&mut sampler, &penalised, machine)?,
            };
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
            if so_far.len() > text.len()
                && so_far.starts_with(&text)
                && !so_far.ends_with('\u{fffd}')
            {
                let (so_far, ended) = match super::stop::first_stop(&so_far, &options.stop) {
                    Some(at) => (so_far[..at].to_owned(), true),
                    None => (so_far, false),
                };
                let piece = so_far.get(text.len()..).unwrap_or_default().to_owned();
                text = so_far;
                if !piece.is_empty() && !on_text(&piece) {
                    break Stop::Cancelled;
                }
                if ended {
                    break Stop::End;
                }
            }
            if machine.as_ref().is_some_and(Machine::closed) {
                // The JSON is whole and nothing may follow it.
                break Stop::End;
            }
            if generated.len() >= budget {
                break Stop::Length;
            }
            if options.deadline.is_some_and(|d| Instant::now() >= d) {
                break Stop::Deadline;
            }
            logits = weights
                .forward(&[next], prompt_ids.len() + generated.len() - 1)
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

/// Tokens that end a turn besides the end-of-sequence one, across the families'
/// chat layouts (ChatML, Llama 3, Phi-3, Gemma).
const END_OF_TURN: &[&str] = &[
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end|>",
    "<end_of_turn>",
];

impl LocalModel {
    /// The next token under `machine`: the sampler's choice when it fits (the usual
    /// case), else a choice among the tokens that do; the end only once the JSON is
    /// whole. Feeds the chosen token's text to `machine`.
    fn constrained(
        &self,
        sampler: &mut LogitsProcessor,
        logits: &Tensor,
        machine: &mut Machine,
    ) -> Result<u32> {
        let fail = |e: candle_core::Error| damaged(&self.path, format!("generation failed: {e}"));
        let pieces = &self.tokenizer.pieces;
        let is_end = |id: u32| id == self.tokenizer.eos || self.stops.contains(&id);
        let fits = |id: u32, machine: &mut Machine| {
            if is_end(id) {
                return machine.complete();
            }
            pieces
                .get(id as usize)
                .is_some_and(|p| !p.is_empty() && machine.feed_str(p))
        };
        let first = sampler.sample(logits).map_err(fail)?;
        if fits(first, machine) {
            return Ok(first);
        }
        let vocabulary = self.vocabulary.get_or_init(|| Vocabulary::new(pieces));
        let mut allowed = vocabulary.allowed(machine);
        if machine.complete() {
            allowed.push(self.tokenizer.eos);
        }
        if allowed.is_empty() {
            return Err(damaged(
                &self.path,
                "no token of its vocabulary can continue the JSON (a schema it cannot write)",
            ));
        }
        let mut masked = vec![f32::NEG_INFINITY; pieces.len().max(logits.dim(0).map_err(fail)?)];
        let values = logits.to_vec1::<f32>().map_err(fail)?;
        for id in allowed {
            if let Some(v) = values.get(id as usize) {
                masked[id as usize] = *v;
            }
        }
        let masked = Tensor::new(masked.as_slice(), &Device::Cpu).map_err(fail)?;
        let next = sampler.sample(&masked).map_err(fail)?;
        if !fits(next, machine) {
            return Err(damaged(
                &self.path,
                "the constrained sampler chose a token outside the grammar",
            ));
        }
        Ok(next)
    }
}

/// How fast a model runs here, and whether what it makes is language.
#[derive(Debug, Clone, Copy)]
pub struct Speed {
    /// Prompt tokens read per second.
    pub prompt_per_second: f64,
    /// Tokens generated per second.
    pub generated_per_second: f64,
    /// The model's perplexity on a plain English sentence (see
    /// [`LocalModel::perplexity`]).
    pub perplexity: f64,
}

/// A sentence any language model has read the like of many times.
const PLAIN_TEXT: &str = "The cat sat on the mat. It was a sunny day, and the children played in the park until it was time for dinner.";

/// The share of its vocabulary's size above which a model's perplexity on
/// [`PLAIN_TEXT`] means noise. Weights of random numbers are about as unsure as a
/// uniform guess (a perplexity near the vocabulary's size, 49,152 for SmolLM2); a
/// working model, even of 135M parameters, is below 50 on such text; a tenth of the
/// vocabulary lies far from both.
const NOISE_SHARE: f64 = 0.1;

impl LocalModel {
    /// How surprised the model is by `text`: e to the mean negative log-likelihood of
    /// each of its tokens after the ones before. Low for language the model knows;
    /// near the vocabulary's size for weights of noise.
    pub fn perplexity(&self, text: &str) -> Result<f64> {
        let ids = self.encode(text)?;
        let fail = |e: candle_core::Error| damaged(&self.path, format!("reading failed: {e}"));
        let mut weights = self
            .weights
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        weights.clear();
        let mut total = 0.0;
        for (at, pair) in ids.windows(2).enumerate() {
            let logits: Vec<f32> = weights
                .forward(&pair[..1], at)
                .and_then(|l| l.to_vec1())
                .map_err(fail)?;
            let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
            let chosen = logits
                .get(pair[1] as usize)
                .copied()
                .unwrap_or(f32::NEG_INFINITY);
            total += sum.ln() - f64::from(chosen - max);
        }
        let tokens = ids.len().saturating_sub(1).max(1);
        Ok((total / tokens as f64).exp())
    }

    /// Whether `perplexity` (on plain text) means the model makes noise: not a number,
    /// or above a tenth of its vocabulary's size.
    pub fn is_noise(&self, perplexity: f64) -> bool {
        !perplexity.is_finite() || perplexity > NOISE_SHARE * self.tokenizer.pieces.len() as f64
    }
}

/// Measures `model` on a short fixed prompt and 32 generated tokens, and its
/// perplexity on plain text (`evo model show`, `evo doctor`).
pub fn measure(model: &LocalModel) -> Result<Speed> {
    // A prompt of a few hundred tokens, as an agent's are, so the figure is the
    // model's reading speed rather than its start-up.
    let facts = "Mercury is closest to the Sun. Venus is the hottest planet. Earth has liquid water. Mars is red. Jupiter is the largest. Saturn has bright rings. Uranus rotates on its side. Neptune has the strongest winds. ";
    use crate::llm::{Message, Role};
    // In the model's own chat layout, as long as its context leaves room for the answer.
    let prompt_of = |repeats: usize| {
        model.chat_prompt(&[
            Message::text(Role::System, facts.repeat(repeats)),
            Message::text(Role::User, "Which planet is the largest?"),
        ])
    };
    let fits = |prompt: &String| {
        model
            .encode(prompt)
            .is_ok_and(|ids| ids.len() + 64 < model.context)
    };
    let prompt = (1..=6)
        .rev()
        .map(prompt_of)
        .find(fits)
        .unwrap_or_else(|| prompt_of(1));
    let prompt = prompt.as_str();
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
        perplexity: model.perplexity(PLAIN_TEXT)?,
    })
}
