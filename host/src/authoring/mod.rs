//! Writing skills: `evo new` (a project that builds and runs as it comes), `evo skill
//! build` (the right toolchain, or a clear word on what is missing), `evo skill pack`
//! (an installable ZIP) and the cases `evo skill test` runs.
//!
//! A project is a directory with the skill's source, the WIT contract it is built
//! against, and `tests/*.json` cases. Building writes `skill.wasm` into it, which makes
//! the project directory itself a skill directory `evo skill run` accepts.

#[cfg(feature = "c-skills")]
mod c;
pub mod node;
mod rust;
mod templates;

pub use rust::MANIFEST_VAR;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::engine::wasm::{WasmEngine, with_manifest, with_short_names};
use crate::error::{Error, Result};
use crate::skill::manifest::{invalid_name, is_valid_name};

/// The languages a project can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Rust with `evo-guest`, built by cargo for `wasm32-wasip2`.
    Rust,
    /// JavaScript with `evo-skill.js`, built by ComponentizeJS.
    JavaScript,
    /// Python with `evo_skill.py`, built by componentize-py.
    Python,
    /// C with `evo_skill.h` and `manifest.json`, built by clang against wasi-libc.
    C,
    /// C++ (17, without exceptions) with the same helper, built by clang++ and libc++.
    Cpp,
}

impl Language {
    /// `rust`, `js`, `python`, `c` or `cpp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::JavaScript => "js",
            Self::Python => "python",
            Self::C => "c",
            Self::Cpp => "cpp",
        }
    }

    /// The language of the project in `dir`, from the file that holds its source.
    pub fn of_project(dir: &Path) -> Result<Self> {
        if dir.join("Cargo.toml").is_file() {
            Ok(Self::Rust)
        } else if dir.join("skill.js").is_file() {
            Ok(Self::JavaScript)
        } else if dir.join("skill.py").is_file() {
            Ok(Self::Python)
        } else if dir.join("skill.c").is_file() {
            Ok(Self::C)
        } else if dir.join("skill.cpp").is_file() {
            Ok(Self::Cpp)
        } else {
            Err(authoring(
                "NOT_A_SKILL_PROJECT",
                format!(
                    "{} is not a skill project: it has no Cargo.toml, skill.js, skill.py, skill.c or skill.cpp; `evo new NAME --lang rust|js|python|c|cpp` creates one",
                    dir.display()
                ),
            ))
        }
    }
}

fn authoring(code: &'static str, message: String) -> Error {
    Error::Authoring { code, message }
}

/// Where the `evo-guest` SDK is for a new Rust project: `EVO_GUEST_SDK`, else the
/// checkout this `evo` was built from. `None` when neither exists.
pub fn guest_sdk() -> Option<PathBuf> {
    let explicit = std::env::var_os("EVO_GUEST_SDK").filter(|d| !d.is_empty());
    let dir = explicit.map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk"),
        PathBuf::from,
    );
    dir.join("Cargo.toml")
        .is_file()
        .then(|| dir.canonicalize().ok())
        .flatten()
}

/// Creates the project `parent/name` for a skill called `name` in `language`, with a
/// greeting skill, its WIT, its build set-up and two test cases. Written into a
/// temporary directory first and renamed into place, so a failure leaves nothing.
pub fn create(parent: &Path, name: &str, language: Language) -> Result<PathBuf> {
    if !is_valid_name(name) {
        return Err(invalid_name(name));
    }
    let target = parent.join(name);
    if target.exists() {
        return Err(authoring(
            "PROJECT_EXISTS",
            format!(
                "{} already exists; choose another name or remove it",
                target.display()
            ),
        ));
    }
    let sdk = match language {
        Language::Rust => guest_sdk().ok_or_else(|| {
            authoring(
                "TOOLCHAIN_MISSING",
                "a Rust skill depends on the evo-guest SDK, which is not on crates.io yet and was not found next to this evo: set EVO_GUEST_SDK to the guest-sdk directory of an Evo checkout".into(),
            )
        })?,
        Language::JavaScript | Language::Python | Language::C | Language::Cpp => PathBuf::new(),
    };
    let staging = tempfile::Builder::new()
        .prefix(".evo-new-")
        .tempdir_in(parent)
        .map_err(Error::io_at(parent))?;
    for (path, text) in templates::files(language) {
        let text = text
            .replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{sdk}}", &sdk.display().to_string());
        let file = staging.path().join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(Error::io_at(dir))?;
        }
        std::fs::write(&file, text).map_err(Error::io_at(&file))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &target).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::Io {
            path: target.clone(),
            source: e,
        }
    })?;
    Ok(target)
}

