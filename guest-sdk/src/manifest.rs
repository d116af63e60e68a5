use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// How a skill describes itself to the host: what it does and what it needs.
///
/// Only the name and description are required. Everything else has the defaults of
/// Evo's `skill.json`: category `general`, the crate's version, no tags, a 30 s timeout,
/// no retries, the host's default limits, and no capabilities.
///
/// ```
/// use evo_guest::{Access, Manifest};
///
/// let manifest = Manifest::new("file-head", "Reads the first lines of a text file.")
///     .category("files")
///     .tags(["files", "readonly"])
///     .timeout_ms(5_000)
///     .dir("/data", Access::Read, "the files to read");
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Manifest {
    name: String,
    description: String,
    category: String,
    version: Option<String>,
    tags: Vec<String>,
    author: Option<String>,
    timeout_ms: Option<u64>,
    retry: u32,
    calls: Vec<String>,
    limits: Limits,
    capabilities: Capabilities,
}

/// Resource limits a skill asks for. The host clamps each to its own policy.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Linear memory, in MiB, across all of the skill's memories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u32>,
    /// Fuel (roughly, Wasm instructions) per call, for deterministic metering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Largest output, in bytes of JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
}

/// What a skill may do beyond computing: all denied unless requested here and granted
/// by the operator.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Capabilities {
    /// Directories to preopen, by the path the skill sees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<DirRequest>,
    /// Whether the skill may ask the language model.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub llm: bool,
    /// Access to long-term memory.
    #[serde(skip_serializing_if = "MemoryAccess::is_none")]
    pub memory: MemoryAccess,
}

/// One requested directory.
#[derive(Debug, Clone, Serialize)]
pub struct DirRequest {
    /// The absolute path the skill opens, such as `/data`.
    pub path: String,
    /// Read-only or read-write.
    pub access: Access,
    /// Why the skill needs it, shown to the operator at install.
    pub reason: String,
}

/// Access to a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// List and read files.
    Read,
    /// Also create, write, rename and delete files.
    ReadWrite,
}

/// Access to long-term memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryAccess {
    /// No access (the default).
    #[default]
    None,
    /// `memory::search`.
    Read,
    /// `memory::search`, `memory::store` and `memory::forget`.
    ReadWrite,
}

impl MemoryAccess {
    fn is_none(&self) -> bool {
        *self == MemoryAccess::None
    }
}

impl Manifest {
    /// A manifest with a name (`^[a-z][a-z0-9_-]{0,63}$`) and a description the model
    /// reads to decide when to use the skill.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            category: "general".to_owned(),
            version: None,
            tags: Vec::new(),
            author: None,
            timeout_ms: None,
            retry: 0,
            calls: Vec::new(),
            limits: Limits::default(),
            capabilities: Capabilities::default(),
        }
    }

    /// Groups the skill in listings and prompts (`memory`, `text`, `code`, …).
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = category.into();
        self
    }

    /// Overrides the version, which defaults to the crate's version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Free-form tags for discovery (`readonly`, `destructive`, `slow`, …).
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Who wrote the skill.
    pub fn author(mut self, author: impl Into<String>) -> Self {
        self.author = Some(author.into());
        self
    }

    /// The wall-clock time one call may take, in milliseconds (default 30 000).
    pub fn timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = Some(timeout_ms);
        self
    }

    /// How often the host retries a call that failed with a transient error.
    pub fn retry(mut self, retry: u32) -> Self {
        self.retry = retry;
        self
    }

    /// Declares another skill this one calls with [`crate::call`].
    pub fn calls(mut self, skill: impl Into<String>) -> Self {
        self.calls.push(skill.into());
        self
    }

    /// Resource limits to ask for.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Requests a directory, seen by the skill at `path`.
    pub fn dir(
        mut self,
        path: impl Into<String>,
        access: Access,
        reason: impl Into<String>,
    ) -> Self {
        self.capabilities.dirs.push(DirRequest {
            path: path.into(),
            access,
            reason: reason.into(),
        });
        self
    }

    /// Requests the language model.
    pub fn llm(mut self) -> Self {
        self.capabilities.llm = true;
        self
    }

    /// Requests access to long-term memory.
    pub fn memory(mut self, access: MemoryAccess) -> Self {
        self.capabilities.memory = access;
        self
    }

    /// The manifest as the host reads it, with schemas generated for `I` and `O`.
    pub(crate) fn to_json<I: JsonSchema, O: JsonSchema>(&self, crate_version: &str) -> String {
        let mut manifest = json!({
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "mode": "code",
            "input": schema_for::<I>(),
            "output": schema_for::<O>(),
            "version": self.version.as_deref().unwrap_or(crate_version),
            "tags": self.tags,
            "retry": self.retry,
            "calls": self.calls,
            "limits": self.limits,
            "capabilities": self.capabilities,
        });
        if let Some(author) = &self.author {
            manifest["author"] = json!(author);
        }
        if let Some(timeout) = self.timeout_ms {
            manifest["timeout"] = json!(timeout);
        }
        manifest.to_string()
    }
}

/// Draft 7 keeps the schemas readable by every LLM tool-calling API and validator.
fn schema_for<T: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>();
    schema.to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[expect(dead_code, reason = "only its schema is used")]
    struct In {
        expression: String,
    }

    #[test]
    fn manifest_has_defaults_and_schemas() {
        let json = Manifest::new("calculate", "Evaluates arithmetic.").to_json::<In, In>("1.2.3");
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["name"], "calculate");
        assert_eq!(value["version"], "1.2.3");
        assert_eq!(value["category"], "general");
        assert_eq!(value["input"]["properties"]["expression"]["type"], "string");
        assert_eq!(value["input"]["required"], json!(["expression"]));
        assert!(value.get("timeout").is_none());
        assert_eq!(value["capabilities"], json!({}));
    }

    #[test]
    fn requested_capabilities_are_listed() {
        let json = Manifest::new("x", "y")
            .dir("/data", Access::Read, "input files")
            .memory(MemoryAccess::ReadWrite)
            .llm()
            .to_json::<In, In>("0.1.0");
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            value["capabilities"],
            json!({
                "dirs": [{ "path": "/data", "access": "read", "reason": "input files" }],
                "llm": true,
                "memory": "read-write",
            })
        );
    }
}
