//! The `{{ }}` template language of pipelines, output mappings and `prompt.md` (blueprint
//! §11.5).
//!
//! - References: `input.*`, `steps.<step>.<field>`, `item` / `item.*`, `memory.*`, with
//!   `[n]` indexes (`steps.search.results[0].id`).
//! - Pipes: `pluck:field`, `join:sep` (escapes `\n`, `\t`), `slice:start:end`,
//!   `default:value`, `json`, `format_skills`.
//! - `a || b` falls back to `b` when `a` is empty; comparisons `>`, `<`, `==`, `!=`, `>=`,
//!   `<=`; literals `'text'`, `"text"`, numbers, `true`, `false`, `null`.
//! - Blocks: `{{#if cond}}…{{else}}…{{/if}}`.
//!
//! A template that is a single expression keeps its JSON type ([`Template::evaluate`]), so
//! `"{{input.limit}}"` passes a number on, not the text of a number. Errors name the
//! template and the byte offset of the problem.
//!
//! ```
//! use evo_host::skill::template::Template;
//! use serde_json::json;
//!
//! let scope = json!({ "steps": { "search": { "results": [
//!     { "snippet": "a" }, { "snippet": "b" } ], "count": 2 } } });
//! let joined = Template::parse(r"{{steps.search.results | pluck:snippet | join:\n}}").unwrap();
//! assert_eq!(joined.evaluate(&scope).unwrap(), json!("a\nb"));
//! let count = Template::parse("{{steps.search.count}}").unwrap();
//! assert_eq!(count.evaluate(&scope).unwrap(), json!(2));
//! ```

use std::cmp::Ordering;

use serde_json::Value;

/// The variables a template may start from; anything else is a typo caught at parse time.
pub const ROOTS: [&str; 4] = ["input", "steps", "item", "memory"];

pub use crate::error::report::TemplateError;

/// Longest template text quoted in an error.
const QUOTED_TEMPLATE_CHARS: usize = 120;