/// What a build produced.
#[derive(Debug, Clone)]
pub struct Built {
    /// The project's language.
    pub language: Language,
    /// `DIR/skill.wasm`.
    pub wasm: PathBuf,
}

/// Builds the project in `dir` with its language's toolchain into `dir/skill.wasm`
/// (replaced atomically). The toolchain's own messages go to this process's stderr;
/// a missing toolchain is a `TOOLCHAIN_MISSING` error that says how to install it.
///
/// The component's manifest, as `engine` reads it from its `manifest` export, is
/// embedded in it (`MANIFEST_SECTION`), so
/// that hosts describe the skill without instantiating it. A Rust project is built twice: the second build gets the manifest
/// as text (`EVO_SKILL_MANIFEST`, read by `evo_guest::export_skill!`), which leaves the
/// schema generator out of the component.
pub async fn build(dir: &Path, engine: &WasmEngine) -> Result<Built> {
    build_to(dir, &dir.join("skill.wasm"), engine).await
}

/// [`build`] into `wasm` instead of `dir/skill.wasm`.
pub async fn build_to(dir: &Path, wasm: &Path, engine: &WasmEngine) -> Result<Built> {
    let language = Language::of_project(dir)?;
    let wasm = wasm.to_owned();
    let name = wasm
        .file_name()
        .map_or_else(|| "skill.wasm".into(), |n| n.to_string_lossy().into_owned());
    let staged = wasm.with_file_name(format!(".{name}.tmp"));
    let _ = std::fs::remove_file(&staged);
    // A failed build leaves neither a half-written component nor the old one replaced.
    let built = build_described(language, dir, &staged, engine).await;
    if built.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    built?;
    std::fs::rename(&staged, &wasm).map_err(Error::io_at(&wasm))?;
    Ok(Built { language, wasm })
}

/// The longest manifest passed to the second build through the environment (Linux
/// takes 128 KiB per variable); a longer one is embedded in the first build as is.
const MAX_MANIFEST_IN_ENV: usize = 64 << 10;

/// Builds into `staged` and embeds the manifest.
async fn build_described(
    language: Language,
    dir: &Path,
    staged: &Path,
    engine: &WasmEngine,
) -> Result<()> {
    let toolchain = |manifest: Option<String>| {
        let (dir, staged) = (dir.to_owned(), staged.to_owned());
        async move {
            tokio::task::spawn_blocking(move || {
                build_into(language, &dir, &staged, manifest.as_deref())
            })
            .await
            .map_err(|e| Error::Engine(e.to_string()))?
        }
    };
    let label = "skill.wasm";
    // Short names first: the manifest is read by compiling the very code that is
    // written, so that the compile serves the first run too.
    let read = || {
        std::fs::read(staged)
            .map_err(Error::io_at(staged))
            .and_then(|bytes| with_short_names(label, &bytes))
    };
    toolchain(None).await?;
    let mut component = read()?;
    let manifest = engine.exported_manifest(label, component.clone()).await?;
    if language == Language::Rust && manifest.len() <= MAX_MANIFEST_IN_ENV {
        toolchain(Some(manifest.clone())).await?;
        component = read()?;
        let again = engine.exported_manifest(label, component.clone()).await?;
        if again != manifest {
            return Err(authoring(
                "BUILD_FAILED",
                "the second build's manifest is not the first's: does the skill's `manifest()` return the same every time?".into(),
            ));
        }
    }
    let described = with_manifest(label, &component, &manifest)?;
    std::fs::write(staged, &described).map_err(Error::io_at(staged))?;
    // The bytes written, in the cache as a run will load them (with fuel if the limits
    // give it), so that the first `evo skill run` reads them from there: without fuel,
    // the code compiled to read the manifest.
    engine.share_compiled(label, &component, &described)?;
    let built = engine
        .load_bytes(label, described, &crate::capabilities::Policy::default())
        .await?;
    built.prepare().await.map(drop)
}

