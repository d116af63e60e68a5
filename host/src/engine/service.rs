//! `service` skills: a `skill.json`
//! that names an HTTP endpoint. The host sends the validated input as JSON and returns
//! the answer, which the kernel validates against the output schema.
//!
//! ```json
//! { "name": "summarize", "description": "…", "mode": "service",
//!   "service": { "url": "https://api.example.com/v1/summarize",
//!                "headers": { "authorization": "Bearer {{secret:SUMMARY_KEY}}" } },
//!   "capabilities": { "secrets": [{ "name": "SUMMARY_KEY", "host": "https://api.example.com" }] } }
//! ```
//!
//! The request goes out exactly as a Wasm skill's would (see `engine::wasm::http`): its
//! origin must be granted (the endpoint is an implied host request), names resolving
//! into the machine are refused unless the grant names the address, secrets are put in
//! for their host only, responses are masked. Answers:
//!
//! - `200`/`201` with JSON: the output;
//! - `202 Accepted` with a `Location`: polled with `GET` (after `Retry-After`, else
//!   every `pollMs`) until it answers something else, within the skill's timeout; a
//!   later `202` without a `Location` keeps the last status URL;
//! - `application/x-ndjson` or `text/event-stream`: every JSON line (or `data:`) but
//!   the last is emitted as a progress event; the last is the output;
//! - `429` and `5xx`: transient, retried by the kernel up to the skill's `retry`;
//! - other statuses: an error with the status and the start of the body.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use serde_json::Value;
use ureq::http;

use crate::capabilities::{Grant, Policy};
use crate::error::{Error, FailureKind, Result};
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::manifest::{ServiceSpec, SkillMeta};
use crate::skill::observe::events::RunEvent;

/// The most of an error body quoted in the error.
const QUOTED_BYTES: usize = 300;

/// Runs a service skill.
#[derive(Debug)]
pub struct ServiceExecutor {
    skill: Arc<str>,
    spec: ServiceSpec,
    grant: Arc<Grant>,
    timeout: Duration,
}

impl ServiceExecutor {
    /// The executor of `meta` (which has a `service`), granted what `policy` allows.
    pub fn new(meta: &SkillMeta, spec: ServiceSpec, policy: &Policy) -> Self {
        let grant = Grant::new(&meta.capabilities, policy.for_skill(&meta.name));
        for refused in &grant.refused {
            tracing::info!(skill = %meta.name, "not granted: {refused}");
        }
        Self {
            skill: meta.name.as_str().into(),
            spec,
            grant: Arc::new(grant),
            timeout: Duration::from_millis(meta.timeout_ms),
        }
    }