/// A parsed template, ready to render many times.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    source: String,
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Expr(Expr),
    If {
        cond: Expr,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Literal(Value),
    Path {
        root: String,
        segments: Vec<Segment>,
    },
    Pipe {
        value: Box<Expr>,
        filter: Filter,
        at: usize,
    },
    Compare(Box<Expr>, CmpOp, Box<Expr>),
    Or(Vec<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Gt,
    Lt,
    Ge,
    Le,
    Eq,
    Ne,
}

#[derive(Debug, Clone, PartialEq)]
enum Filter {
    Pluck(String),
    Join(String),
    Slice(i64, Option<i64>),
    Default(Value),
    Json,
    FormatSkills,
}

impl Template {
    /// Parses `source`, checking every expression and block.
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        let mut parser = Parser { source, pos: 0 };
        let nodes = parser.nodes(None)?;
        Ok(Self {
            source: source.to_owned(),
            nodes,
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the source contains any `{{ }}` at all.
    pub fn is_literal(&self) -> bool {
        self.nodes.iter().all(|n| matches!(n, Node::Text(_)))
    }

    /// Evaluates the template: a single expression (surrounding whitespace aside) keeps
    /// its JSON type; anything else renders to a string.
    pub fn evaluate(&self, scope: &Value) -> Result<Value, TemplateError> {
        let mut exprs = self.nodes.iter().filter(|n| match n {
            Node::Text(text) => !text.trim().is_empty(),
            _ => true,
        });
        if let (Some(Node::Expr(expr)), None) = (exprs.next(), exprs.next()) {
            return self.eval(expr, scope);
        }
        self.render(scope).map(Value::String)
    }

    /// Renders the template to text: strings as they are, other values as JSON, missing
    /// values as nothing.
    pub fn render(&self, scope: &Value) -> Result<String, TemplateError> {
        let mut out = String::with_capacity(self.source.len());
        self.render_nodes(&self.nodes, scope, &mut out)?;
        Ok(out)
    }

    /// Evaluates the template as a condition (see [`truthy`]).
    pub fn test(&self, scope: &Value) -> Result<bool, TemplateError> {
        self.evaluate(scope).map(|v| truthy(&v))
    }

    fn render_nodes(
        &self,
        nodes: &[Node],
        scope: &Value,
        out: &mut String,
    ) -> Result<(), TemplateError> {
        for node in nodes {
            match node {
                Node::Text(text) => out.push_str(text),
                Node::Expr(expr) => push_value(out, &self.eval(expr, scope)?),
                Node::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let branch = if truthy(&self.eval(cond, scope)?) {
                        then
                    } else {
                        otherwise
                    };
                    self.render_nodes(branch, scope, out)?;
                }
            }
        }
        Ok(())
    }

    fn eval(&self, expr: &Expr, scope: &Value) -> Result<Value, TemplateError> {
        Ok(match expr {
            Expr::Literal(value) => value.clone(),
            Expr::Path { root, segments } => {
                let mut current = scope.get(root.as_str()).unwrap_or(&Value::Null);
                for segment in segments {
                    current = match segment {
                        Segment::Key(key) => current.get(key.as_str()),
                        Segment::Index(i) => current.get(*i),
                    }
                    .unwrap_or(&Value::Null);
                }
                current.clone()
            }
            Expr::Pipe { value, filter, at } => {
                let value = self.eval(value, scope)?;
                apply(filter, value).map_err(|message| self.error(*at, message))?
            }
            Expr::Compare(left, op, right) => {
                let (left, right) = (self.eval(left, scope)?, self.eval(right, scope)?);
                Value::Bool(compare(&left, *op, &right))
            }
            Expr::Or(options) => {
                let mut last = Value::Null;
                for option in options {
                    last = self.eval(option, scope)?;
                    if truthy(&last) {
                        break;
                    }
                }
                last
            }
        })
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> TemplateError {
        error(&self.source, offset, message)
    }
}

fn error(source: &str, offset: usize, message: impl Into<String>) -> TemplateError {
    let template = if source.chars().count() > QUOTED_TEMPLATE_CHARS {
        let cut: String = source.chars().take(QUOTED_TEMPLATE_CHARS).collect();
        format!("{cut}…")
    } else {
        source.to_owned()
    };
    TemplateError {
        template,
        offset,
        message: message.into(),
    }
}

/// Whether a value counts as true in `{{#if}}`, `condition` and `||`: everything but
/// `null`, `false`, `0`, `""` and `[]`.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}

/// Text of a value as interpolated into a string.
fn push_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => {}
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
}

fn compare(left: &Value, op: CmpOp, right: &Value) -> bool {
    let ordering = match (as_number(left), as_number(right)) {
        (Some(l), Some(r)) => l.partial_cmp(&r),
        _ => match (left, right) {
            (Value::String(l), Value::String(r)) => Some(l.cmp(r)),
            _ => None,
        },
    };
    match op {
        CmpOp::Eq => ordering.map_or_else(|| left == right, Ordering::is_eq),
        CmpOp::Ne => !ordering.map_or_else(|| left == right, Ordering::is_eq),
        CmpOp::Gt => ordering.is_some_and(Ordering::is_gt),
        CmpOp::Lt => ordering.is_some_and(Ordering::is_lt),
        CmpOp::Ge => ordering.is_some_and(Ordering::is_ge),
        CmpOp::Le => ordering.is_some_and(Ordering::is_le),
    }
}

/// Numbers, and strings that hold one (a model often writes `"3"` for `3`).
fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn apply(filter: &Filter, value: Value) -> Result<Value, String> {
    Ok(match filter {
        Filter::Pluck(field) => match value {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| item.get(field.as_str()).cloned().unwrap_or(Value::Null))
                    .collect(),
            ),
            Value::Null => Value::Array(Vec::new()),
            other => return Err(format!("pluck needs an array, got {}", type_name(&other))),
        },
        Filter::Join(separator) => match value {
            Value::Array(items) => {
                let mut out = String::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(separator);
                    }
                    push_value(&mut out, item);
                }
                Value::String(out)
            }
            Value::Null => Value::String(String::new()),
            Value::String(s) => Value::String(s),
            other => return Err(format!("join needs an array, got {}", type_name(&other))),
        },
        Filter::Slice(start, end) => match value {
            Value::Array(items) => {
                let (from, to) = bounds(items.len(), *start, *end);
                Value::Array(items[from..to].to_vec())
            }
            Value::String(text) => {
                let chars: Vec<char> = text.chars().collect();
                let (from, to) = bounds(chars.len(), *start, *end);
                Value::String(chars[from..to].iter().collect())
            }
            Value::Null => Value::Null,
            other => {
                return Err(format!(
                    "slice needs an array or a string, got {}",
                    type_name(&other)
                ));
            }
        },
        Filter::Default(fallback) => {
            if matches!(&value, Value::Null) || value.as_str() == Some("") {
                fallback.clone()
            } else {
                value
            }
        }
        Filter::Json => Value::String(value.to_string()),
        Filter::FormatSkills => match value {
            Value::Array(skills) => Value::String(
                skills
                    .iter()
                    .map(|skill| match skill {
                        Value::String(name) => format!("- {name}"),
                        other => {
                            let name = other.get("name").and_then(Value::as_str).unwrap_or("?");
                            match other.get("description").and_then(Value::as_str) {
                                Some(description) => format!("- {name}: {description}"),
                                None => format!("- {name}"),
                            }
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Value::Null => Value::String(String::new()),
            Value::String(s) => Value::String(s),
            other => {
                return Err(format!(
                    "format_skills needs an array of skills, got {}",
                    type_name(&other)
                ));
            }
        },
    })
}

/// Clamped `[from, to)` for a slice with JavaScript's negative-index rules.
fn bounds(len: usize, start: i64, end: Option<i64>) -> (usize, usize) {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let clamp = |i: i64| -> usize {
        let i = if i < 0 {
            (len_i + i).max(0)
        } else {
            i.min(len_i)
        };
        usize::try_from(i).unwrap_or(0)
    };
    let from = clamp(start);
    let to = clamp(end.unwrap_or(len_i));
    (from, to.max(from))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct Parser<'a> {
    source: &'a str,
    pos: usize,
}

/// How a `{{#if}}` body ended.
enum BlockEnd {
    Else,
    EndIf,
}

impl Parser<'_> {
    /// Parses nodes until the end, or until `{{else}}`/`{{/if}}` when inside a block
    /// that opened at `block`.
    fn nodes(&mut self, block: Option<usize>) -> Result<Vec<Node>, TemplateError> {
        Ok(self.nodes_until(block)?.0)
    }

    fn nodes_until(
        &mut self,
        block: Option<usize>,
    ) -> Result<(Vec<Node>, Option<BlockEnd>), TemplateError> {
        let mut nodes = Vec::new();
        loop {
            let rest = &self.source[self.pos..];
            let Some(open) = rest.find("{{") else {
                push_text(&mut nodes, rest);
                self.pos = self.source.len();
                return match block {
                    Some(at) => Err(error(
                        self.source,
                        at,
                        "`{{#if}}` is never closed; add `{{/if}}`",
                    )),
                    None => Ok((nodes, None)),
                };
            };
            push_text(&mut nodes, &rest[..open]);
            let tag_start = self.pos + open;
            let inner_start = tag_start + 2;
            let Some(close) = self.source[inner_start..].find("}}") else {
                return Err(error(
                    self.source,
                    tag_start,
                    "`{{` is never closed; add `}}`",
                ));
            };
            let inner_end = inner_start + close;
            self.pos = inner_end + 2;
            let inner = &self.source[inner_start..inner_end];
            let trimmed = inner.trim();
            if let Some(cond) = trimmed.strip_prefix("#if") {
                if !cond.starts_with(char::is_whitespace) {
                    return Err(error(
                        self.source,
                        tag_start,
                        "write a condition after `#if`, as in `{{#if input.text}}`",
                    ));
                }
                let cond_offset = inner_start + (inner.len() - inner.trim_start().len()) + 3;
                let cond = parse_expr(self.source, cond, cond_offset)?;
                self.skip_standalone_newline(&mut nodes);
                let (then, end) = self.nodes_until(Some(tag_start))?;
                let otherwise = match end {
                    Some(BlockEnd::Else) => {
                        let (otherwise, end) = self.nodes_until(Some(tag_start))?;
                        if matches!(end, Some(BlockEnd::Else)) {
                            return Err(error(
                                self.source,
                                tag_start,
                                "`{{#if}}` has two `{{else}}`s",
                            ));
                        }
                        otherwise
                    }
                    _ => Vec::new(),
                };
                nodes.push(Node::If {
                    cond,
                    then,
                    otherwise,
                });
            } else if trimmed == "else" || trimmed == "/if" {
                if block.is_none() {
                    return Err(error(
                        self.source,
                        tag_start,
                        format!("`{{{{{trimmed}}}}}` without an open `{{{{#if}}}}`"),
                    ));
                }
                self.skip_standalone_newline(&mut nodes);
                let end = if trimmed == "else" {
                    BlockEnd::Else
                } else {
                    BlockEnd::EndIf
                };
                return Ok((nodes, Some(end)));
            } else {
                nodes.push(Node::Expr(parse_expr(self.source, inner, inner_start)?));
            }
        }
    }

    /// A block tag alone on its line leaves no blank line behind.
    fn skip_standalone_newline(&mut self, nodes: &mut [Node]) {
        let line_start = match nodes.last() {
            None => true,
            Some(Node::Text(text)) => {
                let tail = text.rsplit('\n').next().unwrap_or_default();
                tail.trim().is_empty() && (text.contains('\n') || nodes.len() == 1)
            }
            Some(_) => false,
        };
        let rest = &self.source[self.pos..];
        if line_start && let Some(after) = rest.strip_prefix('\n').or(rest.strip_prefix("\r\n")) {
            self.pos += rest.len() - after.len();
            if let Some(Node::Text(text)) = nodes.last_mut() {
                let keep = text.trim_end_matches([' ', '\t']).len();
                text.truncate(keep);
            }
        }
    }
}

fn push_text(nodes: &mut Vec<Node>, text: &str) {
    if !text.is_empty() {
        nodes.push(Node::Text(text.to_owned()));
    }
}

/// Splits `text` at each top-level occurrence of `separator` (outside quotes), returning
/// `(offset within text, piece)`.
fn split_top<'t>(text: &'t str, separator: &str) -> Vec<(usize, &'t str)> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut quote = None;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if text[i..].starts_with(separator) => {
                // `|` must not split `||`.
                let doubled = separator == "|"
                    && (text[i + 1..].starts_with('|') || (i > 0 && bytes[i - 1] == b'|'));
                if !doubled {
                    pieces.push((start, &text[start..i]));
                    start = i + separator.len();
                    i = start;
                    continue;
                }
            }
            None => {}
        }
        i += 1;
    }
    pieces.push((start, &text[start..]));
    pieces
}

