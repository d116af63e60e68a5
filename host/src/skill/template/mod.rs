//! The `{{ }}` template language of pipelines, output mappings and `prompt.md`.
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

mod eval;
mod parse;

pub(crate) use eval::type_name;

pub use eval::truthy;
use eval::*;
use parse::*;

/// The variables a template may start from; anything else is a typo caught at parse time.
pub const ROOTS: [&str; 5] = ["input", "steps", "item", "memory", "env"];

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
    #[cfg(feature = "internals")]
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
#[cfg(any(test, feature = "internals"))]
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
mod tests;
