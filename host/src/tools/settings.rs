//! `[tools]` in `evo.toml`: the built-in tools' settings, with the profiles an operator
//! defines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ProgramTools;
use crate::settings::{Invalid, Section, in_range, word};
use crate::skill::kernel::confirm::ConfirmPolicy;
use crate::skill::observe::history::DEFAULT_HISTORY_CAP;
use crate::skill::permission::{Locale, Permission, Profile};

/// The built-in tools' settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsSettings {
    /// The language of refusals: `zh` when `LC_ALL`, `LC_MESSAGES` or `LANG` starts
    /// with `zh`, else `en`, unless `evo.toml` says (`en`, `zh`, or `auto` for the same
    /// choice).
    #[serde(deserialize_with = "locale")]
    pub locale: Locale,
    /// What a dangerous call does when nobody can be asked.
    pub confirm: ConfirmPolicy,
    /// The profile runs get unless a front end picks one.
    pub profile: String,
    /// Calls kept in the history.
    pub history_cap: u64,
    /// The commands `bash` may run (every command of a pipeline or chain is checked).
    pub bash_allow: Vec<String>,
    /// The longest `timeout` a `bash` call may ask for, ms.
    pub bash_max_timeout_ms: u64,
    /// Hosts a `bash` command line may name in a URL.
    pub allowed_hosts: Vec<String>,
    /// Directories `bash` may use read-only besides the system's programs: toolchains
    /// installed in a home directory (`~/.cargo`, `~/.rustup`). None by default: they
    /// can hold credentials (`~/.cargo/credentials.toml`), so the operator chooses.
    pub toolchains: Vec<PathBuf>,
    /// Seconds a language server may sit unused before `lsp` shuts it down.
    pub lsp_idle_secs: u64,
    /// Profiles defined in `evo.toml`, besides the built-in ones.
    #[serde(deserialize_with = "profiles")]
    pub profiles: BTreeMap<String, Profile>,
}

impl Default for ToolsSettings {
    /// English refusals, dangerous calls denied when nobody can be asked, the `full`
    /// profile, `DEFAULT_HISTORY_CAP` calls kept, `bash`'s default allowlist and
    /// longest timeout, no hosts and no toolchains, idle language servers shut down.
    fn default() -> Self {
        Self {
            locale: Locale::En,
            confirm: ConfirmPolicy::Deny,
            profile: "full".into(),
            history_cap: DEFAULT_HISTORY_CAP,
            bash_allow: ProgramTools::DEFAULT_ALLOW
                .iter()
                .map(|c| (*c).to_owned())
                .collect(),
            bash_max_timeout_ms: u64::try_from(ProgramTools::MAX_TIMEOUT.as_millis())
                .unwrap_or(u64::MAX),
            allowed_hosts: Vec::new(),
            toolchains: Vec::new(),
            lsp_idle_secs: ProgramTools::LSP_IDLE.as_secs(),
            profiles: BTreeMap::new(),
        }
    }
}

impl ToolsSettings {
    /// The profile named `name`: one from `evo.toml`, else a built-in one
    /// (`Profile::builtin`).
    pub fn profile_named(&self, name: &str) -> Option<Profile> {
        self.profiles
            .get(name)
            .cloned()
            .or_else(|| Profile::builtin(name))
    }
}

impl Section for ToolsSettings {
    const TABLE: &'static str = "tools";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        in_range("tools.history_cap", self.history_cap, 1, 100_000_000)?;
        in_range(
            "tools.bash_max_timeout_ms",
            self.bash_max_timeout_ms,
            1,
            86_400_000,
        )?;
        in_range("tools.lsp_idle_secs", self.lsp_idle_secs, 1, 86_400)?;
        self.toolchains = self
            .toolchains
            .iter()
            .map(|dir| {
                toolchain_dir(&dir.to_string_lossy())
                    .map_err(|why| Invalid::new("tools.toolchains", why))
            })
            .collect::<Result<_, _>>()?;
        if self.profile_named(&self.profile).is_none() {
            return Err(Invalid::new(
                "tools.profile",
                format!(
                    "{:?} is not a profile; use explore, edit, full, admin or one under [tools.profiles]",
                    self.profile
                ),
            ));
        }
        Ok(())
    }
}

fn locale<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Locale, D::Error> {
    word(d, Locale::parse, "a locale", "en, zh or auto")
}

/// `[tools.profiles.NAME]`: a level and, optionally, the only tools it may call.
fn profiles<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Profile>, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        #[serde(deserialize_with = "level")]
        level: Permission,
        tools: Option<Vec<String>>,
    }
    fn level<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Permission, D::Error> {
        word(
            d,
            Permission::parse,
            "a permission level",
            "read_only, read_write, execute or admin",
        )
    }
    let entries = BTreeMap::<String, Entry>::deserialize(d)?;
    Ok(entries
        .into_iter()
        .map(|(name, entry)| {
            let profile = Profile {
                name: name.clone(),
                level: entry.level,
                tools: entry.tools,
            };
            (name, profile)
        })
        .collect())
}

/// A `[tools] toolchains` entry: `~/…` is the home directory; the result must be an
/// absolute directory that exists, and not a system root (binding `/` or a whole home
/// read-only would show the sandbox everything the entry was meant to keep out).
fn toolchain_dir(entry: &str) -> Result<PathBuf, String> {
    let path = match entry.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Err(format!("{entry:?} starts with ~/ and HOME is not set")),
        },
        None => PathBuf::from(entry),
    };
    if !path.is_absolute() {
        return Err(format!(
            "{entry:?} is not an absolute path; name the toolchain's directory, e.g. \"~/.cargo\""
        ));
    }
    if !path.is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if path.parent().is_none() || home.as_deref() == Some(path.as_path()) {
        return Err(format!(
            "{} is too wide: name the toolchain's own directories (e.g. \"~/.cargo\", \"~/.rustup\"), not the whole tree",
            path.display()
        ));
    }
    Ok(path)
}
