//! Register a Rust function as an in-process tool: it is a skill like any other, with
//! its input checked against its schema before it runs.
//!
//! ```sh
//! cargo run -p evo-host --example custom_tool
//! ```

use evo_host::Host;
use evo_host::SkillContext;
use evo_host::{BoxFuture, Tool};
use serde_json::{Value, json};

/// Counts the words of a text.
#[derive(Debug)]
struct WordCount;

impl Tool for WordCount {
    fn manifest(&self) -> Value {
        json!({
            "name": "word_count",
            "description": "Counts the words of a text.",
            "input": {
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            },
            "output": {
                "type": "object",
                "properties": { "words": { "type": "integer" } },
                "required": ["words"]
            }
        })
    }

    fn call(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, evo_host::Result<Value>> {
        Box::pin(async move {
            let words = input["text"]
                .as_str()
                .unwrap_or_default()
                .split_whitespace()
                .count();
            Ok(json!({ "words": words }))
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = tempfile::tempdir()?;
    let host = Host::builder()
        .data_dir(data.path())
        .tool(WordCount)
        .build()
        .await?;

    let out = host
        .call(
            "word_count",
            json!({ "text": "the host is the agent's operating system" }),
        )
        .await?;
    println!("word_count → {out}");

    // Bad input never reaches the function: the kernel's gate answers with a report a
    // model (or a person) can act on.
    let err = host
        .call("word_count", json!({ "text": 42 }))
        .await
        .unwrap_err();
    println!("word_count with a number → error[{}]", err.code());
    Ok(())
}
