//! In-process tools: Rust code a host runs without a sandbox process or a Wasm instance.
//!
//! A [`Tool`] is a manifest (the `skill.json` shape: name, description, input and output
//! JSON Schema) and an async function. Registered in a host (with
//! [`HostBuilder::tool`](crate::HostBuilder::tool)) it is a skill like any other: the
//! agent, `evo skill run` and every other front end see it, and its calls go through the
//! kernel's gates (input validation, timeout, output validation, statistics, events).
//!
//! ```
//! use evo_host::tools::{BoxFuture, Tool};
//! use evo_host::skill::kernel::SkillContext;
//! use serde_json::{Value, json};
//!
//! #[derive(Debug)]
//! struct Shout;
//!
//! impl Tool for Shout {
//!     fn manifest(&self) -> Value {
//!         json!({
//!             "name": "shout",
//!             "description": "Upper-cases a text.",
//!             "input": { "type": "object", "properties": { "text": { "type": "string" } },
//!                        "required": ["text"] },
//!             "output": { "type": "object", "properties": { "text": { "type": "string" } } }
//!         })
//!     }
//!
//!     fn call(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, evo_host::Result<Value>> {
//!         Box::pin(async move {
//!             let text = input["text"].as_str().unwrap_or_default().to_uppercase();
//!             Ok(json!({ "text": text }))
//!         })
//!     }
//! }
//! ```

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result};
pub use crate::skill::context::BoxFuture;
use crate::skill::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::kernel::SkillContext;
use crate::skill::meta::SkillMeta;
use crate::skill::registry::{RegisteredSkill, SkillRegistry};

/// A skill written in Rust and run in-process.
pub trait Tool: Send + Sync + fmt::Debug + 'static {
    /// The manifest, in the `skill.json` shape. It is validated when the tool is
    /// registered; a bad one is [`Error::InvalidManifest`].
    fn manifest(&self) -> Value;

    /// Other names the tool answers to (the seeds' `Read`, `file-read`, …).
    fn aliases(&self) -> &[&'static str] {
        &[]
    }

    /// Runs the tool on `input`, which has passed the input schema (defaults applied).
    /// `ctx` is the tool's own frame: what it `call`s runs on its behalf.
    fn call(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<Value>>;
}

/// Registers `tool` (and its aliases) in `registry`, replacing a skill of the same name.
pub fn register(registry: &SkillRegistry, tool: Arc<dyn Tool>) -> Result<()> {
    let manifest = tool.manifest();
    let meta =
        SkillMeta::from_json(&manifest.to_string()).map_err(|problems| Error::InvalidManifest {
            skill: manifest["name"].as_str().unwrap_or("tool").to_owned(),
            problems,
        })?;
    let name = meta.name.clone();
    let aliases = tool.aliases();
    registry.register(RegisteredSkill::new(
        meta,
        Arc::new(ToolExecutor(tool.clone())),
    )?);
    for alias in aliases {
        registry.alias(alias, &name);
    }
    Ok(())
}

#[derive(Debug)]
struct ToolExecutor(Arc<dyn Tool>);

impl Executor for ToolExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Builtin
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(async move { self.0.call(input, ctx).await.map(SkillOutput::from) })
    }
}
