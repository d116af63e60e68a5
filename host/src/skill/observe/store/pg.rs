//! The call store in the shared PostgreSQL database.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{CallStore, Duration, Filter, Record, SkillStats, Status, count, limit, stats_row};
use crate::error::Result;
use crate::storage::Pg;

/// The shared PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgCalls {
    pg: Arc<Pg>,
}

impl PgCalls {
    /// The store in `pg`.
    pub fn new(pg: Arc<Pg>) -> Self {
        Self { pg }
    }
}

impl CallStore for PgCalls {
    fn add_stats(&self, counts: &[SkillStats]) -> Result<()> {
        let counts = counts.to_vec();
        self.pg.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let upsert = tx
                .prepare_cached(
                    "INSERT INTO skill_stats AS s (skill, call_count, success_count, total_duration_ms, max_duration_ms)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (skill) DO UPDATE SET
                       call_count = s.call_count + excluded.call_count,
                       success_count = s.success_count + excluded.success_count,
                       total_duration_ms = s.total_duration_ms + excluded.total_duration_ms,
                       max_duration_ms = greatest(s.max_duration_ms, excluded.max_duration_ms)",
                )
                .await?;
            // One order for every node: two flushes touching the same skills cannot
            // deadlock.
            let mut counts = counts;
            counts.sort_by(|a, b| a.tool_name.cmp(&b.tool_name));
            for s in &counts {
                tx.execute(
                    &upsert,
                    &[
                        &s.tool_name,
                        &count(s.call_count),
                        &count(s.success_count),
                        &s.total_duration,
                        &s.max_duration,
                    ],
                )
                .await?;
            }
            tx.commit().await
        })
    }

    fn stats(&self) -> Result<BTreeMap<String, SkillStats>> {
        self.pg.run(|client| async move {
            let rows = client
                .query(
                    "SELECT skill, call_count, success_count, total_duration_ms, max_duration_ms
                     FROM skill_stats ORDER BY skill",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| {
                    let name: String = row.get(0);
                    let s = stats_row(name.clone(), row.get(1), row.get(2), row.get(3), row.get(4));
                    (name, s)
                })
                .collect())
        })
    }

    fn append_calls(&self, calls: &[Record], cap: u64) -> Result<()> {
        let calls = calls.to_vec();
        self.pg.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO tool_history (at_ms, caller, task_id, tool, arguments, status, duration_ms, error, hint, node)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .await?;
            for r in &calls {
                tx.execute(
                    &insert,
                    &[
                        &r.at_ms,
                        &r.caller,
                        &r.task_id,
                        &r.tool,
                        &r.arguments,
                        &r.status.name(),
                        &r.duration_ms,
                        &r.error,
                        &r.hint,
                        &r.node,
                    ],
                )
                .await?;
            }
            tx.execute(
                "DELETE FROM tool_history WHERE id <= (SELECT max(id) FROM tool_history) - $1",
                &[&count(cap)],
            )
            .await?;
            tx.commit().await
        })
    }

    fn calls(&self, filter: &Filter) -> Result<Vec<Record>> {
        let filter = filter.clone();
        self.pg.run(move |client| async move {
            let rows = client
                .query(
                    "SELECT id, at_ms, caller, task_id, tool, arguments, status, duration_ms, error, hint, node
                     FROM tool_history
                     WHERE ($1::TEXT IS NULL OR tool = $1) AND ($2::TEXT IS NULL OR status = $2)
                       AND ($3::BIGINT IS NULL OR at_ms >= $3) AND ($5::TEXT IS NULL OR caller = $5)
                       AND ($6::TEXT IS NULL OR left(error, length($6) + 2) = '[' || $6 || ']')
                     ORDER BY at_ms DESC, id DESC LIMIT $4",
                    &[
                        &filter.tool,
                        &filter.status.map(Status::name),
                        &filter.since_ms,
                        &limit(&filter),
                        &filter.caller,
                        &filter.code,
                    ],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| Record {
                    id: row.get(0),
                    at_ms: row.get(1),
                    caller: row.get(2),
                    task_id: row.get(3),
                    tool: row.get(4),
                    arguments: row.get(5),
                    status: Status::parse(row.get(6)).unwrap_or(Status::Error),
                    duration_ms: row.get(7),
                    error: row.get(8),
                    hint: row.get(9),
                    node: row.get(10),
                })
                .collect())
        })
    }

    fn durations(&self, since_ms: Option<i64>) -> Result<Vec<Duration>> {
        self.pg.run(move |client| async move {
            let rows = client
                .query(
                    "SELECT tool, duration_ms, status <> 'success' FROM tool_history
                     WHERE $1::BIGINT IS NULL OR at_ms >= $1 ORDER BY tool COLLATE \"C\", duration_ms",
                    &[&since_ms],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| (row.get(0), row.get(1), row.get(2)))
                .collect())
        })
    }
}
