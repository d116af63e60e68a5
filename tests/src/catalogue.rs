//! A generated catalogue of skills for the benches that rank and route: the built-in
//! tools and skills made of domains × actions × variants, each with a realistic
//! description, a 4-field input schema, and a message that asks for it.

use std::path::Path;
use std::sync::Arc;

use evo_host::agent::{Agent, AgentOptions};
use evo_host::llm::LlmProvider;
use evo_host::packages::index::SkillIndex;
use evo_host::skill::kernel::Kernel;
use evo_host::skill::kernel::table::SkillTable;
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
pub fn catalogue(total: usize) -> (Arc<SkillTable>, usize) {
    let registry = Arc::new(SkillTable::new());
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
/// skills ranked by the skill index in `index_dir` (brought up to date); the router
/// decides every message (no decisive pick is taken without it: what the router
/// benches measure).
pub fn shortlisting_agent(
    registry: &Arc<SkillTable>,
    provider: Arc<dyn LlmProvider>,
    shortlist: usize,
    index_dir: &Path,
) -> Agent {
    indexed_agent(
        registry,
        provider,
        AgentOptions {
            shortlist,
            decisive_margin: None,
            ..AgentOptions::default()
        },
        index_dir,
    )
}

/// An agent over `registry` thinking with `provider`, run with `options`, ranking
/// skills with the skill index in `index_dir` (brought up to date).
pub fn indexed_agent(
    registry: &Arc<SkillTable>,
    provider: Arc<dyn LlmProvider>,
    options: AgentOptions,
    index_dir: &Path,
) -> Agent {
    Agent::new(Kernel::new(registry.clone()), provider)
        .expect("agent")
        .with_options(options)
        .with_skill_index(skill_index(index_dir))
        .expect("index syncs")
}

/// Messages for the first 58 generated skills (the 60-skill catalogue) that avoid the
/// skill's own words: neither its action ("search", "summarize", "create", or their
/// forms such as "finds") nor its domain's nouns. A router that matches words cannot
/// route these; one that understands them can. `(skill number, message)`.
pub const PARAPHRASES: [(usize, &str); 58] = [
    (0, "look up the bills I sent to clients in October"),
    (1, "will it rain in Porto this weekend?"),
    (2, "what do I have on my agenda next Tuesday?"),
    (3, "which change to the repository touched the login code?"),
    (4, "is there a container build tagged 2.4 on our box?"),
    (5, "which workloads in the cluster keep restarting?"),
    (6, "dig out the note Maria sent me about the offsite"),
    (7, "locate the scanned lease agreement in my files"),
    (8, "show me the pictures I took at the beach"),
    (9, "which workbook has the Q3 budget figures?"),
    (10, "which database relation holds the customer addresses?"),
    (11, "where in the web server's output are the 502 errors?"),
    (12, "pull up the chart board for API latency"),
    (13, "any open helpdesk cases from Acme?"),
    (14, "look up the agreement we signed with the landlord"),
    (15, "I need a dish I can cook with leeks and potatoes"),
    (16, "is there a plane seat reserved for me to Berlin?"),
    (17, "where am I staying in Rome, which room reservation?"),
    (18, "what is the share price of ACME right now?"),
    (19, "look up the reimbursement claim I filed in March"),
    (20, "what did we write down at Monday's standup?"),
    (21, "which candidates applied for the designer role?"),
    (22, "what did the customer with id 4411 purchase?"),
    (23, "track down the parcel sticker for order 17"),
    (24, "which show installment talked about sleep?"),
    (25, "give me the gist of what clients owe us this quarter"),
    (
        26,
        "in a sentence or two: how will the skies look this week?",
    ),
    (27, "boil down my week's appointments to the essentials"),
    (28, "recap what the team changed in the codebase yesterday"),
    (29, "a short overview of the container builds we keep"),
    (30, "give me a brief status of the cluster's workloads"),
    (31, "condense my unread inbox into a few lines"),
    (32, "what does this 40-page report say, in brief?"),
    (33, "a quick rundown of the pictures from the trip"),
    (34, "the key points of the Q3 workbook, please"),
    (35, "an overview of what the orders relation holds"),
    (36, "the short version of last night's server output"),
    (37, "the highlights of the latency charts this week"),
    (38, "a digest of this week's helpdesk cases"),
    (
        39,
        "what are the main terms of the landlord agreement, briefly?",
    ),
    (40, "the gist of the lasagne instructions, just the steps"),
    (41, "recap my plane trips for the conference"),
    (42, "a brief overview of my room reservations this month"),
    (43, "in short, how did my shares do today?"),
    (44, "boil down the reimbursement claims from the offsite"),
    (45, "the takeaways from yesterday's planning call"),
    (46, "a brief overview of the candidates who applied"),
    (47, "recap what buyers purchased yesterday"),
    (48, "the short version of today's parcel stickers"),
    (49, "the main points of the latest show installment"),
    (50, "make a new bill for Acme for 12 hours of consulting"),
    (51, "set up a new rain outlook for the farm page"),
    (52, "put a dentist appointment on my agenda for Friday 3pm"),
    (53, "record my staged changes with the message 'fix typo'"),
    (54, "produce a container build from this Dockerfile"),
    (55, "start a new workload in the cluster from nginx"),
    (56, "draft a message to Tom about the budget"),
    (57, "make a printable file from these notes"),
];
