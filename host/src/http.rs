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
    /// No connection: refused, reset, or the host could not be found.
    Unreachable,
    /// The server took the request and did not answer within the wait.
    NoAnswer,
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
/// connection failures up to [`MAX_ATTEMPTS`] times; returns the 200 response. A server
/// that took the request and gave no answer within the agent's wait is not asked again:
/// it would be waited for as long again, so the request fails after one wait.
pub fn post_json(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    hints: Hints<'_>,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let mut backoff = Backoff::default();
    let mut attempt = 1;
    loop {
        let mut request = agent.post(url).header("Content-Type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let last = attempt == MAX_ATTEMPTS;
        let (failure, retry_after) = match request.send_json(body) {
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
                (failure, retry_after)
            }
            Err(ureq::Error::Timeout(what)) => {
                return Err(Failure {
                    problem: Problem::NoAnswer,
                    message: format!(
                        "{url}: no answer ({what} timed out); the server took the request and did not answer: is it overloaded or stuck?"
                    ),
                });
            }
            Err(e) => {
                let failure = Failure {
                    problem: Problem::Unreachable,
                    message: format!("{url}: {e}; is the server running and the base URL right?"),
                };
                if last {
                    return Err(failure);
                }
                (failure, None)
            }
        };
        let wait = backoff.next(retry_after);
        tracing::info!(
            "http: attempt {attempt} of {MAX_ATTEMPTS} failed ({}), retrying in {} ms",
            failure.message,
            wait.as_millis()
        );
        std::thread::sleep(wait);
        attempt += 1;
    }
}

/// The waits between attempts: [`FIRST_BACKOFF`], doubled after each, unless the server
/// says how long (`Retry-After`), which is waited and then doubled in turn (never to
/// less than the first wait).
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            next: FIRST_BACKOFF,
        }
    }
}

impl Backoff {
    /// How long to wait before the next attempt, given the server's `Retry-After`.
    fn next(&mut self, retry_after: Option<Duration>) -> Duration {
        let wait = retry_after.unwrap_or(self.next);
        self.next = (wait * 2).max(FIRST_BACKOFF);
        wait
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_half_a_second_and_from_what_the_server_asks() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..4).map(|_| backoff.next(None)).collect();
        assert_eq!(waits, [ms(500), ms(1_000), ms(2_000), ms(4_000)]);

        let mut backoff = Backoff::default();
        assert_eq!(backoff.next(Some(ms(3_000))), ms(3_000));
        assert_eq!(backoff.next(None), ms(6_000));
        assert_eq!(backoff.next(Some(ms(0))), ms(0));
        assert_eq!(backoff.next(None), ms(500));
    }

    #[test]
    fn a_server_that_takes_the_request_and_never_answers_is_asked_once() {
        // A listener that accepts connections, reads nothing and answers nothing.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
        let agent = ureq::Agent::config_builder()
            .timeout_recv_response(Some(Duration::from_millis(200)))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let hints = Hints {
            auth: "",
            not_found: "",
        };
        let failure = post_json(&agent, &url, &[], &serde_json::json!({}), hints).unwrap_err();
        assert_eq!(failure.problem, Problem::NoAnswer, "{}", failure.message);
        assert!(!failure.is_transient());
        assert!(
            failure.message.contains("did not answer"),
            "{}",
            failure.message
        );
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "asked once"
        );
    }
}
