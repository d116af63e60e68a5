//! Output that is always valid: a JSON Schema compiled to a machine that reads JSON one
//! character at a time and says whether what it read so far can still become a document
//! the schema accepts. A local model's sampler asks it, for every token, whether the
//! token's text may come next ([`Vocabulary::allowed`]), so the model can only write
//! JSON the kernel takes.
//!
//! What the machine enforces: `type` (one or several), `enum`, `const`, `properties`
//! with `required` (written in the schema's order, optional ones skippable),
//! `additionalProperties` (an object with no `properties` may hold any keys),
//! `items`, `minItems`/`maxItems`, `anyOf`/`oneOf`, `maxLength`, and numbers that may
//! not be negative when `minimum` is 0 or more. The JSON is compact (no whitespace
//! outside strings). Other keywords (`pattern`, `maximum`, formats) are left to the
//! validation every output goes through anyway.

use std::rc::Rc;

use serde_json::Value;

/// Nesting allowed in a value of any shape (`{}` schemas, `additionalProperties`).
const ANY_DEPTH: usize = 4;
/// Characters of a string whose schema sets no `maxLength`.
const DEFAULT_MAX_STRING: usize = 2_000;

/// What a value may be.
#[derive(Debug)]
enum Node {
    /// Any JSON value, nested at most this deep.
    Any(usize),
    Null,
    Boolean,
    Number {
        integer: bool,
        negative: bool,
    },
    String {
        max: usize,
    },
    /// Exactly one of these texts (JSON-encoded `enum`/`const` values).
    Literals(Vec<String>),
    Object {
        properties: Vec<(String, Rc<Node>, bool)>,
        /// Keys not in `properties`, any value (only for an object without properties).
        open: Option<Rc<Node>>,
    },
    Array {
        items: Rc<Node>,
        min: usize,
        max: usize,
    },
    AnyOf(Vec<Rc<Node>>),
}

/// A compiled schema.
#[derive(Debug, Clone)]
pub struct Grammar {
    root: Rc<Node>,
}

impl Grammar {
    /// Compiles `schema` (a JSON Schema object; `true` or `{}` allows any JSON).
    pub fn new(schema: &Value) -> Self {
        Self {
            root: compile(schema, ANY_DEPTH),
        }
    }

    /// The machine before the first character.
    pub fn start(&self) -> Machine {
        Machine {
            states: vec![vec![Frame::Value(self.root.clone())]],
        }
    }
}

fn compile(schema: &Value, depth: usize) -> Rc<Node> {
    let Some(object) = schema.as_object() else {
        return Rc::new(Node::Any(depth));
    };
    if let Some(value) = object.get("const") {
        return Rc::new(Node::Literals(vec![value.to_string()]));
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return Rc::new(Node::Literals(
            values.iter().map(Value::to_string).collect(),
        ));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            return Rc::new(Node::AnyOf(
                options.iter().map(|o| compile(o, depth)).collect(),
            ));
        }
    }
    let of_type = |kind: &str| -> Rc<Node> {
        Rc::new(match kind {
            "null" => Node::Null,
            "boolean" => Node::Boolean,
            "integer" | "number" => Node::Number {
                integer: kind == "integer",
                negative: !object
                    .get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| m >= 0.0),
            },
            "string" => Node::String {
                max: object
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(DEFAULT_MAX_STRING, |m| m as usize),
            },
            "array" => Node::Array {
                items: object
                    .get("items")
                    .map_or_else(|| Rc::new(Node::Any(depth.saturating_sub(1))), |i| {
                        compile(i, depth.saturating_sub(1))
                    }),
                min: object.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize,
                max: object
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize),
            },
            "object" => {
                let required: Vec<&str> = object
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let properties: Vec<(String, Rc<Node>, bool)> = object
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| {
                        p.iter()
                            .map(|(k, v)| {
                                (
                                    Value::String(k.clone()).to_string(),
                                    compile(v, depth.saturating_sub(1)),
                                    required.contains(&k.as_str()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let open = properties.is_empty().then(|| match object.get("additionalProperties") {
                    Some(Value::Bool(false)) => None,
                    Some(extra @ Value::Object(_)) => Some(compile(extra, depth.saturating_sub(1))),
                    _ => (depth > 0).then(|| Rc::new(Node::Any(depth - 1))),
                });
                Node::Object {
                    properties,
                    open: open.flatten(),
                }
            }
            _ => Node::Any(depth),
        })
    };
    match object.get("type") {
        Some(Value::String(kind)) => of_type(kind),
        Some(Value::Array(kinds)) => Rc::new(Node::AnyOf(
            kinds.iter().filter_map(Value::as_str).map(of_type).collect(),
        )),
        _ if object.contains_key("properties") => of_type("object"),
        _ if object.contains_key("items") => of_type("array"),
        _ => Rc::new(Node::Any(depth)),
    }
}

/// Where a number is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Sign,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    fn complete(self) -> bool {
        matches!(self, Self::Zero | Self::Int | Self::Frac | Self::ExpDigits)
    }
}