fn parse_expr(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
    if text.trim().is_empty() {
        return Err(error(
            source,
            offset,
            "empty `{{ }}`; write an expression such as `input.text`",
        ));
    }
    let options = split_top(text, "||");
    if options.len() > 1 {
        return options
            .into_iter()
            .map(|(at, option)| parse_comparison(source, option, offset + at))
            .collect::<Result<_, _>>()
            .map(Expr::Or);
    }
    parse_comparison(source, text, offset)
}

fn parse_comparison(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
    if text.trim().is_empty() {
        return Err(error(source, offset, "`||` needs a value on both sides"));
    }
    // Two-character operators first, so `>=` is not read as `>`.
    for (token, op) in [
        (">=", CmpOp::Ge),
        ("<=", CmpOp::Le),
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        (">", CmpOp::Gt),
        ("<", CmpOp::Lt),
    ] {
        let pieces = split_top(text, token);
        if pieces.len() == 2 {
            let (left, right) = (pieces[0], pieces[1]);
            if left.1.trim().is_empty() || right.1.trim().is_empty() {
                return Err(error(
                    source,
                    offset + right.0 - token.len(),
                    format!("`{token}` needs a value on both sides"),
                ));
            }
            return Ok(Expr::Compare(
                Box::new(parse_pipe(source, left.1, offset + left.0)?),
                op,
                Box::new(parse_pipe(source, right.1, offset + right.0)?),
            ));
        }
        if pieces.len() > 2 {
            return Err(error(
                source,
                offset,
                format!("only one comparison per expression; `{token}` appears twice"),
            ));
        }
    }
    parse_pipe(source, text, offset)
}

