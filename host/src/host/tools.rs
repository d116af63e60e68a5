//! The tool registry's door on a [`Host`]: descriptors, `execute_tool`, runs with a
//! profile and a confirmer, and the call history.

use std::time::Instant;

use super::Host;
use crate::error::{Error, Result};
use crate::skill::kernel::{RunOptions, SkillContext};
use crate::skill::observe::history::{Filter, History, Record, ToolStats};
use crate::skill::permission::Profile;
use crate::tools::descriptor::{ToolDescriptor, ToolRequest, ToolResult, missing_parameter};

impl Host {
    /// `list_tools`: every tool the model may see, by name.
    pub fn list_tools(&self) -> Vec<ToolDescriptor> {
        self.skills()
            .iter()
            .filter(|s| s.is_exposed())
            .map(|s| ToolDescriptor::of(s, self.registry()))
            .collect()
    }

    /// `get_tool_descriptor`: tool `name` (or an alias), exposed or not.
    pub fn tool_descriptor(&self, name: &str) -> Result<ToolDescriptor> {
        let skill = self.skill(name).ok_or_else(|| Error::ToolNotFound {
            name: name.to_owned(),
        })?;
        Ok(ToolDescriptor::of(&skill, self.registry()))
    }

    /// The profile named `name`: one from `[tools.profiles]`, else a built-in one; an
    /// unknown name is a configuration error that lists the choices.
    pub fn profile(&self, name: &str) -> Result<Profile> {
        let tools = &self.config().tools;
        tools.profile_named(name).ok_or_else(|| {
            let mut names: Vec<String> = ["explore", "edit", "full", "admin"]
                .iter()
                .map(|n| (*n).to_owned())
                .collect();
            names.extend(tools.profiles.keys().cloned());
            Error::Config {
                path: self.config().file.clone().unwrap_or_default(),
                line: None,
                key: Some("tools.profile".into()),
                message: format!(
                    "no profile named {name:?}; choose one of {}",
                    names.join(", ")
                ),
            }
        })
    }

    /// The root context of a run started with `options`; a run without a profile gets
    /// the configured default (`[tools] profile`, `full` unless set).
    pub fn run_context(&self, mut options: RunOptions) -> SkillContext {
        if options.profile.is_none() {
            options.profile = Some(self.inner.default_profile.clone());
        }
        if options.events.is_none() {
            options.events = self.inner.events.clone();
        }
        self.kernel().context(options)
    }

    /// `execute_tool`: runs `call` in a new run started with `options` and
    /// reports it as a [`ToolResult`] (never an `Err`: a failure is `status: error` or
    /// `blocked` with the message). A required parameter that is missing is reported as
    /// worded `缺少必需参数: file_path` (or its English form) before the tool runs.
    pub async fn execute_tool(&self, call: ToolRequest, options: RunOptions) -> ToolResult {
        let started = Instant::now();
        let elapsed = || started.elapsed().as_secs_f64() * 1000.0;
        let locale = self.kernel().config().locale;
        let Some(skill) = self.skill(&call.tool_name) else {
            let error = Error::ToolNotFound {
                name: call.tool_name.clone(),
            };
            return ToolResult::new(call.id, &call.tool_name, Err(error), elapsed());
        };
        let name = skill.meta.name.clone();
        if let Some(message) = missing_parameter(&skill.meta.input, &call.arguments, locale) {
            let error = Error::InvalidInput {
                skill: name.clone(),
                reason: message.clone(),
            };
            self.kernel().record(Record {
                id: 0,
                at_ms: crate::unix_millis() as i64,
                caller: options.caller.clone().unwrap_or_else(|| "root".into()),
                task_id: options.task_id.clone().unwrap_or_default(),
                tool: name.clone(),
                arguments: crate::skill::observe::history::redact(&call.arguments),
                status: crate::skill::observe::history::Status::Error,
                duration_ms: elapsed(),
                error: Some(format!("[{}] {message}", error.code())),
                hint: error.hint().map(str::to_owned),
                node: String::new(),
            });
            let mut result = ToolResult::new(call.id, &name, Err(error), elapsed());
            result.error = Some(message);
            return result;
        }
        let result = self.run_context(options).call(&name, call.arguments).await;
        ToolResult::new(call.id, &name, result, elapsed())
    }

    /// Writes the calls made so far to the history in the data directory (with the
    /// statistics: [`Host::flush_stats`] does both).
    pub(super) fn flush_history(&self) -> Result<()> {
        self.kernel()
            .history()
            .flush(self.calls().as_ref(), self.config().tools.history_cap)
    }

    /// Stored calls `filter` selects, newest first (this process's unflushed calls
    /// are flushed first).
    pub fn history(&self, filter: &Filter) -> Result<Vec<Record>> {
        self.flush_history()?;
        History::query(self.calls().as_ref(), filter)
    }

    /// Per-tool figures (calls, mean, p95, max, failure rate) over the stored history,
    /// since `since_ms` when given.
    pub fn tool_stats(&self, since_ms: Option<i64>) -> Result<Vec<ToolStats>> {
        self.flush_history()?;
        History::stats(self.calls().as_ref(), since_ms)
    }

    /// Profiles in `evo.toml` that list tool `name`: their agents lose it when it goes.
    pub(super) fn profiles_listing(&self, name: &str) -> Vec<String> {
        self.config()
            .tools
            .profiles
            .values()
            .filter(|p| {
                p.tools
                    .as_ref()
                    .is_some_and(|t| t.iter().any(|t| t == name))
            })
            .map(|p| p.name.clone())
            .collect()
    }
}
