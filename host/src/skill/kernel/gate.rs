//! The gates a call passes before it runs and that a tool may ask for while it runs:
//! the run's permission profile, and the user's confirmation of dangerous calls.

use serde_json::Value;

use super::SkillContext;
use crate::error::{Error, Result};
use crate::skill::confirm::{ConfirmPolicy, Confirmation};
use crate::skill::permission::{self, Locale, Profile};
use crate::skill::registry::RegisteredSkill;

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
    /// ahead; without one, the host's `ConfirmPolicy` answers. A refusal is
    /// [`Error::Blocked`].
    pub async fn confirm(&self, request: Confirmation) -> Result<()> {
        let zh = self.locale() == Locale::Zh;
        let refusal = match &self.run.confirmer {
            Some(confirmer) => {
                if confirmer.confirm(&request).await {
                    return Ok(());
                }
                if zh {
                    format!(
                        "用户拒绝了此操作（风险{}）：{}",
                        request.risk, request.warning
                    )
                } else {
                    format!(
                        "the user declined ({} risk): {}",
                        request.risk, request.warning
                    )
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
}
