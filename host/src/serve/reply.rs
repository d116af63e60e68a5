//! What the HTTP API's handlers answer with: a value, or an error as `{ code, error,
//! hint }` with the status its code is answered with everywhere, and work that blocks
//! moved off the async threads.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::openapi::ErrorBody;
use crate::error::Error;

/// An error as JSON, `{ code, error, hint }`, with the status its code is answered with
/// everywhere ([`crate::answer_for`]).
pub(super) fn failure(code: &str, message: String, hint: Option<&str>) -> Response {
    let status = StatusCode::from_u16(crate::error::answer_for(code, false).http)
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        Json(ErrorBody {
            code: code.to_owned(),
            error: message,
            hint: hint.map(str::to_owned),
            report: None,
            intermediate_steps: Vec::new(),
        }),
    )
        .into_response()
}

/// The status `error` is answered with everywhere ([`Error::answer`]).
fn status_of(error: &Error) -> StatusCode {
    StatusCode::from_u16(error.answer().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

pub(super) fn evo_failure(error: &Error) -> Response {
    let body = ErrorBody {
        code: error.code().to_owned(),
        error: error.to_string(),
        hint: error.hint().map(str::to_owned),
        report: match error {
            Error::Validation(report) => serde_json::to_value(report).ok(),
            _ => None,
        },
        intermediate_steps: error.steps().to_vec(),
    };
    (status_of(error), Json(body)).into_response()
}

/// Runs `read` (which blocks: SQLite, PostgreSQL, files) off the async threads and
/// answers with what it returned (`Json(…)`, or a response), or with its error; `what`
/// names the work in the error if the task itself fails.
pub(super) async fn blocking<T: IntoResponse + Send + 'static>(
    what: &str,
    read: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(value)) => value.into_response(),
        Ok(Err(error)) => evo_failure(&error),
        Err(e) => failure("INTERNAL_ERROR", format!("{what} stopped: {e}"), None),
    }
}