fn parse_pipe(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
    let mut stages = split_top(text, "|").into_iter();
    let (at, first) = stages.next().unwrap_or((0, text));
    let mut expr = parse_primary(source, first, offset + at)?;
    for (at, stage) in stages {
        let filter = parse_filter(source, stage, offset + at)?;
        expr = Expr::Pipe {
            value: Box::new(expr),
            filter,
            at: offset + at,
        };
    }
    Ok(expr)
}

fn parse_filter(source: &str, text: &str, offset: usize) -> Result<Filter, TemplateError> {
    let mut parts = split_top(text, ":").into_iter();
    let (_, name) = parts.next().unwrap_or((0, text));
    let args: Vec<String> = parts.map(|(_, arg)| unquote_arg(arg)).collect();
    let name = name.trim();
    let fail = |message: String| Err(error(source, offset, message));
    let arity = |n: usize, usage: &str| -> Result<(), TemplateError> {
        if args.len() == n {
            Ok(())
        } else {
            Err(error(source, offset, format!("use `{usage}`")))
        }
    };
    Ok(match name {
        "pluck" => {
            arity(1, "pluck:field")?;
            Filter::Pluck(args[0].clone())
        }
        "join" => match args.len() {
            0 => Filter::Join(",".to_owned()),
            1 => Filter::Join(args[0].clone()),
            _ => return fail("use `join:separator` (quote a separator that holds `:`)".into()),
        },
        "slice" => {
            let number = |arg: &String| arg.trim().parse::<i64>().ok();
            match args.as_slice() {
                [start] if number(start).is_some() => {
                    Filter::Slice(number(start).unwrap_or(0), None)
                }
                [start, end] if number(start).is_some() && number(end).is_some() => {
                    Filter::Slice(number(start).unwrap_or(0), number(end))
                }
                _ => {
                    return fail(
                        "use `slice:start` or `slice:start:end` with whole numbers".into(),
                    );
                }
            }
        }
        "default" => {
            arity(1, "default:value")?;
            let raw = text.split_once(':').map_or("", |(_, arg)| arg).trim();
            let value = if raw.starts_with(['\'', '"']) {
                Value::String(args[0].clone())
            } else {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(args[0].clone()))
            };
            Filter::Default(value)
        }
        "json" => {
            arity(0, "json")?;
            Filter::Json
        }
        "format_skills" => {
            arity(0, "format_skills")?;
            Filter::FormatSkills
        }
        other => {
            return fail(format!(
                "unknown pipe `{other}`; use pluck, join, slice, default, json or format_skills"
            ));
        }
    })
}

