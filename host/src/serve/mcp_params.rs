//! What is wrong with a request the MCP SDK could not read: a method MCP defines with
//! params of the wrong shape is invalid params (-32602) that say which field and what it
//! must be; a method MCP does not define is "method not found" (-32601) with the methods
//! this server answers.
//!
//! The SDK reads a request whose params do not fit its method's type as a custom
//! request, which it answers -32601 with the method's name alone: a client that sent
//! `"arguments": "…"` to `tools/call` was told that `tools/call` does not exist.

use rmcp::ErrorData as McpError;
use rmcp::model::ErrorCode;
use serde_json::Value;

/// The kind of value a field of the params must be.
#[derive(Clone, Copy)]
enum Kind {
    String,
    Object,
    /// A string, one of these.
    OneOf(&'static [&'static str]),
}

const LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A field of a method's params: its name, whether it is required, its kind and what
/// it holds.
type Field = (&'static str, bool, Kind, &'static str);

/// The methods this server answers, each with the fields of its params that a client
/// writes (the SDK reads the rest).
const METHODS: &[(&str, &[Field])] = &[
    (
        "initialize",
        &[
            (
                "protocolVersion",
                true,
                Kind::String,
                "the MCP revision the client speaks",
            ),
            ("capabilities", true, Kind::Object, "what the client can do"),
            (
                "clientInfo",
                true,
                Kind::Object,
                "the client's name and version",
            ),
        ],
    ),
    ("ping", &[]),
    (
        "tools/list",
        &[(
            "cursor",
            false,
            Kind::String,
            "the nextCursor of the page before",
        )],
    ),
    (
        "tools/call",
        &[
            (
                "name",
                true,
                Kind::String,
                "the tool's name, as tools/list gives it",
            ),
            (
                "arguments",
                false,
                Kind::Object,
                "the tool's inputs, as its inputSchema says",
            ),
        ],
    ),
    (
        "resources/list",
        &[(
            "cursor",
            false,
            Kind::String,
            "the nextCursor of the page before",
        )],
    ),
    (
        "resources/templates/list",
        &[(
            "cursor",
            false,
            Kind::String,
            "the nextCursor of the page before",
        )],
    ),
    (
        "resources/read",
        &[(
            "uri",
            true,
            Kind::String,
            "the resource's URI, as resources/list gives it",
        )],
    ),
    (
        "resources/subscribe",
        &[("uri", true, Kind::String, "the resource's URI")],
    ),
    (
        "resources/unsubscribe",
        &[("uri", true, Kind::String, "the resource's URI")],
    ),
    (
        "prompts/list",
        &[(
            "cursor",
            false,
            Kind::String,
            "the nextCursor of the page before",
        )],
    ),
    (
        "prompts/get",
        &[
            (
                "name",
                true,
                Kind::String,
                "the prompt's name, as prompts/list gives it",
            ),
            (
                "arguments",
                false,
                Kind::Object,
                "the prompt's arguments, each a string",
            ),
        ],
    ),
    (
        "logging/setLevel",
        &[(
            "level",
            true,
            Kind::OneOf(LEVELS),
            "the least severe log message to send",
        )],
    ),
];

/// The error for a request the SDK could not read as `method`: invalid params when MCP
/// defines the method, else method not found.
pub fn unreadable(method: &str, params: Option<&Value>) -> McpError {
    wrong(method, params).unwrap_or_else(|| {
        McpError::invalid_params(
            format!("the params of {method} are wrong: a field holds a value MCP does not define for it (see the method's params in the MCP specification)"),
            None,
        )
    })
}