/// One level of what is being read.
#[derive(Debug, Clone)]
enum Frame {
    /// A value of this node starts next.
    Value(Rc<Node>),
    /// One of these texts, of which `at` characters are read.
    Literal { options: Rc<Vec<String>>, at: usize },
    /// Inside a string: characters so far, after a backslash, hex digits of `\u` left.
    Str { len: usize, max: usize, escape: bool, hex: u8 },
    /// Inside a number: where, and digits in its current part (whole digits are kept
    /// to 15 and exponents to 2, so every number reads back as the same `f64`).
    Number { at: Num, integer: bool, digits: u8 },
    /// Inside an object: the properties written (a bit each), whether a value was
    /// just read, how many keys so far.
    Object { node: Rc<Node>, seen: u64, after_value: bool, count: usize },
    /// Inside an array: items read, whether one was just read.
    Array { node: Rc<Node>, count: usize, after_value: bool },
    /// A key of an open object (a string), then `:`.
    Colon,
}

/// The machine: every way of reading the text so far (several where a schema allows
/// alternatives); none left means the text cannot become a valid document.
#[derive(Debug, Clone)]
pub struct Machine {
    states: Vec<Vec<Frame>>,
}

impl Machine {
    /// Reads `c`; `false` (and the machine unchanged) when `c` cannot come next.
    pub fn feed(&mut self, c: char) -> bool {
        let mut next = Vec::new();
        for state in &self.states {
            step(state.clone(), c, &mut next);
        }
        if next.is_empty() {
            return false;
        }
        self.states = next;
        true
    }

    /// Reads `text`; `false` (machine unchanged) when some character of it cannot come.
    pub fn feed_str(&mut self, text: &str) -> bool {
        let mut copy = self.clone();
        for c in text.chars() {
            if !copy.feed(c) {
                return false;
            }
        }
        *self = copy;
        true
    }

    /// Whether what was read is a whole document the schema accepts.
    pub fn complete(&self) -> bool {
        self.states.iter().any(|s| finished(s))
    }
}

/// Whether `state` is done: nothing left, or only a number that may end here.
fn finished(state: &[Frame]) -> bool {
    match state {
        [] => true,
        [Frame::Number { at, .. }] => at.complete(),
        _ => false,
    }
}

