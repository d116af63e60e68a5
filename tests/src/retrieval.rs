//! A conversational memory set for measuring retrieval, generated from a seed: facts
//! stated in one turn and asked about later in other words, updates that change a fact
//! (some worded so that the store can tell, some not), restatements, and small talk
//! that shares names and places with the facts. The same seed gives the same set on
//! every machine; `cargo bench -p evo-tests --bench retrieval` scores it and the test
//! suite checks that no configuration loses a fact.

use evo_host::memory::Category;

/// One turn to store, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The text.
    pub text: String,
    /// Its category.
    pub category: Category,
}

/// A question and the turn that answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Asked in other words than the fact was stated.
    pub text: String,
    /// The text that answers it: the latest version of the fact.
    pub answer: String,
    /// The earlier version, when the fact was updated.
    pub stale: Option<String>,
}

/// A generated set.
#[derive(Debug, Clone)]
pub struct Set {
    /// What is stored, in order.
    pub turns: Vec<Turn>,
    /// What is asked afterwards.
    pub questions: Vec<Question>,
}

const PEOPLE: [&str; 30] = [
    "Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiroshi", "Ines", "Jonas",
    "Kamala", "Lars", "Mei", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma",
    "Viktor", "Wanda", "Xavier", "Yusuf", "Zara", "Bianca", "Cyrus", "Delia", "Emil",
];
const CITIES: [&str; 16] = [
    "Lisbon", "Osaka", "Denver", "Nairobi", "Krakow", "Porto", "Quito", "Tallinn", "Hobart",
    "Leeds", "Munich", "Cusco", "Bergen", "Dakar", "Perth", "Seville",
];
const COMPANIES: [&str; 10] = [
    "Initech",
    "Globex",
    "Umbrella",
    "Hooli",
    "Vandelay",
    "Soylent",
    "Cyberdyne",
    "Wonka",
    "Tyrell",
    "Aperture",
];
const ROLES: [&str; 6] = [
    "nurse",
    "architect",
    "accountant",
    "pilot",
    "teacher",
    "chemist",
];
const PETS: [&str; 12] = [
    "Biscuit", "Pepper", "Nova", "Ziggy", "Mochi", "Rex", "Luna", "Otis", "Fig", "Tango",
    "Juniper", "Waffles",
];
const FOODS: [&str; 8] = [
    "peanuts",
    "shellfish",
    "gluten",
    "sesame",
    "kiwi",
    "lactose",
    "soy",
    "mustard",
];
const COLOURS: [&str; 8] = [
    "teal", "maroon", "ochre", "lilac", "crimson", "olive", "navy", "amber",
];
const SERVICES: [&str; 20] = [
    "billing",
    "search",
    "auth",
    "gateway",
    "ledger",
    "mailer",
    "scheduler",
    "inventory",
    "checkout",
    "reports",
    "profile",
    "ingest",
    "export",
    "pricing",
    "media",
    "audit",
    "chat",
    "geo",
    "feeds",
    "quota",
];
const DATABASES: [&str; 6] = [
    "PostgreSQL",
    "MySQL",
    "Cassandra",
    "SQLite",
    "MongoDB",
    "Redis",
];
const PROJECTS: [&str; 15] = [
    "Atlas", "Beacon", "Cobalt", "Dynamo", "Ember", "Falcon", "Gemini", "Harbor", "Iris", "Jigsaw",
    "Keystone", "Lumen", "Meridian", "Nimbus", "Orion",
];

/// xorshift64*: small, seeded, the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// A fact as generated: how it is said, how it is asked, how it may change.
struct Fact {
    text: String,
    question: String,
    category: Category,
    /// A later version: (text, whether it is worded as a plain update of the same words).
    update: Option<String>,
}

/// How the updates of a set are worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updates {
    /// Close to the fact's own words: `Alice now lives in Porto`, `Alice moved to
    /// Porto last month`, the same sentence with the new port or day.
    Plain,
    /// As people say a change, in other words than the fact: `Alice's new home is in
    /// Porto`, `We switched the billing service over to port 9000`, `Atlas got pushed
    /// back to November 9`. The facts, the small talk and the questions are the ones
    /// [`Updates::Plain`] gives for the same seed.
    Paraphrased,
}

/// The set for `seed`, its updates worded plainly.
pub fn generate(seed: u64) -> Set {
    generate_worded(seed, Updates::Plain)
}