/// What is wrong with a request for `method` with `params`, when it can be said: the
/// method is not one this server answers, or a field of its params is missing or of
/// the wrong kind.
pub fn wrong(method: &str, params: Option<&Value>) -> Option<McpError> {
    let Some((_, fields)) = METHODS.iter().find(|(name, _)| *name == method) else {
        let known: Vec<&str> = METHODS.iter().map(|(name, _)| *name).collect();
        return Some(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "there is no method {method:?}; this server answers {}",
                known.join(", ")
            ),
            None,
        ));
    };
    let problem = problem(fields, params)?;
    Some(McpError::invalid_params(
        format!("the params of {method} are wrong: {problem}"),
        None,
    ))
}

/// The first field of `params` that is missing or of the wrong kind, said plainly.
fn problem(fields: &[Field], params: Option<&Value>) -> Option<String> {
    let object = match params {
        None | Some(Value::Null) if fields.iter().all(|(_, required, ..)| !required) => {
            return None;
        }
        Some(Value::Object(object)) => object,
        other => {
            let shape: Vec<String> = fields
                .iter()
                .map(|(name, ..)| format!("\"{name}\""))
                .collect();
            return Some(format!(
                "params must be an object ({}), not {}",
                shape.join(", "),
                what(other)
            ));
        }
    };
    fields.iter().find_map(|&(name, required, kind, holds)| {
        let wanted = match kind {
            Kind::String => "a string".to_owned(),
            Kind::Object => "an object".to_owned(),
            Kind::OneOf(options) => format!("one of {}", options.join(", ")),
        };
        match (object.get(name), kind) {
            (None, _) if required => {
                Some(format!("\"{name}\" is missing: it is {wanted}, {holds}"))
            }
            (None | Some(Value::String(_)), Kind::String)
            | (None | Some(Value::Object(_)), Kind::Object) => None,
            (Some(Value::String(text)), Kind::OneOf(options))
                if options.contains(&text.as_str()) =>
            {
                None
            }
            (Some(Value::String(text)), Kind::OneOf(_)) => Some(format!(
                "\"{name}\" is {text:?}: it must be {wanted}, {holds}"
            )),
            (Some(Value::Null), _) if !required => None,
            (value, _) => Some(format!(
                "\"{name}\" is {}: it must be {wanted}, {holds}",
                what(value)
            )),
        }
    })
}

/// What a JSON value is, in words.
fn what(value: Option<&Value>) -> &'static str {
    match value {
        None | Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "true or false",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn said(method: &str, params: Value) -> (i32, String) {
        let error = unreadable(method, Some(&params));
        (error.code.0, error.message.into_owned())
    }

    #[test]
    fn arguments_that_are_not_an_object_are_invalid_params_naming_the_field() {
        // "tools/call with "arguments":"str" ... is invalid params (-32602) with what
        // was expected."
        let (code, message) = said(
            "tools/call",
            json!({ "name": "calculate", "arguments": "str" }),
        );
        assert_eq!(code, -32602);
        assert_eq!(
            message,
            "the params of tools/call are wrong: \"arguments\" is a string: it must be an object, the tool's inputs, as its inputSchema says"
        );
        let (code, message) = said("tools/call", json!({ "arguments": {} }));
        assert_eq!(code, -32602);
        assert!(
            message.contains("\"name\" is missing: it is a string"),
            "{message}"
        );
        let (_, message) = said("tools/call", json!("x"));
        assert!(
            message.contains("params must be an object (\"name\", \"arguments\"), not a string"),
            "{message}"
        );
        let (_, message) = said("logging/setLevel", json!({ "level": "loud" }));
        assert!(
            message.contains("\"level\" is \"loud\": it must be one of debug, info,"),
            "{message}"
        );
        let (_, message) = said("resources/read", json!({ "uri": 7 }));
        assert!(
            message.contains("\"uri\" is a number: it must be a string"),
            "{message}"
        );
    }

    #[test]
    fn a_method_mcp_does_not_define_is_not_found_with_those_that_are() {
        let (code, message) = said("tools/run", json!({}));
        assert_eq!(code, -32601);
        assert!(message.starts_with("there is no method \"tools/run\"; this server answers initialize, ping, tools/list, tools/call"), "{message}");
    }
}