/// Every state `state` becomes after reading `c`, added to `out`.
fn step(mut state: Vec<Frame>, c: char, out: &mut Vec<Vec<Frame>>) {
    let Some(top) = state.pop() else {
        return;
    };
    match top {
        Frame::Value(node) => start_value(state, &node, c, out),
        Frame::Literal { options, at } => {
            let matching: Vec<String> = options
                .iter()
                .filter(|o| o[at..].starts_with(c))
                .cloned()
                .collect();
            if matching.is_empty() {
                return;
            }
            let at = at + c.len_utf8();
            if matching.iter().any(|o| o.len() == at) {
                // A literal that ends here; the longer ones may go on.
                out.push(state.clone());
            }
            let longer: Vec<String> = matching.into_iter().filter(|o| o.len() > at).collect();
            if !longer.is_empty() {
                state.push(Frame::Literal {
                    options: Rc::new(longer),
                    at,
                });
                out.push(state);
            }
        }
        Frame::Str {
            len,
            max,
            escape,
            hex,
        } => {
            if hex > 0 {
                if c.is_ascii_hexdigit() {
                    state.push(Frame::Str {
                        len,
                        max,
                        escape: false,
                        hex: hex - 1,
                    });
                    out.push(state);
                }
            } else if escape {
                let hex = if c == 'u' { 4 } else { 0 };
                if "\"\\/bfnrtu".contains(c) {
                    state.push(Frame::Str {
                        len: len + 1,
                        max,
                        escape: false,
                        hex,
                    });
                    out.push(state);
                }
            } else if c == '"' {
                out.push(state);
            } else if len < max && !c.is_control() {
                state.push(Frame::Str {
                    len: len + 1,
                    max,
                    escape: c == '\\',
                    hex: 0,
                });
                out.push(state);
            }
        }
        Frame::Number {
            at,
            integer,
            digits,
        } => {
            let to = match (at, c) {
                (Num::Sign, '0') => Some(Num::Zero),
                (Num::Sign, '1'..='9') => Some(Num::Int),
                (Num::Int, '0'..='9') => Some(Num::Int),
                (Num::Zero | Num::Int, '.') if !integer => Some(Num::Dot),
                (Num::Dot | Num::Frac, '0'..='9') => Some(Num::Frac),
                (Num::Zero | Num::Int | Num::Frac, 'e' | 'E') if !integer => Some(Num::Exp),
                (Num::Exp, '+' | '-') => Some(Num::ExpSign),
                (Num::Exp | Num::ExpSign | Num::ExpDigits, '0'..='9') => Some(Num::ExpDigits),
                _ => None,
            };
            let digits = match to {
                Some(next) if next == at && c.is_ascii_digit() => digits + 1,
                Some(_) if c.is_ascii_digit() => 1,
                _ => 0,
            };
            let too_long = match to {
                Some(Num::Int) => digits > 15,
                Some(Num::ExpDigits) => digits > 2,
                Some(Num::Frac) => digits > 15,
                _ => false,
            };
            match to {
                Some(_) if too_long => {}
                Some(at) => {
                    state.push(Frame::Number {
                        at,
                        integer,
                        digits,
                    });
                    out.push(state);
                }
                // The number ends; `c` belongs to what holds it.
                None if at.complete() => step(state, c, out),
                None => {}
            }
        }
        Frame::Colon => {
            if c == ':' {
                out.push(state);
            }
        }
        Frame::Object {
            node,
            seen,
            after_value,
            count,
        } => object_step(state, node, seen, after_value, count, c, out),
        Frame::Array {
            node,
            count,
            after_value,
        } => {
            let Node::Array { items, min, max } = &*node else {
                return;
            };
            let (items, min, max) = (items.clone(), *min, *max);
            if !after_value {
                // Just after `[`.
                if c == ']' && min == 0 {
                    out.push(state);
                } else if max > 0 {
                    state.push(Frame::Array {
                        node,
                        count: 1,
                        after_value: true,
                    });
                    start_value(state, &items, c, out);
                }
            } else if c == ']' && count >= min {
                out.push(state);
            } else if c == ',' && count < max {
                state.push(Frame::Array {
                    node,
                    count: count + 1,
                    after_value: true,
                });
                state.push(Frame::Value(items));
                out.push(state);
            }
        }
    }
}

/// Reads `c` as the first character of a value of `node`.
fn start_value(mut state: Vec<Frame>, node: &Rc<Node>, c: char, out: &mut Vec<Vec<Frame>>) {
    match &**node {
        Node::AnyOf(options) => {
            for option in options {
                start_value(state.clone(), option, c, out);
            }
        }
        Node::Any(depth) => {
            let depth = *depth;
            let mut kinds: Vec<Rc<Node>> = vec![
                Rc::new(Node::Null),
                Rc::new(Node::Boolean),
                Rc::new(Node::Number {
                    integer: false,
                    negative: true,
                }),
                Rc::new(Node::String {
                    max: DEFAULT_MAX_STRING,
                }),
            ];
            if depth > 0 {
                kinds.push(Rc::new(Node::Array {
                    items: Rc::new(Node::Any(depth - 1)),
                    min: 0,
                    max: usize::MAX,
                }));
                kinds.push(Rc::new(Node::Object {
                    properties: Vec::new(),
                    open: Some(Rc::new(Node::Any(depth - 1))),
                }));
            }
            for kind in &kinds {
                start_value(state.clone(), kind, c, out);
            }
        }
        Node::Null => literal(state, &["null".to_owned()], c, out),
        Node::Boolean => literal(state, &["true".to_owned(), "false".to_owned()], c, out),
        Node::Literals(options) => literal(state, options, c, out),
        Node::Number { integer, negative } => {
            let at = match c {
                '-' if *negative => Num::Sign,
                '0' => Num::Zero,
                '1'..='9' => Num::Int,
                _ => return,
            };
            state.push(Frame::Number {
                at,
                integer: *integer,
                digits: u8::from(c.is_ascii_digit()),
            });
            out.push(state);
        }
        Node::String { max } => {
            if c == '"' {
                state.push(Frame::Str {
                    len: 0,
                    max: *max,
                    escape: false,
                    hex: 0,
                });
                out.push(state);
            }
        }
        Node::Object { .. } => {
            if c == '{' {
                state.push(Frame::Object {
                    node: node.clone(),
                    seen: 0,
                    after_value: false,
                    count: 0,
                });
                out.push(state);
            }
        }
        Node::Array { .. } => {
            if c == '[' {
                state.push(Frame::Array {
                    node: node.clone(),
                    count: 0,
                    after_value: false,
                });
                out.push(state);
            }
        }
    }
}

