//! Flags shared by several subcommands, and how they become a [`Host`]: the
//! configuration is read (defaults → `evo.toml` → environment), the flags are applied
//! on top with their source recorded, and the host is built from the result.

use std::path::PathBuf;

use evo_host::Host;
use evo_host::config::{Config, Source};
use evo_host::{grants::GrantFlag, grants::Policy};

use super::{Failure, Globals};

/// Where skills come from besides the built-ins and the installed ones.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Sources {
    /// Also load every skill directory under DIR (after the installed ones, which it
    /// overrides on a name clash); repeat for more. `skill_dirs` in evo.toml keeps
    /// directories for every run.
    #[arg(long = "skills-dir", value_name = "DIR")]
    pub(crate) skills_dirs: Vec<PathBuf>,
}

/// Capabilities the operator grants for this invocation, on top of evo.toml's
/// `[grants]` (to every skill, including those with their own entry).
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Grants {
    #[command(flatten)]
    flags: GrantFlags,
    /// The permission profile calls run with: explore (read-only), edit (read and
    /// write files), full (also run commands; the default), admin, or one from
    /// [tools.profiles] in evo.toml. A call above it is blocked.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
}

/// One flag per kind of capability, as the library describes them (`--dir`,
/// `--allow-llm`, `--allow-memory`, `--allow-exec`, `--allow-host`, `--allow-secret`),
/// with the values given on the command line.
#[derive(Debug, Default, Clone)]
pub(crate) struct GrantFlags(Vec<(&'static GrantFlag, Vec<String>)>);

impl GrantFlags {
    /// Each value given, as the kind of grant it is and its value.
    pub(crate) fn values(&self) -> Vec<evo_host::grants::GrantValue> {
        self.0
            .iter()
            .flat_map(|(flag, values)| {
                let kind = flag.key.strip_prefix("grants.").unwrap_or(flag.key);
                values
                    .iter()
                    .map(move |value| evo_host::grants::GrantValue {
                        kind: kind.to_owned(),
                        value: value.clone(),
                    })
            })
            .collect()
    }
}

impl clap::FromArgMatches for GrantFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = Self::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0 = Policy::flags()
            .filter_map(|flag| {
                let values: Vec<String> = match flag.value_name {
                    None => matches
                        .get_flag(flag.key)
                        .then(String::new)
                        .into_iter()
                        .collect(),
                    Some(_) => matches
                        .get_many::<String>(flag.key)
                        .map(|values| values.cloned().collect())
                        .unwrap_or_default(),
                };
                (!values.is_empty()).then_some((flag, values))
            })
            .collect();
        Ok(())
    }
}

