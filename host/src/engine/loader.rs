//! Loads a skill directory and picks its executor from the files in it:
//!
//! | file | kind |
//! | --- | --- |
//! | `skill.wasm` | wasm: the component describes itself |
//! | `skill.json` with `mode: "llm"`, or `prompt.md` | llm |
//! | `skill.json` with `mode: "composite"` | composite (its `pipeline`) |
//! | `scripts/execute.js` | native (Node subprocess; lower trust than Wasm) |
//! | only `SKILL.md` | static: the instructions are the result, loaded on first use, and the files they name on request |
//!
//! Metadata comes from `skill.json`, with SKILL.md frontmatter filling what it leaves
//! out, so a skill written in the public Agent Skills format loads as it is.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::json;

#[cfg(feature = "native")]
use std::time::Duration;

pub use super::instructions::StaticExecutor;
use super::instructions::{static_input_schema, static_output_schema};
#[cfg(feature = "native")]
use super::native::{NativeConfig, NativeExecutor, NativeSandbox};
use super::skill_dirs::{MAX_CATEGORY_DEPTH, for_each_dir};
use super::wasm::{WasmEngine, WasmExecutor, WasmFile, WasmSkill};
use crate::capabilities::Policy;
use crate::error::{Error, Result};
use crate::skill::composite::llm::LlmExecutor;
use crate::skill::composite::pipeline::PipelineExecutor;
use crate::skill::kernel::executor::{Executor, ExecutorKind};
use crate::skill::kernel::table::RegisteredSkill;
use crate::skill::manifest::frontmatter::SkillDoc;
pub use crate::skill::manifest::package::{
    EXECUTE_JS, PROMPT_MD, SKILL_JSON, SKILL_MD, SKILL_WASM,
};
use crate::skill::manifest::{Mode, Problem, RawMeta, SkillMeta};

/// Loads skill directories.
#[derive(Debug, Clone)]
pub struct Loader {
    wasm: Option<WasmEngine>,
    /// The grant policy, shared by every clone: a change (a grant made on a running
    /// host) is seen by the next load.
    policy: Arc<RwLock<Arc<Policy>>>,
    #[cfg(feature = "native")]
    native: NativeSandbox,
}

#[cfg_attr(
    not(feature = "native"),
    expect(
        clippy::derivable_impls,
        reason = "derivable only without the native sandbox's field"
    )
)]
impl Default for Loader {
    fn default() -> Self {
        Self {
            wasm: None,
            policy: Arc::default(),
            #[cfg(feature = "native")]
            native: NativeSandbox::new(std::env::temp_dir(), NativeConfig::default()),
        }
    }
}

/// What a listing of a skill directory found of its component file.
#[derive(Debug)]
pub(crate) enum Listed {
    /// Not listed: the load looks it up.
    Unknown,
    /// No `skill.wasm` that is a file.
    NoComponent,
    /// A component, kept open by the listing when it could be (its fingerprint is then
    /// taken from the open file).
    Component(Option<crate::engine::wasm::OpenComponent>),
}

impl Loader {
    /// A loader for skills of every kind but Wasm.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads Wasm skills with `engine`, granting capabilities within `policy`.
    pub fn with_wasm(mut self, engine: WasmEngine, policy: Policy) -> Self {
        self.wasm = Some(engine);
        self.policy = Arc::new(RwLock::new(Arc::new(policy)));
        self
    }

    /// The grant policy now.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the grant policy (for every clone of this loader): loads after it grant
    /// within `policy`; skills loaded before keep what they were granted.
    pub fn set_policy(&self, policy: Policy) {
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
    }

    /// Runs native skills in `sandbox` (its limits, launcher and concurrency slots).
    #[cfg(feature = "native")]
    pub fn with_native(mut self, sandbox: NativeSandbox) -> Self {
        self.native = sandbox;
        self
    }

    /// The native sandbox.
    #[cfg(feature = "native")]
    pub fn native(&self) -> &NativeSandbox {
        &self.native
    }

    /// The Wasm engine, if this loader has one.
    pub fn wasm_engine(&self) -> Option<&WasmEngine> {
        self.wasm.as_ref()
    }

    /// Loads a `.wasm` component file.
    pub async fn load_wasm_file(&self, path: &Path) -> Result<WasmSkill> {
        match &self.wasm {
            Some(engine) => engine.load_file(path, &self.policy()).await,
            None => Err(Error::Engine(format!(
                "{}: this host was set up without the Wasm engine",
                path.display()
            ))),
        }
    }

    /// Loads what a `.wasm` file holds: an Evo skill, or a plain component whose
    /// functions are skills (with no capabilities: a bare file has no manifest).
    pub async fn load_any_wasm_file(&self, path: &Path) -> Result<WasmFile> {
        match &self.wasm {
            Some(engine) => {
                engine
                    .load_any_file(path, || Ok(None), &self.policy())
                    .await
            }
            None => Err(Error::Engine(format!(
                "{}: this host was set up without the Wasm engine",
                path.display()
            ))),
        }
    }

