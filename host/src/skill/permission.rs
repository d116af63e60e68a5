//! Permission levels, agent profiles and the messages a refusal carries.
//!
//! Every skill has a level — what the worst call of it can do — and every run a profile
//! (a ceiling, and optionally a list of tools). The kernel refuses a call above the
//! ceiling before it runs, with `status: blocked` and this message:
//!
//! ```
//! use evo_host::tools::permission::{Locale, Permission, blocked_message};
//!
//! assert_eq!(
//!     blocked_message(Locale::Zh, Permission::ReadWrite, Permission::ReadOnly),
//!     "智能体无权限调用此工具（需要 read_write，当前仅有 read_only）"
//! );
//! assert!(Permission::ReadOnly < Permission::Execute);
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// What the worst call of a tool can do, from least to most.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Reads files or state (`read`, `grep`, `glob`, `search`).
    #[default]
    ReadOnly,
    /// Changes files or memory (`write`, `edit`, `git commit`).
    ReadWrite,
    /// Runs programs (`bash`, `terminal`, native skills).
    Execute,
    /// Changes the host itself (installing skills, configuration).
    Admin,
}

impl Permission {
    /// Every level, least first.
    pub const ALL: [Self; 4] = [Self::ReadOnly, Self::ReadWrite, Self::Execute, Self::Admin];

    /// The name used in manifests, descriptors and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::ReadWrite => "read_write",
            Self::Execute => "execute",
            Self::Admin => "admin",
        }
    }

    /// The level named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The language of the messages a user or model reads from the tool registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    /// English (the default).
    #[default]
    En,
    /// Chinese, for users whose locale is Chinese.
    Zh,
}

impl Locale {
    /// `zh` when `LC_ALL`, `LC_MESSAGES` or `LANG` (the first one set) starts with `zh`,
    /// else English.
    pub fn from_env() -> Self {
        Self::from_vars(|var| std::env::var(var).ok()).map_or(Self::En, |(_, locale)| locale)
    }

    /// The locale the first of `LC_ALL`, `LC_MESSAGES`, `LANG` that `env` has set
    /// names, with that variable: `zh` for `zh*`, else English.
    pub fn from_vars(env: impl Fn(&str) -> Option<String>) -> Option<(&'static str, Self)> {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .find_map(|var| {
                let value = env(var).filter(|v| !v.is_empty())?;
                Some((
                    var,
                    if value.starts_with("zh") {
                        Self::Zh
                    } else {
                        Self::En
                    },
                ))
            })
    }

    /// The locale named `name` (`en`, `zh`, or `auto` for [`Locale::from_env`]).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "en" => Some(Self::En),
            "zh" => Some(Self::Zh),
            "auto" => Some(Self::from_env()),
            _ => None,
        }
    }
}

/// What a run may call: a ceiling and, optionally, only some tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// The profile's name (`explore`, `edit`, `full`, or one from `evo.toml`).
    pub name: String,
    /// The highest level a call may need.
    pub level: Permission,
    /// When set, only these tools (names or aliases) may be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

impl Profile {
    /// The built-in profiles: `explore` (read-only, as an agent that only explores), `edit`
    /// (read and write files, run nothing), `full` (everything but admin).
    pub fn builtin(name: &str) -> Option<Self> {
        let level = match name {
            "explore" => Permission::ReadOnly,
            "edit" => Permission::ReadWrite,
            "full" => Permission::Execute,
            "admin" => Permission::Admin,
            _ => return None,
        };
        Some(Self {
            name: name.to_owned(),
            level,
            tools: None,
        })
    }

    /// Whether this profile lists `tool` (every tool when it lists none).
    pub fn lists(&self, tool: &str, aliases: &[String]) -> bool {
        self.tools.as_ref().is_none_or(|tools| {
            tools
                .iter()
                .any(|t| t == tool || aliases.iter().any(|a| a == t))
        })
    }
}

impl Default for Profile {
    /// `full`: every tool up to `execute`; dangerous calls still need confirmation.
    fn default() -> Self {
        Self {
            name: "full".into(),
            level: Permission::Execute,
            tools: None,
        }
    }
}

/// The refusal of a call above the profile's level.
pub fn blocked_message(locale: Locale, needed: Permission, current: Permission) -> String {
    match locale {
        Locale::Zh => format!("智能体无权限调用此工具（需要 {needed}，当前仅有 {current}）"),
        Locale::En => format!(
            "the agent may not call this tool (it needs {needed}; this profile allows only {current})"
        ),
    }
}

/// The refusal of a tool the profile does not list.
pub fn unlisted_message(locale: Locale, tool: &str, profile: &str) -> String {
    match locale {
        Locale::Zh => format!("智能体无权限调用此工具（{tool} 不在配置 {profile} 的工具列表中）"),
        Locale::En => format!("the agent may not call {tool}: profile {profile} does not list it"),
    }
}

/// The message for a required parameter that was not given.
pub fn missing_parameter_message(locale: Locale, parameter: &str) -> String {
    match locale {
        Locale::Zh => format!("缺少必需参数: {parameter}"),
        Locale::En => format!("missing required parameter: {parameter}"),
    }
}

/// The message for a path outside the project directory.
pub fn outside_message(locale: Locale, path: &str) -> String {
    match locale {
        Locale::Zh => format!("文件路径超出项目目录范围: {path}"),
        Locale::En => format!("{path} is outside the project directory"),
    }
}

/// The message for a command the allowlist does not hold.
#[cfg(any(test, feature = "dev-tools"))]
pub fn not_allowed_message(locale: Locale, command: &str) -> String {
    match locale {
        Locale::Zh => format!("命令不在白名单中: {command}"),
        Locale::En => format!("command not in the allowlist: {command}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_and_parse() {
        for level in Permission::ALL {
            assert_eq!(Permission::parse(level.name()), Some(level));
        }
        assert_eq!(Permission::parse("root"), None);
        assert!(Permission::ReadWrite < Permission::Execute);
        assert_eq!(
            Profile::builtin("explore").unwrap().level,
            Permission::ReadOnly
        );
        assert_eq!(Profile::builtin("nope"), None);
    }

    #[test]
    fn messages_quote_the_seed() {
        assert_eq!(
            missing_parameter_message(Locale::Zh, "file_path"),
            "缺少必需参数: file_path"
        );
        assert!(outside_message(Locale::Zh, "/etc/passwd").starts_with("文件路径超出项目目录范围"));
        assert!(not_allowed_message(Locale::Zh, "curl").starts_with("命令不在白名单中"));
        assert_eq!(
            blocked_message(Locale::En, Permission::ReadWrite, Permission::ReadOnly),
            "the agent may not call this tool (it needs read_write; this profile allows only read_only)"
        );
    }

    #[test]
    fn a_profile_with_a_list_allows_only_it() {
        let profile = Profile {
            name: "x".into(),
            level: Permission::Admin,
            tools: Some(vec!["Read".into()]),
        };
        assert!(profile.lists("read", &["Read".into()]));
        assert!(!profile.lists("write", &[]));
        assert!(Profile::default().lists("anything", &[]));
    }
}
