//! Which skills a message is about: the skills the model may be offered, ranked by the
//! skill index (or the built-in embedding); the shortlist the router and the tool loop
//! see (a small model's routing, which starts from the ranking's first pick, is in
//! `small`).

use super::*;
use crate::skill::permission::Permission;

impl Agent {
    /// The skills the model may be offered: exposed, and allowed by the permissions.
    pub(super) fn offered(&self, ctx: &SkillContext) -> Vec<Arc<RegisteredSkill>> {
        self.kernel
            .registry()
            .list()
            .into_iter()
            .filter(|s| s.is_exposed() && self.options.permissions.allows(ctx, &s.meta.name))
            .collect()
    }

    /// The `limit` skills of `skills` most relevant to `message`, best first, with their
    /// relevance in [0, 1]: ranked by the skill index when the agent has one, else by
    /// the built-in embedding. Skills nothing in the message points to may be missing.
    pub(super) fn ranked(
        &self,
        message: &str,
        skills: &[Arc<RegisteredSkill>],
        limit: usize,
    ) -> Vec<(usize, f32)> {
        let offered: std::collections::HashMap<&str, usize> = skills
            .iter()
            .enumerate()
            .map(|(i, s)| (s.meta.name.as_str(), i))
            .collect();
        let ranked: Vec<(f32, String)> = match &self.index {
            Some(index) => {
                let mut index = index
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match index.search_skills_where(message, limit, |name| offered.contains_key(name)) {
                    Ok(hits) => hits.into_iter().map(|h| (h.score, h.name)).collect(),
                    Err(e) => {
                        tracing::warn!("skill index: {e}; offering skills in name order");
                        Vec::new()
                    }
                }
            }
            None => {
                use crate::retrieval::embed::{dot, hash_embed};
                let query = hash_embed(message);
                let scored = skills.iter().map(|s| {
                    let text = format!(
                        "{} {}",
                        s.meta.name.replace(['_', '-'], " "),
                        s.meta.description
                    );
                    (dot(&query, &hash_embed(&text)), s.meta.name.clone())
                });
                crate::retrieval::rank::top(scored, limit)
            }
        };
        ranked
            .into_iter()
            .filter_map(|(score, name)| offered.get(name.as_str()).map(|&i| (i, score)))
            .collect()
    }

    /// The exposed skills most relevant to `message`, at most `options.shortlist` (see
    /// [`Self::ranked`]), and the skill the ranking makes decisive, if any (see
    /// [`AgentOptions::decisive_margin`]), with its score. Skills nothing in the message
    /// points to fill the remaining places in name order.
    pub(super) fn shortlist(
        &self,
        ctx: &SkillContext,
        message: &str,
    ) -> (Vec<ToolDefinition>, Option<(Arc<RegisteredSkill>, f32)>) {
        // Definitions are built only for the chosen: schemas are not cloned for a
        // catalogue of a thousand.
        let skills = self.offered(ctx);
        let mut limit = self.options.shortlist;
        let small = self.provider.traits().small;
        if small {
            limit = limit.min(SMALL_MODEL_SHORTLIST);
        }
        let margin = self.options.decisive_margin.filter(|_| !small);
        let all_fit = skills.len() <= limit;
        // Ranked when not every skill fits, or to see whether the first pick is decisive.
        let ranked = if all_fit && margin.is_none() {
            Vec::new()
        } else {
            self.ranked(message, &skills, limit.max(2))
        };
        let decisive = margin.and_then(|margin| {
            let &(first, score) = ranked.first()?;
            let second = ranked.get(1).map_or(0.0, |r| r.1);
            let skill = &skills[first];
            (score - second >= margin && skill.permission() <= Permission::ReadOnly)
                .then(|| (skill.clone(), score))
        });
        let chosen: Vec<usize> = if all_fit {
            (0..skills.len()).collect()
        } else {
            let mut chosen: Vec<usize> = ranked.into_iter().take(limit).map(|(i, _)| i).collect();
            // Skills nothing pointed to fill the remaining places, in name order (the
            // registry lists by name).
            let rest: Vec<usize> = (0..skills.len()).filter(|i| !chosen.contains(i)).collect();
            chosen.extend(rest.into_iter().take(limit.saturating_sub(chosen.len())));
            chosen
        };
        let definitions = chosen
            .into_iter()
            .map(|i| skills[i].to_tool_definition())
            .collect();
        (definitions, decisive)
    }
}
