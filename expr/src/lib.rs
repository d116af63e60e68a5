//! Arithmetic expressions (`sqrt(144) + 10`): a small recursive-descent evaluator.
//!
//! Shared by Evo's in-process `calculate` tool and the `skills-wasm/calculate`
//! component, so both give the same answers and the same errors.
//!
//! ```
//! assert_eq!(evo_expr::evaluate("sqrt(144) + 10"), Ok(22.0));
//! assert_eq!(evo_expr::to_json_number(22.0), serde_json::Number::from(22));
//! let err = evo_expr::evaluate("1 +").unwrap_err();
//! assert_eq!(err.to_string(), "the expression ends too early at position 4");
//! ```
//!
//! Grammar (usual precedence, `^` right-associative and above unary minus):
//! expr := term (('+' | '-') term)*; term := unary (('*' | '/' | '%') unary)*;
//! unary := '-' unary | power; power := atom ('^' unary)?;
//! atom := number | name | name '(' args ')' | '(' expr ')'.

#![deny(missing_docs)]

use std::fmt;

/// Nesting deeper than this is refused, so a hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated, with the character offset.
#[derive(Debug, PartialEq)]
pub struct ExprError {
    message: String,
    offset: usize,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at position {}", self.message, self.offset + 1)
    }
}

/// Integers up to 2^53 are exact in an f64, so printing them as integers loses nothing.
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// `value` as a JSON number: whole numbers without a fraction (`22`, not `22.0`).
pub fn to_json_number(value: f64) -> serde_json::Number {
    if value.fract() == 0.0 && value.abs() <= MAX_EXACT_INTEGER {
        serde_json::Number::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).unwrap_or_else(|| serde_json::Number::from(0))
    }
}

/// Evaluates `source`; the result is always a finite number.
pub fn evaluate(source: &str) -> Result<f64, ExprError> {
    let mut parser = Parser {
        chars: source.chars().collect(),
        pos: 0,
        depth: 0,
    };
    parser.skip_space();
    if parser.peek().is_none() {
        return Err(parser.error("the expression is empty"));
    }
    let value = parser.expr()?;
    parser.skip_space();
    if let Some(c) = parser.peek() {
        return Err(parser.error(format!("unexpected '{c}'")));
    }
    if !value.is_finite() {
        return Err(ExprError {
            message: "the result is not a finite number".into(),
            offset: 0,
        });
    }
    Ok(value)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn error(&self, message: impl Into<String>) -> ExprError {
        ExprError {
            message: message.into(),
            offset: self.pos,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Result<f64, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let mut value = self.term()?;
        loop {
            if self.eat('+') {
                value += self.term()?;
            } else if self.eat('-') {
                value -= self.term()?;
            } else {
                break;
            }
        }
        self.depth -= 1;
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, ExprError> {
        let mut value = self.unary()?;
        loop {
            if self.eat('*') {
                value *= self.unary()?;
            } else if self.eat('/') {
                self.skip_space();
                let at = self.pos;
                let divisor = self.unary()?;
                if divisor == 0.0 {
                    return Err(ExprError {
                        message: "division by zero".into(),
                        offset: at,
                    });
                }
                value /= divisor;
            } else if self.eat('%') {
                self.skip_space();
                let at = self.pos;
                let divisor = self.unary()?;
                if divisor == 0.0 {
                    return Err(ExprError {
                        message: "remainder by zero".into(),
                        offset: at,
                    });
                }
                value %= divisor;
            } else {
                return Ok(value);
            }
        }
    }

    fn unary(&mut self) -> Result<f64, ExprError> {
        if self.eat('-') {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
            }
            let value = -self.unary()?;
            self.depth -= 1;
            return Ok(value);
        }
        if self.eat('+') {
            return self.unary();
        }
        self.power()
    }

    fn power(&mut self) -> Result<f64, ExprError> {
        let base = self.atom()?;
        if self.eat('^') {
            let exponent = self.unary()?;
            return Ok(base.powf(exponent));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<f64, ExprError> {
        self.skip_space();
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() => self.name(),
            Some('(') => {
                self.pos += 1;
                let value = self.expr()?;
                if !self.eat(')') {
                    return Err(self.error("expected ')'"));
                }
                Ok(value)
            }
            Some(c) => Err(self.error(format!("unexpected '{c}'"))),
            None => Err(self.error("the expression ends too early")),
        }
    }

    fn number(&mut self) -> Result<f64, ExprError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
            self.pos += 1;
        }
        if matches!(self.peek(), Some('e' | 'E'))
            && self
                .chars
                .get(self.pos + 1)
                .is_some_and(|c| c.is_ascii_digit() || *c == '-' || *c == '+')
        {
            self.pos += 2;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse().map_err(|_| ExprError {
            message: format!("'{text}' is not a number"),
            offset: start,
        })
    }

    fn name(&mut self) -> Result<f64, ExprError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos]
            .iter()
            .collect::<String>()
            .to_lowercase();
        if !self.eat('(') {
            return match name.as_str() {
                "pi" => Ok(std::f64::consts::PI),
                "e" => Ok(std::f64::consts::E),
                _ => Err(ExprError {
                    message: format!("unknown name '{name}'"),
                    offset: start,
                }),
            };
        }
        let mut args = Vec::new();
        if !self.eat(')') {
            loop {
                args.push(self.expr()?);
                if self.eat(')') {
                    break;
                }
                if !self.eat(',') {
                    return Err(self.error("expected ',' or ')'"));
                }
            }
        }
        apply(&name, &args).map_err(|message| ExprError {
            message,
            offset: start,
        })
    }
}

