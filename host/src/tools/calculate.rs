//! `calculate`: `{ expression }` → `{ result }`, e.g. `sqrt(144) + 10` → `22`, with the
//! same evaluator ([`evo_expr`]) as the `skills-wasm/calculate` component.

use serde_json::{Value, json};

use super::{BoxFuture, Tool, invalid};
use crate::error::Result;
use crate::skill::kernel::SkillContext;

/// Evaluates arithmetic.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculate;

impl Calculate {
    /// Evaluates `input.expression`.
    pub fn evaluate(input: &Value) -> Result<Value> {
        let expression = input
            .get("expression")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("calculate", "`expression` must be a string"))?;
        let value =
            evo_expr::evaluate(expression).map_err(|e| invalid("calculate", &e.to_string()))?;
        Ok(json!({ "result": evo_expr::to_json_number(value) }))
    }
}

impl Tool for Calculate {
    fn manifest(&self) -> Value {
        json!({
            "name": "calculate",
            "description": "Evaluates an arithmetic expression exactly, e.g. `sqrt(144) + 10` → 22. Use it instead of doing arithmetic in your head.",
            "category": "math",
            "tags": ["math", "readonly"],
            "timeout": 1000,
            "input": { "type": "object", "properties": {
                "expression": { "type": "string", "minLength": 1, "description": "arithmetic with + - * / % ^, parentheses, pi, e, and sqrt, abs, ln, log, exp, sin, cos, tan, floor, ceil, round, min, max, pow" } },
                "required": ["expression"] },
            "output": { "type": "object", "properties": { "result": { "type": "number" } }, "required": ["result"] },
            "examples": [
                { "description": "A root and a sum", "input": { "expression": "sqrt(144) + 10" } },
                { "description": "Powers and parentheses", "input": { "expression": "(2 + 3) ^ 4 / 5" } },
                { "description": "Functions and constants", "input": { "expression": "round(pi * 100) / 100" } }
            ],
            "notes": ["Decimal arithmetic is exact where it can be (0.1 + 0.2 is 0.3); division by zero is an error naming the position."]
        })
    }

    fn call(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<Value>> {
        Box::pin(std::future::ready(Self::evaluate(&input)))
    }
}
