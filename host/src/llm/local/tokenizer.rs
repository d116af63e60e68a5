//! The tokenizer a GGUF file describes (`tokenizer.ggml.*`), built with the `tokenizers`
//! crate from the vocabulary in the file, so the weights file is all a model needs:
//! a byte-level BPE with the file's merges (`gpt2`: SmolLM2, Llama 3, Qwen), or a
//! SentencePiece BPE whose merges come from the pieces' scores, with byte fallback
//! (`llama`: Llama 2, Mistral, Phi-3, Gemma).

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::{Prepend, Replace};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};

/// GGUF's token type for a control token (`<|im_start|>`, `<|endoftext|>`, …).
const CONTROL: i32 = 3;
/// GGUF's token type for a byte-fallback token (`<0x0A>`).
const BYTE: i32 = 6;
/// SentencePiece's mark for a space.
const SPACE: char = '\u{2581}';

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

/// The merges of a SentencePiece BPE, which its file does not list: every way to join
/// two pieces of the vocabulary into a third, the third's score first (SentencePiece
/// merges the pair whose result scores highest).
fn merges_by_score(
    tokens: &[String],
    scores: &[f32],
    vocab: &tokenizers::models::bpe::Vocab,
) -> Vec<(String, String)> {
    let mut merges: Vec<(f32, u32, u32, &str, &str)> = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
        let score = scores.get(id).copied().unwrap_or(0.0);
        for (at, _) in token.char_indices().skip(1) {
            let (left, right) = token.split_at(at);
            if let (Some(&l), Some(&r)) = (vocab.get(left), vocab.get(right)) {
                merges.push((score, l, r, left, right));
            }
        }
    }
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    merges
        .into_iter()
        .map(|(_, _, _, l, r)| (l.to_owned(), r.to_owned()))
        .collect()
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
    let tokens = strings(content, "tokenizer.ggml.tokens")?;
    let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
        Some(Value::Array(types)) => types.iter().map(|t| t.to_i32().unwrap_or(1)).collect(),
        _ => Vec::new(),
    };
    let vocab: tokenizers::models::bpe::Vocab = tokens
        .iter()
        .enumerate()
        .map(|(id, token)| (token.clone(), id as u32))
        .collect();
    let mut tokenizer = match model.as_str() {
        "gpt2" => {
            let merges = strings(content, "tokenizer.ggml.merges")?
                .into_iter()
                .map(|m| {
                    m.split_once(' ')
                        .map(|(a, b)| (a.to_owned(), b.to_owned()))
                        .ok_or_else(|| format!("a merge is not two tokens: {m:?}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
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
            tokenizer
        }
        "llama" => {
            let scores: Vec<f32> = match content.metadata.get("tokenizer.ggml.scores") {
                Some(Value::Array(scores)) => {
                    scores.iter().map(|s| s.to_f32().unwrap_or(0.0)).collect()
                }
                _ => return Err("tokenizer.ggml.scores is missing".into()),
            };
            let merges = merges_by_score(&tokens, &scores, &vocab);
            let mut builder = BPE::builder()
                .vocab_and_merges(vocab, merges)
                .byte_fallback(true);
            if tokens.iter().any(|t| t == "<unk>") {
                builder = builder.unk_token("<unk>".into()).fuse_unk(true);
            }
            let bpe = builder
                .build()
                .map_err(|e| format!("its SentencePiece tables do not load: {e}"))?;
            let mut tokenizer = Tokenizer::new(bpe);
            tokenizer
                .with_normalizer(Some(tokenizers::normalizers::Sequence::new(vec![
                    Prepend::new(SPACE.to_string()).into(),
                    Replace::new(" ", SPACE.to_string())
                        .map_err(|e| format!("its normaliser does not build: {e}"))?
                        .into(),
                ])))
                .map_err(|e| format!("its normaliser does not build: {e}"))?;
            tokenizer.with_decoder(Some(DecoderSequence::new(vec![
                tokenizers::decoders::DecoderWrapper::Replace(
                    Replace::new(SPACE.to_string(), " ")
                        .map_err(|e| format!("its decoder does not build: {e}"))?,
                ),
                ByteFallback::default().into(),
                Fuse::default().into(),
                Strip::new(' ', 1, 0).into(),
            ])));
            tokenizer
        }
        other => {
            return Err(format!(
                "its tokenizer is {other:?}; Evo reads byte-level BPE (\"gpt2\") and SentencePiece (\"llama\") tokenizers"
            ));
        }
    };
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
    let sentencepiece = model == "llama";
    let pieces = (0..tokens.len() as u32)
        .map(|id| match types.get(id as usize) {
            Some(&CONTROL) => String::new(),
            // A byte outside ASCII is part of a character, not text of its own.
            Some(&BYTE) => u8::from_str_radix(
                tokens[id as usize]
                    .trim_start_matches("<0x")
                    .trim_end_matches('>'),
                16,
            )
            .ok()
            .filter(u8::is_ascii)
            .map(|b| char::from(b).to_string())
            .unwrap_or_default(),
            // Decoding one piece alone would drop its leading space.
            _ if sentencepiece => tokens[id as usize].replace(SPACE, " "),
            _ => tokenizer.decode(&[id], false).unwrap_or_default(),
        })
        .collect();
    Ok(GgufTokenizer {
        tokenizer,
        eos,
        pieces,
    })
}
