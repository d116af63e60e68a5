//! Keeps secret values out of everything a guest sends out of its sandbox: its output,
//! error, steps and memory writes, its logs, events, printed text, scratch values, the
//! inputs of the skills it calls and its model prompts. A skill granted no hosts never
//! gets a secret from a response, so only skills with hosts are scanned.

use std::sync::Arc;

use serde_json::json;

use crate::secrets::Secrets;
use crate::skill::kernel::SkillContext;

/// The secrets to redact, and where to report a redaction.
#[derive(Debug, Clone, Default)]
pub(super) struct Scrub {
    secrets: Arc<Secrets>,
    ctx: Option<SkillContext>,
}

impl Scrub {
    pub(super) fn new(secrets: Arc<Secrets>, ctx: Option<SkillContext>) -> Self {
        Self { secrets, ctx }
    }

    /// The secrets.
    pub(super) fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// `text` with every secret value replaced by `[REDACTED:NAME]`; each redaction is
    /// written to the security log, naming the `channel` it was found in.
    pub(super) fn text(&self, channel: &str, text: String) -> String {
        if self.secrets.is_empty() {
            return text;
        }
        let (redacted, found) = self.secrets.redact(&text);
        if found.is_empty() {
            return text;
        }
        for name in found {
            let message =
                format!("the skill's {channel} carried the value of secret {name}; redacted");
            match &self.ctx {
                Some(ctx) => ctx.record_refusal(
                    "secret",
                    &json!({ "channel": channel }),
                    &message,
                    "the value was replaced before it left the sandbox; find out why the skill sends it, and rotate the secret if it may have leaked before",
                ),
                None => tracing::warn!(target: "evo::security", "blocked: {message}"),
            }
        }
        redacted.into_owned()
    }
}