/// The set for `seed` with its updates worded as `updates` says.
pub fn generate_worded(seed: u64, updates: Updates) -> Set {
    let paraphrased = updates == Updates::Paraphrased;
    let mut rng = Rng(seed | 1);
    let mut facts: Vec<Fact> = Vec::new();
    for (n, person) in PEOPLE.into_iter().enumerate() {
        let city = rng.pick(&CITIES);
        let other_city = loop {
            let c = rng.pick(&CITIES);
            if c != city {
                break c;
            }
        };
        let candidates = [
            Fact {
                text: format!("{person} lives in {city}"),
                question: format!("which town is {person} based in"),
                category: Category::Fact,
                update: Some(match (rng.below(2), paraphrased) {
                    (0, false) => format!("{person} now lives in {other_city}"),
                    (_, false) => format!("{person} moved to {other_city} last month"),
                    (_, true) => match n % 5 {
                        0 => format!("{person} relocated to {other_city}"),
                        1 => format!("{person}'s new home is in {other_city}"),
                        2 => format!("{person} is living in {other_city} these days"),
                        3 => format!("{person} has settled in {other_city}"),
                        _ => format!("{person} has been based in {other_city} since the spring"),
                    },
                }),
            },
            Fact {
                text: format!(
                    "{person} works at {} as a {}",
                    rng.pick(&COMPANIES),
                    rng.pick(&ROLES)
                ),
                question: format!("who employs {person} and in what job"),
                category: Category::Fact,
                update: None,
            },
            Fact {
                text: format!("{person}'s dog is called {}", rng.pick(&PETS)),
                question: format!("what is the name of {person}'s pet"),
                category: Category::Entity,
                update: None,
            },
            Fact {
                text: format!("{person} is allergic to {}", rng.pick(&FOODS)),
                question: format!("what food must {person} avoid eating"),
                category: Category::Fact,
                update: None,
            },
            Fact {
                text: format!("{person}'s favourite colour is {}", rng.pick(&COLOURS)),
                question: format!("what colour does {person} like best"),
                category: Category::Preference,
                update: None,
            },
        ];
        // Four of the five facts per person, so that not every template is everywhere.
        let skip = rng.below(candidates.len());
        for (i, fact) in candidates.into_iter().enumerate() {
            if i != skip {
                facts.push(fact);
            }
        }
    }
    for (port, service) in (8000..).zip(SERVICES) {
        let new_port = port + 1000;
        facts.push(Fact {
            text: format!("The {service} service listens on port {port}"),
            question: format!("what port is the {service} service on"),
            category: Category::Fact,
            update: Some(match (paraphrased, port % 4) {
                (false, _) => format!("The {service} service listens on port {new_port}"),
                (true, 0) => format!("{service} now runs on port {new_port}"),
                (true, 1) => format!("The {service} service moved to port {new_port}"),
                (true, 2) => format!("Port {new_port} is where {service} listens now"),
                (true, _) => {
                    format!("We switched the {service} service over to port {new_port}")
                }
            }),
        });
        facts.push(Fact {
            text: format!(
                "The {service} service keeps its data in {}",
                rng.pick(&DATABASES)
            ),
            question: format!("which database backs {service}"),
            category: Category::Fact,
            update: None,
        });
    }
    for (n, project) in PROJECTS.into_iter().enumerate() {
        let day = 1 + rng.below(28);
        let new_day = day % 28 + 2;
        facts.push(Fact {
            text: format!("The {project} deadline is November {day}"),
            question: format!("when is project {project} due"),
            category: Category::Decision,
            update: Some(match (paraphrased, n % 4) {
                (false, _) => format!("The {project} deadline is now November {new_day}"),
                (true, 0) => format!("Project {project} is now due November {new_day}"),
                (true, 1) => format!("{project} got pushed back to November {new_day}"),
                (true, 2) => format!("The {project} deadline moved to November {new_day}"),
                (true, _) => format!("{project} was rescheduled for November {new_day}"),
            }),
        });
    }

    // About one fact in eight changes later; about one in eight is said twice.
    let mut updated = vec![false; facts.len()];
    let mut later: Vec<Turn> = Vec::new();
    for (i, fact) in facts.iter().enumerate() {
        if let Some(update) = &fact.update
            && rng.below(3) == 0
        {
            updated[i] = true;
            later.push(Turn {
                text: update.clone(),
                category: fact.category,
            });
        } else if rng.below(8) == 0 {
            later.push(Turn {
                text: format!("{}.", fact.text.to_lowercase()),
                category: fact.category,
            });
        }
    }
    let mut turns: Vec<Turn> = facts
        .iter()
        .map(|f| Turn {
            text: f.text.clone(),
            category: f.category,
        })
        .collect();
    turns.extend(small_talk(&mut rng, 300));
    rng.shuffle(&mut turns);
    rng.shuffle(&mut later);
    turns.extend(later);

    let questions = facts
        .iter()
        .zip(&updated)
        .map(|(fact, &changed)| match (&fact.update, changed) {
            (Some(update), true) => Question {
                text: fact.question.clone(),
                answer: update.clone(),
                stale: Some(fact.text.clone()),
            },
            _ => Question {
                text: fact.question.clone(),
                answer: fact.text.clone(),
                stale: None,
            },
        })
        .collect();
    Set { turns, questions }
}

