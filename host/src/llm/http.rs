//! The HTTP side of the network providers: [`crate::http`]'s POST with the timeouts of a
//! streamed answer, failures as `LLM_*` codes, and the thread that streams events.

use std::time::Duration;

use serde_json::Value;

use super::{EventStream, LlmEvent, event_channel};

/// Time to connect: a host that does not answer in 10 s is not coming.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to the first byte of the answer: models can think for a while before streaming.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(120);
/// Time for the whole streamed body.
const BODY_TIMEOUT: Duration = Duration::from_secs(600);

/// A failed request: the code for `LlmEvent::Error` and a message.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) code: &'static str,
    pub(super) message: String,
}

impl From<crate::http::Failure> for Failure {
    fn from(failure: crate::http::Failure) -> Self {
        use crate::http::Problem;
        let code = match failure.problem {
            Problem::Unreachable | Problem::ServerError => "LLM_UNAVAILABLE",
            Problem::NoAnswer => "LLM_TIMEOUT",
            Problem::BadRequest => "LLM_BAD_REQUEST",
            Problem::Auth => "LLM_AUTH",
            Problem::NotFound => "LLM_MODEL_NOT_FOUND",
            Problem::RateLimited => "LLM_RATE_LIMITED",
            Problem::BadResponse => "LLM_BAD_RESPONSE",
        };
        Self {
            code,
            message: failure.message,
        }
    }
}

pub(super) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_recv_response(Some(FIRST_BYTE_TIMEOUT))
        .timeout_recv_body(Some(BODY_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// POSTs `body` to `url` (see [`crate::http::post_json`]); `auth_hint` says how to set
/// the key.
pub(super) fn post(
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    auth_hint: &str,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let hints = crate::http::Hints {
        auth: auth_hint,
        not_found: "check the model name and the base URL",
    };
    crate::http::post_json(&agent(), url, headers, body, hints).map_err(Failure::from)
}

/// Runs a blocking request on its own thread, streaming its events; a failure becomes
/// the stream's last event. A consumer that drops the stream stops the reader at the
/// next event.
pub(super) fn spawn_stream(
    run: impl FnOnce(&dyn Fn(LlmEvent) -> bool) -> Result<(), Failure> + Send + 'static,
) -> EventStream {
    let (tx, rx) = event_channel();
    std::thread::spawn(move || {
        let send = |event| tx.blocking_send(event).is_ok();
        if let Err(failure) = run(&send) {
            send(LlmEvent::Error {
                error: failure.message,
                code: failure.code,
            });
        }
    });
    rx
}
