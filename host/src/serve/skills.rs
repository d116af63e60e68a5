//! `/v1/skills/…`: the catalogue, one skill with its grants and provenance, and calls.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::openapi::{CallOptions, CallResult, Provenance, SkillDetail, SkillSummary};
use super::reply::{evo_failure, failure};
use super::{Refusal, Shared};
use crate::error::Error;

fn summary(shared: &Shared, skill: &crate::skill::kernel::table::RegisteredSkill) -> SkillSummary {
    SkillSummary {
        name: skill.meta.name.clone(),
        description: skill.meta.description.clone(),
        kind: skill.kind().as_str().into(),
        version: skill.meta.version.clone(),
        input_schema: skill.meta.input.clone(),
        output_schema: skill.meta.output.clone(),
        annotations: serde_json::to_value(super::annotations(skill, &shared.host))
            .unwrap_or(Value::Null),
    }
}

pub(super) async fn list(State(shared): State<Arc<Shared>>) -> Json<Vec<SkillSummary>> {
    Json(
        shared
            .served_skills()
            .iter()
            .map(|s| summary(&shared, s))
            .collect(),
    )
}

fn not_found(name: &str) -> Response {
    evo_failure(&Error::SkillNotFound {
        name: name.to_owned(),
    })
}

pub(super) async fn get(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let Some(skill) = shared.served(&name) else {
        return not_found(&name);
    };
    // A function of a plain component was installed with it, under its name.
    let package = shared
        .host
        .asking(&skill.meta.name)
        .map_or_else(|| skill.meta.name.clone(), |(_, kept_under)| kept_under);
    let installed = shared.host.installed_record(&package);
    let any = skill.executor.as_any();
    let wasm = any
        .and_then(|a| a.downcast_ref::<crate::engine::wasm::WasmExecutor>())
        .map(crate::engine::wasm::WasmExecutor::skill);
    let plain = any
        .and_then(|a| a.downcast_ref::<crate::engine::wasm::PlainExecutor>())
        .map(crate::engine::wasm::PlainExecutor::component);
    let (granted, limits, digest, loaded_from) = match (wasm, plain) {
        (Some(w), _) => (
            Some(value_of(&shared.host.granted(&skill))),
            Some(value_of(w.limits())),
            Some(w.digest().to_owned()),
            Some(value_of(&w.load_source())),
        ),
        (None, Some(c)) => (
            Some(value_of(&shared.host.granted(&skill))),
            Some(value_of(c.limits())),
            Some(c.digest().to_owned()),
            Some(value_of(&c.load_source())),
        ),
        (None, None) => (None, None, None, None),
    };
    Json(SkillDetail {
        asked: value_of(&skill.meta.capabilities),
        granted,
        limits,
        provenance: Provenance {
            loaded_from,
            digest: digest.or_else(|| installed.as_ref().map(|r| r.digest.clone())),
            installed: installed.is_some(),
            installed_at: installed.as_ref().map(|r| r.installed_at),
            registry: installed
                .as_ref()
                .and_then(|r| r.source.as_ref())
                .map(value_of),
        },
        summary: summary(&shared, &skill),
    })
    .into_response()
}

fn value_of<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The type `headers` declare for a body, quoted, unless it is JSON (`application/json`
/// or `application/…+json`, parameters allowed).
fn not_json(headers: &axum::http::HeaderMap) -> Option<String> {
    let Some(declared) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Some("nothing (no Content-Type)".to_owned());
    };
    let text = String::from_utf8_lossy(declared.as_bytes());
    let essence = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json = essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"));
    (!json).then(|| format!("`{}`", text.trim()))
}

/// The most events one call returns with `?events=true`; a skill that emits more has
/// the rest dropped (and says so in the last one).
const MAX_CALL_EVENTS: usize = 1_000;

pub(super) async fn call(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    axum::extract::Query(options): axum::extract::Query<CallOptions>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let Some(skill) = shared.served(&name) else {
        return not_found(&name);
    };
    // A form or a `text/plain` post is what a page of another site can send without
    // asking first; a body declared JSON needs the browser's preflight, which this
    // server does not grant to other origins.
    if !body.is_empty()
        && let Some(declared) = not_json(&headers)
    {
        return failure(
            "INVALID_INPUT",
            format!("the request body is declared as {declared}, not JSON"),
            Some(
                "send the skill's input as a JSON object with `Content-Type: application/json` (curl: --json)",
            ),
        );
    }
    let input: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(input) => input,
            Err(e) => {
                return failure(
                    "INVALID_INPUT",
                    format!("the request body is not JSON: {e}"),
                    Some("send the skill's input as a JSON object"),
                );
            }
        }
    };
    let started = std::time::Instant::now();
    // A client that hangs up cancels the call: this future is dropped with it.
    let never = CancellationToken::new();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = options.events.then(|| {
        let events = events.clone();
        crate::skill::observe::events::EventSink::new(move |event| {
            let mut events = events.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if events.len() < MAX_CALL_EVENTS {
                events.push(serde_json::to_value(&event).unwrap_or(Value::Null));
            } else if events.len() == MAX_CALL_EVENTS {
                events.push(json!({ "type": "dropped", "reason": format!("more than {MAX_CALL_EVENTS} events; the rest are not returned") }));
            }
        })
    });
    match shared
        .call(&skill.meta.name, input, sink, None, &never)
        .await
    {
        Ok(out) => Json(CallResult {
            output: out.output,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            memory: out.memory,
            intermediate_steps: out.intermediate_steps,
            events: std::mem::take(
                &mut *events
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            ),
        })
        .into_response(),
        Err(Refusal::Failed(error)) => evo_failure(&error),
        Err(Refusal::Busy { waiting }) => {
            let mut response = failure(
                "SERVER_BUSY",
                format!(
                    "the server is busy: every slot is taken and {waiting} calls already wait for one"
                ),
                Some(
                    "try again after the Retry-After seconds, or raise serve.max_calls / serve.max_queue",
                ),
            );
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
            response
        }
        Err(Refusal::Cancelled | Refusal::ShuttingDown) => failure(
            "SHUTTING_DOWN",
            "the server is shutting down and takes no more calls".into(),
            Some("retry against a running server"),
        ),
    }
}
