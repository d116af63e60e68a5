//! `calculate`: evaluates an arithmetic expression such as `sqrt(144) + 10`.

use evo_guest::{Error, JsonSchema, Manifest, Skill};
use serde::{Deserialize, Serialize};

// The evaluator is shared with the host's in-process `calculate` tool.
use evo_expr as expr;

/// The expression to evaluate.
#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Arithmetic with + - * / % ^, parentheses, the constants pi and e, and the
    /// functions sqrt, abs, ln, log, exp, sin, cos, tan, floor, ceil, round, min, max, pow.
    expression: String,
}

/// The value of the expression.
#[derive(Serialize, JsonSchema)]
struct Output {
    /// Whole numbers are written without a fraction (`22`, not `22.0`).
    result: serde_json::Number,
}

struct Calculate;

impl Skill for Calculate {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "calculate",
            "Evaluates an arithmetic expression exactly as written, e.g. `sqrt(144) + 10` → 22. \
             Use it instead of doing arithmetic in your head.",
        )
        .category("math")
        .tags(["math", "readonly"])
        .timeout_ms(1_000)
    }

    fn execute(input: Input) -> Result<Output, Error> {
        expr::evaluate(&input.expression)
            .map(|value| Output {
                result: expr::to_json_number(value),
            })
            .map_err(|e| Error::invalid_input(e.to_string()))
    }
}

evo_guest::export_skill!(Calculate);