impl clap::Args for GrantFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Policy::flags().fold(cmd, |cmd, flag| {
            let arg = clap::Arg::new(flag.key).long(flag.long).help(flag.help);
            cmd.arg(match flag.value_name {
                None => arg.action(clap::ArgAction::SetTrue),
                Some(name) => arg.value_name(name).action(if flag.repeats {
                    clap::ArgAction::Append
                } else {
                    clap::ArgAction::Set
                }),
            })
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl Grants {
    fn apply(&self, config: &mut Config) -> Result<(), Failure> {
        for (flag, values) in &self.flags.0 {
            for value in values {
                let value = flag.value_name.map(|_| value.as_str());
                let widen = |policy: &mut Policy| {
                    policy.widen(flag, value).map_err(|message| {
                        Failure::usage(
                            "INVALID_ARGUMENT",
                            format!("--{} {}: {message}", flag.long, value.unwrap_or_default()),
                            (!flag.hint.is_empty()).then_some(flag.hint),
                        )
                    })
                };
                widen(&mut config.grants)?;
                config.grants.skills.values_mut().try_for_each(widen)?;
            }
            config.set_source(
                flag.key,
                Source::Flag {
                    flag: format!("--{}", flag.long),
                },
            );
        }
        if let Some(profile) = &self.profile {
            if config.tools.profile_named(profile).is_none() {
                let mut names = vec!["explore", "edit", "full", "admin"];
                names.extend(config.tools.profiles.keys().map(String::as_str));
                return Err(Failure::usage(
                    "INVALID_ARGUMENT",
                    format!("--profile {profile}: no such profile"),
                    Some(&format!("choose one of {}", names.join(", "))),
                ));
            }
            config.tools.profile.clone_from(profile);
            config.set_source(
                "tools.profile",
                Source::Flag {
                    flag: "--profile".into(),
                },
            );
        }
        Ok(())
    }
}

impl Grants {
    /// The flags alone, as a policy: what a one-shot run gives its target by name.
    pub(crate) fn given(&self) -> Result<Policy, Failure> {
        let mut given = Policy::default();
        for (flag, values) in &self.flags.0 {
            for value in values {
                let value = flag.value_name.map(|_| value.as_str());
                // Checked as `apply` checks them, which ran first.
                given.widen(flag, value).map_err(|message| {
                    Failure::usage(
                        "INVALID_ARGUMENT",
                        format!("--{}: {message}", flag.long),
                        None,
                    )
                })?;
            }
        }
        Ok(given)
    }
}

/// The configuration of this invocation: evo.toml and the environment, with `sources`
/// and `grants` on top.
pub(crate) fn config(
    globals: &Globals,
    sources: &Sources,
    grants: &Grants,
) -> Result<Config, Failure> {
    let mut config = Config::load(&globals.data_dir, globals.config.as_deref())?;
    for dir in &sources.skills_dirs {
        if !dir.is_dir() {
            return Err(Failure::usage(
                "INVALID_ARGUMENT",
                format!("--skills-dir {}: not a directory", dir.display()),
                Some(
                    "name a directory holding skill directories (each with a SKILL.md, skill.json, prompt.md or skill.wasm), e.g. --skills-dir docs/authoring/examples in Evo's checkout; to run one skill directory, `evo skill run DIR`",
                ),
            ));
        }
        config.skill_dirs.push(dir.clone());
        config.set_source(
            "skill_dirs",
            Source::Flag {
                flag: "--skills-dir".into(),
            },
        );
    }
    grants.apply(&mut config)?;
    Ok(config)
}

/// The host of this invocation. Skills that failed to load and a model that cannot be
/// used are warnings: commands that need neither still work.
///
/// Such a command runs one skill (with the skills it calls) or one agent task, not a
/// server's traffic: unless evo.toml or the environment sets `engine.pool_slots`, its
/// Wasm pool has [`ONE_SHOT_POOL_SLOTS`], which the engine sets up in a fraction of the
/// time of the server's (more calls at once wait for a slot; none fails).
pub(crate) async fn host(
    globals: &Globals,
    sources: &Sources,
    grants: &Grants,
) -> Result<Host, Failure> {
    let mut config = config(globals, sources, grants)?;
    if config.source("engine.pool_slots") == Source::Default {
        config.engine.pool_slots = config.engine.pool_slots.min(ONE_SHOT_POOL_SLOTS);
    }
    host_with(config, globals).await
}

/// The host of a run of `target` (a skill's name, a `.wasm` file, a directory): as
/// [`host`], with the grant flags also given to `target` by name, so that a plain
/// component with no manifest to ask with gets them. Returns the flags as a policy too.
pub(crate) async fn host_for(
    globals: &Globals,
    sources: &Sources,
    grants: &Grants,
    target: &str,
) -> Result<(Host, Policy), Failure> {
    let mut config = config(globals, sources, grants)?;
    // After `config`, which reports a bad flag value with the value named.
    let given = grants.given()?;
    if given.allows_anything() {
        config
            .grants
            .given
            .insert(Host::given_name(target), given.clone());
    }
    if config.source("engine.pool_slots") == Source::Default {
        config.engine.pool_slots = config.engine.pool_slots.min(ONE_SHOT_POOL_SLOTS);
    }
    Ok((host_with(config, globals).await?, given))
}

/// Says on stderr what of the grant flags `given` did not reach skill `name`, and why.
pub(crate) fn warn_unapplied(host: &Host, name: &str, given: &Policy) {
    for line in host.unapplied(name, given) {
        eprintln!("warning: {line}");
    }
}

/// The Wasm pool of a command that is not a server: a call, the calls it makes, and an
/// agent's tools side by side.
pub(crate) const ONE_SHOT_POOL_SLOTS: u32 = 8;

/// The host of `config`, with the warnings of [`host`].
pub(crate) async fn host_with(config: Config, globals: &Globals) -> Result<Host, Failure> {
    let host = builder(config, globals).build().await?;
    for skipped in host.load_errors() {
        match &skipped.remote {
            // One remote that does not answer; the others of the file are listed.
            Some(remote) => eprintln!(
                "warning: remote {remote}: its skills are left out: [{}] {}",
                skipped.code, skipped.error
            ),
            None => eprintln!(
                "warning: skipped {}: [{}] {}",
                skipped.path.display(),
                skipped.code,
                skipped.error
            ),
        }
    }
    for warning in host.callee_warnings() {
        eprintln!("warning: {warning}");
    }
    if let Some(error) = host.llm_error() {
        eprintln!("warning: no language model: {error}");
    }
    Ok(host)
}

/// The host with no extra sources or grants, set up as configured (with the server's
/// pool): what `evo doctor` checks.
pub(crate) async fn plain_host(globals: &Globals) -> Result<Host, Failure> {
    host_with(
        config(globals, &Sources::default(), &Grants::default())?,
        globals,
    )
    .await
}

/// A host that loads no skills, for commands that call none (memory, install,
/// uninstall, search): with a thousand installed skills, loading them all would be
/// most of such a command's time.
pub(crate) async fn bare_host(globals: &Globals) -> Result<Host, Failure> {
    let mut config = config(globals, &Sources::default(), &Grants::default())?;
    config.skill_dirs.clear();
    Ok(builder(config, globals)
        .installed_skills(false)
        .build()
        .await?)
}

/// Components at least this large get a progress line while they compile.
const COMPILE_NOTICE_BYTES: usize = 1 << 20;

fn builder(config: Config, globals: &Globals) -> evo_host::HostBuilder {
    let builder = Host::builder()
        .data_dir(&globals.data_dir)
        .config(config)
        // Only a cache miss compiles: after an install, an upgrade, or a cleared cache.
        // A Rust component compiles in a blink; a JS or Python one (10–40 MB) takes
        // seconds, and whoever waits should know why.
        .on_compile({
            let verbose = globals.verbose;
            move |label, size| {
                if verbose || size >= COMPILE_NOTICE_BYTES {
                    eprintln!(
                        "compiling {label} ({:.1} MB); later loads come from the compile cache",
                        size as f64 / 1e6
                    );
                }
            }
        });
    match native_launcher() {
        Some(launcher) => builder.native_launcher(launcher),
        None => builder,
    }
}

/// The program native calls start, which confines itself before it becomes Node: the
/// small `evo-launcher` installed beside this binary, or this binary itself (it has the
/// same hidden commands) when that one is missing.
pub(crate) fn native_launcher() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let small = exe.with_file_name(evo_host::sandbox::LAUNCHER);
    Some(if small.is_file() { small } else { exe })
}

/// The registered name of SKILL (a name, a directory or a `.wasm` file); a path that
/// does not exist is said to be one.
pub(crate) async fn resolve(host: &Host, skill: &str) -> Result<String, Failure> {
    match host.resolve(skill).await {
        Err(evo_host::Error::SkillNotFound { .. })
            if skill.contains(['/', '\\']) || skill.ends_with(".wasm") =>
        {
            Err(Failure::usage(
                "SKILL_NOT_FOUND",
                format!("{skill} is not a file or directory"),
                Some(
                    "give a skill name (`evo skill list`), a skill directory, or a .wasm component",
                ),
            ))
        }
        other => other.map_err(Failure::from),
    }
}
