//! Skills described without running them: the manifest `evo skill build` embeds in a
//! component (read without instantiating it, and refused at install when it is not
//! what the component's own export says), and a file loaded before, described from
//! what was learnt then until it changes, its compiled code loaded on the first call.

use std::path::Path;
use std::time::Duration;

use evo_host::engine::wasm::{EngineConfig, LoadSource, WasmEngine, inspect, with_manifest};
use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

/// A file is remembered only once it has not changed for 2 s (as git treats "racy"
/// index entries): a second write within one clock tick could keep its timestamps.
const SETTLE: Duration = Duration::from_millis(2_100);

const INPUT: &str = r#"{"expression":"sqrt(144) + 10"}"#;
const TEXT: &str = r#"{"text":"a b a"}"#;

/// `text-stats` (`calculate` is a built-in's name, so it cannot be installed) with its
/// export's manifest embedded, edited by `edit`.
async fn text_stats_with(engine: &WasmEngine, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let bytes = std::fs::read(skills::TEXT_STATS).unwrap();
    let exported = engine
        .exported_manifest("text-stats.wasm", bytes.clone())
        .await
        .unwrap();
    let mut manifest: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(manifest["name"], "text-stats");
    edit(&mut manifest);
    with_manifest("text-stats.wasm", &bytes, &manifest.to_string()).unwrap()
}