    /// Loads the skill in `dir`: a directory holding one skill (a plain component of
    /// several functions is [`Error::ChooseFunction`]; [`Loader::load_package`] loads
    /// them all).
    pub async fn load_dir(&self, dir: &Path) -> Result<RegisteredSkill> {
        let package = self.load_package(dir).await?;
        let names: Vec<String> = package.skills.iter().map(|s| s.meta.name.clone()).collect();
        match <[RegisteredSkill; 1]>::try_from(package.skills) {
            Ok([only]) => Ok(only),
            Err(_) => Err(Error::ChooseFunction {
                file: dir.display().to_string(),
                skills: names,
            }),
        }
    }

    /// Loads what `dir` holds: one skill, or a plain component's skills (its
    /// `skill.wasm` described by the `skill.json` or `SKILL.md` beside it). A package
    /// installed by the skill manager may not ask for more capabilities than it did at
    /// install ([`Error::CapabilitiesChanged`]).
    pub async fn load_package(&self, dir: &Path) -> Result<Package> {
        let record = crate::skill::manifest::package::InstallRecord::read(dir);
        self.load_recorded(dir, record.as_ref(), Listed::Unknown)
            .await
    }

    /// [`Loader::load_package`] with the install record already read (`None`: the
    /// directory has none), so a caller that keeps the record reads it once, and with
    /// what a listing of `dir` just found of its component.
    pub(crate) async fn load_recorded(
        &self,
        dir: &Path,
        record: Option<&crate::skill::manifest::package::InstallRecord>,
        listed: Listed,
    ) -> Result<Package> {
        // Installed under another name than the one it gives itself (`--as`): loaded
        // under the name it was installed as, granted what that name is granted.
        let alias = record
            .filter(|r| !r.published_as.is_empty())
            .map(|r| Alias {
                published: &r.published_as,
                name: &r.name,
            });
        let package = self.load_files(dir, alias, listed).await?;
        let Some(record) = record else {
            return Ok(package);
        };
        for skill in &package.skills {
            let requests = record.capabilities.not_covering(&skill.meta.capabilities);
            if !requests.is_empty() {
                return Err(Error::CapabilitiesChanged {
                    skill: package.name.clone(),
                    requests,
                });
            }
        }
        // A script the install turned into a component runs as that component. The
        // manifest stays the files' (a description updated since is seen).
        let auto = dir.join(crate::skill::manifest::package::AUTO_WASM);
        if record.runs_as == "wasm"
            && let [skill] = package.skills.as_slice()
        {
            if auto.is_file() {
                let component = self.load_wasm_file(&auto).await?;
                let executor = Arc::new(WasmExecutor::new(component));
                return Ok(Package::one(RegisteredSkill::new(
                    skill.meta.clone(),
                    executor,
                )?));
            }
            tracing::warn!(
                skill = %skill.meta.name,
                "its component ({}) is missing: it runs as its Node script; reinstall it to build the component again",
                auto.display()
            );
        }
        Ok(package)
    }

    /// What a plain component's directory says of it: `skill.json`, with `SKILL.md`'s
    /// frontmatter filling what it leaves out; `None` without either.
    fn sidecar(dir: &Path, label: &str) -> Result<Option<RawMeta>> {
        let json_text = read_optional(&dir.join(SKILL_JSON))?;
        let md_text = read_optional(&dir.join(SKILL_MD))?;
        if json_text.is_none() && md_text.is_none() {
            return Ok(None);
        }
        let (raw, _) = manifest_of(label, json_text.as_deref(), md_text.as_deref())?;
        Ok(Some(raw))
    }

    async fn load_files(
        &self,
        dir: &Path,
        alias: Option<Alias<'_>>,
        listed: Listed,
    ) -> Result<Package> {
        let label = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        // An Evo component describes itself: nothing else in the directory is read. A
        // plain one is described by the manifest beside it, named after the directory
        // when that gives no name.
        let wasm = dir.join(SKILL_WASM);
        let (component, open) = match listed {
            Listed::Unknown => (wasm.is_file(), None),
            Listed::NoComponent => (false, None),
            Listed::Component(open) => (true, open),
        };
        if component {
            let loaded = match &self.wasm {
                Some(engine) => {
                    let sidecar = || {
                        let mut raw = Self::sidecar(dir, &label)?.unwrap_or_default();
                        raw.name
                            .get_or_insert_with(|| super::wasm::component_name(&label));
                        Ok(Some(raw))
                    };
                    let policy = self.policy();
                    match engine.load_any_open(&wasm, open, sidecar, &policy).await? {
                        WasmFile::Skill(skill) => match alias {
                            Some(alias) if skill.meta().name == alias.published => {
                                WasmFile::Skill(skill.installed_as(alias.name, &policy)?)
                            }
                            _ => WasmFile::Skill(skill),
                        },
                        // Named after its directory, which is the name installed.
                        component => component,
                    }
                }
                None => {
                    return Err(Error::Engine(format!(
                        "{}: this host was set up without the Wasm engine",
                        wasm.display()
                    )));
                }
            };
            let (meta, plain) = match &loaded {
                WasmFile::Skill(skill) => (skill.shared_meta(), false),
                WasmFile::Component(component) => (Arc::new(component.meta().clone()), true),
            };
            return Ok(Package {
                name: meta.name.clone(),
                meta,
                plain,
                skills: loaded.registered()?,
            });
        }
        self.load_described(dir, label, alias)
            .await
            .map(Package::one)
    }

