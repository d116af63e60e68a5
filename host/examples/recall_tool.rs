//! An application's own tool that reads the host's memory, embedded with the crate's
//! namespaces only: `evo_host::memory` for what the application stores, `evo_host::skills`
//! for what a skill is and what the tool is given, and a [`TypedTool`] of its own.
//!
//! ```sh
//! cargo run -p evo-host --example recall_tool
//! ```

use evo_host::memory::Category;
use evo_host::skills::{ExecutorKind, MemoryHit};
use evo_host::tools::BoxFuture;
use evo_host::{Host, SkillContext, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Answers a question from what the memory holds about the user.
#[derive(Debug)]
struct Recall;

/// The question.
#[derive(Deserialize, JsonSchema)]
struct Question {
    /// what to look up, in the user's words
    question: String,
}

/// The best-matching fact, if any.
#[derive(Serialize, JsonSchema)]
struct Answer {
    /// the fact, or null when the memory holds nothing close
    fact: Option<String>,
    /// how close it is, 0 to 1
    score: f32,
}

impl TypedTool for Recall {
    const NAME: &'static str = "recall";
    type Input = Question;
    type Output = Answer;

    fn describe(&self) -> Value {
        json!({ "description": "Answers a question from what the memory holds about the user." })
    }

    fn run(&self, input: Question, ctx: SkillContext) -> BoxFuture<'_, evo_host::Result<Answer>> {
        Box::pin(async move {
            // The host hands its memory to the tools it runs (the `skills::Memory` trait).
            let Some(memory) = ctx.memory() else {
                return Ok(Answer {
                    fact: None,
                    score: 0.0,
                });
            };
            let hits: Vec<MemoryHit> = memory.search(input.question, 1).await?;
            Ok(match hits.into_iter().next() {
                Some(hit) => Answer {
                    fact: Some(hit.text),
                    score: hit.score,
                },
                None => Answer {
                    fact: None,
                    score: 0.0,
                },
            })
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = tempfile::tempdir()?;
    let host = Host::builder()
        .data_dir(data.path())
        .tool(Recall)
        .build()
        .await?;

    // What the application knows about its user goes into the host's memory.
    host.memory().store(
        "The user's favourite editor is Helix",
        Some(Category::Preference),
    )?;
    host.memory()
        .store("The user lives in Porto", Some(Category::Fact))?;

    // The tool is a skill like the built-in ones.
    let tool = host.skill("recall").ok_or("the tool is registered")?;
    assert_eq!(tool.executor.kind(), ExecutorKind::Builtin);
    println!("{} — {}", tool.meta.name, tool.meta.description);

    let out = host
        .call(
            "recall",
            json!({ "question": "which editor does the user like" }),
        )
        .await?;
    println!("{out}");
    // Its input is checked against the schema generated from `Question`.
    let err = host
        .call("recall", json!({ "question": 7 }))
        .await
        .unwrap_err();
    println!("{}", err.code());
    Ok(())
}