/// A filter argument: trimmed, quotes removed, escapes (`\n`, `\t`, …) applied.
fn unquote_arg(arg: &str) -> String {
    let arg = arg.trim();
    let inner = match arg.as_bytes() {
        [q @ (b'\'' | b'"'), .., last] if last == q && arg.len() >= 2 => &arg[1..arg.len() - 1],
        _ => arg,
    };
    unescape(inner)
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn parse_primary(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
    let lead = text.len() - text.trim_start().len();
    let offset = offset + lead;
    let text = text.trim();
    if text.is_empty() {
        return Err(error(source, offset, "missing value before `|`"));
    }
    if let [q @ (b'\'' | b'"'), .., last] = text.as_bytes() {
        if last != q || text.len() < 2 {
            return Err(error(source, offset, "string literal is never closed"));
        }
        return Ok(Expr::Literal(Value::String(unescape(
            &text[1..text.len() - 1],
        ))));
    }
    match text {
        "true" => return Ok(Expr::Literal(Value::Bool(true))),
        "false" => return Ok(Expr::Literal(Value::Bool(false))),
        "null" => return Ok(Expr::Literal(Value::Null)),
        _ => {}
    }
    if text.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return serde_json::from_str::<serde_json::Number>(text)
            .map(|n| Expr::Literal(Value::Number(n)))
            .map_err(|_| error(source, offset, format!("`{text}` is not a number")));
    }
    parse_path(source, text, offset)
}