    async fn load_described(
        &self,
        dir: &Path,
        label: String,
        alias: Option<Alias<'_>>,
    ) -> Result<RegisteredSkill> {
        let read = |file: &str| read_optional(&dir.join(file));
        let json_text = read(SKILL_JSON)?;
        let md_text = read(SKILL_MD)?;
        let invalid = |problems: Vec<Problem>| Error::InvalidManifest {
            skill: label.clone(),
            problems,
        };

        if json_text.is_none() && md_text.is_none() {
            return Err(invalid(vec![Problem {
                field: "(skill)".into(),
                message: format!("{} has no {SKILL_MD} or {SKILL_JSON}", dir.display()),
                fix: format!(
                    "add a {SKILL_MD} with `name` and `description` frontmatter (skills in category folders are found up to {MAX_CATEGORY_DEPTH} folders below a skills directory)"
                ),
            }]));
        }

        let (mut raw, doc) = manifest_of(&label, json_text.as_deref(), md_text.as_deref())?;
        if let Some(alias) = alias
            && raw.name.as_deref() == Some(alias.published)
        {
            raw.name = Some(alias.name.to_owned());
        }
        let prompt = read(PROMPT_MD)?;
        if raw.mode.is_none() && (prompt.is_some() || raw.prompt.is_some()) {
            raw.mode = Some(json!("llm"));
        }
        let timeout_given = raw.timeout.is_some();
        let mut meta = SkillMeta::from_raw(raw).map_err(invalid)?;
        // The operator's limit for scripts (`native.timeout_ms`, 60 s by default: a Node
        // start and a script's work, where a Wasm skill's default is 30 s) is their
        // default and their cap.
        #[cfg(feature = "native")]
        let script_limit = self.native.config().timeout;
        #[cfg(not(feature = "native"))]
        let script_limit = super::native_settings::DEFAULT_TIMEOUT;
        if dir.join(EXECUTE_JS).is_file() {
            let limit = u64::try_from(script_limit.as_millis()).unwrap_or(u64::MAX);
            meta.timeout_ms = if timeout_given {
                meta.timeout_ms.min(limit)
            } else {
                limit
            };
        }

        let executor: Arc<dyn Executor> = match meta.mode {
            Mode::Llm => {
                let Some(prompt) = prompt.or_else(|| meta.prompt.clone()) else {
                    return Err(invalid(vec![Problem {
                        field: "prompt".into(),
                        message: "an llm skill needs a prompt".into(),
                        fix: format!("add {PROMPT_MD}, or a `prompt` field to {SKILL_JSON}"),
                    }]));
                };
                Arc::new(LlmExecutor::new(&meta, &prompt)?)
            }
            Mode::Composite => Arc::new(PipelineExecutor::new(&meta)?),
            Mode::Service => {
                let Some(spec) = meta.service.clone() else {
                    return Err(invalid(vec![Problem {
                        field: "service".into(),
                        message: "a service skill needs its endpoint".into(),
                        fix: "add \"service\": { \"url\": \"https://…\" }".into(),
                    }]));
                };
                Arc::new(crate::engine::service::ServiceExecutor::new(
                    &meta,
                    spec,
                    &self.policy(),
                ))
            }
            #[cfg(not(feature = "native"))]
            Mode::Code if dir.join(EXECUTE_JS).is_file() => {
                return Err(Error::FeatureNotBuilt {
                    feature: "native",
                    what: format!(
                        "{}: a script skill ({EXECUTE_JS}, run by Node in the native sandbox)",
                        meta.name
                    ),
                });
            }
            #[cfg(feature = "native")]
            Mode::Code if dir.join(EXECUTE_JS).is_file() => {
                tracing::info!(
                    skill = %meta.name,
                    "native skill: runs as a Node subprocess, with less isolation than a Wasm skill"
                );
                let grant = crate::capabilities::Grant::new(
                    &meta.capabilities,
                    self.policy().for_skill(&meta.name),
                );
                Arc::new(
                    NativeExecutor::new(
                        self.native.clone(),
                        &meta.name,
                        dir.join(EXECUTE_JS),
                        Duration::from_millis(meta.timeout_ms),
                    )
                    .with_grant(grant),
                )
            }
            Mode::Code => match doc {
                Some(doc) if json_text.is_none() || !doc.body.trim().is_empty() => {
                    Arc::new(StaticExecutor::new(dir))
                }
                _ => {
                    return Err(invalid(vec![Problem {
                        field: "mode".into(),
                        message: "a code skill needs something to run".into(),
                        fix: format!(
                            "add {SKILL_WASM}, or set mode to \"llm\" (with {PROMPT_MD}) or \"composite\" (with a pipeline)"
                        ),
                    }]));
                }
            },
        };
        let meta = if executor.kind() == ExecutorKind::Static {
            SkillMeta {
                input: static_input_schema(),
                output: static_output_schema(),
                ..meta
            }
        } else {
            meta
        };
        RegisteredSkill::new(meta, executor)
    }

