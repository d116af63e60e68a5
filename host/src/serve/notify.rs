//! What a call tells its MCP client while it runs: what the skill logs, at or above the
//! level the client asked for, and progress (a heartbeat, and what the skill emits).

// Logging is deprecated by SEP-2577 (2026-07-28), but it is how clients of every
// revision so far hear a server's log.
#![allow(
    deprecated,
    reason = "MCP logging, deprecated by SEP-2577, is still what clients use"
)]

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam};
use rmcp::service::RequestContext;
use serde_json::json;

use crate::skill::observe::events::{EventSink, RunEvent};

/// A logging level as a number: debug 0 … emergency 7.
pub(super) type LoggingLevelRank = u8;

/// The events of one call, sent to the client: what the skill logs as
/// `notifications/message` (at or above `level`), and, with a progress token,
/// what it emits as progress.
pub(super) fn events(
    context: &RequestContext<RoleServer>,
    level: Option<LoggingLevelRank>,
    progress: Option<Progress>,
) -> Option<EventSink> {
    if level.is_none() && progress.is_none() {
        return None;
    }
    let peer = context.peer.clone();
    Some(EventSink::new(move |event| match event {
        RunEvent::Log {
            skill,
            level: skill_level,
            message,
            ..
        } => {
            let rank = rank_of_skill_level(skill_level);
            if level.is_some_and(|min| rank >= min) {
                let peer = peer.clone();
                let param = LoggingMessageNotificationParam::new(
                    logging_level(rank),
                    json!({ "skill": skill, "message": message }),
                )
                .with_logger(skill);
                tokio::spawn(async move {
                    let _ = peer.notify_logging_message(param).await;
                });
            }
        }
        RunEvent::Emit { skill, output, .. } => {
            if let Some(progress) = &progress {
                progress.send(&peer, Some(format!("{skill}: {output}")));
            }
        }
        _ => {}
    }))
}

/// A call's progress notifications: how long it has run, out of its deadline.
#[derive(Debug, Clone)]
pub(super) struct Progress {
    pub(super) token: rmcp::model::ProgressToken,
    pub(super) started: Instant,
    pub(super) total: Duration,
}

impl Progress {
    pub(super) fn send(&self, peer: &rmcp::Peer<RoleServer>, message: Option<String>) {
        let elapsed = self.started.elapsed().min(self.total);
        let mut param =
            ProgressNotificationParam::new(self.token.clone(), elapsed.as_secs_f64() * 1000.0)
                .with_total(self.total.as_secs_f64() * 1000.0);
        param.message = Some(message.unwrap_or_else(|| {
            format!(
                "running for {:.1} s of at most {:.1} s",
                elapsed.as_secs_f64(),
                self.total.as_secs_f64()
            )
        }));
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }
}

pub(super) fn rank_of(level: LoggingLevel) -> LoggingLevelRank {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn logging_level(rank: LoggingLevelRank) -> LoggingLevel {
    match rank {
        0 => LoggingLevel::Debug,
        1 => LoggingLevel::Info,
        2 => LoggingLevel::Notice,
        3 => LoggingLevel::Warning,
        4 => LoggingLevel::Error,
        5 => LoggingLevel::Critical,
        6 => LoggingLevel::Alert,
        _ => LoggingLevel::Emergency,
    }
}

/// A skill's `context.log` level on the MCP scale.
fn rank_of_skill_level(level: &str) -> LoggingLevelRank {
    match level {
        "trace" | "debug" => 0,
        "info" => 1,
        "warn" => 3,
        _ => 4,
    }
}
