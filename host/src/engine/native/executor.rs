//! A native skill as a kernel executor: its script run in the [`NativeSandbox`], with
//! the hosts and secrets it was granted reached through the host's proxy ([`egress`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{NativeSandbox, egress};
use crate::error::{Error, Result};
use crate::skill::exchange::{MemoryWrite, granted_writes};

/// A native skill as a kernel executor.
#[derive(Debug, Clone)]
pub struct NativeExecutor {
    sandbox: NativeSandbox,
    script: PathBuf,
    timeout: Duration,
    name: String,
    /// What the operator granted of what the skill asks for (hosts and secrets, through
    /// [`egress`]).
    grant: Arc<crate::capabilities::Grant>,
}

impl NativeExecutor {
    /// Runs `script` for skill `name` in `sandbox`'s slots, with `timeout`.
    pub fn new(sandbox: NativeSandbox, name: &str, script: PathBuf, timeout: Duration) -> Self {
        Self {
            sandbox,
            script,
            timeout,
            name: name.to_owned(),
            grant: Arc::default(),
        }
    }

    /// Grants the hosts and secrets in `grant`: the script reaches them through the
    /// host's proxy ([`egress`]).
    pub fn with_grant(mut self, grant: crate::capabilities::Grant) -> Self {
        self.grant = Arc::new(grant);
        self
    }

    /// What was granted.
    pub fn grant(&self) -> &crate::capabilities::Grant {
        &self.grant
    }
}

impl crate::skill::kernel::executor::Executor for NativeExecutor {
    fn kind(&self) -> crate::skill::kernel::executor::ExecutorKind {
        crate::skill::kernel::executor::ExecutorKind::Native
    }

    fn owns_deadline(&self) -> bool {
        true
    }

    fn execute(
        &self,
        input: Value,
        ctx: crate::skill::kernel::SkillContext,
    ) -> crate::skill::exchange::BoxFuture<'_, Result<crate::skill::kernel::executor::SkillOutput>>
    {
        Box::pin(async move {
            let result = if self.grant.hosts.is_empty() {
                self.sandbox
                    .run_script(&self.script, &input, self.timeout)
                    .await?
            } else {
                // The way out: the host's proxy, in a workspace of this call's own.
                let workspace = tempfile::Builder::new()
                    .prefix("skill-workspace-")
                    .tempdir()
                    .map_err(|e| Error::io_at(&std::env::temp_dir())(e))?;
                let _egress = egress::Egress::start(
                    workspace.path(),
                    &self.name,
                    self.grant.clone(),
                    ctx,
                    self.timeout,
                )
                .map_err(Error::io_at(workspace.path()))?;
                self.sandbox
                    .run_script_in(&self.script, &input, self.timeout, Some(workspace.path()))
                    .await?
            };
            if let Some(error) = result.error {
                let kind = if result.failure == Some(super::NativeFailure::Timeout) {
                    crate::error::FailureKind::Timeout
                } else {
                    crate::error::FailureKind::Failed
                };
                return Err(Error::Script {
                    skill: self.name.clone(),
                    kind,
                    message: error,
                    run: Box::new(crate::error::ScriptRun {
                        stdout: result.stdout,
                        stderr: result.stderr,
                        exit_code: result.exit_code,
                        duration: result.duration,
                    }),
                });
            }
            let mut output = result.output();
            let suggested: Vec<WireWrite> = output
                .as_object_mut()
                .and_then(|o| o.remove("memoryWrites"))
                .and_then(|w| serde_json::from_value(w).ok())
                .unwrap_or_default();
            let suggested = suggested
                .into_iter()
                .map(|w| MemoryWrite {
                    text: w.text,
                    category: w.category,
                })
                .collect();
            let allowed = self.grant.check_suggested_writes(&self.name);
            let (memory_writes, memory) = granted_writes(&self.name, allowed, suggested);
            Ok(crate::skill::kernel::executor::SkillOutput {
                output,
                memory_writes,
                memory,
                intermediate_steps: Vec::new(),
            })
        })
    }
}

#[derive(serde::Deserialize)]
struct WireWrite {
    text: String,
    #[serde(default)]
    category: Option<String>,
}
