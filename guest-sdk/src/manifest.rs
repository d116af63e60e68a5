use evo_manifest::SkillManifest;
use schemars::JsonSchema;
use serde_json::Value;

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
    requests: Vec<String>,
    author: Option<String>,
    timeout_ms: Option<u64>,
    retry: u32,
    calls: Vec<String>,
    limits: Limits,
    capabilities: Capabilities,
}

pub use evo_manifest::{
    Access, Capabilities, DirRequest, HostPattern, HostRequest, Limits, MemoryAccess, SecretRequest,
};

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
            requests: Vec::new(),
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

    /// A few things a user might say when they want the skill, in their own words
    /// (`"how long would this take to read?"`), up to 8 of at most 200 characters: the
    /// host's skill index ranks a message by the closest of these and the description,
    /// so the skill is found for words its description does not use.
    pub fn requests<I, S>(mut self, requests: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.requests = requests.into_iter().map(Into::into).collect();
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

    /// Requests outbound HTTP to the origins of `pattern`: `[scheme://]host[:port]`,
    /// `*.example.com` for the names below a domain, `:*` for any port (see
    /// [`crate::http`]). The operator decides whether the skill gets it.
    ///
    /// # Panics
    ///
    /// If `pattern` is not a host pattern: a mistake in the skill's own code, reported
    /// when the host reads the manifest.
    pub fn host(mut self, pattern: &str, reason: impl Into<String>) -> Self {
        let host = HostPattern::parse(pattern)
            .unwrap_or_else(|e| panic!("the manifest's host {pattern:?} is invalid: {e}"));
        self.capabilities.hosts.push(HostRequest {
            host,
            reason: reason.into(),
        });
        self
    }

    /// Requests secret `name` (as the operator set it with `evo secret set NAME`) for
    /// requests to `host`, which must be inside a host asked for with [`Manifest::host`].
    /// The skill writes [`crate::http::secret`]`(name)` where the value goes (a header,
    /// the query); the host puts the value there in requests to `host` only, and the
    /// skill never sees it.
    ///
    /// # Panics
    ///
    /// When `host` is not a valid pattern, like [`Manifest::host`].
    pub fn secret(mut self, name: &str, host: &str, reason: impl Into<String>) -> Self {
        let host = HostPattern::parse(host)
            .unwrap_or_else(|e| panic!("the manifest's secret host {host:?} is invalid: {e}"));
        self.capabilities.secrets.push(SecretRequest {
            name: name.to_owned(),
            host,
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
        let manifest = SkillManifest {
            category: Some(self.category.clone()),
            mode: Some("code".to_owned()),
            input: schema_for::<I>(),
            output: schema_for::<O>(),
            version: Some(
                self.version
                    .clone()
                    .unwrap_or_else(|| crate_version.to_owned()),
            ),
            tags: self.tags.clone(),
            requests: self.requests.clone(),
            author: self.author.clone(),
            timeout: self.timeout_ms,
            retry: Some(self.retry),
            calls: self.calls.clone(),
            limits: self.limits,
            capabilities: self.capabilities.clone(),
            ..SkillManifest::new(self.name.clone(), self.description.clone())
        };
        // Plain data of strings, numbers and JSON values: serialising cannot fail.
        serde_json::to_string(&manifest).unwrap_or_default()
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
    use serde_json::json;

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
        assert!(value.get("requests").is_none());
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
