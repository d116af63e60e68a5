//! The table of skills: every skill the agent can call, whatever runs it.
//!
//! A [`RegisteredSkill`] pairs a validated [`SkillMeta`] with its [`Executor`] and the
//! compiled input and output schemas, so the gates never recompile a schema. Registering
//! a name again replaces the earlier skill (host skills override built-ins).
//!
//! ```
//! use evo_host::tools::BuiltinTools;
//! use evo_host::skill::kernel::table::SkillTable;
//!
//! let registry = SkillTable::new();
//! BuiltinTools::default().register(&registry).unwrap();
//! assert!(registry.has("calculate"));
//! assert!(registry.has("file-read")); // an alias of `read`
//! let tools = registry.to_tool_definitions();
//! assert!(tools.iter().any(|t| t.name == "calculate"));
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, RwLock};

use serde::Serialize;
use serde_json::Value;

use crate::capabilities::{Access, MemoryAccess};
use crate::error::{Error, Result};
use crate::skill::kernel::executor::{Executor, ExecutorKind};
use crate::skill::manifest::{Problem, SkillMeta};
use crate::skill::permission::Permission;
use crate::skill::validate::Schema;

/// Tag that keeps a skill out of the model's tool list and system prompt: internal
/// skills are not exposed to the user's conversation.
pub const INTERNAL_TAG: &str = "internal";
/// Category of automatic, internal skills; also kept from the model.
pub const SYSTEM_CATEGORY: &str = "system";

/// A skill in the registry: metadata, executor, compiled schemas.
#[derive(Debug)]
pub struct RegisteredSkill {
    /// The manifest, shared with what runs it (a Wasm skill's component keeps it too).
    pub meta: Arc<SkillMeta>,
    /// What runs it.
    pub executor: Arc<dyn Executor>,
    /// Filled when the skill is registered ([`RegisteredSkill::new`]), or on first use.
    input: OnceLock<Schema>,
    output: OnceLock<Schema>,
}

impl RegisteredSkill {
    /// Pairs `meta` with `executor`, compiling both schemas; a schema that does not
    /// compile is an invalid manifest.
    pub fn new(meta: impl Into<Arc<SkillMeta>>, executor: Arc<dyn Executor>) -> Result<Self> {
        let meta = meta.into();
        let mut problems = Vec::new();
        let mut compile = |field: &str, schema: &Value| {
            Schema::compile(schema).map_err(|message| {
                problems.push(Problem {
                    field: field.to_owned(),
                    message: format!("not a valid JSON Schema: {message}"),
                    fix: "write a draft-7 JSON Schema such as { \"type\": \"object\" }".to_owned(),
                });
            })
        };
        let input = compile("input", &meta.input);
        let output = compile("output", &meta.output);
        match (input, output) {
            (Ok(input), Ok(output)) => Ok(Self {
                meta,
                executor,
                input: OnceLock::from(input),
                output: OnceLock::from(output),
            }),
            _ => Err(Error::InvalidManifest {
                skill: meta.name.clone(),
                problems,
            }),
        }
    }

    /// Pairs `meta` with `executor` for a skill whose schemas are known to compile
    /// (described from a record made when they did): each is taken from the manifest
    /// and compiled on its first use, so that a catalogue of many skills starts without
    /// copying or compiling them all. Should one not compile after all, the gate using
    /// it refuses every value, saying so.
    pub(crate) fn with_checked_schemas(meta: Arc<SkillMeta>, executor: Arc<dyn Executor>) -> Self {
        Self {
            input: OnceLock::new(),
            output: OnceLock::new(),
            meta,
            executor,
        }
    }

    /// The compiled input schema (gate 1).
    pub fn input_schema(&self) -> &Schema {
        self.input
            .get_or_init(|| Schema::deferred(self.meta.input.clone()))
    }

    /// The compiled output schema (gate 2).
    pub fn output_schema(&self) -> &Schema {
        self.output
            .get_or_init(|| Schema::deferred(self.meta.output.clone()))
    }

    /// The executor's kind.
    pub fn kind(&self) -> ExecutorKind {
        self.executor.kind()
    }

    /// The level the worst call of this skill needs: what its manifest declares, but
    /// never less than its kind and requested capabilities imply (a native script
    /// executes; a skill that asks to write a directory or memory writes).
    pub fn permission(&self) -> Permission {
        let caps = &self.meta.capabilities;
        let implied = if self.kind() == ExecutorKind::Native {
            Permission::Execute
        } else if caps.dirs.iter().any(|d| d.access == Access::ReadWrite)
            || caps.memory == MemoryAccess::ReadWrite
        {
            Permission::ReadWrite
        } else {
            Permission::ReadOnly
        };
        self.meta.permission.unwrap_or_default().max(implied)
    }

    /// The level one call with `input` needs (at most [`permission`](Self::permission)).
    pub fn permission_for(&self, input: &Value) -> Permission {
        self.executor
            .permission_for(input)
            .map_or_else(|| self.permission(), |p| p.min(self.permission()))
    }

