//! The tokenizer a GGUF file describes (`tokenizer.ggml.*`): a byte-level BPE (the GPT-2
//! scheme Llama-family models such as SmolLM2 use) built with the `tokenizers` crate
//! from the vocabulary and merges in the file, so the weights file is all a model needs.

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};

/// GGUF's token type for a control token (`<|im_start|>`, `<|endoftext|>`, …).
const CONTROL: i32 = 3;

/// A model's tokenizer and the ids generation needs.
#[derive(Debug, Clone)]
pub struct GgufTokenizer {
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// The end-of-sequence token.
    pub eos: u32,
    /// Each token's text as the model writes it (control tokens empty), by id: what
    /// constrained decoding matches against.
    pub pieces: Vec<String>,
}

fn strings(content: &Content, key: &str) -> Result<Vec<String>, String> {
    let value = content
        .metadata
        .get(key)
        .ok_or_else(|| format!("{key} is missing"))?;
    value
        .to_vec()
        .map_err(|e| format!("{key}: {e}"))?
        .iter()
        .map(|v| v.to_string().cloned().map_err(|e| format!("{key}: {e}")))
        .collect()
}

fn number(content: &Content, key: &str) -> Option<u32> {
    content.metadata.get(key).and_then(|v| v.to_u32().ok())
}

/// Builds the tokenizer the GGUF `content` describes; the error says what the file
/// lacks.
pub fn from_gguf(content: &Content) -> Result<GgufTokenizer, String> {
    let model = content
        .metadata
        .get("tokenizer.ggml.model")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_default();
    if model != "gpt2" {
        return Err(format!(
            "its tokenizer is {model:?}; only byte-level BPE (\"gpt2\") tokenizers are read"
        ));
    }
    let tokens = strings(content, "tokenizer.ggml.tokens")?;
    let merges = strings(content, "tokenizer.ggml.merges")?
        .into_iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .ok_or_else(|| format!("a merge is not two tokens: {m:?}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
        Some(Value::Array(types)) => types.iter().map(|t| t.to_i32().unwrap_or(1)).collect(),
        _ => Vec::new(),
    };
    let vocab: tokenizers::models::bpe::Vocab = tokens
        .iter()
        .enumerate()
        .map(|(id, token)| (token.clone(), id as u32))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| format!("its BPE tables do not load: {e}"))?;
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(Sequence::new(vec![
        Digits::new(true).into(),
        ByteLevel::new(false, true, true).into(),
    ])));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
    let control: Vec<AddedToken> = tokens
        .iter()
        .zip(&types)
        .filter(|(_, kind)| **kind == CONTROL)
        .map(|(token, _)| AddedToken::from(token.clone(), true))
        .collect();
    tokenizer
        .add_special_tokens(control)
        .map_err(|e| format!("its control tokens do not load: {e}"))?;
    let eos = number(content, "tokenizer.ggml.eos_token_id")
        .ok_or("tokenizer.ggml.eos_token_id is missing")?;
    let pieces = (0..tokens.len() as u32)
        .map(|id| {
            if types.get(id as usize) == Some(&CONTROL) {
                String::new()
            } else {
                tokenizer.decode(&[id], false).unwrap_or_default()
            }
        })
        .collect();
    Ok(GgufTokenizer {
        tokenizer,
        eos,
        pieces,
    })
}
