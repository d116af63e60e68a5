//! Parsing templates: `{{ expr }}`, `{{#if}}`, `{{#each}}`, comparisons, filters and paths.

use serde_json::Value;

use super::*;

/// Reads a template's source left to right.
pub(super) struct Parser<'a> {
    pub(super) source: &'a str,
    pub(super) pos: usize,
}

/// How a `{{#if}}` body ended.
pub(super) enum BlockEnd {
    Else,
    EndIf,
}

impl Parser<'_> {
    /// Parses nodes until the end, or until `{{else}}`/`{{/if}}` when inside a block
    /// that opened at `block`.
    pub(super) fn nodes(&mut self, block: Option<usize>) -> Result<Vec<Node>, TemplateError> {
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

pub(super) fn push_text(nodes: &mut Vec<Node>, text: &str) {
    if !text.is_empty() {
        nodes.push(Node::Text(text.to_owned()));
    }
}

/// Splits `text` at each top-level occurrence of `separator` (outside quotes), returning
/// `(offset within text, piece)`.
pub(super) fn split_top<'t>(text: &'t str, separator: &str) -> Vec<(usize, &'t str)> {
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
            // Compared as bytes: `i` may be inside a multi-byte character, where a `str`
            // cannot be sliced (an ASCII separator never matches there).
            None if bytes[i..].starts_with(separator.as_bytes()) => {
                // `|` must not split `||`.
                let doubled = separator == "|"
                    && (bytes.get(i + 1) == Some(&b'|') || (i > 0 && bytes[i - 1] == b'|'));
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

pub(super) fn parse_expr(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
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

pub(super) fn parse_comparison(
    source: &str,
    text: &str,
    offset: usize,
) -> Result<Expr, TemplateError> {
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

pub(super) fn parse_pipe(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
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

pub(super) fn parse_filter(
    source: &str,
    text: &str,
    offset: usize,
) -> Result<Filter, TemplateError> {
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
pub(super) fn unquote_arg(arg: &str) -> String {
    let arg = arg.trim();
    let inner = match arg.as_bytes() {
        [q @ (b'\'' | b'"'), .., last] if last == q && arg.len() >= 2 => &arg[1..arg.len() - 1],
        _ => arg,
    };
    unescape(inner)
}

pub(super) fn unescape(text: &str) -> String {
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

pub(super) fn parse_primary(
    source: &str,
    text: &str,
    offset: usize,
) -> Result<Expr, TemplateError> {
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

pub(super) fn parse_path(source: &str, text: &str, offset: usize) -> Result<Expr, TemplateError> {
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
