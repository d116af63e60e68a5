//! `evo new`, `evo skill build`, `evo skill pack` and `evo skill test`: writing skills.

use std::path::Path;

use evo_host::authoring::{self, Expect, Language};
use serde_json::json;

use crate::args::{self, Grants, Sources};
use crate::{Failure, Globals, internal, out};

/// A project's language, as `--lang` spells it.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Lang {
    /// Rust, with the evo-guest SDK (cargo, target wasm32-wasip2).
    Rust,
    /// JavaScript, with evo-skill.js (ComponentizeJS, from npm).
    Js,
    /// Python, with evo_skill.py (componentize-py, from PyPI).
    Python,
    /// C, with evo_skill.h and manifest.json (clang and wasi-libc).
    C,
    /// C++17 without exceptions, with evo_skill.h and manifest.json (clang++, wasi-libc
    /// and libc++).
    Cpp,
}

impl From<Lang> for Language {
    fn from(lang: Lang) -> Self {
        match lang {
            Lang::Rust => Self::Rust,
            Lang::Js => Self::JavaScript,
            Lang::Python => Self::Python,
            Lang::C => Self::C,
            Lang::Cpp => Self::Cpp,
        }
    }
}

/// `evo new NAME --lang L`.
pub(crate) fn new(globals: &Globals, name: &str, lang: Lang, parent: &Path) -> Result<(), Failure> {
    let language = Language::from(lang);
    let dir = authoring::create(parent, name, language)?;
    if globals.json {
        out!(
            "{}",
            json!({"success": true, "name": name, "language": language.as_str(), "path": dir})
        );
        return Ok(());
    }
    let setup = match language {
        Language::Rust => "rustup target add wasm32-wasip2   # once\n",
        Language::JavaScript => {
            "npm install                       # once: the pinned ComponentizeJS\n"
        }
        Language::Python => {
            "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt   # once\n"
        }
        Language::C => {
            "sudo apt install clang lld wasi-libc libclang-rt-dev-wasm32   # once (or set WASI_SDK_PATH)\n"
        }
        Language::Cpp => {
            "sudo apt install clang lld wasi-libc libclang-rt-dev-wasm32 libc++-dev-wasm32   # once (or set WASI_SDK_PATH)\n"
        }
    };
    out!(
        "created {} ({} skill `{name}`)\n\n  cd {}\n  {setup}  evo skill build\n  evo skill test\n  evo skill run . --input '{{\"name\":\"Ada\"}}'",
        dir.display(),
        language.as_str(),
        dir.display(),
    );
    Ok(())
}

/// `evo skill build [DIR] [--out FILE]`.
pub(crate) async fn build(
    globals: &Globals,
    dir: &Path,
    out: Option<&Path>,
) -> Result<(), Failure> {
    if !globals.json {
        eprintln!("building {}", dir.display());
    }
    let host = args::bare_host(globals).await?;
    let wasm = out.map_or_else(|| dir.join("skill.wasm"), Path::to_owned);
    let built = authoring::build_to(dir, &wasm, engine(&host)?).await?;
    let size = std::fs::metadata(&built.wasm).map(|m| m.len()).unwrap_or(0);
    if globals.json {
        out!(
            "{}",
            json!({"success": true, "language": built.language.as_str(), "path": built.wasm, "bytes": size})
        );
    } else {
        out!(
            "built {} ({:.1} MB, {})",
            built.wasm.display(),
            size as f64 / 1e6,
            built.language.as_str()
        );
    }
    Ok(())
}

/// `evo skill pack [DIR] [--out FILE]`: checks the built skill loads, then writes the
/// ZIP.
pub(crate) async fn pack(globals: &Globals, dir: &Path, out: Option<&Path>) -> Result<(), Failure> {
    let name = load(globals, dir, &Grants::default(), false).await?.1;
    let file = out.map_or_else(|| dir.join(format!("{name}.zip")), Path::to_owned);
    authoring::pack(dir, &name, &file)?;
    if globals.json {
        out!("{}", json!({"success": true, "name": name, "path": file}));
    } else {
        out!(
            "packed {} (install it with `evo skill install {}`)",
            file.display(),
            file.display()
        );
    }
    Ok(())
}