/// Runs `language`'s toolchain in `dir`, writing the component to `staged`.
/// `manifest`, for Rust, is embedded by the SDK as text.
fn build_into(language: Language, dir: &Path, staged: &Path, manifest: Option<&str>) -> Result<()> {
    match language {
        Language::Rust => rust::build(dir, staged, manifest)?,
        Language::JavaScript => {
            let tool = find_tool(
                dir,
                "EVO_COMPONENTIZE_JS",
                "node_modules/@bytecodealliance/componentize-js/src/cli.js",
            )
            .ok_or_else(|| {
                authoring(
                    "TOOLCHAIN_MISSING",
                    format!(
                        "ComponentizeJS is not installed for {}: run `npm install` there (Node.js 18 or later), or set EVO_COMPONENTIZE_JS to its cli.js",
                        dir.display()
                    ),
                )
            })?;
            let mut command = Command::new("node");
            command
                .arg(tool)
                .args(["skill.js", "--wit", "wit", "--world-name", "plugin"])
                .args(["--disable", "fetch-event", "--out"])
                .arg(staged);
            run_tool(dir, command, "node (Node.js 18 or later)")?;
        }
        Language::Python => {
            let tool = find_tool(dir, "EVO_COMPONENTIZE_PY", ".venv/bin/componentize-py")
                .or_else(|| which("componentize-py"))
                .ok_or_else(|| {
                    authoring(
                        "TOOLCHAIN_MISSING",
                        format!(
                            "componentize-py is not installed for {}: run `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt` there, or set EVO_COMPONENTIZE_PY",
                            dir.display()
                        ),
                    )
                })?;
            let mut command = Command::new(&tool);
            command
                .args(["-d", "wit", "-w", "plugin", "componentize", "-p", "."])
                .args(["skill", "-o"])
                .arg(staged);
            run_tool(dir, command, &tool.display().to_string())?;
        }
        #[cfg(feature = "c-skills")]
        Language::C | Language::Cpp => c::build(language, dir, staged)?,
        #[cfg(not(feature = "c-skills"))]
        Language::C | Language::Cpp => {
            return Err(Error::FeatureNotBuilt {
                feature: "c-skills",
                what: format!("building {} skills", language.as_str()),
            });
        }
    }
    if !staged.is_file() {
        return Err(authoring(
            "BUILD_FAILED",
            format!(
                "the {} toolchain finished without writing a component; see its messages above",
                language.as_str()
            ),
        ));
    }
    Ok(())
}

/// `$VAR`, else `dir/default`, when that file exists.
fn find_tool(dir: &Path, var: &str, default: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| Some(dir.join(default)))
        .filter(|p| p.is_file())
}

/// `program` on `PATH`.
pub(super) fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs a toolchain command in `dir`; `what` names it when it cannot be started. What
/// it prints goes to stderr, so that stdout carries only evo's own answer.
pub(super) fn run_tool(dir: &Path, mut command: Command, what: &str) -> Result<()> {
    let status = command
        .current_dir(dir)
        .stdout(std::io::stderr())
        .status()
        .map_err(|e| {
            authoring(
                "TOOLCHAIN_MISSING",
                format!("could not start {what}: {e}; install it and build again"),
            )
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(authoring(
            "BUILD_FAILED",
            format!(
                "the build of {} failed ({status}); its messages are above",
                dir.display()
            ),
        ))
    }
}

/// `dir/skill.wasm`, or `NOT_BUILT` when the project has not been built.
pub fn built(dir: &Path) -> Result<PathBuf> {
    let wasm = dir.join("skill.wasm");
    if wasm.is_file() {
        Ok(wasm)
    } else {
        Err(authoring(
            "NOT_BUILT",
            format!(
                "{} has no skill.wasm yet: run `evo skill build` first",
                dir.display()
            ),
        ))
    }
}

/// Writes `out`: a ZIP with one directory named `name` holding the built `skill.wasm`
/// and, when the project has them, its `README.md` and `SKILL.md` — what `evo skill
/// install` accepts, without sources or build output.
pub fn pack(dir: &Path, name: &str, out: &Path) -> Result<()> {
    use std::io::Write as _;
    built(dir)?;
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(Error::io_at(parent))?;
    {
        let mut writer = zip::ZipWriter::new(tmp.as_file_mut());
        for file in ["skill.wasm", "README.md", "SKILL.md"] {
            let path = dir.join(file);
            if !path.is_file() {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(Error::io_at(&path))?;
            writer
                .start_file(format!("{name}/{file}"), options)
                .and_then(|()| writer.write_all(&bytes).map_err(Into::into))
                .map_err(|e| authoring("IO_ERROR", format!("{}: {e}", out.display())))?;
        }
        writer
            .finish()
            .map_err(|e| authoring("IO_ERROR", format!("{}: {e}", out.display())))?;
    }
    tmp.as_file().sync_all().map_err(Error::io_at(out))?;
    tmp.persist(out).map_err(|e| Error::Io {
        path: out.to_owned(),
        source: e.error,
    })?;
    Ok(())
}

/// One case in a project's `tests/`: an input and the output or error code expected.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file it came from.
    pub file: PathBuf,
    /// What it checks (`description`, else the file name).
    pub description: String,
    /// The input.
    pub input: Value,
    /// What the skill must return or fail with.
    pub expect: Expect,
}

/// What a case expects.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// This exact output.
    Output(Value),
    /// An error with this code.
    Error(String),
}

