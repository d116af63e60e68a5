//! What a run reports as it goes (blueprint §3.7, §13.9): one [`RunEvent`] per skill
//! call, result, self-heal attempt, emitted event, token, error and the end of the run.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// The kind of a [`RunEvent`] (its `type` field).
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
    /// The run failed.
    Error,
    /// The run finished.
    Done,
}

/// One event of a run, serialised in the shape of the blueprint's `RunEvent`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// Milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// The skill concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// The input of a `skill_call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Call depth of a `skill_call` (1 for a call made by the run itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// The output of a `skill_result`, or what a skill emitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Duration of a `skill_result`, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// Whether a `skill_result` is a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The error message of a failed `skill_result` or an `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stable error code, with `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// Which attempt failed, for `skill_validation_retry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// How many attempts are allowed, for `skill_validation_retry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// How many violations the failed attempt had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violations: Option<usize>,
    /// Token text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl RunEvent {
    /// An event of `kind` about `skill`, stamped now, with no other fields.
    pub fn new(kind: EventKind, skill: Option<&str>) -> Self {
        let timestamp = crate::unix_millis();
        Self {
            kind,
            timestamp,
            skill: skill.map(str::to_owned),
            input: None,
            depth: None,
            output: None,
            duration: None,
            is_error: None,
            error: None,
            code: None,
            attempt: None,
            max_attempts: None,
            violations: None,
            content: None,
        }
    }

    /// `skill_call`.
    pub fn skill_call(skill: &str, input: &Value, depth: u32) -> Self {
        Self {
            input: Some(input.clone()),
            depth: Some(depth),
            ..Self::new(EventKind::SkillCall, Some(skill))
        }
    }

    /// A successful `skill_result`.
    pub fn skill_result(skill: &str, output: &Value, duration: Duration) -> Self {
        Self {
            output: Some(output.clone()),
            duration: Some(duration.as_secs_f64() * 1000.0),
            is_error: Some(false),
            ..Self::new(EventKind::SkillResult, Some(skill))
        }
    }

    /// A failed `skill_result`.
    pub fn skill_failed(skill: &str, error: &crate::Error, duration: Duration) -> Self {
        Self {
            duration: Some(duration.as_secs_f64() * 1000.0),
            is_error: Some(true),
            error: Some(error.to_string()),
            code: Some(error.code()),
            ..Self::new(EventKind::SkillResult, Some(skill))
        }
    }

    /// `skill_validation_retry`.
    pub fn validation_retry(
        skill: &str,
        attempt: u32,
        max_attempts: u32,
        violations: usize,
    ) -> Self {
        Self {
            attempt: Some(attempt),
            max_attempts: Some(max_attempts),
            violations: Some(violations),
            ..Self::new(EventKind::SkillValidationRetry, Some(skill))
        }
    }

    /// Something `skill` emitted.
    pub fn emitted(skill: &str, event: Value) -> Self {
        Self {
            output: Some(event),
            ..Self::new(EventKind::Emit, Some(skill))
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
    fn events_serialise_like_the_blueprint() {
        let call = serde_json::to_value(RunEvent::skill_call(
            "calculate",
            &json!({"expression": "1"}),
            1,
        ))
        .unwrap();
        assert_eq!(call["type"], "skill_call");
        assert_eq!(call["depth"], 1);
        assert!(call.get("output").is_none());
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