/// The host's Wasm engine, which reads a built component's manifest.
fn engine(host: &evo_host::Host) -> Result<&evo_host::wasm::WasmEngine, Failure> {
    host.wasm_engine().ok_or_else(|| {
        evo_host::Error::Engine("this host has no Wasm engine to read the manifest with".into())
            .into()
    })
}

/// The host with the project's skill loaded, and the skill's name; with `build`, the
/// project built first by the same host (its engine reads the manifest).
async fn load(
    globals: &Globals,
    dir: &Path,
    grants: &Grants,
    build: bool,
) -> Result<(evo_host::Host, String), Failure> {
    let host = args::host(globals, &Sources::default(), grants).await?;
    if build {
        authoring::build(dir, engine(&host)?).await?;
    }
    let path = authoring::built(dir)?;
    let name = args::resolve(&host, &path.to_string_lossy()).await?;
    Ok((host, name))
}

/// `evo skill test [DIR]`: builds (unless `--no-build`), then runs every case in
/// `tests/` through the host, as `evo skill run` would.
pub(crate) async fn test(
    globals: &Globals,
    dir: &Path,
    no_build: bool,
    grants: &Grants,
) -> Result<(), Failure> {
    let cases = authoring::cases(dir)?;
    let (host, name) = load(globals, dir, grants, !no_build).await?;
    // A call to a skill that is not here fails every case that makes it: say which.
    let missing = host.missing_callees(&name);
    if !missing.is_empty() {
        return Err(Failure::usage(
            "SKILL_NOT_FOUND",
            format!(
                "{name} calls {}, which {} not loaded",
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            ),
            Some("install what it calls (`evo skill install`), or take it out of `calls`"),
        ));
    }
    if cases.is_empty() {
        return Err(Failure::usage(
            "NO_TEST_CASES",
            format!("{} has no test cases", dir.join("tests").display()),
            Some(
                "add tests/NAME.json: {\"input\": {…}, \"output\": {…}} or {\"input\": {…}, \"error\": \"CODE\"}",
            ),
        ));
    }
    let mut failed = 0;
    let mut results = Vec::new();
    for case in &cases {
        let context = host.run_context(evo_host::RunOptions {
            caller: Some("test".into()),
            single_call: true,
            // A test case must not change the user's memory.
            leave_memory_writes: true,
            ..Default::default()
        });
        let got = context.call_full(&name, case.input.clone()).await;
        let problem = match (&case.expect, &got) {
            (Expect::Output(want), Ok(outcome)) if *want == outcome.output => None,
            (Expect::Output(want), Ok(outcome)) => {
                Some(format!("expected output {want}, got {}", outcome.output))
            }
            (Expect::Output(want), Err(e)) => Some(format!(
                "expected output {want}, got error[{}]: {e}",
                e.code()
            )),
            (Expect::Error(code), Err(e)) if e.code() == code => None,
            (Expect::Error(code), Err(e)) => Some(format!(
                "expected error {code}, got error[{}]: {e}",
                e.code()
            )),
            (Expect::Error(code), Ok(outcome)) => Some(format!(
                "expected error {code}, got output {}",
                outcome.output
            )),
        };
        if problem.is_some() {
            failed += 1;
        }
        if !globals.json {
            match &problem {
                None => out!("ok    {}", case.description),
                Some(problem) => out!("FAIL  {}: {problem}", case.description),
            }
        }
        results.push(json!({
            "case": case.file.file_name().map(|f| f.to_string_lossy().into_owned()),
            "description": case.description,
            "passed": problem.is_none(),
            "problem": problem,
        }));
    }
    // A rehearsal: its calls are in the history (caller `test`), but not in the skill's
    // usage statistics, where a case that expects an error would count as a failure.
    host.discard_unflushed_stats();
    if let Err(e) = host.flush_stats() {
        eprintln!("warning: could not record the call history: {e}");
    }
    if globals.json {
        let value = json!({"success": failed == 0, "skill": name, "cases": results});
        out!("{}", serde_json::to_string(&value).map_err(internal)?);
    } else {
        out!("{name}: {} passed, {failed} failed", cases.len() - failed);
    }
    if failed > 0 {
        return Err(Failure::Reported(1));
    }
    Ok(())
}
