//! The frames two Evo nodes exchange over `/v1/ws`: JSON text messages, one request or
//! reply each, matched by `id` so that many calls share one connection.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The path of the WebSocket endpoint on `evo serve --http`.
pub const PATH: &str = "/v1/ws";

/// From the calling node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// The skills the node serves.
    List {
        /// Matches the reply.
        id: u64,
    },
    /// Calls one of them.
    Call {
        /// Matches the reply.
        id: u64,
        /// The skill, by its name on the serving node.
        skill: String,
        /// The input.
        input: Value,
        /// How long the caller waits, in milliseconds; the serving node gives up then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_ms: Option<u64>,
    },
}

/// From the serving node.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reply {
    /// The request's id.
    pub id: u64,
    /// For `list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<SkillInfo>>,
    /// For a `call` that succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// For a request that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RemoteError>,
}

/// A skill as the serving node describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    /// Its name there.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// Its category.
    #[serde(default)]
    pub category: String,
    /// Its tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The input schema.
    pub input: Value,
    /// The output schema.
    pub output: Value,
    /// Its timeout there, in milliseconds.
    pub timeout_ms: u64,
    /// The level its calls need there (`read_only` … `admin`); the calling node gates
    /// its own callers by it. A node that sends none is taken as `execute`.
    #[serde(default = "SkillInfo::unknown_level")]
    pub permission: crate::skill::permission::Permission,
}

impl SkillInfo {
    fn unknown_level() -> crate::skill::permission::Permission {
        crate::skill::permission::Permission::Execute
    }
}

/// An error, with the serving node's code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteError {
    /// The stable code (`INVALID_INPUT`, `SKILL_TIMEOUT`, …).
    pub code: String,
    /// What happened.
    pub message: String,
    /// What to do, when there is a useful hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether trying again may work.
    #[serde(default)]
    pub transient: bool,
}
