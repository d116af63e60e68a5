//! The words `decide` reads a fact by: fillers, negations, days and months, and the
//! words of a change.

/// Words that add nothing to a fact's identity: articles, auxiliaries, and the words
/// people use to announce a change ("now", "actually").
pub(super) const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "and",
    "as",
    "at",
    "be",
    "been",
    "being",
    "by",
    "for",
    "from",
    "in",
    "into",
    "of",
    "on",
    "onto",
    "to",
    "with",
    "is",
    "are",
    "was",
    "were",
    "am",
    "do",
    "does",
    "did",
    "has",
    "have",
    "had",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "may",
    "might",
    "that",
    "this",
    "it",
    "its",
    "i",
    "me",
    "my",
    "we",
    "our",
    "you",
    "your",
    "so",
    "also",
    "now",
    "currently",
    "actually",
    "really",
    "still",
    "just",
    "always",
    "anymore",
    "any",
    "longer",
    "new",
    "instead",
    "here",
    "there",
    "then",
    "use",
    "uses",
    "used",
    "using",
    "what",
    "which",
    "who",
];

/// Words that turn a statement into its opposite.
pub(super) const NEGATIONS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without",
    "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont", "cant", "couldnt",
    "shouldnt", "wouldnt", "hasnt", "havent", "hadnt", "mustnt",
];

/// Capitalised words that are values, not names.
pub(super) const CALENDAR: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// CJK characters that negate.
pub(super) const CJK_NEGATIONS: &[char] =
    &['不', '没', '沒', '无', '無', '非', '别', '別', '未', '勿'];

/// Words that announce that a value changed (read before fillers are dropped, so `now`
/// and `new` count).
pub(super) const CHANGE_CUES: &[&str] = &[
    "now",
    "nowadays",
    "new",
    "anymore",
    "instead",
    "since",
    "lately",
    "recently",
    "moved",
    "relocated",
    "settled",
    "switched",
    "changed",
    "updated",
    "became",
    "joined",
    "transferred",
    "replaced",
    "renamed",
    "postponed",
    "pushed",
    "rescheduled",
    "delayed",
    "brought",
];

/// Words that name one attribute of a subject: a lost word of the old text and a word
/// of the new one in the same list say the same attribute changed (`lives in Lisbon`
/// → `moved to Porto`). Compared by their keys, so any form of a word counts.
pub(super) const ATTRIBUTES: &[&[&str]] = &[
    &[
        "live",
        "reside",
        "based",
        "home",
        "house",
        "moved",
        "relocated",
        "settled",
        "stay",
        "address",
        "located",
    ],
    &[
        "work", "employed", "employer", "employs", "job", "joined", "hired", "company", "role",
        "position",
    ],
    &[
        "deadline",
        "due",
        "date",
        "scheduled",
        "rescheduled",
        "postponed",
        "pushed",
        "delayed",
        "planned",
        "brought",
    ],
    &[
        "port", "listen", "runs", "run", "served", "serves", "bound", "hosted", "moved", "switched",
    ],
    &["called", "named", "name", "renamed"],
    &[
        "data", "stored", "keeps", "database", "backed", "moved", "switched",
    ],
];

/// Words a change of state may add besides its cue and its value: when it happened and
/// the particles of its verbs (`pushed back`, `switched over`, `these days`).
pub(super) const CHANGE_WORDS: &[&str] = &[
    "back", "over", "up", "out", "off", "where", "got", "get", "gets", "been", "these", "days",
    "last", "month", "week", "year", "ago", "spring", "summer", "autumn", "winter", "since",
];
