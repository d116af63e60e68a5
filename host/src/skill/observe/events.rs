//! What a run reports as it goes: one [`RunEvent`] per skill
//! call, result, self-heal attempt, emitted event, token, error and the end of the run.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::skill::exchange::MemoryWriteOutcome;

/// The kind of a [`RunEvent`] (its `type` field), for matching without the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Text from the model.
    Token,
    /// A skill call starts (after gate 1).
    SkillCall,
    /// A skill call ended, successfully or not.
    SkillResult,
    /// An llm skill's output failed gate 2 and is asked again.
    SkillValidationRetry,
    /// Something a skill emitted itself.
    Emit,
    /// A line a skill wrote to the log.
    Log,
    /// What became of the memory writes a skill suggested.
    MemoryWrites,
    /// Something went wrong that the run went on without (memory it could not read).
    Warning,
    /// The run failed.
    Error,
    /// The run finished.
    Done,
}

impl EventKind {
    /// The `type` field's value: `token`, `skill_call`, … (an SSE stream's event names).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Token => "token",
            Self::SkillCall => "skill_call",
            Self::SkillResult => "skill_result",
            Self::SkillValidationRetry => "skill_validation_retry",
            Self::Emit => "emit",
            Self::Log => "log",
            Self::MemoryWrites => "memory_writes",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Done => "done",
        }
    }
}

/// One event of a run. Serialised with a `type` tag and camelCase fields, e.g.
/// `{"type":"skill_call","timestamp":…,"skill":"calculate","input":{…},"depth":1}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RunEvent {
    /// Text from the model.
    Token {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The text.
        content: String,
    },
    /// A skill call starts (after gate 1).
    SkillCall {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The skill.
        skill: String,
        /// Its input, defaults applied.
        input: Value,
        /// Call depth (1 for a call made by the run itself).
        depth: u32,
    },
    /// A skill call ended, successfully or not.
    SkillResult {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The skill.
        skill: String,
        /// The output, on success.
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// Duration in milliseconds.
        duration: f64,
        /// Whether it failed.
        is_error: bool,
        /// The error message, on failure.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The stable error code, on failure.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'static str>,
    },
    /// An llm skill's output failed gate 2 and is asked again.
    SkillValidationRetry {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The skill.
        skill: String,
        /// Which attempt failed.
        attempt: u32,
        /// How many attempts are allowed.
        max_attempts: u32,
        /// How many violations the failed attempt had.
        violations: usize,
    },
    /// Something a skill emitted itself.
    Emit {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The skill that emitted it.
        skill: String,
        /// The event, as the skill wrote it.
        output: Value,
    },
    /// A line a skill wrote to the log (`context.log`).
    Log {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The skill that wrote it.
        skill: String,
        /// `trace`, `debug`, `info`, `warn` or `error`.
        level: &'static str,
        /// The line, cut to the chatter limit.
        message: String,
    },
    /// What became of the memory writes a skill suggested: kept, merged or refused.
    MemoryWrites {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The skill whose call returned them.
        skill: String,
        /// Each write and what became of it.
        writes: Vec<MemoryWriteOutcome>,
    },
    /// Something went wrong that the run went on without: memory it could not read
    /// (the answer then has no recall), a capture that failed.
    Warning {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// What went wrong and what the run did instead.
        message: String,
        /// The stable code of the error behind it.
        code: &'static str,
    },
    /// The run failed.
    Error {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// What went wrong.
        error: String,
        /// The stable error code.
        code: &'static str,
    },
    /// The run finished.
    Done {
        /// Milliseconds since the Unix epoch.
        timestamp: u64,
        /// The answer.
        content: String,
    },
}

impl RunEvent {
    /// Which kind of event this is.
    pub fn kind(&self) -> EventKind {
        match self {
            Self::Token { .. } => EventKind::Token,
            Self::SkillCall { .. } => EventKind::SkillCall,
            Self::SkillResult { .. } => EventKind::SkillResult,
            Self::SkillValidationRetry { .. } => EventKind::SkillValidationRetry,
            Self::Emit { .. } => EventKind::Emit,
            Self::Log { .. } => EventKind::Log,
            Self::MemoryWrites { .. } => EventKind::MemoryWrites,
            Self::Warning { .. } => EventKind::Warning,
            Self::Error { .. } => EventKind::Error,
            Self::Done { .. } => EventKind::Done,
        }
    }

    /// The skill the event is about, if any.
    pub fn skill(&self) -> Option<&str> {
        match self {
            Self::SkillCall { skill, .. }
            | Self::SkillResult { skill, .. }
            | Self::SkillValidationRetry { skill, .. }
            | Self::Emit { skill, .. }
            | Self::Log { skill, .. }
            | Self::MemoryWrites { skill, .. } => Some(skill),
            Self::Token { .. } | Self::Warning { .. } | Self::Error { .. } | Self::Done { .. } => {
                None
            }
        }
    }