fn apply(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| match args {
        [x] => Ok(f(*x)),
        _ => Err(format!("{name}() takes 1 argument, got {}", args.len())),
    };
    let two = |f: fn(f64, f64) -> f64| match args {
        [x, y] => Ok(f(*x, *y)),
        _ => Err(format!("{name}() takes 2 arguments, got {}", args.len())),
    };
    match name {
        "sqrt" => match args {
            [x] if *x < 0.0 => Err(format!("sqrt() of a negative number ({x})")),
            _ => one(f64::sqrt),
        },
        "abs" => one(f64::abs),
        "ln" => one(f64::ln),
        "log" => one(f64::log10),
        "exp" => one(f64::exp),
        "sin" => one(f64::sin),
        "cos" => one(f64::cos),
        "tan" => one(f64::tan),
        "floor" => one(f64::floor),
        "ceil" => one(f64::ceil),
        "round" => one(f64::round),
        "min" => two(f64::min),
        "max" => two(f64::max),
        "pow" => two(f64::powf),
        _ => Err(format!("unknown function '{name}()'")),
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn evaluates_the_seed_expression() {
        assert_eq!(evaluate("sqrt(144) + 10"), Ok(22.0));
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(evaluate("2 + 3 * 4"), Ok(14.0));
        assert_eq!(evaluate("(2 + 3) * 4"), Ok(20.0));
        assert_eq!(evaluate("2 ^ 3 ^ 2"), Ok(512.0));
        assert_eq!(evaluate("-2 ^ 2"), Ok(-4.0));
        assert_eq!(evaluate("10 % 4 - 1"), Ok(1.0));
        assert_eq!(evaluate("max(1, 2) * pi / pi"), Ok(2.0));
        assert_eq!(evaluate("1.5e3"), Ok(1500.0));
    }

    #[test]
    fn errors_say_what_and_where() {
        assert_eq!(
            evaluate("1 / 0").unwrap_err().to_string(),
            "division by zero at position 5"
        );
        assert_eq!(
            evaluate("2 +").unwrap_err().to_string(),
            "the expression ends too early at position 4"
        );
        assert_eq!(
            evaluate("foo(1)").unwrap_err().to_string(),
            "unknown function 'foo()' at position 1"
        );
        assert_eq!(
            evaluate("1 & 2").unwrap_err().to_string(),
            "unexpected '&' at position 3"
        );
        assert_eq!(
            evaluate("sqrt(-1)").unwrap_err().to_string(),
            "sqrt() of a negative number (-1) at position 1"
        );
        assert_eq!(
            evaluate("").unwrap_err().to_string(),
            "the expression is empty at position 1"
        );
        assert!(
            evaluate(&"(".repeat(1000))
                .unwrap_err()
                .to_string()
                .starts_with("nesting deeper")
        );
    }
}
