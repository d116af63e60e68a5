//! A generated catalogue of skills for the benches that rank and route: the built-in
//! tools and skills made of domains × actions × variants, each with a realistic
//! description, a 4-field input schema, and a message that asks for it.

use std::path::Path;
use std::sync::Arc;

use evo_host::agent::{Agent, AgentOptions};
use evo_host::llm::LlmProvider;
use evo_host::packages::index::SkillIndex;
use evo_host::skill::kernel::Kernel;
use evo_host::skill::registry::SkillRegistry;
use evo_host::tools::BuiltinTools;
use serde_json::json;

/// What one skill of a generated catalogue does: `(name, description, a message that
/// asks for it)`. Domains × actions × variants give distinct skills with realistic
/// descriptions (and an input schema each), so that the shortlist has to find the one a
/// message means among many that share words with it.
pub fn generated_skill(i: usize) -> (String, String, String) {
    const DOMAINS: [&str; 25] = [
        "invoices",
        "weather forecasts",
        "calendar events",
        "git commits",
        "docker images",
        "kubernetes pods",
        "emails",
        "pdf documents",
        "photos",
        "spreadsheets",
        "sql tables",
        "server logs",
        "metrics dashboards",
        "support tickets",
        "contracts",
        "recipes",
        "flight bookings",
        "hotel bookings",
        "stock quotes",
        "expense reports",
        "meeting notes",
        "job applications",
        "customer orders",
        "shipping labels",
        "podcast episodes",
    ];
    const ACTIONS: [(&str, &str); 10] = [
        ("search", "finds"),
        ("summarize", "summarizes"),
        ("create", "creates"),
        ("convert", "converts the format of"),
        ("validate", "checks for errors in"),
        ("compare", "compares two versions of"),
        ("export", "exports to CSV"),
        ("schedule", "schedules reminders about"),
        ("translate", "translates"),
        ("archive", "archives old"),
    ];
    const VARIANTS: [&str; 4] = ["", " for a team", " in bulk", " from a shared folder"];
    let domain = DOMAINS[i % DOMAINS.len()];
    let (action, does) = ACTIONS[(i / DOMAINS.len()) % ACTIONS.len()];
    let variant = VARIANTS[(i / (DOMAINS.len() * ACTIONS.len())) % VARIANTS.len()];
    let slug = domain.replace(' ', "-");
    let name = format!("{action}-{slug}-{}", i / (DOMAINS.len() * ACTIONS.len()));
    let description = format!(
        "{} {domain}{variant}: {does} {domain} the user names, with options for the period, the format and the level of detail.",
        capitalize(action)
    );
    let message = format!("please {action} my {domain}{variant} from last week");
    (name, description, message)
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A registry of `total` skills: the built-in tools, then generated skills (whose body
/// returns its input); and how many were generated (skill `i` is
/// [`generated_skill`]`(i)`).
pub fn catalogue(total: usize) -> (Arc<SkillRegistry>, usize) {
    let registry = Arc::new(SkillRegistry::new());
    BuiltinTools::default()
        .register(&registry)
        .expect("builtins");
    let builtins = registry.list().len();
    let generated = total.saturating_sub(builtins);
    for i in 0..generated {
        let (name, description, _) = generated_skill(i);
        crate::kernel::register(
            &registry,
            json!({ "name": name, "description": description, "input": {
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "What to work on, in the user's words." },
                    "period": { "type": "string", "description": "A date range such as 2026-11-01..2026-11-07." },
                    "format": { "type": "string", "enum": ["text", "json", "csv"] },
                    "detail": { "type": "integer", "minimum": 1, "maximum": 5 }
                },
                "required": ["query"]
            } }),
            |input, _ctx| async move { Ok(input) },
        );
    }
    (registry, generated)
}

/// The skill index kept in `dir`, ranking with the built-in embedder.
pub fn skill_index(dir: &Path) -> SkillIndex {
    SkillIndex::new(
        evo_host::db::Db::open(dir).expect("db"),
        Arc::new(evo_host::memory::HashEmbedder),
    )
}

/// An agent over `registry` thinking with `provider`, offering the router `shortlist`
/// skills ranked by the skill index in `index_dir` (brought up to date).
pub fn shortlisting_agent(
    registry: &Arc<SkillRegistry>,
    provider: Arc<dyn LlmProvider>,
    shortlist: usize,
    index_dir: &Path,
) -> Agent {
    Agent::new(Kernel::new(registry.clone()), provider)
        .expect("agent")
        .with_options(AgentOptions {
            shortlist,
            ..AgentOptions::default()
        })
        .with_skill_index(skill_index(index_dir))
        .expect("index syncs")
}
