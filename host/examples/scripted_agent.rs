//! Run the agent offline: a scripted provider stands in for the model, replaying a
//! tool call and an answer, while the skills, gates and memory are the real ones.
//!
//! ```sh
//! cargo run -p evo-host --example scripted_agent
//! ```
//!
//! With a real model, drop `.llm(…)` and set `EVO_LLM` (e.g. `ollama:llama3.2`) or
//! `[llm] model` in `evo.toml`.

use evo_host::Host;
use evo_host::llm::ScriptedProvider;
use evo_host::{EventSink, RunEvent};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedProvider::from_json(
        "example",
        r#"{ "responses": [
            { "tool_calls": [{ "name": "calculate", "arguments": { "expression": "sqrt(144) + 10" } }] },
            "The answer is 22."
        ] }"#,
    )?;
    let data = tempfile::tempdir()?;
    let host = Host::builder()
        .data_dir(data.path())
        .llm(model)
        .build()
        .await?;

    // No routing step: the message goes straight to the tool loop.
    let agent = host.agent(|options| options.intent_recognition = false)?;
    // The model's words are scripted; the skill's answer is the real `calculate`'s.
    let events = EventSink::new(|event| match event {
        RunEvent::SkillCall { skill, input, .. } => eprintln!("→ {skill} {input}"),
        RunEvent::SkillResult {
            skill,
            output: Some(output),
            ..
        } => eprintln!("← {skill} {output}"),
        _ => {}
    });
    let outcome = agent.run("what is sqrt(144) + 10?", events).await?;
    println!("{}", outcome.response);
    Ok(())
}
