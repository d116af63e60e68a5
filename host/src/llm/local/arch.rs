//! The model families a GGUF file may hold, as candle's quantized models run them: one
//! forward pass and one cache reset, whatever the family.

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::{
    quantized_gemma3, quantized_llama, quantized_phi3, quantized_qwen2, quantized_qwen3,
};

/// The `general.architecture` values Evo runs, for messages.
pub const SUPPORTED: &str =
    "llama (Llama 2 and 3, SmolLM, Mistral), qwen2, qwen3, phi3 and gemma (1 to 3)";

/// A loaded model of one of the families.
pub(super) enum Weights {
    Llama(quantized_llama::ModelWeights),
    Qwen2(quantized_qwen2::ModelWeights),
    Qwen3(quantized_qwen3::ModelWeights),
    Phi3(quantized_phi3::ModelWeights),
    Gemma(quantized_gemma3::ModelWeights),
}

/// The family of `architecture`, if Evo runs it.
pub(super) fn family(architecture: &str) -> Option<&'static str> {
    match architecture {
        "llama" | "mistral" => Some("llama"),
        "qwen2" => Some("qwen2"),
        "qwen3" => Some("qwen3"),
        "phi3" => Some("phi3"),
        "gemma" | "gemma2" | "gemma3" => Some("gemma"),
        _ => None,
    }
}

impl Weights {
    /// Reads the weights of a model of `family` (see [`family`]) from `content`.
    pub(super) fn read<R: std::io::Read + std::io::Seek>(
        family: &str,
        content: gguf_file::Content,
        reader: &mut R,
    ) -> candle_core::Result<Self> {
        let cpu = &Device::Cpu;
        Ok(match family {
            "qwen2" => Self::Qwen2(quantized_qwen2::ModelWeights::from_gguf(
                content, reader, cpu,
            )?),
            "qwen3" => Self::Qwen3(quantized_qwen3::ModelWeights::from_gguf(
                content, reader, cpu,
            )?),
            "phi3" => Self::Phi3(quantized_phi3::ModelWeights::from_gguf(
                false, content, reader, cpu,
            )?),
            "gemma" => Self::Gemma(quantized_gemma3::ModelWeights::from_gguf(
                content, reader, cpu,
            )?),
            _ => Self::Llama(quantized_llama::ModelWeights::from_gguf(
                content, reader, cpu,
            )?),
        })
    }

    /// Forgets the conversation so far. (Phi-3 and Gemma forget it at the next pass
    /// from position 0, which every generation starts with.)
    pub(super) fn clear(&mut self) {
        match self {
            Self::Llama(w) => w.clear_kv_cache(),
            Self::Qwen2(w) => w.clear_kv_cache(),
            Self::Qwen3(w) => w.clear_kv_cache(),
            Self::Phi3(_) | Self::Gemma(_) => {}
        }
    }

    /// The logits of the next token after `ids`, which follow `at` tokens already read.
    pub(super) fn forward(&mut self, ids: &[u32], at: usize) -> candle_core::Result<Tensor> {
        let input = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
        let logits = match self {
            Self::Llama(w) => w.forward(&input, at)?,
            Self::Qwen2(w) => w.forward(&input, at)?,
            Self::Qwen3(w) => w.forward(&input, at)?,
            Self::Phi3(w) => w.forward(&input, at)?,
            Self::Gemma(w) => w.forward(&input, at)?,
        };
        logits.squeeze(0)
    }
}
