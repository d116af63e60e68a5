//! The machine a compiled schema runs: a stack of what is being read per way of
//! reading it, fed one character at a time.

use std::rc::Rc;

use super::{DEFAULT_MAX_STRING, Node};

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
    Str {
        len: usize,
        max: usize,
        escape: bool,
        hex: u8,
    },
    /// Inside a number: where, and digits in its current part (whole digits are kept
    /// to 15 and exponents to 2, so every number reads back as the same `f64`).
    Number { at: Num, integer: bool, digits: u8 },
    /// Inside an object: the properties written (a bit each), whether a value was
    /// just read, how many keys so far.
    Object {
        node: Rc<Node>,
        seen: u64,
        after_value: bool,
        count: usize,
    },
    /// Inside an array: items read, whether one was just read.
    Array {
        node: Rc<Node>,
        count: usize,
        after_value: bool,
    },
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
    /// The machine before the first character of a value of `root`.
    pub(super) fn at(root: Rc<Node>) -> Self {
        Self {
            states: vec![vec![Frame::Value(root)]],
        }
    }

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

impl Machine {
    /// Whether nothing may follow what was read (the document is closed).
    pub fn closed(&self) -> bool {
        self.states.iter().all(Vec::is_empty)
    }
}
