//! The sandbox as a guest sees it: no environment, no arguments, no network, panics
//! explained, and the host's services only as granted (what it prints: chatter.rs).

use std::sync::Arc;

use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::{engine, load, skills};
use serde_json::json;

#[tokio::test]
async fn a_panic_reports_its_message() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let err = skill
        .call(r#"{"panic":"the gizmo broke"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_TRAPPED");
    let message = err.to_string();
    assert!(
        message.contains("panicked at skills-wasm/fixture-probe/src/lib.rs"),
        "{message}"
    );
    assert!(message.contains("the gizmo broke"), "{message}");
    assert!(!message.contains("RUST_BACKTRACE"), "{message}");
    assert!(message.contains("unreachable"), "{message}");
}

#[tokio::test]
async fn no_environment_arguments_or_network() {
    // The test process has PATH, HOME and more; none of it may reach the guest.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let input = json!({ "connect": address }).to_string();
    let outcome = skill.call(&input, &SkillContext::detached()).await.unwrap();
    assert_eq!(outcome.output["env"], json!([]));
    assert_eq!(outcome.output["args"], json!([]));
    let connect = outcome.output["connect"].as_str().unwrap();
    assert_ne!(connect, "connected");
    assert!(
        connect.to_lowercase().contains("denied") || connect.contains("not permitted"),
        "{connect}"
    );
    assert!(listener.accept().is_err(), "nothing reached the listener");
}

#[tokio::test]
async fn host_calls_that_are_not_granted_return_errors_not_traps() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    assert_eq!(
        skill.grant().refused,
        [
            "directory /data: no host directory is bound to it (bind one with --dir HOST::/data)",
            "llm: the host policy does not allow the language model",
            "memory: requested read-write access, the host policy allows none",
        ]
    );
    let outcome = skill
        .call(r#"{"host_calls":true}"#, &SkillContext::detached())
        .await
        .unwrap();
    let denied = |what: &str| {
        format!(
            "denied: fixture-probe was not granted {what}; the skill must request it in its manifest and the operator must allow it"
        )
    };
    let mut calls = outcome.output["host_calls"].clone();
    // The run's environment needs no grant (a detached run has a session of its own).
    let env = calls.as_object_mut().unwrap().remove("env").unwrap();
    let env: serde_json::Value =
        serde_json::from_str(env.as_str().unwrap().strip_prefix("ok: ").unwrap()).unwrap();
    assert_eq!(env["locale"], "en", "{env}");
    assert!(
        env["session"].as_str().unwrap().starts_with("task-"),
        "{env}"
    );
    assert_eq!(
        calls,
        json!({
            "call-listed": "not found: Skills not found: calculate",
            "call-unlisted": "denied: fixture-probe may not call \"notes\": add it to the `calls` list of its manifest",
            "llm": denied("the language model"),
            "memory-search": denied("read access to memory"),
            "memory-query": denied("read access to memory"),
            "memory-store": denied("write access to memory"),
            "memory-forget": denied("write access to memory"),
        })
    );
}

