//! The gates a call passes before it runs and that a tool may ask for while it runs:
//! the run's permission profile, and the user's confirmation of dangerous calls.

use std::time::Instant;

use serde_json::Value;

use super::SkillContext;
use crate::error::{Error, Result};
use crate::skill::kernel::confirm::{ConfirmPolicy, Confirmation};
use crate::skill::kernel::table::RegisteredSkill;
use crate::skill::permission::{self, Locale, Profile};

impl SkillContext {
    /// The run's profile's verdict on calling `skill` with `input`.
    pub(super) fn permit(&self, skill: &RegisteredSkill, input: &Value) -> Result<()> {
        let profile = &self.run.profile;
        let locale = self.kernel.config.locale;
        let name = &skill.meta.name;
        let message = if !profile.lists(name, &self.kernel.registry.aliases_of(name)) {
            permission::unlisted_message(locale, name, &profile.name)
        } else {
            let needed = skill.permission_for(input);
            if needed <= profile.level {
                return Ok(());
            }
            permission::blocked_message(locale, needed, profile.level)
        };
        tracing::warn!(target: "evo::security", tool = %name, profile = %profile.name, "blocked: {message}");
        Err(Error::Blocked {
            tool: name.clone(),
            message,
            reason: crate::error::BlockReason::Profile,
        })
    }

    /// The language refusals are written in.
    pub fn locale(&self) -> Locale {
        self.kernel.config.locale
    }

    /// The run's profile.
    pub fn profile(&self) -> &Profile {
        &self.run.profile
    }

    /// Asks the run's confirmer whether the dangerous call `request` describes may go
    /// ahead; without one, the host's `ConfirmPolicy` answers. The wait for the answer
    /// does not count against any deadline of the run, and ends after
    /// ten minutes with a no. A refusal is [`Error::Blocked`].
    pub async fn confirm(&self, request: Confirmation) -> Result<()> {
        if self.run.take_approval(&request.tool) {
            return Ok(());
        }
        let zh = self.locale() == Locale::Zh;
        let refusal = match &self.run.confirmer {
            Some(confirmer) => {
                let answer = {
                    let _asking = self.run.asking();
                    tokio::time::timeout(super::CONFIRM_WAIT, confirmer.confirm(&request)).await
                };
                let minutes = super::CONFIRM_WAIT.as_secs() / 60;
                match answer {
                    Ok(true) => return Ok(()),
                    Ok(false) if zh => format!(
                        "用户拒绝了此操作（风险{}）：{}",
                        request.risk, request.warning
                    ),
                    Ok(false) => format!(
                        "the user declined ({} risk): {}",
                        request.risk, request.warning
                    ),
                    Err(_) if zh => format!(
                        "用户在 {minutes} 分钟内没有确认此操作（风险{}）：{}",
                        request.risk, request.warning
                    ),
                    Err(_) => format!(
                        "the user did not answer within {minutes} minutes ({} risk): {}; call it again to be asked again",
                        request.risk, request.warning
                    ),
                }
            }
            None if self.kernel.config.confirm == ConfirmPolicy::Allow => return Ok(()),
            None if zh => format!(
                "此操作需要用户确认（风险{}）：{}；当前无法询问用户",
                request.risk, request.warning
            ),
            None => format!(
                "this needs the user's confirmation ({} risk: {}) and nobody can be asked here; run it interactively, or set [tools] confirm = \"allow\" in evo.toml",
                request.risk, request.warning
            ),
        };
        tracing::warn!(target: "evo::security", tool = %request.tool, "not confirmed: {refusal}");
        Err(Error::Blocked {
            tool: request.tool,
            message: refusal,
            reason: crate::error::BlockReason::Confirmation,
        })
    }

    /// Whether someone can be asked to confirm a call in this run (a confirmer: the
    /// terminal, an MCP client's elicitation), rather than the host's policy answering
    /// for them.
    pub fn can_ask(&self) -> bool {
        self.run.confirmer.is_some()
    }

    /// Records that the user has just confirmed the next call of `tool` themselves
    /// (the agent asked before calling it): the tool's own [`Self::confirm`], if it
    /// asks, is answered yes once instead of asking again. Cleared by the next
    /// confirmation of any tool, and by [`Self::clear_approval`].
    pub(crate) fn approve_once(&self, tool: &str) {
        *self.run.approval() = Some(tool.to_owned());
    }

    /// Drops an approval [`Self::approve_once`] gave that no confirmation used.
    pub(crate) fn clear_approval(&self) {
        self.run.approval().take();
    }

    /// Waits until `deadline`, moved later by the time the run spends waiting for its
    /// user's answers from now on: a deadline for work that may stop to ask.
    pub async fn deadline(&self, deadline: Instant) {
        let asked = self.run.time_asking();
        let mut at = deadline;
        loop {
            tokio::time::sleep_until(at.into()).await;
            let moved = deadline + self.run.time_asking().saturating_sub(asked);
            if moved <= Instant::now() {
                return;
            }
            at = moved;
        }
    }
}
