//! The HTTP side shared by the network providers: one POST with bounded retries for
//! rate limits and server errors, and errors that say what to do.

use std::time::Duration;

use serde_json::Value;

use super::{EventStream, LlmEvent, event_channel};

/// Attempts per request: a rate limit or a 5xx usually clears within two retries, and
/// more would keep a user waiting on a service that is down.
pub(super) const MAX_ATTEMPTS: u32 = 3;
/// First wait before a retry (doubled each time) when the server gives no Retry-After.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest Retry-After honoured; a longer one fails now with the server's reason.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
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

pub(super) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_recv_response(Some(FIRST_BYTE_TIMEOUT))
        .timeout_recv_body(Some(BODY_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// POSTs `body` to `url` with `headers`, retrying rate limits, server errors and
/// connection failures; returns the 200 response to stream from.
pub(super) fn post(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    setup_hint: &str,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 1;
    loop {
        let mut request = agent.post(url).header("Content-Type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let last = attempt == MAX_ATTEMPTS;
        let failure = match request.send_json(body) {
            Ok(response) if response.status().as_u16() == 200 => return Ok(response),
            Ok(mut response) => {
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let text = response.body_mut().read_to_string().unwrap_or_default();
                let reason = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| {
                        v.pointer("/error/message")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| text.chars().take(300).collect());
                let failure = status_failure(status, &reason, url, setup_hint);
                let retryable = status == 429 || status >= 500;
                if !retryable || last || retry_after.is_some_and(|d| d > MAX_RETRY_AFTER) {
                    return Err(failure);
                }
                if let Some(wait) = retry_after {
                    backoff = wait;
                }
                failure
            }
            Err(e) => {
                let failure = Failure {
                    code: "LLM_UNAVAILABLE",
                    message: format!("{url}: {e}; is the server running and the base URL right?"),
                };
                if last {
                    return Err(failure);
                }
                failure
            }
        };
        tracing::info!(
            "llm: attempt {attempt} of {MAX_ATTEMPTS} failed ({}), retrying in {} ms",
            failure.message,
            backoff.as_millis()
        );
        std::thread::sleep(backoff);
        backoff *= 2;
        attempt += 1;
    }
}

fn status_failure(status: u16, reason: &str, url: &str, setup_hint: &str) -> Failure {
    let (code, what) = match status {
        400 => (
            "LLM_BAD_REQUEST",
            "the server refused the request".to_owned(),
        ),
        401 | 403 => ("LLM_AUTH", format!("the API key was refused; {setup_hint}")),
        404 => (
            "LLM_MODEL_NOT_FOUND",
            "model or endpoint not found; check the model name and the base URL".to_owned(),
        ),
        429 => (
            "LLM_RATE_LIMITED",
            "rate limited; try again later or lower the request rate".to_owned(),
        ),
        500..=599 => ("LLM_UNAVAILABLE", "the server failed".to_owned()),
        _ => ("LLM_BAD_RESPONSE", "unexpected answer".to_owned()),
    };
    Failure {
        code,
        message: format!("{url}: HTTP {status}: {what}: {reason}"),
    }
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