    /// Loads every skill directory directly under `root`, in name order; one broken skill
    /// does not keep the others from loading.
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests call it")
    )]
    pub async fn load_all(&self, root: &Path) -> Result<Vec<(PathBuf, Result<Package>)>> {
        for_each_dir(self, root, |loader, dir| async move {
            loader.load_package(&dir).await
        })
        .await
    }
}

/// What a skill directory holds.
#[derive(Debug)]
pub struct Package {
    /// The name it is installed under: its skill's, or its component's.
    pub name: String,
    /// Its own manifest: its skill's, or its component's (name, description, version,
    /// capabilities, limits).
    pub meta: Arc<SkillMeta>,
    /// Whether it is a plain component (each of its functions a skill).
    pub plain: bool,
    /// Its skills: one, or a plain component's functions.
    pub skills: Vec<RegisteredSkill>,
}

impl Package {
    fn one(skill: RegisteredSkill) -> Self {
        Self {
            name: skill.meta.name.clone(),
            meta: Arc::clone(&skill.meta),
            plain: false,
            skills: vec![skill],
        }
    }
}

/// A skill installed under another name than the one its files give (`--as`).
#[derive(Debug, Clone, Copy)]
struct Alias<'a> {
    /// The name its files give.
    published: &'a str,
    /// The name it is installed, and served, as.
    name: &'a str,
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Fills the fields `raw` leaves out from the SKILL.md frontmatter.
/// The manifest of skill `label`: `skill.json` (`json_text`), with the frontmatter of
/// `SKILL.md` (`md_text`) filling what it leaves out; and the `SKILL.md` read.
fn manifest_of(
    label: &str,
    json_text: Option<&str>,
    md_text: Option<&str>,
) -> Result<(RawMeta, Option<SkillDoc>)> {
    let invalid = |problems: Vec<Problem>| Error::InvalidManifest {
        skill: label.to_owned(),
        problems,
    };
    let doc = md_text
        .map(SkillDoc::parse)
        .transpose()
        .map_err(|p| invalid(vec![p]))?;
    let mut raw: RawMeta = match json_text {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            invalid(vec![Problem {
                field: "(manifest)".into(),
                message: format!("{SKILL_JSON} is not a JSON object: {e}"),
                fix: "write the manifest as a JSON object".into(),
            }])
        })?,
        None => RawMeta::default(),
    };
    if let Some(doc) = &doc {
        fill_from(&mut raw, &doc.raw);
    }
    Ok((raw, doc))
}

fn fill_from(raw: &mut RawMeta, doc: &RawMeta) {
    macro_rules! fill {
        ($($field:ident),*) => {$(
            if raw.$field.is_none() {
                raw.$field = doc.$field.clone();
            }
        )*};
    }
    fill!(
        name,
        description,
        category,
        version,
        tags,
        requests,
        author,
        input,
        output,
        mode,
        timeout,
        retry
    );
}

#[cfg(all(test, not(feature = "native")))]
mod without_native {
    use super::*;

    #[tokio::test]
    async fn a_script_skill_says_the_build_left_the_native_sandbox_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("scripts")).unwrap();
        std::fs::write(
            dir.path().join(SKILL_JSON),
            r#"{ "name": "shout", "description": "Upper-cases a text." }"#,
        )
        .unwrap();
        std::fs::write(dir.path().join(EXECUTE_JS), "console.log('{}')").unwrap();
        let error = Loader::new().load_dir(dir.path()).await.unwrap_err();
        assert_eq!(error.code(), "FEATURE_NOT_BUILT");
        assert!(
            error.to_string().contains(
                "shout: a script skill (scripts/execute.js, run by Node in the native sandbox) is not in this build of Evo: it needs evo-host's `native` feature"
            ),
            "{error}"
        );
    }
}