/// Turns that are not facts worth remembering but share their names and places, and
/// half of them the very words the questions use (hard negatives: a keyword match that
/// does not answer).
fn small_talk(rng: &mut Rng, n: usize) -> Vec<Turn> {
    (0..n)
        .map(|i| {
            let person = rng.pick(&PEOPLE);
            let service = rng.pick(&SERVICES);
            let project = rng.pick(&PROJECTS);
            let text = match i % 12 {
                0 => format!("I had lunch with {person} today, the soup was cold"),
                1 => format!("The weather in {} was grey this morning", rng.pick(&CITIES)),
                2 => format!("{person} said the {service} dashboard looks slow again"),
                3 => format!("Remind me to call {person} about the {project} review"),
                4 => format!(
                    "We watched a documentary about {} last night",
                    rng.pick(&CITIES)
                ),
                5 => format!("{person} sent a photo of a {} sunset", rng.pick(&COLOURS)),
                6 => format!("{person} is based in the quiet room this week"),
                7 => format!("{person} asked who employs the new intern"),
                8 => format!("{person} posted pet photos in the team chat"),
                9 => format!("{person} likes the best seats at the town cinema"),
                10 => format!("The {service} service had a port scan alert on Friday"),
                _ => format!("Project {project} is due for a database review"),
            };
            Turn {
                text,
                category: Category::Other,
            }
        })
        .collect()
}

/// Two texts say the same when they match without case and punctuation (how a
/// restatement differs from its fact here).
pub fn same(a: &str, b: &str) -> bool {
    let key = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect()
    };
    key(a) == key(b)
}

/// Retrieval quality over a set's questions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    /// Share of questions whose answer is the first result.
    pub recall_at_1: f64,
    /// Share whose answer is among the first five.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the answer within the first 20 (0 when absent).
    pub mrr: f64,
    /// Share of the facts never updated whose text is among the first 20 results: a
    /// fact that was stored and not changed must always be found.
    pub kept_at_20: f64,
    /// Share of the updated facts whose first result is the old version.
    pub stale_at_1: f64,
    /// The smallest k at which every never-updated fact is found by its question, if
    /// that happens within the results asked for.
    pub all_found_at: Option<usize>,
}

/// Scores `search`, which answers a question with result texts, best first (ask for
/// 100, so that `all_found_at` can be found beyond 20).
pub fn score(set: &Set, mut search: impl FnMut(&str) -> Vec<String>) -> Scores {
    let (mut at_1, mut at_5, mut rr, mut kept, mut stable, mut stale, mut changed) =
        (0, 0, 0.0, 0, 0, 0, 0);
    let mut deepest = Some(0);
    for question in &set.questions {
        let results = search(&question.text);
        let anywhere = results.iter().position(|r| same(r, &question.answer));
        if question.stale.is_none() {
            deepest = deepest.zip(anywhere).map(|(d, r)| d.max(r + 1));
        }
        let rank = anywhere.filter(|&r| r < 20);
        at_1 += usize::from(rank == Some(0));
        at_5 += usize::from(rank.is_some_and(|r| r < 5));
        rr += rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
        match &question.stale {
            None => {
                stable += 1;
                kept += usize::from(rank.is_some());
            }
            Some(old) => {
                changed += 1;
                stale += usize::from(results.first().is_some_and(|r| same(r, old)));
            }
        }
    }
    let n = set.questions.len() as f64;
    Scores {
        recall_at_1: at_1 as f64 / n,
        recall_at_5: at_5 as f64 / n,
        mrr: rr / n,
        kept_at_20: kept as f64 / stable.max(1) as f64,
        stale_at_1: stale as f64 / changed.max(1) as f64,
        all_found_at: deepest,
    }
}

/// The texts FTS5 ranks first by bm25 alone for `question` in the memory database at
/// `db` (active entries only), with the same query words as Evo's keyword side.
pub fn bm25(db: &rusqlite::Connection, question: &str, k: usize) -> Vec<String> {
    let expression =
        evo_host::retrieval::rank::fts_any(&evo_host::retrieval::rank::query_terms(question));
    let mut statement = db
        .prepare_cached(
            "SELECT e.text FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid
             WHERE entries_fts MATCH ?1 AND e.superseded_by IS NULL
             ORDER BY bm25(entries_fts) LIMIT ?2",
        )
        .expect("prepares");
    statement
        .query_map(rusqlite::params![expression, k as i64], |r| r.get(0))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_the_same_for_a_seed_and_has_every_kind_of_turn() {
        let a = generate(7);
        assert_eq!(a.turns, generate(7).turns);
        assert_ne!(a.turns, generate(8).turns);
        let updated = a.questions.iter().filter(|q| q.stale.is_some()).count();
        assert!(updated >= 10, "{updated}");
        assert!(a.questions.len() >= 150, "{}", a.questions.len());
        assert!(a.turns.len() > a.questions.len() + 150);
        assert!(same("Alice lives in Lisbon", "alice lives in lisbon."));
    }

    #[test]
    fn the_paraphrased_set_differs_from_the_plain_one_in_its_updates_alone() {
        let (plain, paraphrased) = (generate(7), generate_worded(7, Updates::Paraphrased));
        assert_eq!(plain.questions.len(), paraphrased.questions.len());
        let mut differ = 0;
        for (a, b) in plain.questions.iter().zip(&paraphrased.questions) {
            assert_eq!((&a.text, &a.stale), (&b.text, &b.stale));
            differ += usize::from(a.answer != b.answer);
        }
        assert!(differ >= 10, "{differ}");
    }
}