#[tokio::test]
async fn the_embedded_manifest_is_read_without_instantiating_and_install_refuses_one_that_lies() {
    let engine = evo_tests::engine();
    // A description and a capability its export does not ask for.
    let lying = text_stats_with(&engine, |manifest| {
        manifest["description"] = json!("Says something else than its export.");
        manifest["capabilities"] = json!({ "llm": true });
    })
    .await;
    assert!(
        inspect("text-stats.wasm", &lying)
            .unwrap()
            .manifest
            .is_some()
    );

    // The host read the section, not the export: the export says otherwise.
    let skill = engine
        .load_bytes("text-stats.wasm", lying.clone(), &Policy::default())
        .await
        .unwrap();
    assert_eq!(
        skill.meta().description,
        "Says something else than its export."
    );
    let outcome = skill.call(TEXT, &SkillContext::detached()).await.unwrap();
    assert_eq!(outcome.output["words"], 3);

    let err = engine
        .verify_embedded_manifest("text-stats", lying.clone())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_MANIFEST");
    assert!(
        err.to_string().contains(
            "the manifest embedded in the component is not the one its `manifest` export returns"
        ),
        "{err}"
    );

    // Through the CLI, where the operator installs it: refused, nothing installed.
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let package = work.path().join("text-stats");
    std::fs::create_dir(&package).unwrap();
    std::fs::write(package.join("skill.wasm"), &lying).unwrap();
    let out = evo(&home, &["skill", "install", package.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("is not the one its `manifest` export returns")
            && stderr(&out).contains("build it again with `evo skill build`"),
        "{}",
        stderr(&out)
    );
    assert!(!home.join("skills/text-stats").exists());

    // The same component with the export's own manifest embedded installs and runs.
    let honest = text_stats_with(&engine, |_| {}).await;
    std::fs::write(package.join("skill.wasm"), &honest).unwrap();
    let out = evo(&home, &["skill", "install", package.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(&home, &["skill", "run", "text-stats", "--input", TEXT]);
    assert!(stdout(&out).contains("\"words\": 3"), "{}", stderr(&out));
}

fn cached(dir: &Path) -> WasmEngine {
    WasmEngine::new(EngineConfig {
        cache_dir: Some(dir.to_owned()),
        max_concurrent_calls: 2,
        ..EngineConfig::default()
    })
    .unwrap()
}

#[tokio::test]
async fn a_file_loaded_before_is_described_from_its_record_until_it_changes() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let path = work.path().join("skill.wasm");
    std::fs::copy(skills::CALCULATE, &path).unwrap();
    std::thread::sleep(SETTLE);

    let first = cached(&cache)
        .load_file(&path, &Policy::default())
        .await
        .unwrap();
    assert_eq!(first.load_source(), LoadSource::Compiled);

    // Another process (engine) describes it from the record: nothing compiled or read.
    let second = cached(&cache)
        .load_file(&path, &Policy::default())
        .await
        .unwrap();
    assert_eq!(second.load_source(), LoadSource::Deferred);
    assert_eq!(second.meta(), first.meta());
    assert_eq!(second.digest(), first.digest());
    let third = cached(&cache)
        .load_file(&path, &Policy::default())
        .await
        .unwrap();
    let later = cached(&cache)
        .load_file(&path, &Policy::default())
        .await
        .unwrap();
    assert_eq!(later.prepare().await.unwrap(), LoadSource::Cache);
    let outcome = later.call(INPUT, &SkillContext::detached()).await.unwrap();
    assert_eq!(outcome.output, json!({ "result": 22 }));

    // The file is replaced before the deferred skills' first calls. One runs the code it
    // described (the compiled code of that digest, from the cache), never the new file.
    std::fs::write(&path, std::fs::read(skills::TEXT_STATS).unwrap()).unwrap();
    let outcome = second.call(INPUT, &SkillContext::detached()).await.unwrap();
    assert_eq!(outcome.output, json!({ "result": 22 }));
    // Without the compiled code, the other would have to read the file: it refuses to
    // run what it did not describe.
    for artifact in std::fs::read_dir(&cache).unwrap() {
        let artifact = artifact.unwrap().path();
        if artifact.extension().is_some_and(|e| e == "cwasm") {
            std::fs::remove_file(artifact).unwrap();
        }
    }
    let err = third
        .call(INPUT, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_COMPONENT");
    assert!(
        err.to_string()
            .contains("changed after it was loaded; load it again"),
        "{err}"
    );

    // A new load sees the new file.
    let now = cached(&cache)
        .load_file(&path, &Policy::default())
        .await
        .unwrap();
    assert_eq!(now.meta().name, "text-stats");
}

#[test]
fn installed_wasm_skills_are_described_from_their_records_and_run() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    for skill in [skills::NOTES, skills::TEXT_STATS] {
        let out = evo(&home, &["skill", "install", skill]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    std::thread::sleep(SETTLE);
    // The first load after the files settled remembers them; the next describes them.
    let out = evo(&home, &["skill", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for _ in 0..2 {
        let out = evo(&home, &["skill", "info", "text-stats", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let info: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(info["loadedFrom"], "deferred", "{info}");
        assert_eq!(info["manifest"]["name"], "text-stats");
    }
    // Its schemas are compiled on this first call: the input gate still refuses.
    let out = evo(
        &home,
        &["skill", "run", "text-stats", "--input", "{\"text\": 7}"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("SKILL_VALIDATION_FAILED"),
        "{}",
        stderr(&out)
    );
    let out = evo(&home, &["skill", "run", "text-stats", "--input", TEXT]);
    assert!(stdout(&out).contains("\"words\": 3"), "{}", stderr(&out));
    let out = evo(&home, &["skill", "info", "notes", "--json"]);
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["manifest"]["name"], "notes", "{info}");
}

/// A component is described by its section alone on the way users run a file: the
/// section passes the same gates as an export would. `file-head`'s section here asks for
/// write access to `/data`, a ten-hour deadline and 100 GiB of memory; through `evo`, the
/// operator's read-only grant stays read-only, the limits stay the host's, and without a
/// grant nothing is readable.
#[tokio::test]
async fn a_section_asking_for_more_gets_what_the_operator_grants_through_evo() {
    let engine = evo_tests::engine();
    let bytes = std::fs::read(skills::FILE_HEAD).unwrap();
    let exported = engine
        .exported_manifest("file-head.wasm", bytes.clone())
        .await
        .unwrap();
    let mut manifest: Value = serde_json::from_str(&exported).unwrap();
    manifest["capabilities"]["dirs"][0]["access"] = json!("read-write");
    manifest["timeout"] = json!(36_000_000);
    manifest["limits"] = json!({ "memoryMib": 102_400 });
    let greedy = with_manifest("file-head.wasm", &bytes, &manifest.to_string()).unwrap();

    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let docs = work.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("notes.txt"), "first line\nsecond line\n").unwrap();
    let file = work.path().join("file-head.wasm");
    std::fs::write(&file, greedy).unwrap();
    let file = file.to_str().unwrap();
    let grant = format!("{}::/data:ro", docs.display());

    let out = evo(&home, &["skill", "info", file, "--json", "--dir", &grant]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        info["manifest"]["capabilities"]["dirs"][0]["access"],
        "read-write"
    );
    assert_eq!(info["grant"]["dirs"][0]["access"], "read", "{info}");
    assert_eq!(
        info["limits"]["timeoutMs"],
        evo_host::engine::wasm::limits::MAX_TIMEOUT_MS
    );
    assert_eq!(
        info["limits"]["memoryMib"],
        evo_host::engine::wasm::limits::MAX_MEMORY_MIB
    );

    let input = r#"{"path":"/data/notes.txt","lines":1}"#;
    let out = evo(&home, &["skill", "run", file, "--input", input]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("error[PERMISSION_DENIED]")
            && stderr(&out).contains("/data was not granted"),
        "{}",
        stderr(&out)
    );
    let out = evo(
        &home,
        &["skill", "run", file, "--dir", &grant, "--input", input],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let output: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output["lines"], json!(["first line"]));
}

/// The file of a skill a long-running host described from its record is replaced before
/// the first call (an attacker with write access to the skills directory, between a
/// host's start and its first call): through the public `Host`, the call runs the code
/// the skill was described and installed as, or refuses; never the new bytes.
#[tokio::test]
async fn a_skill_file_replaced_after_the_host_described_it_never_runs_the_new_bytes() {
    let work = tempfile::tempdir().unwrap();
    let home = recorded_text_stats(work.path());

    let host = || async {
        evo_host::Host::builder()
            .data_dir(&home)
            .config(evo_tests::config(&home))
            .build()
            .await
            .unwrap()
    };
    let (first, second) = (host().await, host().await);
    let installed = home.join("skills/text-stats/skill.wasm");
    // `calculate` under the same path: what an attacker would have run.
    std::fs::write(&installed, std::fs::read(skills::CALCULATE).unwrap()).unwrap();

    let outcome = first
        .call_full("text-stats", serde_json::from_str(TEXT).unwrap())
        .await
        .unwrap();
    assert_eq!(outcome.output["words"], 3, "the installed text-stats ran");

    // Without the compiled code at hand, the other host would have to read the file:
    // it refuses instead.
    let cache = evo_host::config::wasm_cache_dir(&home);
    for artifact in std::fs::read_dir(&cache).unwrap() {
        let artifact = artifact.unwrap().path();
        if artifact.extension().is_some_and(|e| e == "cwasm") {
            std::fs::remove_file(artifact).unwrap();
        }
    }
    let err = second
        .call_full("text-stats", serde_json::from_str(TEXT).unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_COMPONENT", "{err}");
    assert!(
        err.to_string().contains("changed after it was loaded"),
        "{err}"
    );
}

/// The attack on the catalogue record: an installed component, described from its
/// record at every start, is rewritten in place (same path, same inode) with a manifest
/// asking for more. Through `evo`, the next start reads the new bytes and refuses them
/// for what they ask (CAPABILITIES_CHANGED); it never describes them from the old record
/// or runs them.
#[tokio::test]
async fn a_component_rewritten_in_place_is_read_again_by_the_next_evo_and_refused_for_what_it_asks()
{
    let work = tempfile::tempdir().unwrap();
    let home = recorded_text_stats(work.path());
    let out = evo(&home, &["skill", "info", "text-stats", "--json"]);
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        info["loadedFrom"], "deferred",
        "described from its record: {info}"
    );

    let wider = text_stats_with(&evo_tests::engine(), |manifest| {
        manifest["capabilities"] = json!({ "memory": "read-write" });
    })
    .await;
    let installed = home.join("skills/text-stats/skill.wasm");
    let inode =
        |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
    let before = inode(&installed);
    std::fs::write(&installed, &wider).unwrap();
    assert_eq!(inode(&installed), before, "rewritten in place");

    let out = evo(&home, &["skill", "run", "text-stats", "--input", TEXT]);
    assert!(!out.status.success(), "the new bytes ran: {}", stdout(&out));
    assert!(
        stderr(&out).contains("CAPABILITIES_CHANGED"),
        "{}",
        stderr(&out)
    );
    let out = evo(&home, &["skill", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = listed["errors"].to_string();
    assert!(
        errors.contains("CAPABILITIES_CHANGED") && errors.contains("memory (read-write)"),
        "{listed}"
    );
    assert!(
        !listed["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "text-stats"),
        "{listed}"
    );
}

/// A plain component (`plain-kinds`) in `dir/kinds/`, with `manifest` beside it.
/// A home under `work` with `text-stats` installed through `evo` and, once its file
/// settled, listed: its catalogue record is written.
fn recorded_text_stats(work: &Path) -> std::path::PathBuf {
    let home = work.join("home");
    let out = evo(&home, &["skill", "install", skills::TEXT_STATS]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::thread::sleep(SETTLE);
    let out = evo(&home, &["skill", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    home
}

fn plain_dir(dir: &Path, manifest: &Value) -> std::path::PathBuf {
    let skill = dir.join("kinds");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::copy(skills::PLAIN_KINDS, skill.join("skill.wasm")).unwrap();
    std::fs::write(skill.join("skill.json"), manifest.to_string()).unwrap();
    skill
}

#[tokio::test]
async fn a_plain_component_loaded_before_is_described_from_its_record_with_its_sidecar() {
    use evo_host::engine::wasm::WasmFile;
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let manifest = json!({ "name": "kinds", "description": "Every kind." });
    let dir = plain_dir(work.path(), &manifest);
    let wasm = dir.join("skill.wasm");
    std::thread::sleep(SETTLE);
    let load = |manifest: Value| {
        let wasm = wasm.clone();
        let engine = cached(&cache);
        async move {
            let raw = serde_json::from_value(manifest).unwrap();
            match engine
                .load_any_file(&wasm, move || Ok(Some(raw)), &Policy::default())
                .await
                .unwrap()
            {
                WasmFile::Component(component) => component,
                WasmFile::Skill(_) => panic!("plain-kinds is a plain component"),
            }
        }
    };
    let first = load(manifest.clone()).await;
    assert_eq!(first.load_source(), LoadSource::Compiled);
    // Another process describes it from the record: nothing read or compiled…
    let second = load(manifest.clone()).await;
    assert_eq!(second.load_source(), LoadSource::Deferred);
    let names = |c: &evo_host::wasm::PlainComponent| c.skills().cloned().collect::<Vec<_>>();
    assert_eq!(names(&second), names(&first));
    assert_eq!(second.unusable(), first.unusable());
    assert_eq!(second.digest(), first.digest());
    // …until its first call, which loads the compiled code from the cache.
    let out = second
        .call(
            "kinds__kinds__divide",
            &json!({ "a": 9, "b": 3 }),
            &SkillContext::detached(),
        )
        .await
        .unwrap();
    assert_eq!(out, json!(3));
    assert_eq!(second.load_source(), LoadSource::Cache);
    // Another sidecar is another description: the names follow it.
    let renamed = load(json!({ "name": "every", "description": "Every kind, renamed." })).await;
    assert!(
        renamed.skills().any(|m| m.name == "every__greet"),
        "{renamed:?}"
    );
    assert_eq!(renamed.meta().description, "Every kind, renamed.");
}

/// A record lets a later load skip compiling the skill's schemas, so none is made for a
/// skill whose schema does not compile: it is refused on every load, not only the first.
#[test]
fn a_skill_whose_schema_does_not_compile_is_refused_on_every_load() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let broken = rt.block_on(text_stats_with(&evo_tests::engine(), |manifest| {
        manifest["input"]["properties"]["text"]["pattern"] = json!("(unclosed");
    }));
    let dir = home.join("skills").join("text-stats");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("skill.wasm"), broken).unwrap();
    std::thread::sleep(SETTLE);
    for load in 0..3 {
        let out = evo(&home, &["skill", "list", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let refused = listed["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("text-stats"))
            })
            .unwrap_or_else(|| panic!("load {load}: not refused: {listed}"));
        assert_eq!(
            refused["code"], "INVALID_MANIFEST",
            "load {load}: {refused}"
        );
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("not a valid JSON Schema"),
            "load {load}: {refused}"
        );
        assert!(
            !listed["skills"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["name"] == "text-stats"),
            "load {load}: {listed}"
        );
    }
}