fn parse_path(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
    let is_ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    };
    let mut segments = Vec::new();
    let mut root = None;
    for part in text.split('.') {
        let (key, mut indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !is_ident(key) {
            return Err(error(
                source,
                offset,
                format!(
                    "`{text}` is not a reference; write e.g. `input.text` or `steps.search.results[0]`"
                ),
            ));
        }
        match root {
            None => root = Some(key.to_owned()),
            Some(_) => segments.push(Segment::Key(key.to_owned())),
        }
        while !indexes.is_empty() {
            let close = indexes
                .find(']')
                .ok_or_else(|| error(source, offset, format!("`[` without `]` in `{text}`")))?;
            let index = indexes[1..close].trim().parse::<usize>().map_err(|_| {
                error(
                    source,
                    offset,
                    format!("index in `{text}` must be a whole number"),
                )
            })?;
            segments.push(Segment::Index(index));
            indexes = &indexes[close + 1..];
            if !indexes.is_empty() && !indexes.starts_with('[') {
                return Err(error(
                    source,
                    offset,
                    format!("unexpected `{indexes}` in `{text}`"),
                ));
            }
        }
    }
    let root = root.unwrap_or_default();
    if !ROOTS.contains(&root.as_str()) {
        return Err(error(
            source,
            offset,
            format!(
                "unknown variable `{root}`; references start with {}",
                ROOTS.map(|r| format!("`{r}`")).join(", ")
            ),
        ));
    }
    Ok(Expr::Path { root, segments })
}

/// A JSON value whose strings may be templates (a pipeline step's `input`, an
/// `outputMapping`), compiled once and rendered per call.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueTemplate {
    /// A value with no templates in it.
    Literal(Value),
    /// A string holding `{{ }}`.
    Template(Template),
    /// An array with templates inside.
    Array(Vec<ValueTemplate>),
    /// An object with templates inside.
    Object(Vec<(String, ValueTemplate)>),
}

impl ValueTemplate {
    /// Compiles every string of `value` that holds `{{`.
    pub fn compile(value: &Value) -> Result<Self, TemplateError> {
        Ok(match value {
            Value::String(text) if text.contains("{{") => Self::Template(Template::parse(text)?),
            Value::Array(items) if has_template(value) => {
                Self::Array(items.iter().map(Self::compile).collect::<Result<_, _>>()?)
            }
            Value::Object(fields) if has_template(value) => Self::Object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Self::compile(v)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => Self::Literal(other.clone()),
        })
    }

    /// The value with every template evaluated against `scope`; a string that is a
    /// single expression keeps its JSON type.
    pub fn render(&self, scope: &Value) -> Result<Value, TemplateError> {
        Ok(match self {
            Self::Literal(value) => value.clone(),
            Self::Template(template) => template.evaluate(scope)?,
            Self::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| item.render(scope))
                    .collect::<Result<_, _>>()?,
            ),
            Self::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.render(scope)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
        })
    }
}