fn literal(mut state: Vec<Frame>, options: &[String], c: char, out: &mut Vec<Vec<Frame>>) {
    state.push(Frame::Literal {
        options: Rc::new(options.to_vec()),
        at: 0,
    });
    step(state, c, out);
}

/// Properties an object can track (a bit each); later ones are never written.
const MAX_PROPERTIES: usize = 64;

/// Reads `c` inside an object: after `{` or a value, `,` or `}` (once every required
/// property is written); after `{` or `,`, a key: a property not written yet, in any
/// order, or any key of an open object.
fn object_step(
    mut state: Vec<Frame>,
    node: Rc<Node>,
    seen: u64,
    after_value: bool,
    count: usize,
    c: char,
    out: &mut Vec<Vec<Frame>>,
) {
    let Node::Object { properties, open } = &*node else {
        return;
    };
    let unseen = |i: usize| i < MAX_PROPERTIES && seen & (1 << i) == 0;
    let required_left = properties
        .iter()
        .enumerate()
        .any(|(i, (_, _, required))| *required && unseen(i));
    if c == '}' && !required_left && (after_value || count == 0) {
        out.push(state);
        return;
    }
    if after_value {
        let more = open.is_some() || (0..properties.len()).any(unseen);
        if c == ',' && more {
            state.push(Frame::Object {
                node: node.clone(),
                seen,
                after_value: false,
                count,
            });
            out.push(state);
        }
        return;
    }
    for (i, (key, value, _)) in properties.iter().enumerate() {
        if !unseen(i) {
            continue;
        }
        let mut branch = state.clone();
        branch.push(Frame::Object {
            node: node.clone(),
            seen: seen | (1 << i),
            after_value: true,
            count: count + 1,
        });
        branch.push(Frame::Value(value.clone()));
        branch.push(Frame::Literal {
            options: Rc::new(vec![format!("{key}:")]),
            at: 0,
        });
        step(branch, c, out);
    }
    if let Some(value) = open {
        let mut branch = state;
        branch.push(Frame::Object {
            node: node.clone(),
            seen,
            after_value: true,
            count: count + 1,
        });
        branch.push(Frame::Value(value.clone()));
        branch.push(Frame::Colon);
        start_value(
            branch,
            &Rc::new(Node::String {
                max: DEFAULT_MAX_STRING,
            }),
            c,
            out,
        );
    }
}

/// A model's vocabulary as a trie of characters, for finding every token whose whole
/// text a machine accepts next.
#[derive(Debug)]
pub struct Vocabulary {
    /// Node 0 is the root; each node's children by character, and the tokens that end
    /// there.
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Default)]
struct TrieNode {
    children: Vec<(char, u32)>,
    tokens: Vec<u32>,
}

impl Vocabulary {
    /// The trie of `pieces` (each token's text by id; empty ones, such as control
    /// tokens, are never allowed).
    pub fn new(pieces: &[String]) -> Self {
        let mut nodes = vec![TrieNode::default()];
        for (id, piece) in pieces.iter().enumerate() {
            if piece.is_empty() {
                continue;
            }
            let mut at = 0usize;
            for c in piece.chars() {
                at = match nodes[at].children.iter().find(|(k, _)| *k == c) {
                    Some((_, child)) => *child as usize,
                    None => {
                        nodes.push(TrieNode::default());
                        let child = nodes.len() - 1;
                        nodes[at].children.push((c, child as u32));
                        child
                    }
                };
            }
            nodes[at].tokens.push(id as u32);
        }
        Self { nodes }
    }