/// The cases in `dir/tests/*.json`, in file-name order: each `{"description", "input",
/// "output"}` or `{"description", "input", "error": "CODE"}`.
pub fn cases(dir: &Path) -> Result<Vec<Case>> {
    let tests = dir.join("tests");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&tests) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::io_at(&tests)(e)),
    };
    files.sort();
    files.into_iter().map(|file| read_case(&file)).collect()
}

fn read_case(file: &Path) -> Result<Case> {
    let bad = |why: String| {
        authoring(
            "INVALID_TEST_CASE",
            format!(
                "{}: {why}; a case is {{\"input\": {{…}}, \"output\": {{…}}}} or {{\"input\": {{…}}, \"error\": \"CODE\"}}",
                file.display()
            ),
        )
    };
    let text = std::fs::read_to_string(file).map_err(Error::io_at(file))?;
    let mut value: Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON ({e})")))?;
    let input = value
        .get_mut("input")
        .map(Value::take)
        .ok_or_else(|| bad("no `input`".into()))?;
    let error = value.get("error").cloned();
    let expect = match (value.get_mut("output"), error) {
        (Some(output), None) => Expect::Output(output.take()),
        (None, Some(Value::String(code))) => Expect::Error(code),
        (Some(_), Some(_)) => return Err(bad("both `output` and `error`".into())),
        _ => return Err(bad("neither `output` nor an `error` code".into())),
    };
    let description = value["description"].as_str().map_or_else(
        || {
            file.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        },
        str::to_owned,
    );
    Ok(Case {
        file: file.to_owned(),
        description,
        input,
        expect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_project_refuses_a_bad_name_and_an_existing_directory() {
        let parent = tempfile::tempdir().unwrap();
        let err = create(parent.path(), "Greet Me", Language::JavaScript).unwrap_err();
        assert_eq!(err.code(), "INVALID_SKILL_NAME");
        assert!(
            err.to_string()
                .contains("\"Greet Me\" is not a valid skill name")
        );
        std::fs::create_dir(parent.path().join("greet")).unwrap();
        let err = create(parent.path(), "greet", Language::Python).unwrap_err();
        assert_eq!(err.code(), "PROJECT_EXISTS");
        // Nothing was left behind by either refusal.
        let left: Vec<_> = std::fs::read_dir(parent.path())
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn a_case_needs_an_input_and_one_expectation() {
        let dir = tempfile::tempdir().unwrap();
        let tests = dir.path().join("tests");
        std::fs::create_dir(&tests).unwrap();
        std::fs::write(
            tests.join("a.json"),
            r#"{"input":{"x":1},"output":{"y":2}}"#,
        )
        .unwrap();
        std::fs::write(
            tests.join("b.json"),
            r#"{"description":"bad","input":{},"error":"INVALID_INPUT"}"#,
        )
        .unwrap();
        let found = cases(dir.path()).unwrap();
        assert_eq!(found[0].description, "a");
        assert_eq!(found[0].expect, Expect::Output(serde_json::json!({"y": 2})));
        assert_eq!(found[1].expect, Expect::Error("INVALID_INPUT".into()));
        std::fs::write(tests.join("c.json"), r#"{"input":{}}"#).unwrap();
        let err = cases(dir.path()).unwrap_err();
        assert_eq!(err.code(), "INVALID_TEST_CASE");
        assert!(
            err.to_string()
                .contains("c.json: neither `output` nor an `error` code"),
            "{err}"
        );
    }
}