    /// This skill as a tool for the model (name, description, input schema).
    pub fn to_tool_definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.meta.name.clone(),
            description: self.meta.description.clone(),
            parameters: self.meta.input.clone(),
        }
    }

    /// Whether the model may see and call it (not `internal` or `system`).
    pub fn is_exposed(&self) -> bool {
        self.meta.category != SYSTEM_CATEGORY && !self.meta.tags.iter().any(|t| t == INTERNAL_TAG)
    }
}

/// A tool as offered to the model: the output schema is not sent (the model does not
/// need to know the result's shape to choose a call).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The skill's name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The input JSON Schema.
    pub parameters: Value,
}

#[derive(Debug, Default)]
struct Table {
    skills: BTreeMap<String, Arc<RegisteredSkill>>,
    aliases: HashMap<String, String>,
}

/// The skills of one host. Shared (`Arc`) and safe to change while calls run.
#[derive(Debug, Default)]
pub struct SkillTable {
    table: RwLock<Table>,
}

/// The warning for `skill`'s call of `callee`, which is not loaded.
pub fn missing_callee(skill: &str, callee: &str) -> String {
    format!(
        "{skill} calls {callee}, which is not loaded: the call fails (SKILL_NOT_FOUND) until a skill named {callee} is installed (`evo skill install`) or its skill directory is loaded"
    )
}

impl SkillTable {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        // Every write is a single insert or remove, so a panic elsewhere cannot leave
        // the table half-changed; a poisoned lock is still consistent.
        self.table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.table
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds `skill`, replacing (and returning) a skill of the same name.
    pub fn register(&self, skill: RegisteredSkill) -> Option<Arc<RegisteredSkill>> {
        let mut table = self.write();
        table.aliases.remove(&skill.meta.name);
        table
            .skills
            .insert(skill.meta.name.clone(), Arc::new(skill))
    }

    /// Makes `alias` another name for the skill `name` (e.g. `Read` for `read`).
    pub fn alias(&self, alias: &str, name: &str) {
        self.write()
            .aliases
            .insert(alias.to_owned(), name.to_owned());
    }

    /// The aliases of skill `name`, sorted.
    pub fn aliases_of(&self, name: &str) -> Vec<String> {
        let mut aliases: Vec<String> = self
            .read()
            .aliases
            .iter()
            .filter(|(_, target)| *target == name)
            .map(|(alias, _)| alias.clone())
            .collect();
        aliases.sort();
        aliases
    }

    /// Removes the skill `name` and its aliases, returning it.
    pub fn unregister(&self, name: &str) -> Option<Arc<RegisteredSkill>> {
        let mut table = self.write();
        let removed = table.skills.remove(name);
        if removed.is_some() {
            table.aliases.retain(|_, target| target != name);
        }
        removed
    }

    /// The skill called `name` (or aliased so).
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredSkill>> {
        let table = self.read();
        match table.skills.get(name) {
            Some(skill) => Some(skill.clone()),
            None => table
                .aliases
                .get(name)
                .and_then(|target| table.skills.get(target))
                .cloned(),
        }
    }

    /// Whether `name` (or an alias) is registered.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every skill, sorted by name.
    pub fn list(&self) -> Vec<Arc<RegisteredSkill>> {
        self.read().skills.values().cloned().collect()
    }

    /// The skills `name` calls (its `calls` and its pipeline's steps) that are not
    /// registered, each once, in the order the manifest names them. A call to one fails
    /// with `SKILL_NOT_FOUND` until it is installed.
    pub fn missing_callees(&self, name: &str) -> Vec<String> {
        let Some(skill) = self.get(name) else {
            return Vec::new();
        };
        let meta = &skill.meta;
        let mut missing: Vec<String> = Vec::new();
        let named = meta
            .calls
            .iter()
            .chain(meta.pipeline.iter().map(|step| &step.skill));
        for callee in named {
            if !self.has(callee) && !missing.contains(callee) {
                missing.push(callee.clone());
            }
        }
        missing
    }

    /// What [`SkillTable::missing_callees`] finds for every skill, as warnings:
    /// `NAME calls CALLEE, which is not loaded: …`.
    pub fn callee_warnings(&self) -> Vec<String> {
        self.list()
            .iter()
            .flat_map(|skill| {
                let name = &skill.meta.name;
                self.missing_callees(name)
                    .into_iter()
                    .map(move |callee| missing_callee(name, &callee))
            })
            .collect()
    }

    /// The skills of `category`, sorted by name.
    pub fn list_by_category(&self, category: &str) -> Vec<Arc<RegisteredSkill>> {
        self.read()
            .skills
            .values()
            .filter(|s| s.meta.category == category)
            .cloned()
            .collect()
    }

    /// How many skills are registered (aliases not counted).
    pub fn len(&self) -> usize {
        self.read().skills.len()
    }

