//! The HTTP client side shared by the language-model providers and the embeddings
//! client: one JSON POST with bounded retries for rate limits, server errors and broken
//! connections, and failures that say what happened and what to do.

use std::time::Duration;

use serde_json::Value;

/// Attempts per request: a rate limit or a 5xx usually clears within two retries, and
/// more would keep a user waiting on a service that is down.
pub const MAX_ATTEMPTS: u32 = 3;
/// First wait before a retry (doubled each time) when the server gives no Retry-After.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest Retry-After honoured; a longer one fails now with the server's reason.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Most characters of an error body quoted in a message.
const QUOTED_BODY_CHARS: usize = 300;

/// What went wrong with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// No answer: the connection failed or timed out.
    Unreachable,
    /// HTTP 400: the server refused the request.
    BadRequest,
    /// HTTP 401 or 403: the key was refused.
    Auth,
    /// HTTP 404: wrong model or endpoint.
    NotFound,
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx.
    ServerError,
    /// Anything else, or an answer that could not be read.
    BadResponse,
}

/// A failed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind of failure.
    pub problem: Problem,
    /// The URL, what went wrong, and what to do.
    pub message: String,
}

impl Failure {
    /// Whether trying again later may work.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.problem,
            Problem::Unreachable | Problem::RateLimited | Problem::ServerError
        )
    }
}

/// What to tell the user for the failures only they can fix.
#[derive(Debug, Clone, Copy)]
pub struct Hints<'a> {
    /// For a refused key, e.g. "set OPENAI_API_KEY".
    pub auth: &'a str,
    /// For a 404, e.g. "check the model name and the base URL".
    pub not_found: &'a str,
}

/// POSTs `body` as JSON to `url` with `headers`, retrying rate limits, server errors and
/// connection failures up to [`MAX_ATTEMPTS`] times; returns the 200 response.
pub fn post_json(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    hints: Hints<'_>,
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
                    .unwrap_or_else(|| text.chars().take(QUOTED_BODY_CHARS).collect());
                let failure = status_failure(status, &reason, url, hints);
                if !failure.is_transient()
                    || last
                    || retry_after.is_some_and(|d| d > MAX_RETRY_AFTER)
                {
                    return Err(failure);
                }
                if let Some(wait) = retry_after {
                    backoff = wait;
                }
                failure
            }
            Err(e) => {
                let failure = Failure {
                    problem: Problem::Unreachable,
                    message: format!("{url}: {e}; is the server running and the base URL right?"),
                };
                if last {
                    return Err(failure);
                }
                failure
            }
        };
        tracing::info!(
            "http: attempt {attempt} of {MAX_ATTEMPTS} failed ({}), retrying in {} ms",
            failure.message,
            backoff.as_millis()
        );
        std::thread::sleep(backoff);
        backoff *= 2;
        attempt += 1;
    }
}

fn status_failure(status: u16, reason: &str, url: &str, hints: Hints<'_>) -> Failure {
    let (problem, what) = match status {
        400 => (
            Problem::BadRequest,
            "the server refused the request".to_owned(),
        ),
        401 | 403 => (
            Problem::Auth,
            format!("the API key was refused; {}", hints.auth),
        ),
        404 => (
            Problem::NotFound,
            format!("model or endpoint not found; {}", hints.not_found),
        ),
        429 => (
            Problem::RateLimited,
            "rate limited; try again later or lower the request rate".to_owned(),
        ),
        500..=599 => (Problem::ServerError, "the server failed".to_owned()),
        _ => (Problem::BadResponse, "unexpected answer".to_owned()),
    };
    Failure {
        problem,
        message: format!("{url}: HTTP {status}: {what}: {reason}"),
    }
}