fn has_template(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains("{{"),
        Value::Array(items) => items.iter().any(has_template),
        Value::Object(fields) => fields.values().any(has_template),
        _ => false,
    }
}

/// Evaluates every string in `value` that holds `{{ }}` as a template (recursively through
/// arrays and objects), keeping the JSON type of single-expression strings.
pub fn render_value(value: &Value, scope: &Value) -> Result<Value, TemplateError> {
    ValueTemplate::compile(value)?.render(scope)
}

/// A `condition` or `foreach` expression: `{{ … }}` or a bare expression.
pub fn parse_expression(text: &str) -> Result<Template, TemplateError> {
    if text.contains("{{") {
        Template::parse(text)
    } else {
        Template::parse(&format!("{{{{{text}}}}}")).map_err(|mut e| {
            e.offset = e.offset.saturating_sub(2);
            e.template = text.to_owned();
            e
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn eval(template: &str, scope: &Value) -> Value {
        Template::parse(template)
            .unwrap_or_else(|e| panic!("{e}"))
            .evaluate(scope)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn scope() -> Value {
        json!({
            "input": { "topic": "rust", "limit": 10, "empty": "", "tags": ["a", "b", "c"],
                       "skills": [{ "name": "calc", "description": "Adds." }, { "name": "echo" }] },
            "steps": { "search": { "count": 2, "results": [
                { "snippet": "one", "score": 0.9 }, { "snippet": "two", "score": 0.5 } ] } },
            "item": { "content": "fn main() {}" },
            "memory": { "longTerm": "likes tea" }
        })
    }

    #[test]
    fn single_expressions_keep_their_json_type() {
        let s = scope();
        assert_eq!(eval("{{input.limit}}", &s), json!(10));
        assert_eq!(eval("  {{ input.tags }}\n", &s), json!(["a", "b", "c"]));
        assert_eq!(
            eval("{{steps.search.results[1]}}", &s),
            json!({ "snippet": "two", "score": 0.5 })
        );
        assert_eq!(eval("{{steps.search.results[0].score}}", &s), json!(0.9));
        assert_eq!(eval("{{input.missing}}", &s), Value::Null);
        assert_eq!(eval("limit={{input.limit}}", &s), json!("limit=10"));
        assert_eq!(eval("{{input.tags}}!", &s), json!("[\"a\",\"b\",\"c\"]!"));
        assert_eq!(eval("{{item.content}}", &s), json!("fn main() {}"));
        assert_eq!(eval("{{memory.longTerm}}", &s), json!("likes tea"));
    }

    #[test]
    fn pipes_transform_values() {
        let s = scope();
        // The blueprint's §5.4 pipeline, with the `\\n\\n` of its JSON source.
        assert_eq!(
            eval(r"{{steps.search.results | pluck:snippet | join:\n\n}}", &s),
            json!("one\n\ntwo")
        );
        assert_eq!(eval("{{input.tags | join}}", &s), json!("a,b,c"));
        assert_eq!(eval("{{input.tags | join:' | '}}", &s), json!("a | b | c"));
        assert_eq!(eval("{{input.tags | slice:0:2}}", &s), json!(["a", "b"]));
        assert_eq!(eval("{{input.tags | slice:-1}}", &s), json!(["c"]));
        assert_eq!(eval("{{input.topic | slice:1:3}}", &s), json!("us"));
        assert_eq!(eval("{{input.missing | default:5}}", &s), json!(5));
        assert_eq!(eval("{{input.empty | default:'none'}}", &s), json!("none"));
        assert_eq!(eval("{{input.limit | default:5}}", &s), json!(10));
        assert_eq!(
            eval("{{input.tags | json}}", &s),
            json!("[\"a\",\"b\",\"c\"]")
        );
        assert_eq!(
            eval("{{input.skills | format_skills}}", &s),
            json!("- calc: Adds.\n- echo")
        );
    }

    #[test]
    fn fallbacks_and_comparisons() {
        let s = scope();
        assert_eq!(
            eval("{{steps.summarize.summary || '未找到相关内容'}}", &s),
            json!("未找到相关内容")
        );
        assert_eq!(eval("{{input.topic || 'x'}}", &s), json!("rust"));
        assert_eq!(eval("{{input.empty || input.missing || 3}}", &s), json!(3));
        assert_eq!(eval("{{steps.search.count > 0}}", &s), json!(true));
        assert_eq!(eval("{{steps.search.count < 2}}", &s), json!(false));
        assert_eq!(eval("{{steps.search.count >= 2}}", &s), json!(true));
        assert_eq!(eval("{{steps.search.count <= 1}}", &s), json!(false));
        assert_eq!(eval("{{input.topic == 'rust'}}", &s), json!(true));
        assert_eq!(eval("{{input.topic != 'rust'}}", &s), json!(false));
        assert_eq!(
            eval("{{input.tags | slice:0:1 | join == 'a'}}", &s),
            json!(true)
        );
        assert_eq!(eval("{{input.missing > 0}}", &s), json!(false));
    }

    #[test]
    fn if_blocks_render_one_branch_and_leave_no_blank_lines() {
        let s = scope();
        let template = "Topic: {{input.topic}}\n{{#if input.missing}}\nmissing!\n{{else}}\nall there\n{{/if}}\nend";
        assert_eq!(eval(template, &s), json!("Topic: rust\nall there\nend"));
        assert_eq!(
            eval("{{#if steps.search.count > 1}}many{{/if}}", &s),
            json!("many")
        );
        assert_eq!(
            eval(
                "{{#if input.tags}}{{#if input.empty}}x{{else}}y{{/if}}{{/if}}",
                &s
            ),
            json!("y")
        );
    }

    #[test]
    fn errors_point_at_the_template_and_offset() {
        let err = Template::parse("Hello {{input.name").unwrap_err();
        assert_eq!(err.offset, 6);
        assert_eq!(err.message, "`{{` is never closed; add `}}`");
        let err = Template::parse("{{inptu.name}}").unwrap_err();
        assert_eq!(err.offset, 2);
        assert!(err.message.starts_with("unknown variable `inptu`"), "{err}");
        let err = Template::parse("ab {{input.x | shout}}").unwrap_err();
        assert_eq!(err.offset, 14);
        assert!(err.message.starts_with("unknown pipe `shout`"), "{err}");
        let err = Template::parse("{{#if input.x}}never closed").unwrap_err();
        assert_eq!(
            (err.offset, err.message.as_str()),
            (0, "`{{#if}}` is never closed; add `{{/if}}`")
        );
        let err = Template::parse("x {{/if}}").unwrap_err();
        assert_eq!(err.offset, 2);
        let err = Template::parse("{{input.topic | pluck:x}}")
            .unwrap()
            .evaluate(&scope())
            .unwrap_err();
        assert_eq!(err.message, "pluck needs an array, got a string");
        assert_eq!(
            err.to_string(),
            "template error at offset 15 of \"{{input.topic | pluck:x}}\": pluck needs an array, got a string"
        );
    }

    #[test]
    fn render_value_walks_json() {
        let input = json!({ "query": "{{input.topic}}", "limit": "{{input.limit}}",
                            "list": ["{{input.tags | slice:0:1}}", 3], "plain": "no braces" });
        assert_eq!(
            render_value(&input, &scope()).unwrap(),
            json!({ "query": "rust", "limit": 10, "list": [["a"], 3], "plain": "no braces" })
        );
        assert!(
            parse_expression("steps.search.count > 0")
                .unwrap()
                .test(&scope())
                .unwrap()
        );
        assert!(
            !parse_expression("{{input.empty}}")
                .unwrap()
                .test(&scope())
                .unwrap()
        );
    }
}