    /// Whether no skill is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The exposed skills as tools for the model (name, description, input schema).
    pub fn to_tool_definitions(&self) -> Vec<ToolDefinition> {
        self.read()
            .skills
            .values()
            .filter(|s| s.is_exposed())
            .map(|s| s.to_tool_definition())
            .collect()
    }

    /// The instruction set as text for the system prompt, grouped by category.
    pub fn to_system_prompt(&self) -> String {
        let table = self.read();
        let mut by_category: BTreeMap<&str, Vec<&RegisteredSkill>> = BTreeMap::new();
        for skill in table.skills.values().filter(|s| s.is_exposed()) {
            by_category
                .entry(&skill.meta.category)
                .or_default()
                .push(skill);
        }
        if by_category.is_empty() {
            return "No skills are available.".to_owned();
        }
        let mut text = String::from("You can call these skills:\n");
        for (category, skills) in by_category {
            let _ = write!(text, "\n## {category}\n");
            for skill in skills {
                let _ = writeln!(
                    text,
                    "- {}: {}",
                    skill.meta.name,
                    one_line(&skill.meta.description)
                );
            }
        }
        text
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::skill::exchange::BoxFuture;
    use crate::skill::kernel::SkillContext;
    use crate::skill::kernel::executor::SkillOutput;

    /// Never runs: these tests only list skills.
    #[derive(Debug)]
    struct Listed;

    impl Executor for Listed {
        fn kind(&self) -> ExecutorKind {
            ExecutorKind::Static
        }

        fn execute(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
            Box::pin(std::future::ready(Ok(SkillOutput::from(input))))
        }
    }

    fn skill(manifest: Value) -> RegisteredSkill {
        let meta = SkillMeta::from_json(&manifest.to_string()).unwrap();
        RegisteredSkill::new(meta, Arc::new(Listed)).unwrap()
    }

    fn registry() -> SkillTable {
        let registry = SkillTable::new();
        registry.register(skill(json!({ "name": "memory_search", "description": "Searches\n  memory.", "category": "memory",
            "input": { "type": "object", "properties": { "query": { "type": "string" } } },
            "output": { "type": "object", "properties": { "results": { "type": "array" } } } })));
        registry.register(skill(
            json!({ "name": "summarize", "description": "Summarises text.", "category": "text" }),
        ));
        registry.register(skill(json!({ "name": "auto_recall", "description": "Recalls.", "category": "memory", "tags": ["internal"] })));
        registry.register(skill(
            json!({ "name": "auto_capture", "description": "Captures.", "category": "system" }),
        ));
        registry
    }

    #[test]
    fn tools_carry_the_input_schema_and_never_the_output_schema() {
        let tools = registry().to_tool_definitions();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["memory_search", "summarize"],
            "internal and system skills are not offered"
        );
        assert_eq!(tools[0].parameters["properties"]["query"]["type"], "string");
        let sent = serde_json::to_value(&tools[0]).unwrap();
        assert_eq!(sent.as_object().unwrap().len(), 3);
        assert!(
            !sent.to_string().contains("results"),
            "the output schema stays home: {sent}"
        );
    }

    #[test]
    fn the_system_prompt_groups_by_category() {
        assert_eq!(
            registry().to_system_prompt(),
            "You can call these skills:\n\n## memory\n- memory_search: Searches memory.\n\n## text\n- summarize: Summarises text.\n"
        );
        assert_eq!(
            SkillTable::new().to_system_prompt(),
            "No skills are available."
        );
    }

    #[test]
    fn register_replaces_and_unregister_drops_aliases() {
        let registry = registry();
        assert_eq!(registry.len(), 4);
        assert_eq!(registry.list_by_category("memory").len(), 2);
        registry.alias("search", "memory_search");
        assert!(registry.has("search"));
        let replaced = registry.register(skill(
            json!({ "name": "summarize", "description": "Better.", "category": "text" }),
        ));
        assert_eq!(replaced.unwrap().meta.description, "Summarises text.");
        assert_eq!(
            registry.get("summarize").unwrap().meta.description,
            "Better."
        );
        assert!(registry.unregister("memory_search").is_some());
        assert!(!registry.has("search") && !registry.has("memory_search"));
        assert!(registry.unregister("memory_search").is_none());
        assert_eq!(registry.len(), 3);
    }

    #[test]
    fn a_schema_that_does_not_compile_is_an_invalid_manifest() {
        let meta = SkillMeta::from_json(
            &json!({ "name": "x", "description": "d", "input": { "type": "nonsense" } })
                .to_string(),
        )
        .unwrap();
        let err = RegisteredSkill::new(meta, Arc::new(Listed)).unwrap_err();
        assert_eq!(err.code(), "INVALID_MANIFEST");
        assert!(
            err.to_string().contains("input: not a valid JSON Schema"),
            "{err}"
        );
    }
}