    /// `token`.
    pub fn token(content: &str) -> Self {
        Self::Token {
            timestamp: crate::unix_millis(),
            content: content.to_owned(),
        }
    }

    /// `skill_call`.
    pub fn skill_call(skill: &str, input: &Value, depth: u32) -> Self {
        Self::SkillCall {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            input: input.clone(),
            depth,
        }
    }

    /// A successful `skill_result`.
    pub fn skill_result(skill: &str, output: &Value, duration: Duration) -> Self {
        Self::SkillResult {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            output: Some(output.clone()),
            duration: duration.as_secs_f64() * 1000.0,
            is_error: false,
            error: None,
            code: None,
        }
    }

    /// A failed `skill_result`.
    pub fn skill_failed(skill: &str, error: &crate::Error, duration: Duration) -> Self {
        Self::SkillResult {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            output: None,
            duration: duration.as_secs_f64() * 1000.0,
            is_error: true,
            error: Some(error.to_string()),
            code: Some(error.code()),
        }
    }

    /// `skill_validation_retry`.
    pub fn validation_retry(
        skill: &str,
        attempt: u32,
        max_attempts: u32,
        violations: usize,
    ) -> Self {
        Self::SkillValidationRetry {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            attempt,
            max_attempts,
            violations,
        }
    }

    /// Something `skill` emitted.
    pub fn emitted(skill: &str, event: Value) -> Self {
        Self::Emit {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            output: event,
        }
    }

    /// `log`: `skill` wrote `message` at `level`.
    pub fn logged(skill: &str, level: &'static str, message: String) -> Self {
        Self::Log {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            level,
            message,
        }
    }

    /// `memory_writes`: what became of the memory writes `skill` suggested.
    pub fn memory_writes(skill: &str, writes: &[MemoryWriteOutcome]) -> Self {
        Self::MemoryWrites {
            timestamp: crate::unix_millis(),
            skill: skill.to_owned(),
            writes: writes.to_vec(),
        }
    }

    /// `warning`: `error` happened and the run went on as `message` says.
    pub fn warning(message: String, error: &crate::Error) -> Self {
        Self::Warning {
            timestamp: crate::unix_millis(),
            message,
            code: error.code(),
        }
    }

    /// `error`: the run failed with `error`.
    pub fn failed(error: &crate::Error) -> Self {
        Self::Error {
            timestamp: crate::unix_millis(),
            error: error.to_string(),
            code: error.code(),
        }
    }

    /// `done`, with the answer.
    pub fn done(content: &str) -> Self {
        Self::Done {
            timestamp: crate::unix_millis(),
            content: content.to_owned(),
        }
    }
}

/// Where a run's events go.
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(RunEvent) + Send + Sync>);

impl EventSink {
    /// A sink calling `f` for every event.
    pub fn new(f: impl Fn(RunEvent) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Delivers `event`.
    pub fn send(&self, event: RunEvent) {
        (self.0)(event);
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventSink")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_kind_is_named_as_its_type_field() {
        let error = crate::Error::SkillNotFound { name: "x".into() };
        let events = [
            RunEvent::token("a"),
            RunEvent::skill_call("s", &json!({}), 1),
            RunEvent::skill_result("s", &json!({}), Duration::ZERO),
            RunEvent::validation_retry("s", 1, 3, 1),
            RunEvent::emitted("s", json!({})),
            RunEvent::logged("s", "info", "m".into()),
            RunEvent::memory_writes("s", &[]),
            RunEvent::warning("w".into(), &error),
            RunEvent::failed(&error),
            RunEvent::done("d"),
        ];
        for event in events {
            let value = serde_json::to_value(&event).unwrap();
            assert_eq!(value["type"], event.kind().as_str(), "{value}");
        }
    }

    #[test]
    fn events_serialise_in_their_documented_shape() {
        let call = serde_json::to_value(RunEvent::skill_call(
            "calculate",
            &json!({"expression": "1"}),
            1,
        ))
        .unwrap();
        assert_eq!(call["type"], "skill_call");
        assert_eq!(call["depth"], 1);
        assert!(call.get("output").is_none());
        let failed = serde_json::to_value(RunEvent::skill_failed(
            "calculate",
            &crate::Error::SkillNotFound { name: "x".into() },
            Duration::from_millis(2),
        ))
        .unwrap();
        assert_eq!(
            (
                &failed["type"],
                &failed["isError"],
                &failed["code"],
                &failed["duration"]
            ),
            (
                &json!("skill_result"),
                &json!(true),
                &json!("SKILL_NOT_FOUND"),
                &json!(2.0)
            )
        );
        let retry = serde_json::to_value(RunEvent::validation_retry("summarize", 1, 3, 2)).unwrap();
        assert_eq!(retry["type"], "skill_validation_retry");
        assert_eq!(
            (
                retry["attempt"].clone(),
                retry["maxAttempts"].clone(),
                retry["violations"].clone()
            ),
            (json!(1), json!(3), json!(2))
        );
    }
}