    /// Every token `machine` accepts whole as what comes next.
    pub fn allowed(&self, machine: &Machine) -> Vec<u32> {
        let mut allowed = Vec::new();
        let mut stack = vec![(0usize, machine.clone())];
        while let Some((at, machine)) = stack.pop() {
            for &(c, child) in &self.nodes[at].children {
                let mut next = machine.clone();
                if next.feed(c) {
                    let child = child as usize;
                    allowed.extend_from_slice(&self.nodes[child].tokens);
                    if !self.nodes[child].children.is_empty() {
                        stack.push((child, next));
                    }
                }
            }
        }
        allowed
    }
}

impl Machine {
    /// Whether nothing may follow what was read (the document is closed).
    pub fn closed(&self) -> bool {
        self.states.iter().all(Vec::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn accepts(schema: &Value, text: &str) -> bool {
        let mut machine = Grammar::new(schema).start();
        machine.feed_str(text) && machine.complete()
    }

    fn prefix_ok(schema: &Value, text: &str) -> bool {
        Grammar::new(schema).start().feed_str(text)
    }

    #[test]
    fn objects_take_their_properties_once_each_and_need_the_required_ones() {
        let schema = json!({
            "type": "object",
            "properties": {
                "strategy": { "enum": ["direct_answer", "single_skill"] },
                "note": { "type": "string" },
                "n": { "type": "integer", "minimum": 0 }
            },
            "required": ["strategy", "n"]
        });
        assert!(accepts(&schema, r#"{"strategy":"single_skill","n":3}"#));
        assert!(accepts(&schema, r#"{"strategy":"direct_answer","note":"hi \"x\"","n":0}"#));
        assert!(!accepts(&schema, r#"{"strategy":"single_skill"}"#), "n is required");
        assert!(!prefix_ok(&schema, r#"{"strategy":"other"#));
        assert!(accepts(&schema, r#"{"n":1,"strategy":"single_skill"}"#), "any order");
        assert!(!prefix_ok(&schema, r#"{"n":1,"n""#), "each once");
        assert!(!prefix_ok(&schema, r#"{"strategy":"single_skill","n":-"#), "minimum 0");
        assert!(!prefix_ok(&schema, r#"{"strategy":"single_skill","n":1.5"#), "an integer");
        assert!(!prefix_ok(&schema, "{ "), "compact");
    }

    #[test]
    fn arrays_any_values_and_alternatives() {
        let schema = json!({ "type": "array", "items": { "type": ["string", "null"] }, "maxItems": 2 });
        assert!(accepts(&schema, r#"["a",null]"#));
        assert!(accepts(&schema, "[]"));
        assert!(!prefix_ok(&schema, r#"["a",null,"#), "maxItems");
        assert!(!prefix_ok(&schema, "[1"));
        let any = json!({});
        for text in [r#"{"a":[1,2.5e3,{"b":null}],"c":"d"}"#, "true", "-0.5", r#""s""#] {
            assert!(accepts(&any, text), "{text}");
        }
        assert!(!accepts(&any, r#"{"a":}"#));
        let either = json!({ "anyOf": [
            { "type": "object", "properties": { "tool": { "const": "calculate" } }, "required": ["tool"] },
            { "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"] }
        ]});
        assert!(accepts(&either, r#"{"tool":"calculate"}"#));
        assert!(accepts(&either, r#"{"answer":"42"}"#));
        assert!(!prefix_ok(&either, r#"{"tool":"other"#));
    }

    #[test]
    fn the_vocabulary_allows_exactly_the_tokens_that_fit() {
        let pieces: Vec<String> = ["{", "{\"", "\"a", "\":", "1", "}", " {", "", "12}"]
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        let vocabulary = Vocabulary::new(&pieces);
        let schema = json!({ "type": "object", "properties": { "a": { "type": "integer" } } });
        let mut machine = Grammar::new(&schema).start();
        let mut allowed = vocabulary.allowed(&machine);
        allowed.sort_unstable();
        assert_eq!(allowed, [0, 1], "an opening brace alone or with a quote; not after a space");
        assert!(machine.feed_str("{\"a\":"));
        let mut allowed = vocabulary.allowed(&machine);
        allowed.sort_unstable();
        assert_eq!(allowed, [4, 8]);
        assert!(machine.feed_str("12}") && machine.complete() && machine.closed());
    }

    #[test]
    fn a_number_at_the_end_is_complete_and_strings_keep_their_escapes() {
        let schema = json!({ "type": "number" });
        assert!(accepts(&schema, "12.5"));
        assert!(!accepts(&schema, "12."));
        let text = json!({ "type": "string", "maxLength": 3 });
        assert!(accepts(&text, r#""a\u00e9""#));
        assert!(!prefix_ok(&text, r#""abcd"#), "maxLength");
        assert!(!prefix_ok(&text, "\"a\nb"), "control characters are escaped");
    }

    /// A small deterministic generator (xorshift), so the fuzzed cases are the same on
    /// every run and a failure can be replayed from its seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// A random schema of the kinds the machine enforces, at most `depth` deep.
    fn schema(rng: &mut Rng, depth: usize) -> Value {
        let kinds = if depth == 0 { 6 } else { 9 };
        match rng.below(kinds) {
            0 => json!({ "type": "string", "maxLength": 1 + rng.below(12) }),
            1 => json!({ "type": "integer", "minimum": 0 }),
            2 => json!({ "type": "number" }),
            3 => json!({ "type": "boolean" }),
            4 => json!({ "enum": ["a", "b c", 7, null] }),
            5 => json!({ "type": ["string", "null"], "maxLength": 5 }),
            6 => {
                let mut properties = serde_json::Map::new();
                let mut required = Vec::new();
                for i in 0..1 + rng.below(4) {
                    let key = format!("k{i}");
                    if rng.below(2) == 0 {
                        required.push(json!(key));
                    }
                    properties.insert(key, schema(rng, depth - 1));
                }
                json!({ "type": "object", "properties": properties, "required": required })
            }
            7 => json!({ "type": "array", "items": schema(rng, depth - 1), "maxItems": 3 }),
            _ => json!({ "anyOf": [schema(rng, depth - 1), schema(rng, depth - 1)] }),
        }
    }

    /// A vocabulary like a model's: single characters and pieces of JSON.
    fn pieces() -> Vec<String> {
        let mut pieces: Vec<String> = (' '..='~').map(String::from).collect();
        for piece in [
            "{\"", "\":", "\",\"", "\"}", "},", "}]", "[{", "null", "true", "false", "k0", "k1",
            "k2", "k3", "12", "0.", "e5", "\\u00", "é", "\\n", "b c", "\"a\"", ",\"k",
        ] {
            pieces.push(piece.to_owned());
        }
        pieces
    }

    #[test]
    fn constrained_choices_never_yield_json_the_schema_rejects() {
        let pieces = pieces();
        let vocabulary = Vocabulary::new(&pieces);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut finished = 0;
        for case in 0..300 {
            let schema = schema(&mut rng, 3);
            let check = crate::skill::validate::Schema::compile(&schema).unwrap();
            let mut machine = Grammar::new(&schema).start();
            let mut text = String::new();
            for _ in 0..400 {
                if machine.complete() && (machine.closed() || rng.below(4) == 0) {
                    break;
                }
                let allowed = vocabulary.allowed(&machine);
                if allowed.is_empty() {
                    // Only the end may come (a number as long as numbers go).
                    assert!(machine.complete(), "case {case}: stuck after {text:?} for {schema}");
                    break;
                }
                // Prefer the pieces that close things, so most walks end.
                let closing: Vec<u32> = allowed
                    .iter()
                    .copied()
                    .filter(|&t| pieces[t as usize].contains(['}', ']', '"']))
                    .collect();
                let pick = if !closing.is_empty() && rng.below(3) == 0 {
                    closing[rng.below(closing.len())]
                } else {
                    allowed[rng.below(allowed.len())]
                };
                assert!(machine.feed_str(&pieces[pick as usize]));
                text.push_str(&pieces[pick as usize]);
            }
            if !machine.complete() {
                continue;
            }
            finished += 1;
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("case {case}: {text:?} is not JSON ({e}) for {schema}"));
            let violations = check.check(&value);
            assert!(violations.is_empty(), "case {case}: {text} breaks {schema}: {violations:?}");
        }
        assert!(finished > 200, "only {finished} of 300 walks ended");
    }
}
