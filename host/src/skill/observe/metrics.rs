//! Figures for monitoring, in the OpenMetrics text format Prometheus scrapes (`evo
//! serve`'s `/metrics`).
//!
//! Counted as the kernel records each call of a skill or tool and each refusal, plus
//! gauges read when scraped. Labels
//! name skills, statuses, error codes and refusal kinds, never inputs: a call of a name
//! that is not there (a client may call any name) is counted as `unknown`, and past
//! [`MAX_SKILL_LABELS`] names every other one as `other`, so the number of series stays
//! bounded by the catalogue.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::skill::observe::store::{Record, Status};

/// Upper bounds of the call-duration buckets, in seconds: 100 µs to ~105 s, ×4 each.
const DURATION_BUCKETS: [f64; 11] = [
    0.0001, 0.0004, 0.0016, 0.0064, 0.0256, 0.1024, 0.4096, 1.6384, 6.5536, 26.2144, 104.8576,
];

/// Label of a name that is not among the host's skills and tools.
const UNKNOWN: &str = "unknown";

/// Most distinct skill and tool names given a label of their own.
pub const MAX_SKILL_LABELS: usize = 4096;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    skill: String,
    status: &'static str,
    code: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkillLabel {
    skill: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    kind: String,
}

/// What is read at the moment of a scrape: what the server holds, and the counts kept
/// by the memory and the Wasm engine.
#[derive(Debug, Clone, Default)]
pub struct Scraped {
    /// Wasm instances alive (calls running, and stores not yet dropped).
    pub instances: u64,
    /// Calls running.
    pub running: u64,
    /// Calls waiting for a slot.
    pub queued: u64,
    /// Slots for calls at once.
    pub slots: u64,
    /// Skills in the catalogue.
    pub skills: u64,
    /// Entries in long-term memory.
    pub memory_entries: u64,
    /// Stores decided since start, by action (`add`, `update`, `noop`, `restore`).
    pub memory_decisions: Vec<(&'static str, u64)>,
    /// Components loaded from the compile cache since start.
    pub components_from_cache: u64,
    /// Components compiled since start.
    pub components_compiled: u64,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabel {
    action: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: &'static str,
}

/// The counts kept on the call path; the rest is read when scraped.
#[derive(Debug)]
pub struct Metrics {
    calls: Family<CallLabels, Counter>,
    durations: Family<SkillLabel, Histogram, fn() -> Histogram>,
    refusals: Family<RefusalLabels, Counter>,
    /// The names labelled so far.
    named: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            durations: Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS)),
            refusals: Family::default(),
            named: std::sync::Mutex::default(),
        }
    }
}

impl Metrics {
    /// The content type of [`Metrics::encode`]'s text.
    pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

