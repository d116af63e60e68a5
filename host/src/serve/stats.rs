//! `GET /v1/stats`: what the console's charts draw, from the call history (so every
//! node sharing it is seen, each under its name) and this node's gauges.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::Response;

use super::Shared;
use super::openapi::{ErrorCount, Gauges, NodeStats, SkillLatency, Stats, StatsQuery};
use super::reply::blocking;
use crate::skill::observe::store::{Filter, Record, Status};

/// The longest window asked for: a day.
const MAX_WINDOW_S: u64 = 86_400;
/// The most steps a window is cut into.
const MAX_STEPS: u64 = 600;
/// The most calls read for one answer; past it the oldest of the window are left out
/// (and `truncated` says so).
const MAX_CALLS: u64 = 100_000;

pub(super) async fn stats(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<StatsQuery>,
) -> Response {
    let window_s = query.window_s.unwrap_or(300).clamp(10, MAX_WINDOW_S);
    let step_s = query
        .step_s
        .unwrap_or(window_s / 60)
        .clamp(window_s.div_ceil(MAX_STEPS).max(1), window_s);
    let steps = window_s.div_ceil(step_s);
    let now_ms = crate::unix_millis() as i64;
    let start_ms = now_ms - (steps * step_s * 1000) as i64;
    let here = shared.host.kernel().node().to_owned();
    let gauges = shared.gauges();
    let history = shared.gauge_history(start_ms);
    let others = peers(&shared, &here, now_ms).await;
    let skills_served = shared.served_skills().len();
    let host = shared.host.clone();
    blocking("reading the history", move || {
        let calls = host.history(&Filter {
            since_ms: Some(start_ms),
            limit: Some(MAX_CALLS),
            ..Filter::default()
        })?;
        let mut stats = summarise(&calls, start_ms, step_s, steps as usize, &here);
        stats.nodes[0].gauge_history = history;
        for (name, gauges) in std::iter::once((here, gauges)).chain(others) {
            match stats.nodes.iter_mut().find(|n| n.node == name) {
                Some(node) => node.gauges = Some(gauges),
                None => stats.nodes.push(NodeStats {
                    node: name,
                    calls_per_step: vec![0; steps as usize],
                    errors_per_step: vec![0; steps as usize],
                    gauges: Some(gauges),
                    gauge_history: Vec::new(),
                }),
            }
        }
        stats.now_ms = now_ms;
        stats.window_s = window_s;
        stats.skills_served = skills_served;
        stats.truncated = calls.len() as u64 >= MAX_CALLS;
        Ok(Json(stats))
    })
    .await
}

/// A node not heard from for this long (stopped, or cut off) is left off.
#[cfg(feature = "postgres")]
const SILENT_MS: i64 = 10_000;

/// The other nodes on the shared storage heard from lately, with their gauges.
async fn peers(shared: &Shared, here: &str, now_ms: i64) -> Vec<(String, Gauges)> {
    #[cfg(feature = "postgres")]
    if let Some(pg) = shared.host.storage().shared() {
        let here = here.to_owned();
        let since = now_ms - SILENT_MS;
        let rows = pg
            .run_async(move |client| async move {
                let rows = client
                    .query(
                        "SELECT node, gauges FROM serve_nodes WHERE seen_ms >= $1 AND node <> $2 ORDER BY node",
                        &[&since, &here],
                    )
                    .await?;
                Ok(rows
                    .iter()
                    .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
                    .collect::<Vec<_>>())
            })
            .await
            .unwrap_or_default();
        return rows
            .into_iter()
            .filter_map(|(node, gauges)| Some((node, serde_json::from_str(&gauges).ok()?)))
            .collect();
    }
    let _ = (shared, here, now_ms);
    Vec::new()
}