    /// What was granted.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    fn failed(&self, kind: FailureKind, message: String) -> Error {
        Error::Skill {
            skill: self.skill.to_string(),
            kind,
            message,
        }
    }

    /// Sends one request through the same checks as a Wasm skill's.
    async fn send(
        &self,
        ctx: &SkillContext,
        method: &str,
        url: &str,
        body: Option<Vec<u8>>,
        deadline: Instant,
    ) -> Result<http::Response<crate::engine::wasm::HttpBody>> {
        let mut request = http::Request::builder().method(method).uri(url);
        for (name, value) in &self.spec.headers {
            request = request.header(name, value);
        }
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let body = http_body_util::Full::new(Bytes::from(body.unwrap_or_default()))
            .map_err(|never| match never {})
            .boxed_unsync();
        let request = request.body(body).map_err(|e| {
            self.failed(
                FailureKind::Failed,
                format!("the service request to {url} is not valid: {e}"),
            )
        })?;
        let left = deadline.saturating_duration_since(Instant::now());
        crate::engine::wasm::send_checked(
            self.skill.clone(),
            &self.grant,
            ctx.clone(),
            request,
            left,
        )
        .await
        .map_err(|message| self.failed(FailureKind::Denied, message))
    }

    async fn run(&self, input: Value, ctx: &SkillContext) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        let body = serde_json::to_vec(&input).map_err(|e| Error::Engine(e.to_string()))?;
        let mut response = self
            .send(ctx, &self.spec.method, &self.spec.url, Some(body), deadline)
            .await?;
        let mut url = self.spec.url.clone();
        let mut polling = false;
        // 202: poll the status URL until the work is done.
        while response.status() == http::StatusCode::ACCEPTED {
            match header(&response, "location") {
                Some(location) => url = resolve_location(&url, &location),
                // A status URL answering 202 again without naming another: still
                // working there; ask it again.
                None if polling => {}
                // No status URL at all: the answer is the body itself.
                None => break,
            }
            polling = true;
            let wait = header(&response, "retry-after")
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map_or(
                    Duration::from_millis(self.spec.poll_ms),
                    Duration::from_secs,
                );
            if Instant::now() + wait >= deadline {
                return Err(Error::Timeout {
                    skill: self.skill.to_string(),
                    limit_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            tokio::time::sleep(wait).await;
            response = self.send(ctx, "GET", &url, None, deadline).await?;
        }
        let status = response.status();
        let streamed = header(&response, "content-type").is_some_and(|t| {
            t.starts_with("application/x-ndjson") || t.starts_with("text/event-stream")
        });
        if status.is_success() && streamed {
            return self.read_stream(response, ctx).await;
        }
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| {
                self.failed(
                    FailureKind::Failed,
                    format!("reading the answer from {url}: {e}"),
                )
            })?
            .to_bytes();
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| Error::InvalidOutput {
                skill: self.skill.to_string(),
                reason: format!("the service answered {status} with a body that is not JSON: {e}"),
            });
        }
        let quoted = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED_BYTES)]).into_owned();
        let message = format!("the service at {url} answered {status}: {quoted}");
        if status == http::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(self.failed(FailureKind::Unavailable, message));
        }
        let kind = match status.as_u16() {
            400 | 422 => FailureKind::InvalidInput,
            401 | 403 => FailureKind::Denied,
            404 => FailureKind::NotFound,
            _ => FailureKind::Failed,
        };
        Err(self.failed(kind, message))
    }

    /// A stream of JSON lines (NDJSON, or server-sent events' `data:` lines): every
    /// one but the last is a progress event, the last is the output.
    async fn read_stream(
        &self,
        response: http::Response<crate::engine::wasm::HttpBody>,
        ctx: &SkillContext,
    ) -> Result<Value> {
        let mut body = response.into_body();
        let mut pending = Vec::new();
        let mut last: Option<Value> = None;
        let take_lines = |pending: &mut Vec<u8>, last: &mut Option<Value>, end: bool| {
            while let Some(at) = pending
                .iter()
                .position(|b| *b == b'\n')
                .or((end && !pending.is_empty()).then_some(pending.len()))
            {
                let line: Vec<u8> = pending.drain(..at.min(pending.len())).collect();
                if !pending.is_empty() {
                    pending.remove(0);
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim();
                let text = text.strip_prefix("data:").map_or(text, str::trim);
                if text.is_empty() || text.starts_with(':') || text.starts_with("event:") {
                    continue;
                }
                if let Ok(value) = serde_json::from_str::<Value>(text)
                    && let Some(previous) = last.replace(value)
                {
                    ctx.emit(RunEvent::emitted(&self.skill, previous));
                }
            }
        };
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                self.failed(
                    FailureKind::Failed,
                    format!("the service's stream broke: {e}"),
                )
            })?;
            if let Ok(data) = frame.into_data() {
                pending.extend_from_slice(&data);
                take_lines(&mut pending, &mut last, false);
            }
        }
        take_lines(&mut pending, &mut last, true);
        last.ok_or_else(|| Error::InvalidOutput {
            skill: self.skill.to_string(),
            reason: "the service's stream ended without a JSON line".into(),
        })
    }
}

fn header<B>(response: &http::Response<B>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// `location` against `base`: absolute as is, `/path` on the same origin.
fn resolve_location(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let origin_end = base
        .find("://")
        .and_then(|i| base[i + 3..].find('/').map(|j| i + 3 + j))
        .unwrap_or(base.len());
    if location.starts_with('/') {
        format!("{}{location}", &base[..origin_end])
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|i| *i >= origin_end)
            .unwrap_or(origin_end);
        format!("{}/{location}", &base[..dir_end])
    }
}

impl Executor for ServiceExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Service
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(async move { self.run(input, &ctx).await.map(SkillOutput::from) })
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_the_endpoint() {
        let base = "http://127.0.0.1:9000/v1/jobs";
        assert_eq!(
            resolve_location(base, "/status/7"),
            "http://127.0.0.1:9000/status/7"
        );
        assert_eq!(
            resolve_location(base, "status/7"),
            "http://127.0.0.1:9000/v1/status/7"
        );
        assert_eq!(
            resolve_location(base, "https://other.example/x"),
            "https://other.example/x"
        );
        assert_eq!(resolve_location("http://h:1", "/s"), "http://h:1/s");
    }
}