#[tokio::test]
async fn granted_memory_reaches_the_kernel_services() {
    use evo_host::grants::MemoryAccess;
    let engine = engine();
    let policy = Policy {
        memory: MemoryAccess::ReadWrite,
        llm: true,
        ..Policy::default()
    };
    let skill = load(&engine, skills::FIXTURE_PROBE, &policy).await;
    // Only the directory it asks for (descriptor floods, writes) is left out.
    assert_eq!(
        skill.grant().refused,
        ["directory /data: no host directory is bound to it (bind one with --dir HOST::/data)"]
    );
    let outcome = skill
        .call(r#"{"host_calls":true}"#, &SkillContext::detached())
        .await
        .unwrap();
    // Granted, so the request reaches the (unwired) services, which explain themselves.
    assert_eq!(
        outcome.output["host_calls"]["memory-search"],
        "denied: no memory is attached to this host"
    );
    assert_eq!(
        outcome.output["host_calls"]["llm"],
        "denied: no language model is configured for this host"
    );
}

#[tokio::test]
async fn a_wasm_skill_reaches_the_kernel_through_its_context_imports() {
    use std::sync::Arc;

    use evo_host::engine::wasm::WasmExecutor;
    use evo_host::grants::MemoryAccess;
    use evo_host::skill::kernel::table::{RegisteredSkill, SkillTable};
    use evo_host::skill::kernel::{Kernel, RunOptions};
    use evo_host::tools::BuiltinTools;
    use evo_tests::kernel::ScriptedLlm;

    let engine = engine();
    let policy = Policy {
        llm: true,
        memory: MemoryAccess::ReadWrite,
        ..Policy::default()
    };
    let probe = load(&engine, skills::FIXTURE_PROBE, &policy).await;
    let registry = Arc::new(SkillTable::new());
    BuiltinTools::default().register(&registry).unwrap();
    registry.register(
        RegisteredSkill::new(probe.meta().clone(), Arc::new(WasmExecutor::new(probe))).unwrap(),
    );
    let llm = ScriptedLlm::new(["hello back"]);
    let kernel = Arc::new(Kernel::new(registry).with_llm(llm.clone()));
    let ctx = kernel.context(RunOptions::default());
    let out = ctx
        .call("fixture-probe", json!({ "host_calls": true }))
        .await
        .unwrap();
    let calls = &out["host_calls"];
    assert_eq!(calls["call-listed"], "ok: {\"result\":2}", "{calls}");
    assert_eq!(calls["llm"], "ok: hello back", "{calls}");
    assert!(
        calls["call-unlisted"]
            .as_str()
            .unwrap()
            .contains("may not call \"notes\""),
        "{calls}"
    );
    assert!(
        calls["memory-search"]
            .as_str()
            .unwrap()
            .contains("no memory is attached to this host"),
        "{calls}"
    );
    assert_eq!(llm.requests()[0].caller, "fixture-probe");
    assert_eq!(llm.requests()[0].prompt, "hello");
    let stats = kernel.stats();
    assert_eq!(
        stats.get("calculate").unwrap().call_count,
        1,
        "the guest's call went through the kernel"
    );
    assert_eq!(stats.get("fixture-probe").unwrap().success_count, 1);
}

#[tokio::test]
async fn steps_a_guest_records_come_back_with_the_result_and_count_against_the_output_cap() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let outcome = skill
        .call(r#"{"steps":2,"step_bytes":3}"#, &SkillContext::detached())
        .await
        .unwrap();
    let steps: Vec<(&str, &str, serde_json::Value, serde_json::Value)> = outcome
        .intermediate_steps
        .iter()
        .map(|s| {
            (
                s.step_id.as_str(),
                s.step_name.as_str(),
                s.input.clone(),
                s.output.clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("step-1", "probe 1", json!("sss"), json!(10)),
            ("step-2", "probe 2", json!("sss"), json!(20)),
        ]
    );

    // Three steps of 600 KB each: a small output, but 1.8 MB leaving the guest.
    let err = skill
        .call(
            r#"{"steps":3,"step_bytes":600000}"#,
            &SkillContext::detached(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_LIMIT_EXCEEDED", "{err}");
}

/// The probe at `path`, installed in a fresh host with memory and a scripted model
/// granted, run once with every host call: what each gave back, and the host.
async fn probe_every_host_call(
    path: &str,
) -> (
    serde_json::Value,
    evo_host::Host,
    Arc<evo_host::llm::scripted::ScriptedProvider>,
    tempfile::TempDir,
) {
    use evo_host::grants::MemoryAccess;
    use evo_host::llm::scripted::ScriptedProvider;

    let data = tempfile::tempdir().unwrap();
    let mut config = evo_host::Config::default();
    config.grants.skills.insert(
        "fixture-probe".into(),
        Policy {
            llm: true,
            memory: MemoryAccess::ReadWrite,
            ..Policy::default()
        },
    );
    config.env.insert("team".into(), "infra".into());
    let model = ScriptedProvider::from_json("probe", r#"{ "responses": ["hello back"] }"#).unwrap();
    let host = evo_host::Host::builder()
        .data_dir(data.path())
        .config(config)
        .embedder(Arc::new(evo_host::retrieval::embed::HashEmbedder))
        .llm(model.clone())
        .build()
        .await
        .unwrap();
    let name = host.resolve(path).await.unwrap();
    let out = host
        .call(&name, json!({ "host_calls": true }))
        .await
        .unwrap();
    (out["host_calls"].clone(), host, model, data)
}

/// What the calls both contract versions have gave back: a stored fact is found, then
/// forgotten; the model and another skill answer.
fn check_the_calls_of_0_1_0(calls: &serde_json::Value, host: &evo_host::Host) {
    for (call, answer) in [
        ("call-listed", "ok: {\"result\":2}"),
        (
            "call-unlisted",
            "denied: fixture-probe may not call \"notes\": add it to the `calls` list of its manifest",
        ),
        ("llm", "ok: hello back"),
        ("memory-store", "ok: stored: true"),
        ("memory-search", "ok: [\"a fact\"]"),
        ("memory-forget", "ok: forgot 1"),
    ] {
        assert_eq!(calls[call], answer, "{call}: {calls:#}");
    }
    assert!(
        host.memory().search("a fact", 5).unwrap().is_empty(),
        "the probe stored a fact and forgot it again"
    );
    assert_eq!(
        host.kernel().stats().get("calculate").unwrap().call_count,
        1
    );
}

#[tokio::test]
async fn through_the_host_a_granted_skill_reaches_memory_and_the_model() {
    let (calls, host, model, _data) = probe_every_host_call(skills::FIXTURE_PROBE).await;
    check_the_calls_of_0_1_0(&calls, &host);
    let (messages, _) = &model.requests()[0];
    assert_eq!(messages.last().unwrap().joined_text(), "hello");
    // Since evo:skill 0.2.0: a filtered search says where an entry came from, and the
    // run's environment carries the operator's [env] values.
    assert_eq!(
        calls["memory-query"], "ok: [\"a fact (Some(\\\"user\\\"))\"]",
        "{calls:#}"
    );
    let env: serde_json::Value =
        serde_json::from_str(calls["env"].as_str().unwrap().strip_prefix("ok: ").unwrap()).unwrap();
    assert_eq!(
        (&env["team"], &env["locale"]),
        (&json!("infra"), &json!("en")),
        "{env}"
    );
    assert_eq!(calls.as_object().unwrap().len(), 8, "{calls:#}");
}

#[tokio::test]
async fn a_component_built_against_the_frozen_0_1_0_contract_runs_unchanged() {
    // The probe as the SDK built it for evo:skill@0.1.0, committed before 0.2.0 existed:
    // its imports are answered through the current contract, with the same grants.
    let frozen = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/evo-skill-0.1.0/fixture_probe.wasm"
    );
    let info =
        evo_host::engine::wasm::inspect("fixture_probe.wasm", &std::fs::read(frozen).unwrap())
            .unwrap();
    assert_eq!(info.api_version, "0.1.0");
    assert_eq!(
        info.sdk.as_deref(),
        Some("evo-guest 0.1.0; evo:skill@0.1.0")
    );
    let (calls, host, model, _data) = probe_every_host_call(frozen).await;
    check_the_calls_of_0_1_0(&calls, &host);
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        calls.as_object().unwrap().len(),
        6,
        "0.1.0 has no memory-query or env: {calls:#}"
    );
}

#[tokio::test]
async fn what_a_guest_sends_back_is_capped_on_every_path() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let ctx = SkillContext::detached();

    // A 32 MiB error message is cut to 16 KiB, saying how much went.
    let err = skill
        .call(r#"{"error_bytes":33554432}"#, &ctx)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert_eq!(err.code(), "SKILL_FAILED");
    assert!(message.len() < 17 << 10, "{} bytes", message.len());
    assert!(
        message.ends_with(&format!("… ({} more bytes cut)", (32 << 20) - (16 << 10))),
        "{}",
        &message[message.len() - 60..]
    );

    // 20,000 empty steps are not free: each costs its framing against the output cap.
    let err = skill
        .call(r#"{"steps":20000,"step_bytes":0}"#, &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_LIMIT_EXCEEDED", "{err}");
}

/// `evo skill run fixture-probe [FLAGS] --json --input INPUT` in `home`: what it did and
/// the parsed result.
fn probe_cli(
    home: &std::path::Path,
    flags: &[&str],
    input: &str,
) -> (std::process::Output, serde_json::Value) {
    let mut args = vec!["skill", "run", skills::FIXTURE_PROBE];
    args.extend_from_slice(flags);
    args.extend(["--json", "--input", input]);
    let out = evo_tests::cli::evo(home, &args);
    let stdout = evo_tests::cli::stdout(&out);
    let value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", &stdout[..stdout.len().min(200)]));
    (out, value)
}

#[test]
fn through_the_cli_an_oversized_error_is_cut_and_a_flood_of_steps_refused() {
    let home = tempfile::tempdir().unwrap();
    let (out, value) = probe_cli(home.path(), &[], r#"{"error_bytes":33554432}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.len() < 20 << 10,
        "{} bytes on stdout",
        out.stdout.len()
    );
    assert!(
        out.stderr.len() < 20 << 10,
        "{} bytes on stderr",
        out.stderr.len()
    );
    assert_eq!(value["code"], "SKILL_FAILED");
    let error = value["error"].as_str().unwrap();
    assert!(
        error.ends_with("more bytes cut)"),
        "{}",
        &error[error.len() - 200..]
    );

    let (out, value) = probe_cli(home.path(), &[], r#"{"steps":20000}"#);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(value["code"], "OUTPUT_LIMIT_EXCEEDED", "{value}");
}

#[tokio::test]
async fn through_the_host_scratch_is_capped_and_suggestions_need_the_memory_grant() {
    use std::sync::Arc;

    async fn host(data: &std::path::Path, config: evo_host::Config) -> evo_host::Host {
        evo_host::Host::builder()
            .data_dir(data)
            .config(config)
            .embedder(Arc::new(evo_host::retrieval::embed::HashEmbedder))
            .build()
            .await
            .unwrap()
    }
    let data = tempfile::tempdir().unwrap();

    // 20 values of 1 MB: a run keeps 16 MiB of scratch, so 16 of them.
    let plain = host(data.path(), evo_host::Config::default()).await;
    let probe = plain.resolve(skills::FIXTURE_PROBE).await.unwrap();
    let out = plain
        .call(&probe, json!({ "scratch_values": 20 }))
        .await
        .unwrap();
    assert_eq!(out["scratch_kept"], 16, "{}", out["scratch_kept"]);

    // `notes` suggests an important note for memory: dropped without the grant...
    let important = json!({ "op": "add", "text": "call Ada", "important": true });
    let notes = plain.resolve(skills::NOTES).await.unwrap();
    let out = plain.call_full(&notes, important.clone()).await.unwrap();
    assert!(out.memory_writes.is_empty(), "{:?}", out.memory_writes);
    // ...and the result says so, with what would allow it.
    assert_eq!(out.memory.len(), 1, "{:?}", out.memory);
    assert_eq!(out.memory[0].status, evo_host::skills::WriteStatus::Refused);
    assert!(
        out.memory[0]
            .reason
            .starts_with("notes may not write to memory: it needs `\"memory\": \"read-write\"`"),
        "{}",
        out.memory[0].reason
    );
    assert!(plain.memory().search("call Ada", 5).unwrap().is_empty());

    // ...and kept with it.
    let granted = host(data.path(), memory_granted_to("notes")).await;
    let notes = granted.resolve(skills::NOTES).await.unwrap();
    let out = granted.call_full(&notes, important).await.unwrap();
    assert_eq!(out.memory_writes.len(), 1);
    assert_eq!(out.memory_writes[0].text, "call Ada");
    // "the system SHALL collect memoryWrites from the result and submit them to
    // appendMemory": kept when the call returns, with its id.
    assert_eq!(
        out.memory[0].status,
        evo_host::skills::WriteStatus::Kept,
        "{:?}",
        out.memory
    );
    let found = granted.memory().search("call Ada", 5).unwrap();
    assert_eq!(found[0].text, "call Ada");
    assert_eq!(Some(&found[0].id), out.memory[0].id.as_ref());
    assert_eq!(found[0].source, evo_host::memory::Source::Skill);
}

#[test]
fn through_the_cli_a_descriptor_flood_stops_at_the_cap_and_the_next_call_works() {
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("a.txt"), "alpha\n").unwrap();
    let grant = format!("{}::/data:ro", data.path().display());
    let run = |times: u32| {
        let input = json!({ "open_file": "/data/a.txt", "open_times": times }).to_string();
        probe_cli(home.path(), &["--dir", &grant], &input).1
    };
    let cap = evo_host::engine::wasm::limits::MAX_RESOURCES as u64;
    let flood = run(20_000);
    let opened = flood["output"]["opened"].as_u64();
    match opened {
        // The guest saw an error at the cap and returned normally.
        Some(opened) => {
            assert!(opened < cap, "{flood}");
            assert!(flood["output"]["open_error"].is_string(), "{flood}");
        }
        // Or the call was stopped with a clear error.
        None => {
            assert_eq!(flood["success"], false, "{flood}");
            assert_eq!(
                flood["error"],
                format!(
                    "fixture-probe: trapped: the skill held more than {cap} host resources at once (open files, directories, streams), the per-call cap; close files it no longer needs"
                ),
                "{flood}"
            );
        }
    }
    let next = run(3);
    assert_eq!(next["output"]["opened"], 3, "{next}");
}

#[test]
fn through_the_cli_a_read_write_grant_takes_writes_and_a_read_only_one_refuses_them() {
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("kept.txt"), "as it was\n").unwrap();
    let write = |access: &str, file: &str| {
        let grant = format!("{}::/data:{access}", data.path().display());
        let input =
            json!({ "write_file": format!("/data/{file}"), "write_text": "from the guest\n" });
        let (out, value) = probe_cli(home.path(), &["--dir", &grant], &input.to_string());
        assert!(out.status.success(), "{value}");
        value["output"]["write"].as_str().unwrap().to_owned()
    };

    // Read-write: the file is made on the host, and a file already there is replaced.
    assert_eq!(write("rw", "new.txt"), "wrote 15 bytes, read back 15");
    assert_eq!(
        std::fs::read_to_string(data.path().join("new.txt")).unwrap(),
        "from the guest\n"
    );
    // Read-only: neither a new file nor an existing one is written (WASI's `notpermitted`,
    // as the guest's std reports it).
    let refused = write("ro", "other.txt");
    assert_eq!(refused, "Operation not permitted (os error 63)");
    assert!(!data.path().join("other.txt").exists());
    let refused = write("ro", "kept.txt");
    assert_eq!(refused, "Operation not permitted (os error 63)");
    assert_eq!(
        std::fs::read_to_string(data.path().join("kept.txt")).unwrap(),
        "as it was\n"
    );
}

/// A skill may create a symbolic link in a read-write grant only if it points down: the
/// next reader of the directory (a native script, a built-in tool, the user) would
/// follow a link that leaves it, though WASI would not. `[engine] symlinks = false`
/// refuses every link.
#[test]
fn through_the_cli_a_skill_cannot_plant_a_link_that_leaves_its_grant() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "not granted\n").unwrap();
    let data = outside.path().join("granted");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    std::fs::write(data.join("sub/notes.txt"), "granted\n").unwrap();
    let grant = format!("{}::/data:rw", data.display());
    let link = |name: &str, target: &str| {
        let input = json!({ "symlink": [name, target] }).to_string();
        let (out, value) = probe_cli(home.path(), &["--dir", &grant], &input);
        assert!(out.status.success(), "{value}");
        value["output"]["symlink"].as_str().unwrap().to_owned()
    };

    for (name, target) in [
        ("up", "../secret.txt"),
        ("climb", "sub/../../secret.txt"),
        ("dots", ".."),
        ("absolute", "/etc/passwd"),
    ] {
        let refused = link(name, target);
        assert!(
            refused.to_lowercase().contains("not-permitted")
                || refused.to_lowercase().contains("not permitted"),
            "{name} -> {target}: {refused}"
        );
        assert!(
            std::fs::symlink_metadata(data.join(name)).is_err(),
            "{name} -> {target} was created"
        );
    }
    // A link down into the grant is still made, and reads what it names.
    assert_eq!(link("down", "sub/notes.txt"), "linked");
    assert_eq!(
        std::fs::read_to_string(data.join("down")).unwrap(),
        "granted\n"
    );
    // "Or all links, where the operator says so."
    std::fs::write(home.path().join("evo.toml"), "[engine]\nsymlinks = false\n").unwrap();
    let refused = link("again", "sub/notes.txt");
    assert!(refused.to_lowercase().contains("permitted"), "{refused}");
    assert!(std::fs::symlink_metadata(data.join("again")).is_err());
}

#[test]
fn through_the_cli_a_self_calling_skill_is_stopped_by_the_depth_limit_not_by_slots() {
    let home = tempfile::tempdir().unwrap();
    // Two slots: without the reserve the chain would wait at depth 2 until its deadline.
    std::fs::write(home.path().join("evo.toml"), "[engine]\npool_slots = 2\n").unwrap();
    let (out, value) = probe_cli(home.path(), &[], r#"{"recurse":true}"#);
    assert!(out.status.success(), "{value}");
    let max = evo_host::skill::kernel::DEFAULT_MAX_DEPTH;
    assert_eq!(value["output"]["depth"], max - 1, "{value}");
    // Starved of slots, the chain would end in a timeout instead.
    let error = value["output"]["recursion_error"].as_str().unwrap();
    assert!(
        error.contains("depth") && !error.contains("timed out"),
        "refused by the depth limit: {error}"
    );
}

#[tokio::test]
async fn a_native_scripts_memory_suggestions_need_the_memory_grant_too() {
    use std::sync::Arc;

    let root = tempfile::tempdir().unwrap();
    let dir = evo_tests::native_skill(
        root.path(),
        "suggest",
        "Suggests a note for memory.",
        json!({ "capabilities": { "memory": "read-write" } }),
        "console.log(JSON.stringify({ ok: true, memoryWrites: [{ text: 'call Ada', category: 'todo' }] }));\n",
    );
    let call = |config: evo_host::Config| {
        let (data, dir) = (root.path().join("data"), dir.clone());
        async move {
            let host = evo_host::Host::builder()
                .data_dir(data)
                .config(config)
                .embedder(Arc::new(evo_host::retrieval::embed::HashEmbedder))
                .native_launcher(evo_tests::launcher_bin())
                .build()
                .await
                .unwrap();
            let name = host.resolve(&dir.to_string_lossy()).await.unwrap();
            host.call_full(&name, json!({})).await.unwrap()
        }
    };

    // Asked for, not granted: the suggestion is dropped, and never part of the output.
    let out = call(evo_host::Config::default()).await;
    assert_eq!(out.output, json!({ "ok": true }));
    assert!(out.memory_writes.is_empty(), "{:?}", out.memory_writes);
    assert_eq!(out.memory[0].status, evo_host::skills::WriteStatus::Refused);

    let out = call(memory_granted_to("suggest")).await;
    assert_eq!(out.output, json!({ "ok": true }));
    let writes: Vec<(&str, Option<&str>)> = out
        .memory_writes
        .iter()
        .map(|w| (w.text.as_str(), w.category.as_deref()))
        .collect();
    assert_eq!(writes, [("call Ada", Some("todo"))]);
    assert_eq!(
        out.memory[0].status,
        evo_host::skills::WriteStatus::Kept,
        "{:?}",
        out.memory
    );
}

/// A configuration that grants read-write memory to the skill `name` (`[grants.skill.NAME]`).
fn memory_granted_to(name: &str) -> evo_host::Config {
    let mut config = evo_host::Config::default();
    config.grants.skills.insert(
        name.into(),
        Policy {
            memory: evo_host::grants::MemoryAccess::ReadWrite,
            ..Policy::default()
        },
    );
    config
}
