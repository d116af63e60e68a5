//! What an [`Error`](crate::Error) carries and how it is answered: the parts of its
//! variants, and each code's exit status, HTTP status and hint ([`answer_for`],
//! [`error_codes_table`]).

pub use crate::error::{
    Answer, BlockReason, Direction, FailureKind, Problem, ScriptRun, TemplateError,
    ValidationReport, Violation, answer_for, error_codes_table,
};