/// The figures of `calls` (newest first, all at or after `start_ms`) in `steps` steps of
/// `step_s` seconds; `here` is listed first among the nodes, calls or not.
fn summarise(calls: &[Record], start_ms: i64, step_s: u64, steps: usize, here: &str) -> Stats {
    let step_ms = (step_s * 1000) as i64;
    let mut nodes: BTreeMap<&str, NodeStats> = BTreeMap::new();
    let empty = |node: &str| NodeStats {
        node: node.to_owned(),
        calls_per_step: vec![0; steps],
        errors_per_step: vec![0; steps],
        gauges: None,
        gauge_history: Vec::new(),
    };
    nodes.insert(here, empty(here));
    let mut durations: BTreeMap<&str, (Vec<f64>, u64)> = BTreeMap::new();
    let mut errors: BTreeMap<&str, u64> = BTreeMap::new();
    for call in calls {
        let node_name = if call.node.is_empty() {
            "unnamed"
        } else {
            &call.node
        };
        let node = nodes.entry(node_name).or_insert_with(|| empty(node_name));
        let step = usize::try_from((call.at_ms - start_ms).max(0) / step_ms)
            .unwrap_or(0)
            .min(steps.saturating_sub(1));
        let failed = call.status != Status::Success;
        if let Some(count) = node.calls_per_step.get_mut(step) {
            *count += 1;
        }
        if failed && let Some(count) = node.errors_per_step.get_mut(step) {
            *count += 1;
        }
        let (times, failures) = durations.entry(&call.tool).or_default();
        times.push(call.duration_ms);
        if failed {
            *failures += 1;
            *errors
                .entry(call.error_parts().0.unwrap_or("UNKNOWN"))
                .or_default() += 1;
        }
    }
    let mut skills: Vec<SkillLatency> = durations
        .into_iter()
        .map(|(skill, (mut times, failures))| {
            times.sort_by(f64::total_cmp);
            SkillLatency {
                skill: skill.to_owned(),
                calls: times.len() as u64,
                errors: failures,
                p50_ms: rank(&times, 0.50),
                p99_ms: rank(&times, 0.99),
            }
        })
        .collect();
    skills.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.skill.cmp(&b.skill)));
    let mut errors: Vec<ErrorCount> = errors
        .into_iter()
        .map(|(code, count)| ErrorCount {
            code: code.to_owned(),
            count,
        })
        .collect();
    errors.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.code.cmp(&b.code)));
    let mut nodes: Vec<NodeStats> = nodes.into_values().collect();
    nodes.sort_by_key(|n| n.node != here);
    Stats {
        node: here.to_owned(),
        now_ms: 0,
        start_ms,
        window_s: 0,
        step_s,
        total_calls: calls.len() as u64,
        skills_served: 0,
        truncated: false,
        nodes,
        skills,
        errors,
    }
}

/// The value at quantile `q` of `sorted` (nearest rank); 0 when empty.
fn rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(node: &str, tool: &str, at_ms: i64, ms: f64, error: Option<&str>) -> Record {
        Record {
            id: 0,
            at_ms,
            caller: "mcp".into(),
            task_id: String::new(),
            tool: tool.into(),
            arguments: "{}".into(),
            status: if error.is_some() {
                Status::Error
            } else {
                Status::Success
            },
            duration_ms: ms,
            error: error.map(str::to_owned),
            hint: None,
            node: node.into(),
        }
    }

    #[test]
    fn calls_are_counted_per_node_and_step_with_latency_quantiles_per_skill() {
        let mut calls: Vec<Record> = (1..=100)
            .map(|ms| call("a:1", "calc", 1_000 + ms, ms as f64, None))
            .collect();
        calls.push(call(
            "b:2",
            "calc",
            6_500,
            500.0,
            Some("[TIMEOUT] too slow"),
        ));
        calls.push(call(
            "b:2",
            "fetch",
            9_999,
            2.0,
            Some("[PERMISSION_DENIED] no"),
        ));
        let stats = summarise(&calls, 0, 5, 2, "b:2");
        assert_eq!(stats.nodes[0].node, "b:2", "this node first");
        assert_eq!(stats.nodes[0].calls_per_step, [0, 2]);
        assert_eq!(stats.nodes[0].errors_per_step, [0, 2]);
        assert_eq!(stats.nodes[1].calls_per_step, [100, 0]);
        let calc = &stats.skills[0];
        assert_eq!(
            (calc.skill.as_str(), calc.calls, calc.errors),
            ("calc", 101, 1)
        );
        assert_eq!((calc.p50_ms, calc.p99_ms), (51.0, 100.0));
        let codes: Vec<_> = stats
            .errors
            .iter()
            .map(|e| (e.code.as_str(), e.count))
            .collect();
        assert_eq!(codes, [("PERMISSION_DENIED", 1), ("TIMEOUT", 1)]);
    }

    #[test]
    fn a_node_with_no_calls_is_still_listed() {
        let stats = summarise(&[], 0, 5, 3, "here:1");
        assert_eq!(stats.nodes.len(), 1);
        assert_eq!(stats.nodes[0].calls_per_step, [0, 0, 0]);
        assert_eq!(rank(&[], 0.5), 0.0);
    }
}