    /// Counts a recorded call.
    pub(crate) fn observe(&self, record: &Record) {
        let code = record.error_parts().0.unwrap_or("");
        let code = if code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
            code
        } else {
            UNKNOWN
        };
        let skill = if matches!(code, "SKILL_NOT_FOUND" | "TOOL_NOT_FOUND") {
            UNKNOWN
        } else {
            self.label(&record.tool)
        };
        self.calls
            .get_or_create(&CallLabels {
                skill: skill.to_owned(),
                status: record.status.name(),
                code: code.to_owned(),
            })
            .inc();
        if record.status == Status::Blocked {
            // The sandbox's own refusals are recorded under what they refused.
            let kind = match record.tool.as_str() {
                "http" | "secret" => record.tool.as_str(),
                _ if code.is_empty() => UNKNOWN,
                _ => code,
            };
            self.refusals
                .get_or_create(&RefusalLabels {
                    kind: kind.to_ascii_lowercase(),
                })
                .inc();
        } else {
            self.durations
                .get_or_create(&SkillLabel {
                    skill: skill.to_owned(),
                })
                .observe(record.duration_ms / 1000.0);
        }
    }

    /// `name`, or `other` once [`MAX_SKILL_LABELS`] other names have labels.
    fn label<'a>(&self, name: &'a str) -> &'a str {
        let mut named = self
            .named
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if named.contains(name) {
            return name;
        }
        if named.len() >= MAX_SKILL_LABELS {
            return "other";
        }
        named.insert(name.to_owned());
        name
    }

    /// The figures as OpenMetrics text, with what was read at the scrape.
    pub fn encode(&self, scraped: Scraped) -> String {
        let mut registry = Registry::with_prefix("evo");
        registry.register(
            "calls",
            "Calls of skills and tools, by skill, status (success, error, blocked) and error code",
            self.calls.clone(),
        );
        registry.register_with_unit(
            "call_duration",
            "How long calls took, by skill",
            prometheus_client::registry::Unit::Seconds,
            self.durations.clone(),
        );
        registry.register(
            "refusals",
            "Calls and requests the sandbox refused, by kind (http, secret, or the refused call's error code)",
            self.refusals.clone(),
        );
        for (name, help, value) in [
            ("wasm_instances", "Wasm instances alive", scraped.instances),
            ("calls_running", "Calls running now", scraped.running),
            (
                "calls_queued",
                "Calls waiting for a slot now",
                scraped.queued,
            ),
            ("call_slots", "Calls that may run at once", scraped.slots),
            ("skills", "Skills in the catalogue", scraped.skills),
            (
                "memory_entries",
                "Entries in long-term memory",
                scraped.memory_entries,
            ),
        ] {
            let gauge = Gauge::<u64, AtomicU64>::default();
            gauge.set(value);
            registry.register(name, help, gauge);
        }
        // Counted elsewhere since start: a fresh counter per scrape holds the total.
        let decisions = Family::<ActionLabel, Counter>::default();
        for (action, count) in &scraped.memory_decisions {
            decisions
                .get_or_create(&ActionLabel { action })
                .inc_by(*count);
        }
        registry.register(
            "memory_decisions",
            "Memory stores decided since start, by action (add, update, noop, restore)",
            decisions,
        );
        let loads = Family::<SourceLabel, Counter>::default();
        for (source, count) in [
            ("cache", scraped.components_from_cache),
            ("compiled", scraped.components_compiled),
        ] {
            loads.get_or_create(&SourceLabel { source }).inc_by(count);
        }
        registry.register(
            "component_loads",
            "Wasm components loaded since start, from the compile cache or compiled",
            loads,
        );
        let mut text = String::new();
        // Writing to a `String` cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tool: &str, status: Status, error: Option<&str>) -> Record {
        Record {
            id: 0,
            at_ms: 0,
            caller: "cli".into(),
            task_id: "t".into(),
            tool: tool.into(),
            arguments: "{\"secret input\":1}".into(),
            status,
            duration_ms: 3.0,
            error: error.map(str::to_owned),
            hint: None,
            node: String::new(),
        }
    }

    #[test]
    fn calls_are_counted_by_skill_status_and_code_and_never_by_input() {
        let metrics = Metrics::default();
        metrics.observe(&record("calculate", Status::Success, None));
        metrics.observe(&record("calculate", Status::Success, None));
        metrics.observe(&record(
            "calculate",
            Status::Error,
            Some("[SKILL_TIMEOUT] too slow"),
        ));
        metrics.observe(&record(
            "made-up-name",
            Status::Error,
            Some("[SKILL_NOT_FOUND] x"),
        ));
        metrics.observe(&record(
            "http",
            Status::Blocked,
            Some("[PERMISSION_DENIED] not granted"),
        ));
        let text = metrics.encode(Scraped {
            instances: 2,
            slots: 16,
            memory_entries: 5,
            memory_decisions: vec![("add", 4), ("noop", 1)],
            components_from_cache: 3,
            ..Scraped::default()
        });
        for line in [
            "evo_calls_total{skill=\"calculate\",status=\"success\",code=\"\"} 2",
            "evo_calls_total{skill=\"calculate\",status=\"error\",code=\"SKILL_TIMEOUT\"} 1",
            "evo_calls_total{skill=\"unknown\",status=\"error\",code=\"SKILL_NOT_FOUND\"} 1",
            "evo_refusals_total{kind=\"http\"} 1",
            "evo_call_duration_seconds_count{skill=\"calculate\"} 3",
            "evo_call_duration_seconds_bucket{le=\"0.0064\",skill=\"calculate\"} 3",
            "evo_wasm_instances 2",
            "evo_call_slots 16",
            "evo_memory_entries 5",
            "evo_memory_decisions_total{action=\"add\"} 4",
            "evo_component_loads_total{source=\"cache\"} 3",
            "evo_component_loads_total{source=\"compiled\"} 0",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
        }
        assert!(
            !text.contains("made-up-name") && !text.contains("secret input"),
            "{text}"
        );
    }

    #[test]
    fn names_past_the_cap_share_one_label() {
        let metrics = Metrics::default();
        for i in 0..=MAX_SKILL_LABELS {
            metrics.observe(&record(&format!("skill-{i}"), Status::Success, None));
        }
        let text = metrics.encode(Scraped::default());
        assert!(text.contains("skill=\"skill-0\""), "{text}");
        assert!(
            text.contains("evo_calls_total{skill=\"other\",status=\"success\",code=\"\"} 1"),
            "the name past the cap"
        );
        assert!(!text.contains(&format!("skill-{MAX_SKILL_LABELS}\"")));
    }
}
