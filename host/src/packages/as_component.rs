//! Install-time decision for a Node script skill: run it as the component built from
//! its script (when that component gives the script's answers on every example), or as
//! the script. See docs/authoring/node-scripts.md.

use std::path::Path;

use super::{AUTO_WASM, InstallRecord, SkillManager};

impl SkillManager {
    /// Decides how the native script skill staged in `dir` runs: as a component built
    /// from its script, when the script uses nothing Node-only, ComponentizeJS is here,
    /// and the component gives the script's answers on every one of the skill's
    /// examples; else as the script. Records which and why; never fails the install.
    pub(super) async fn try_as_component(
        &self,
        dir: &Path,
        native: bool,
        record: &mut InstallRecord,
    ) {
        let outcome = if native {
            Err("installed with --native".to_owned())
        } else {
            self.build_and_probe(dir).await
        };
        match outcome {
            Ok(why) => {
                // What runs is a component: listings say so, as the loaded skill does.
                record.kind = "wasm".into();
                record.runs_as = "wasm".into();
                record.runs_as_reason = why;
            }
            Err(why) => {
                let _ = std::fs::remove_file(dir.join(AUTO_WASM));
                record.runs_as = "native".into();
                record.runs_as_reason = why;
            }
        }
        tracing::info!(skill = %record.name, runs_as = %record.runs_as, reason = %record.runs_as_reason, "native script skill");
    }

    async fn build_and_probe(&self, dir: &Path) -> Result<String, String> {
        use crate::authoring::node;
        let script = dir.join("scripts/execute.js");
        let source =
            std::fs::read_to_string(&script).map_err(|e| format!("{}: {e}", script.display()))?;
        node::eligibility(&source)?;
        let Some(engine) = self.loader.wasm_engine() else {
            return Err("this host runs without the Wasm engine".into());
        };
        let native = self.loader.load_dir(dir).await.map_err(|e| e.to_string())?;
        if native.meta.examples.is_empty() {
            return Err("it has no examples in skill.json to check a component against".into());
        }
        let manifest = serde_json::to_value(&native.meta).map_err(|e| e.to_string())?;
        let wasm = dir.join(AUTO_WASM);
        node::componentize(&source, &manifest, &wasm).await?;
        let component = engine
            .load_file(&wasm, &crate::capabilities::Policy::default())
            .await
            .map_err(|e| format!("the component built from it does not load: {e}"))?;
        let ctx = crate::skill::kernel::SkillContext::detached();
        for (i, example) in native.meta.examples.iter().enumerate() {
            let script_answer = native
                .executor
                .execute(example.input.clone(), ctx.clone())
                .await
                .map(|o| o.output)
                .map_err(|e| format!("the script failed on example {}: {e}", i + 1))?;
            let input = example.input.to_string();
            let component_answer = component.call(&input, &ctx).await.map(|o| o.output);
            if component_answer.as_ref().ok() != Some(&script_answer) {
                return Err(format!(
                    "the component answered example {} ({}) differently from the script",
                    i + 1,
                    example.description
                ));
            }
        }
        Ok(format!(
            "gave the script's answers on all {} examples",
            native.meta.examples.len()
        ))
    }
}
