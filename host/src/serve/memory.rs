//! `/v1/memory/…`: search, a fact's versions and the decisions that made them, and the
//! daily logs.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;

use super::Shared;
use super::openapi::{DailyLog, LogDays, MemoryHitBody, MemorySearch};
use super::reply::blocking;
use crate::memory::{SearchOptions, Source};

pub(super) async fn search(
    State(shared): State<Arc<Shared>>,
    Json(request): Json<MemorySearch>,
) -> Response {
    let memory = shared.host.memory().clone();
    blocking("the search", move || {
        let options = SearchOptions {
            limit: request.limit.unwrap_or(5),
            sources: request
                .sources
                .iter()
                .map(|s| Source::parse_checked(s))
                .collect::<crate::Result<_>>()?,
            since: request.since,
            until: request.until,
            include_superseded: request.include_superseded,
        };
        Ok(Json(
            memory
                .search_with(&request.query, &options)?
                .into_iter()
                .map(|e| MemoryHitBody {
                    id: e.id,
                    text: e.text,
                    score: e.score,
                    category: e.category.as_str().to_owned(),
                    created_at: e.created_at,
                    source: e.source.as_str().to_owned(),
                    superseded_by: e.superseded_by,
                })
                .collect::<Vec<_>>(),
        ))
    })
    .await
}

/// `GET /v1/memory/entries/{id}`: every version of the fact, oldest first, and the
/// decisions that made them (as `evo memory history ID`).
pub(super) async fn entry(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let memory = shared.host.memory().clone();
    blocking("reading the entry's history", move || {
        Ok(Json(memory.history(&id)?))
    })
    .await
}

/// `GET /v1/memory/logs`: the days with a daily log, newest first.
pub(super) async fn log_days(State(shared): State<Arc<Shared>>) -> Response {
    let memory = shared.host.memory().clone();
    blocking("listing the daily logs", move || {
        let mut days = memory.log_days()?;
        days.reverse();
        Ok(Json(LogDays { days }))
    })
    .await
}

/// `GET /v1/memory/logs/{day}`: one day's log as written (Markdown).
pub(super) async fn log(State(shared): State<Arc<Shared>>, Path(day): Path<String>) -> Response {
    let memory = shared.host.memory().clone();
    blocking("reading the daily log", move || {
        let text = memory.load_daily_log(Some(&day))?;
        Ok(Json(DailyLog { day, text }))
    })
    .await
}
