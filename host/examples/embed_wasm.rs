//! Embed Evo and call a Wasm skill: the smallest useful host.
//!
//! ```sh
//! cargo run -p evo-host --example embed_wasm -- path/to/calculate.wasm '{"expression":"2 ^ 10"}'
//! ```
//!
//! The component runs sandboxed: a fresh instance per call, a deadline, a memory cap, an
//! output cap, and nothing granted (no files, network or environment).

use evo_host::Host;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(wasm), Some(input)) = (args.next(), args.next()) else {
        eprintln!("usage: embed_wasm <skill.wasm> <input JSON>");
        std::process::exit(2);
    };
    let input: serde_json::Value = serde_json::from_str(&input)?;

    // A data directory of its own: compile cache, statistics, memory.
    let data = tempfile::tempdir()?;
    let host = Host::builder().data_dir(data.path()).build().await?;

    // Loading reads the manifest from the component; the name is the skill's own. A
    // component registered under a built-in's name (`calculate`) takes its place.
    let name = host.resolve(&wasm).await?;
    let kind = host
        .skill(&name)
        .map_or("unknown", |skill| skill.kind().as_str());
    let output = host.call(&name, input).await?;
    println!("{name} ({kind}) → {output}");
    Ok(())
}
