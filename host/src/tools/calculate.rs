//! `calculate`: `{ expression }` → `{ result }`, e.g. `sqrt(144) + 10` → `22`, with the
//! same evaluator ([`evo_expr`]) as the `skills-wasm/calculate` component.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{BoxFuture, TypedTool, invalid};
use crate::error::Result;
use crate::skill::kernel::SkillContext;

/// Evaluates arithmetic.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculate;

/// `calculate`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CalculateInput {
    /// arithmetic with + - * / % ^, parentheses, pi, e, and sqrt, abs, ln, log, exp, sin, cos, tan, floor, ceil, round, min, max, pow
    #[schemars(length(min = 1))]
    pub expression: String,
}

/// `calculate`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CalculateOutput {
    /// the value, exact where decimal arithmetic allows
    pub result: serde_json::Number,
}

impl Calculate {
    /// Evaluates `input.expression`.
    pub fn evaluate(input: &CalculateInput) -> Result<CalculateOutput> {
        let value = evo_expr::evaluate(&input.expression)
            .map_err(|e| invalid("calculate", &e.to_string()))?;
        Ok(CalculateOutput {
            result: evo_expr::to_json_number(value),
        })
    }
}

impl TypedTool for Calculate {
    const NAME: &'static str = "calculate";
    type Input = CalculateInput;
    type Output = CalculateOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Evaluates an arithmetic expression exactly, e.g. `sqrt(144) + 10` → 22. Use it instead of doing arithmetic in your head.",
            "category": "math",
            "tags": ["math", "readonly"],
            "requests": [
                "what is 17% of 2,340?",
                "multiply 12 by 37 and add 5",
                "give me sqrt(2) to six decimals",
                "add up 19.99, 4.50 and 12.25",
                "what is 2 to the power of 20",
                "divide 1000 by 7",
                "if I split 4800 over 12 months, how much each month?",
                "convert 3/8 to a decimal"
            ],
            "timeout": 1000,
            "examples": [
                { "description": "A root and a sum", "input": { "expression": "sqrt(144) + 10" } },
                { "description": "Powers and parentheses", "input": { "expression": "(2 + 3) ^ 4 / 5" } },
                { "description": "Functions and constants", "input": { "expression": "round(pi * 100) / 100" } }
            ],
            "notes": ["Decimal arithmetic is exact where it can be (0.1 + 0.2 is 0.3); division by zero is an error naming the position."]
        })
    }

    fn run(
        &self,
        input: CalculateInput,
        _ctx: SkillContext,
    ) -> BoxFuture<'_, Result<CalculateOutput>> {
        Box::pin(std::future::ready(Self::evaluate(&input)))
    }
}
