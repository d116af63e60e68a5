//! Faults around the data directory, through `evo` as a user meets them: a
//! corrupted database, one locked by another process, a read-only data directory, a
//! full disk, a deleted skills directory. Each is a clear error with a code and what to
//! do, never a panic (exit 101), and loses nothing.

use std::path::Path;
use std::process::Output;

use evo_tests::cli::{evo, stderr, stdout};
use serde_json::json;

/// `evo ARGS` with `EVO_HOME=home`, run inside a user and mount namespace after `setup`
/// (shell commands that mount over `home`), as an unprivileged user can.
fn evo_in_namespace(home: &Path, setup: &str, args: &[&str]) -> Output {
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let evo = evo_tests::evo_bin();
    let script = format!("{setup} && exec {} {}", evo.display(), quoted.join(" "));
    let mut command = std::process::Command::new("unshare");
    command.args(["--user", "--map-root-user", "--mount", "sh", "-c", &script]);
    for var in evo_tests::HOST_SETTINGS {
        command.env_remove(var);
    }
    command
        .env("EVO_HOME", home)
        .output()
        .expect("unshare runs")
}

/// Fails unless `out` is a clean failure: a coded error line, not a panic.
fn assert_clean_failure(out: &Output, code: &str, says: &str) {
    let err = stderr(out);
    assert_ne!(out.status.code(), Some(101), "a panic: {err}");
    assert!(!out.status.success(), "{err}");
    assert!(err.starts_with(&format!("error[{code}]: ")), "{err}");
    assert!(err.contains(says), "{says:?} in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_corrupted_database_says_which_file_and_how_to_start_again() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["memory", "store", "The walrus is grey"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (db, args) in [
        ("memory.db", &["memory", "search", "walrus"][..]),
        ("evo.db", &["skill", "stats"][..]),
    ] {
        let path = home.path().join(db);
        std::fs::write(&path, b"this is not a database, it was overwritten").unwrap();
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(home.path().join(format!("{db}{suffix}")));
        }
        let out = evo(home.path(), args);
        assert_clean_failure(
            &out,
            "DATABASE_ERROR",
            &format!(
                "{0}: file is not a database; the file is damaged or is not one of Evo's: move it aside (`mv {0} {0}.damaged`)",
                path.display()
            ),
        );
        // Doing what it says works, and the damaged file is left for the user.
        std::fs::rename(&path, home.path().join(format!("{db}.damaged"))).unwrap();
        let out = evo(
            home.path(),
            &[
                "skill",
                "run",
                "calculate",
                "--input",
                r#"{"expression":"6*7"}"#,
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(home.path().join(format!("{db}.damaged")).exists());
    }
}

#[test]
fn a_database_locked_by_another_process_is_waited_for_then_explained() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["memory", "store", "The walrus is grey"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Another process (this test) holds the write lock and does not let go.
    let holder = rusqlite::Connection::open(home.path().join("memory.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let out = evo(home.path(), &["memory", "store", "The otter is brown"]);
    assert_clean_failure(
        &out,
        "DATABASE_ERROR",
        "database is locked; another process holds it (another evo, or a program with the file open): try again when it is done",
    );
    // Released: the same command works, and the first fact is still there.
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let out = evo(home.path(), &["memory", "store", "The otter is brown"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(home.path(), &["memory", "search", "walrus"]);
    assert!(
        stdout(&out).contains("The walrus is grey"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_read_only_data_directory_refuses_writes_clearly_and_loses_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["memory", "store", "The walrus is grey"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = home.path().display();
    let read_only = format!("mount --bind {dir} {dir} && mount -o remount,bind,ro {dir}");
    let out = evo_in_namespace(
        home.path(),
        &read_only,
        &[
            "skill",
            "run",
            "calculate",
            "--input",
            r#"{"expression":"6*7"}"#,
        ],
    );
    assert_ne!(out.status.code(), Some(101), "a panic: {}", stderr(&out));
    let out = evo_in_namespace(
        home.path(),
        &read_only,
        &["memory", "store", "The otter is brown"],
    );
    // SQLite cannot even open a database in WAL mode there (it writes the -shm file).
    assert_clean_failure(
        &out,
        "DATABASE_ERROR",
        "memory.db: unable to open database file; check that its directory exists and is writable",
    );
    // Nothing was lost.
    let out = evo(home.path(), &["memory", "search", "walrus"]);
    assert!(
        stdout(&out).contains("The walrus is grey"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_full_disk_fails_the_install_cleanly_and_leaves_no_half_skill() {
    let home = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    // A skill larger than the 2 MiB file system it is installed into.
    let skill = evo_tests::native_skill(
        source.path(),
        "big-skill",
        "A skill with a large file.",
        serde_json::json!({}),
        "console.log('{}')",
    );
    let noise: Vec<u8> = (0..3_000_000_u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(skill.join("data.bin"), noise).unwrap();
    let small = format!("mount -t tmpfs -o size=2m tmpfs {}", home.path().display());
    let out = evo_in_namespace(
        home.path(),
        &format!(
            "{small} && {} skill install {} --native; {} skill list --json",
            evo_tests::evo_bin().display(),
            skill.display(),
            evo_tests::evo_bin().display()
        ),
        &["skill", "info", "big-skill"],
    );
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(101), "a panic: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("error[IO_ERROR]: ") && err.contains("data.bin: No space left on device"),
        "{err}"
    );
    // The listing printed between the two commands has no trace of the skill, and info
    // says it is not installed.
    assert!(!stdout(&out).contains("big-skill"), "{}", stdout(&out));
    assert!(err.contains("error[SKILL_NOT_FOUND]"), "{err}");
}

#[test]
fn a_deleted_skills_directory_is_an_empty_catalogue_not_an_error() {
    let home = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    let skill = evo_tests::native_skill(
        source.path(),
        "gone-skill",
        "A skill whose directory goes away.",
        serde_json::json!({}),
        "console.log(JSON.stringify({ ok: true }))",
    );
    let install = ["skill", "install", skill.to_str().unwrap(), "--native"];
    let out = evo(home.path(), &install);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_dir_all(home.path().join("skills")).unwrap();
    let out = evo(home.path(), &["skill", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("gone-skill"));
    let out = evo(home.path(), &["skill", "run", "gone-skill"]);
    assert_clean_failure(&out, "SKILL_NOT_FOUND", "gone-skill");
    // And it installs again.
    let out = evo(home.path(), &install);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(
        home.path(),
        &["skill", "run", "gone-skill", "--input", "{}"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_server_on_a_full_disk_answers_writes_with_errors_and_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let (answers, log) = (
        outside.path().join("answers.jsonl"),
        outside.path().join("serve.err"),
    );
    let evo = evo_tests::evo_bin();
    let frame = |f: serde_json::Value| format!("'{f}'");
    let opening = [
        frame(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "faults", "version": "0" } } }),
        ),
        frame(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
    ];
    let calls = [
        frame(
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "memory_store", "arguments": { "text": format!("The tide tables are in the blue binder {}", "x".repeat(4000)) } } }),
        ),
        frame(
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "calculate", "arguments": { "expression": "6*7" } } }),
        ),
    ];
    // A 2 MiB file system holding the data dir and a fact stored while there was room.
    // First a server tries to start on the disk filled to the last byte; then, with the
    // room given back, one starts, the disk fills while it runs, and it is asked to
    // store and to calculate. Then the room is given back again and memory searched.
    let setup = format!(
        "mount -t tmpfs -o size=2m tmpfs {home} && {evo} memory store 'The walrus is grey' >/dev/null \
         && {{ head -c 4M /dev/zero > {home}/filler 2>/dev/null; \
               {evo} serve < /dev/null 2>> {log}; echo \"full-disk serve exited $?\" >> {log}; \
               rm {home}/filler; }} \
         && {{ printf '%s\\n' {opening}; sleep 1; head -c 4M /dev/zero > {home}/filler 2>/dev/null; \
               printf '%s\\n' {calls}; sleep 3; }} | {evo} serve > {answers} 2>> {log}; \
         echo \"serve exited $?\" >> {log}; rm {home}/filler",
        home = home.path().display(),
        evo = evo.display(),
        opening = opening.join(" "),
        calls = calls.join(" "),
        answers = answers.display(),
        log = log.display(),
    );
    let out = evo_in_namespace(
        home.path(),
        &setup,
        &["memory", "search", "walrus", "--json"],
    );
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");
    assert!(log.contains("serve exited 0"), "{log}");
    let answers: Vec<serde_json::Value> = std::fs::read_to_string(&answers)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answer = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id} in {answers:#?}\n{log}"))
    };
    let stored = answer(2);
    assert_eq!(stored["result"]["isError"], true, "{stored}");
    let text = stored["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("disk is full"), "{text}");
    assert_eq!(
        answer(3)["result"]["structuredContent"]["result"],
        42,
        "{answers:#?}"
    );
    // A server that cannot open its databases says why, and what to do.
    assert!(log.contains("full-disk serve exited 1"), "{log}");
    assert!(
        log.contains("error[DATABASE_ERROR]: ") && log.contains("disk holding it is full"),
        "{log}"
    );
    // What was stored before the disk filled is still there.
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("The walrus is grey"),
        "{}",
        stdout(&out)
    );
}
