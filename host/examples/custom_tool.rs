//! Register a Rust function as an in-process tool: it is a skill like any other, with
//! its input checked against its schema before it runs. The schemas are generated from
//! the input and output types (`serde` and `schemars` derives), so they cannot drift
//! from what the function reads and returns.
//!
//! ```sh
//! cargo run -p evo-host --example custom_tool
//! ```

use evo_host::{Host, SkillContext, TypedTool, tools::BoxFuture};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Counts the words of a text.
#[derive(Debug)]
struct WordCount;

/// The input: its schema (`text`, a string, required) is generated from this type.
#[derive(Deserialize, JsonSchema)]
struct Text {
    /// the text whose words to count
    text: String,
}

/// The output.
#[derive(Serialize, JsonSchema)]
struct Count {
    /// how many words the text has
    words: usize,
}

impl TypedTool for WordCount {
    const NAME: &'static str = "word_count";
    type Input = Text;
    type Output = Count;

    fn describe(&self) -> Value {
        json!({ "description": "Counts the words of a text." })
    }

    fn run(&self, input: Text, _ctx: SkillContext) -> BoxFuture<'_, evo_host::Result<Count>> {
        let words = input.text.split_whitespace().count();
        Box::pin(async move { Ok(Count { words }) })
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
