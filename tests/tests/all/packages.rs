//! The skill manager on real ZIP archives, one test per scenario it must handle.

use std::io::Write as _;

use evo_host::packages::{InstallOptions, ListQuery, SkillManager};

/// A ZIP of `(path, content)` entries, each stamped with `year` as its modification time.
fn zip_of(files: &[(&str, &str)], year: u16) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let time = zip::DateTime::from_date_and_time(year, 1, 2, 3, 4, 6).unwrap();
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(time);
    for (path, content) in files {
        writer.start_file(*path, options).unwrap();
        writer.write_all(content.as_bytes()).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

fn skill_md(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nversion: 1.2.0\ntags: [git, vcs]\n---\n# {name}\n"
    )
}

fn git_commit(description: &str, year: u16) -> Vec<u8> {
    zip_of(
        &[
            ("git-commit/SKILL.md", &skill_md("git-commit", description)),
            ("git-commit/scripts/execute.js", "console.log('{}')"),
        ],
        year,
    )
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn install_extracts_marks_and_refuses_to_replace_without_overwrite() {
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    let outcome = manager
        .install_skill(
            &git_commit("Builds commit messages.", 2024),
            InstallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            outcome.success,
            outcome.name.as_str(),
            outcome.message.as_str()
        ),
        (true, "git-commit", "Skill installed successfully")
    );
    let dir = data.path().join("skills/git-commit");
    assert!(dir.join("scripts/execute.js").is_file() && dir.join(".vectorized").is_file());
    assert_eq!(
        entries(&data.path().join("skills")),
        ["git-commit"],
        "no staging left behind"
    );

    let err = manager
        .install_skill(&git_commit("Another.", 2024), InstallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        (err.to_string().as_str(), err.code()),
        (
            "Skill git-commit already exists. Use overwrite:true to replace.",
            "SKILL_ALREADY_EXISTS"
        )
    );
    assert!(
        std::fs::read_to_string(dir.join("SKILL.md"))
            .unwrap()
            .contains("Builds commit messages.")
    );

    // The digest ignores ZIP timestamps; overwrite replaces the files.
    let again = manager
        .install_skill(
            &git_commit("Builds commit messages.", 2020),
            InstallOptions::overwrite(),
        )
        .await
        .unwrap();
    assert_eq!(again.digest, outcome.digest);
    manager
        .install_skill(&git_commit("Replaced.", 2024), InstallOptions::overwrite())
        .await
        .unwrap();
    assert!(
        std::fs::read_to_string(dir.join("SKILL.md"))
            .unwrap()
            .contains("Replaced.")
    );
    assert_eq!(entries(&data.path().join("skills")), ["git-commit"]);
}

#[tokio::test]
async fn bad_archives_are_refused_and_leave_nothing() {
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            zip_of(
                &[
                    ("SKILL.md", &skill_md("x", "d")),
                    ("scripts/execute.js", ""),
                ],
                2024,
            ),
            "Invalid ZIP structure: missing root directory",
        ),
        (
            zip_of(&[("git-commit/README.md", "no skill here")], 2024),
            "Invalid skill structure: SKILL.md is missing",
        ),
        (
            zip_of(
                &[("git-commit/SKILL.md", "---\ndescription: no name\n---\n")],
                2024,
            ),
            "Invalid skill structure: Missing required fields: name",
        ),
        (
            zip_of(
                &[("git-commit/SKILL.md", &skill_md("other-name", "d"))],
                2024,
            ),
            "Skill name mismatch: expected \"git-commit\", got \"other-name\"",
        ),
        (
            zip_of(
                &[
                    ("git-commit/SKILL.md", &skill_md("git-commit", "d")),
                    ("git-commit/../../escape.txt", "x"),
                ],
                2024,
            ),
            "points outside the archive",
        ),
        (
            zip_of(
                &[("/etc/git-commit/SKILL.md", &skill_md("git-commit", "d"))],
                2024,
            ),
            "points outside the archive",
        ),
        (
            b"not a zip at all".to_vec(),
            "Invalid ZIP structure: not a ZIP archive",
        ),
    ];
    for (zip, expected) in cases {
        let err = manager
            .install_skill(&zip, InstallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_SKILL_STRUCTURE", "{err}");
        assert!(
            err.to_string().contains(expected),
            "expected {expected:?}, got {err}"
        );
        assert!(
            entries(&data.path().join("skills")).is_empty(),
            "nothing created after: {err}"
        );
    }
    let bomb = "0".repeat(10 << 20);
    let err = manager
        .install_skill(
            &zip_of(
                &[
                    ("git-commit/SKILL.md", &skill_md("git-commit", "d")),
                    ("git-commit/zeros.txt", &bomb),
                ],
                2024,
            ),
            InstallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("expands more than 100×"), "{err}");
    assert!(
        !data.path().join("escape.txt").exists() && !std::path::Path::new("/escape.txt").exists()
    );
}

#[tokio::test]
async fn a_nested_skill_is_found_at_the_deepest_skill_md() {
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    let zip = zip_of(
        &[
            (
                "some-folder/git-commit/SKILL.md",
                &skill_md("git-commit", "d"),
            ),
            ("some-folder/git-commit/scripts/execute.js", ""),
        ],
        2024,
    );
    assert_eq!(
        manager
            .install_skill(&zip, InstallOptions::default())
            .await
            .unwrap()
            .name,
        "git-commit"
    );
    assert!(
        data.path()
            .join("skills/git-commit/scripts/execute.js")
            .is_file()
    );
}

#[tokio::test]
async fn uninstall_update_and_list_follow_the_seed() {
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    for (name, tags) in [
        ("git-push", "[git]"),
        ("git-commit", "[git, vcs]"),
        ("file-read", "[files]"),
    ] {
        let md = format!("---\nname: {name}\ndescription: About {name}.\ntags: {tags}\n---\n");
        manager
            .install_skill(
                &zip_of(&[(&format!("{name}/SKILL.md"), &md)], 2024),
                InstallOptions::default(),
            )
            .await
            .unwrap();
    }
    let all = manager.list_skills(&ListQuery::default()).unwrap();
    let names: Vec<&str> = all.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        (names, all.total),
        (vec!["file-read", "git-commit", "git-push"], 3)
    );
    assert_eq!(all.skills[0].version, "1.0.0");
    assert!(all.skills[0].installed_at > 0);
    let git = manager
        .list_skills(&ListQuery {
            name: Some("git".into()),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(git.total, 2);
    let vcs = manager
        .list_skills(&ListQuery {
            tags: vec!["vcs".into()],
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(vcs.skills[0].name, "git-commit");
    let page = manager
        .list_skills(&ListQuery {
            page: Some(2),
            limit: Some(2),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(
        (page.skills.len(), page.skills[0].name.as_str(), page.total),
        (1, "git-push", 3)
    );
    // A host lists what it loaded as the manager lists the disk: a skill copied in by
    // hand (no install record) by what its SKILL.md says, a folder that is no skill not
    // at all.
    let hand = data.path().join("skills/hand-made");
    std::fs::create_dir_all(&hand).unwrap();
    std::fs::write(
        hand.join("SKILL.md"),
        "---\nname: hand-made\ndescription: Copied in.\ntags: [git]\n---\n",
    )
    .unwrap();
    std::fs::create_dir_all(data.path().join("skills/empty-folder")).unwrap();
    let host = evo_host::Host::builder()
        .data_dir(data.path())
        .config(evo_tests::config(data.path()))
        .build()
        .await
        .unwrap();
    for query in [
        ListQuery::default(),
        ListQuery {
            name: Some("git".into()),
            ..ListQuery::default()
        },
        ListQuery {
            tags: vec!["git".into()],
            page: Some(2),
            limit: Some(2),
            ..ListQuery::default()
        },
    ] {
        let listed = host.list_installed(&query).unwrap();
        assert_eq!(listed, manager.list_skills(&query).unwrap(), "{query:?}");
        assert!(listed.total > 0, "{query:?}");
    }
    std::fs::remove_dir_all(&hand).unwrap();
    std::fs::remove_dir_all(data.path().join("skills/empty-folder")).unwrap();

    let md_before =
        std::fs::read_to_string(data.path().join("skills/git-commit/SKILL.md")).unwrap();
    let outcome = manager
        .update_skill_description(
            "git-commit",
            "自动生成Git提交信息，支持emoji和conventional commits格式",
        )
        .unwrap();
    assert_eq!(outcome.message, "Description updated");
    let md_after = std::fs::read_to_string(data.path().join("skills/git-commit/SKILL.md")).unwrap();
    assert_eq!(
        md_after,
        md_before.replace(
            "description: About git-commit.",
            "description: \"自动生成Git提交信息，支持emoji和conventional commits格式\""
        )
    );
    let err = manager
        .update_skill_field("git-commit", "tags", "x")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "git-commit: invalid input: Only description field can be modified"
    );

    let stats = manager.statistics().unwrap();
    assert_eq!(stats.total, 3);
    assert_eq!(stats.by_tag.get("git"), Some(&2));
    assert_eq!(stats.installs_per_day.len(), 1);
    assert_eq!(stats.installs_per_day[0].count, 3);
    assert_eq!(stats.installs_per_week[0].count, 3);
    let today = today_local();
    assert_eq!(stats.installs_per_day[0].date, today);

    let outcome = manager.uninstall_skill("git-commit").unwrap();
    assert_eq!(outcome.message, "Skill uninstalled successfully");
    assert!(!data.path().join("skills/git-commit").exists());
    let err = manager.uninstall_skill("non-existent").unwrap_err();
    assert_eq!(
        (err.to_string().as_str(), err.code()),
        ("Skills not found: non-existent", "SKILL_NOT_FOUND")
    );
}

/// Today as `YYYY-MM-DD` in local time (the clock install dates are counted in).
fn today_local() -> String {
    evo_host::memory::files::today()
}

#[tokio::test]
async fn the_skill_index_follows_installs_and_ranks_skills_for_a_request() {
    use std::sync::Arc;

    use evo_host::db::Db;
    use evo_host::memory::HashEmbedder;
    use evo_host::packages::index::SkillIndex;

    let data = tempfile::tempdir().unwrap();
    let index = SkillIndex::new(Db::open(data.path()).unwrap(), Arc::new(HashEmbedder));
    let manager = SkillManager::new(data.path()).with_index(index);
    for (name, description) in [
        ("git-commit", "Writes a commit message for staged changes."),
        ("csv-to-json", "Converts CSV tables into JSON rows."),
        ("text-stats", "Counts words and sentences in a text."),
    ] {
        let md = format!("---\nname: {name}\ndescription: {description}\n---\n");
        manager
            .install_skill(
                &zip_of(&[(&format!("{name}/SKILL.md"), &md)], 2024),
                InstallOptions::default(),
            )
            .await
            .unwrap();
    }
    let hits = manager.search_skills("write a commit message", 3).unwrap();
    assert_eq!(hits[0].name, "git-commit", "{hits:?}");
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    assert_eq!(
        manager.search_skills("convert this csv table", 1).unwrap()[0].name,
        "csv-to-json"
    );

    manager
        .update_skill_description("text-stats", "Turns CSV spreadsheets into charts.")
        .unwrap();
    let hits = manager
        .search_skills("draw charts from spreadsheets", 3)
        .unwrap();
    assert_eq!(
        hits[0].name, "text-stats",
        "re-indexed with its new description: {hits:?}"
    );

    manager.uninstall_skill("git-commit").unwrap();
    let hits = manager.search_skills("write a commit message", 3).unwrap();
    assert!(hits.iter().all(|h| h.name != "git-commit"), "{hits:?}");
}

/// A ZIP of `(path, bytes)` entries.
fn zip_bytes(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, content) in files {
        writer
            .start_file(*path, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

fn wasm_manager(data: &std::path::Path) -> SkillManager {
    let loader = evo_host::engine::loader::Loader::new()
        .with_wasm(evo_tests::engine(), evo_host::grants::Policy::default());
    SkillManager::new(data).with_loader(loader)
}

#[tokio::test]
async fn every_kind_installs_the_same_way_and_is_checked_by_loading_it() {
    let data = tempfile::tempdir().unwrap();
    let manager = wasm_manager(data.path());
    let wasm = std::fs::read(evo_tests::skills::CALCULATE).unwrap();
    let llm_json = serde_json::json!({
        "name": "summarize", "description": "Summarizes a text in one sentence.", "mode": "llm",
        "input": { "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }
    })
    .to_string();
    let composite_json = serde_json::json!({
        "name": "squares", "description": "Adds the squares of numbers.", "mode": "composite",
        "tags": ["math"],
        "pipeline": [{ "step": "each", "skill": "calculate", "input": { "expression": "{{item}} ^ 2" }, "foreach": "{{input.numbers}}" }]
    })
    .to_string();
    let native_md = skill_md("csv-to-json", "Converts CSV to JSON.");
    let guide_md = "---\nname: commit-guide\ndescription: How to write a commit message.\n---\nUse the imperative mood.\n";
    let cases: [(Vec<u8>, &str, &str); 5] = [
        // The manifest lives only in the component: no SKILL.md, no skill.json.
        (
            zip_bytes(&[("calculate/skill.wasm", &wasm)]),
            "calculate",
            "wasm",
        ),
        (
            zip_bytes(&[
                ("summarize/skill.json", llm_json.as_bytes()),
                ("summarize/prompt.md", b"Summarize: {{input.text}}"),
            ]),
            "summarize",
            "llm",
        ),
        (
            zip_bytes(&[("squares/skill.json", composite_json.as_bytes())]),
            "squares",
            "composite",
        ),
        (
            zip_bytes(&[
                ("csv-to-json/SKILL.md", native_md.as_bytes()),
                ("csv-to-json/scripts/execute.js", b"console.log('{}')"),
            ]),
            "csv-to-json",
            "native",
        ),
        (
            zip_bytes(&[("commit-guide/SKILL.md", guide_md.as_bytes())]),
            "commit-guide",
            "static",
        ),
    ];
    for (zip, name, kind) in cases {
        let outcome = manager
            .install_skill(&zip, InstallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name} installs: {e}"));
        let record = outcome.skill.unwrap();
        assert_eq!((record.name.as_str(), record.kind.as_str()), (name, kind));
        assert!(!record.description.is_empty(), "{name}");
        assert_eq!(
            evo_host::packages::InstallRecord::read(&data.path().join("skills").join(name))
                .unwrap()
                .kind,
            kind
        );
    }
    let listing = manager.list_skills(&ListQuery::default()).unwrap();
    let listed: Vec<(&str, &str)> = listing
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.kind.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("calculate", "wasm"),
            ("commit-guide", "static"),
            ("csv-to-json", "native"),
            ("squares", "composite"),
            ("summarize", "llm")
        ]
    );

    // Checked by loading: an llm skill without a prompt is refused with the loader's reason.
    let no_prompt =
        serde_json::json!({ "name": "mute", "description": "d", "mode": "llm" }).to_string();
    let err = manager
        .install_skill(
            &zip_bytes(&[("mute/skill.json", no_prompt.as_bytes())]),
            InstallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_SKILL_STRUCTURE");
    assert!(
        err.to_string()
            .starts_with("Invalid skill structure: mute: invalid manifest"),
        "{err}"
    );
    assert!(
        err.to_string().contains("an llm skill needs a prompt"),
        "{err}"
    );
    // A component whose own name differs from its directory.
    let err = manager
        .install_skill(
            &zip_bytes(&[("calc/skill.wasm", &wasm)]),
            InstallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Skill name mismatch: expected \"calc\", got \"calculate\""
    );
    // Without the Wasm engine, a Wasm skill cannot be checked and is not installed.
    let err = SkillManager::new(data.path())
        .install_skill(
            &zip_bytes(&[("calculate/skill.wasm", &wasm)]),
            InstallOptions::overwrite(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("without the Wasm engine"), "{err}");
    assert!(!data.path().join("skills/mute").exists() && !data.path().join("skills/calc").exists());
}

#[tokio::test]
async fn capabilities_are_recorded_at_install_and_more_are_refused_later() {
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    let manifest = serde_json::json!({
        "name": "recaller", "description": "Answers from memory.", "mode": "llm",
        "capabilities": { "memory": "read" }
    });
    let zip = zip_bytes(&[
        ("recaller/skill.json", manifest.to_string().as_bytes()),
        ("recaller/prompt.md", b"Answer."),
    ]);
    let record = manager
        .install_skill(&zip, InstallOptions::default())
        .await
        .unwrap()
        .skill
        .unwrap();
    assert_eq!(
        serde_json::to_value(&record.capabilities).unwrap(),
        serde_json::json!({ "memory": "read" }),
        "what was not asked for is left out"
    );
    let dir = data.path().join("skills/recaller");
    let loader = evo_host::engine::loader::Loader::new();
    let loaded = loader.load_dir(&dir).await.unwrap();
    assert_eq!(
        (
            loaded.meta.name.as_str(),
            loaded.meta.capabilities.memory.as_str()
        ),
        ("recaller", "read")
    );

    // The files change under the host and now ask for more.
    let mut wider = manifest.clone();
    wider["capabilities"] = serde_json::json!({ "memory": "read-write" });
    std::fs::write(dir.join("skill.json"), wider.to_string()).unwrap();
    let err = loader.load_dir(&dir).await.unwrap_err();
    assert_eq!(err.code(), "CAPABILITIES_CHANGED");
    assert_eq!(
        err.to_string(),
        "recaller: asks for capabilities not approved at install (memory (read-write)); reinstall it with `evo skill install --overwrite` to review them"
    );
    // Asking for less is fine.
    std::fs::write(
        dir.join("skill.json"),
        serde_json::json!({ "name": "recaller", "description": "d", "mode": "llm" }).to_string(),
    )
    .unwrap();
    let loaded = loader.load_dir(&dir).await.unwrap();
    assert_eq!(
        (
            loaded.meta.description.as_str(),
            loaded.meta.capabilities.memory.as_str()
        ),
        ("d", "none")
    );
}

#[tokio::test]
async fn a_directory_installs_like_its_archive_and_symlinks_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    let source = tempfile::tempdir().unwrap();
    let skill = source.path().join("git-commit");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::create_dir_all(skill.join(".git")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        skill_md("git-commit", "Builds commit messages."),
    )
    .unwrap();
    std::fs::write(skill.join("scripts/execute.js"), "console.log('{}')").unwrap();
    std::fs::write(skill.join(".git/HEAD"), "ref: refs/heads/main").unwrap();
    let from_dir = manager
        .install_dir(&skill, InstallOptions::default())
        .await
        .unwrap();
    let from_zip = manager
        .install_skill(
            &git_commit("Builds commit messages.", 2021),
            InstallOptions::overwrite(),
        )
        .await
        .unwrap();
    assert_eq!(
        from_dir.digest, from_zip.digest,
        "same files, same digest; .git left out"
    );
    assert!(!data.path().join("skills/git-commit/.git").exists());

    std::os::unix::fs::symlink("/etc/passwd", skill.join("passwd")).unwrap();
    let err = manager
        .install_dir(&skill, InstallOptions::overwrite())
        .await
        .unwrap_err();
    assert_eq!(
        (err.to_string().as_str(), err.code()),
        (
            "Invalid skill structure: passwd is a symbolic link",
            "INVALID_SKILL_STRUCTURE"
        )
    );

    // A named pipe would block a reader forever: refused at once instead.
    std::fs::remove_file(skill.join("passwd")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(skill.join("scripts/pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let install = manager.install_dir(&skill, InstallOptions::overwrite());
    let err = tokio::time::timeout(std::time::Duration::from_secs(20), install)
        .await
        .expect("the install does not hang on a FIFO")
        .unwrap_err();
    assert_eq!(
        (err.to_string().as_str(), err.code()),
        (
            "Invalid skill structure: scripts/pipe is not a regular file (a pipe, socket or device); remove it and install again",
            "INVALID_SKILL_STRUCTURE"
        )
    );
}

#[test]
fn an_install_killed_midway_leaves_no_trace_and_its_staging_is_swept() {
    use std::process::Stdio;
    let home = tempfile::tempdir().unwrap();
    // Big enough that extraction takes a while: 40 files of 1 MiB of noise.
    let noise: Vec<u8> = (0..1_u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let md = skill_md("git-commit", "Builds commit messages.");
    let mut files: Vec<(String, &[u8])> = vec![("git-commit/SKILL.md".into(), md.as_bytes())];
    for i in 0..40 {
        files.push((format!("git-commit/assets/blob-{i}.bin"), &noise));
    }
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (p.as_str(), *b)).collect();
    let archive = home.path().join("big.zip");
    std::fs::write(&archive, zip_bytes(&refs)).unwrap();
    let skills = home.path().join("skills");

    let mut child = evo_tests::cli::command(
        home.path(),
        &["skill", "install", archive.to_str().unwrap()],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // Watch until the install is caught staging, or until the process is gone (then it
    // finished before it could be caught, and the assertion below says so).
    let mut saw_staging = false;
    while child.try_wait().unwrap().is_none() {
        // Extraction has begun: the skill's directory exists in the staging directory.
        if entries(&skills)
            .iter()
            .any(|e| e.starts_with(".install-") && skills.join(e).join("git-commit").exists())
        {
            saw_staging = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(saw_staging, "the install was caught while staging");
    // All or nothing: either the install finished before the kill, or there is no skill.
    let installed = skills.join("git-commit");
    if installed.exists() {
        assert_eq!(
            std::fs::read_dir(installed.join("assets")).unwrap().count(),
            40,
            "a skill that is there is complete"
        );
    } else {
        let manager = SkillManager::new(home.path());
        assert_eq!(manager.list_skills(&ListQuery::default()).unwrap().total, 0);
        assert!(matches!(
            manager.uninstall_skill("git-commit").unwrap_err().code(),
            "SKILL_NOT_FOUND"
        ));
    }
    // The next install sweeps the dead process's staging directory.
    let small = git_commit("Builds commit messages.", 2024);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(SkillManager::new(home.path()).install_skill(&small, InstallOptions::overwrite()))
        .unwrap();
    assert_eq!(entries(&skills), ["git-commit"]);
}

/// Skills in the public Agent Skills format: SKILL.md with frontmatter the format allows
/// (block-scalar and quoted descriptions, `license`, `metadata`, `allowed-tools`), the
/// instructions in its body, and resources beside it, binary ones included.
fn agent_skills(root: &std::path::Path) {
    let forms = root.join("pdf-forms");
    std::fs::create_dir_all(forms.join("templates")).unwrap();
    std::fs::write(
        forms.join("SKILL.md"),
        r#"---
name: pdf-forms
description: |
  Fills in PDF forms from structured data.
  Use when the user asks to complete, sign or flatten a PDF form.
license: Apache-2.0
allowed-tools: Bash(python:*) Read Write
metadata:
  version: "2.1.0"
  author: evo-tests
---
# PDF forms

Read [the field reference](reference.md#fields) before filling anything.

## Filling

1. Extract the fields.
2. Fill them with `templates/fill.py`:

```bash
python templates/fill.py input.pdf data.json out.pdf
```

## Flattening

```python
from pypdf import PdfWriter
```
"#,
    )
    .unwrap();
    std::fs::write(
        forms.join("reference.md"),
        "# Fields\n\nText fields take strings.\n",
    )
    .unwrap();
    std::fs::write(
        forms.join("templates/fill.py"),
        "import sys\nprint(sys.argv)\n",
    )
    .unwrap();

    let poster = root.join("brand-poster");
    std::fs::create_dir_all(poster.join("fonts")).unwrap();
    std::fs::write(
        poster.join("SKILL.md"),
        "---\nname: brand-poster\ndescription: \"Designs posters: brand fonts, colors & layout. Use for 'make a poster'.\"\nlicense: Proprietary. LICENSE.txt has the terms\n---\nUse the fonts in `fonts/` and the logo ![logo](logo.png).\n",
    )
    .unwrap();
    // A TrueType header and table directory: NULs and bytes that are not UTF-8.
    let mut font = vec![0x00, 0x01, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x80, 0x00, 0x03];
    font.extend((0..4096_u32).map(|i| (i * 37 % 251) as u8 | 0x80));
    std::fs::write(poster.join("fonts/BrandSans-Regular.ttf"), &font).unwrap();
    std::fs::write(poster.join("fonts/BrandSans-Bold.ttf"), &font[..2048]).unwrap();
    std::fs::write(
        poster.join("logo.png"),
        [
            0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d,
        ],
    )
    .unwrap();
    std::fs::write(poster.join("LICENSE.txt"), "All rights reserved.\n").unwrap();
}

#[tokio::test]
async fn agent_skills_format_installs_lists_and_loads_level_by_level() {
    use evo_host::skill::kernel::table::SkillTable;
    use evo_host::skill::kernel::{Kernel, RunOptions};
    use serde_json::json;
    use std::sync::Arc;

    let sources = tempfile::tempdir().unwrap();
    agent_skills(sources.path());
    let data = tempfile::tempdir().unwrap();
    let manager = SkillManager::new(data.path());
    for name in ["pdf-forms", "brand-poster"] {
        let outcome = manager
            .install_dir(&sources.path().join(name), InstallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name} installs: {e}"));
        assert_eq!(outcome.skill.unwrap().kind, "static");
    }
    let listing = manager.list_skills(&ListQuery::default()).unwrap();
    let listed: Vec<(&str, &str, &str)> = listing
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.version.as_str(), s.description.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "brand-poster",
                "1.0.0",
                "Designs posters: brand fonts, colors & layout. Use for 'make a poster'."
            ),
            (
                "pdf-forms",
                "2.1.0",
                // A block scalar's lines are joined: a description is one paragraph.
                "Fills in PDF forms from structured data. Use when the user asks to complete, sign or flatten a PDF form."
            ),
        ]
    );

    // Level 1 at start-up: the loader reads the frontmatter; levels 2 and 3 on use.
    let registry = Arc::new(SkillTable::new());
    let loader = evo_host::engine::loader::Loader::new();
    for (dir, loaded) in loader.load_all(manager.root()).await.unwrap() {
        let package = loaded.unwrap_or_else(|e| panic!("{} loads: {e}", dir.display()));
        for skill in package.skills {
            registry.register(skill);
        }
    }
    let ctx = Arc::new(Kernel::new(registry)).context(RunOptions::default());
    let forms = ctx.call("pdf-forms", json!({})).await.unwrap();
    assert!(
        forms["instructions"]
            .as_str()
            .unwrap()
            .starts_with("# PDF forms\n\nRead [the field reference]")
    );
    assert_eq!(
        forms["sections"],
        json!([
            { "heading": "PDF forms", "level": 1 },
            { "heading": "Filling", "level": 2 },
            { "heading": "Flattening", "level": 2 }
        ])
    );
    assert_eq!(
        forms["resources"],
        json!([
            { "path": "reference.md", "bytes": 36, "kind": "text" },
            { "path": "templates/fill.py", "bytes": 27, "kind": "text" }
        ])
    );
    let reference = ctx
        .call("pdf-forms", json!({ "resource": "reference.md" }))
        .await
        .unwrap();
    assert_eq!(
        reference["content"],
        "# Fields\n\nText fields take strings.\n"
    );
    assert_eq!(reference["mediaType"], "text/markdown");

    let poster = ctx.call("brand-poster", json!({})).await.unwrap();
    let resources: Vec<(&str, &str)> = poster["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        resources,
        [
            ("fonts/BrandSans-Bold.ttf", "binary"),
            ("fonts/BrandSans-Regular.ttf", "binary"),
            ("logo.png", "binary")
        ],
        "a directory reference stands for its files; LICENSE.txt is not referenced"
    );
    let font = ctx
        .call(
            "brand-poster",
            json!({ "resource": "fonts/BrandSans-Regular.ttf" }),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            font["kind"].clone(),
            font["mediaType"].clone(),
            font["bytes"].clone()
        ),
        (json!("binary"), json!("font/ttf"), json!(4106))
    );
    assert!(
        font.get("content").is_none(),
        "binary content is described, not inlined"
    );
    assert_eq!(font["sha256"].as_str().unwrap().len(), 64);

    // Cached, and re-read when the file changes.
    let installed = manager.root().join("pdf-forms");
    std::fs::write(
        installed.join("reference.md"),
        "# Fields\n\nChanged, and longer.\n",
    )
    .unwrap();
    let reference = ctx
        .call("pdf-forms", json!({ "resource": "reference.md" }))
        .await
        .unwrap();
    assert_eq!(reference["content"], "# Fields\n\nChanged, and longer.\n");

    // Nothing outside the skill is served.
    for path in ["../brand-poster/LICENSE.txt", "/etc/passwd", "missing.md"] {
        let err = ctx
            .call("pdf-forms", json!({ "resource": path }))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{path}: {err}");
        assert!(
            err.to_string()
                .contains("is not a file of this skill; give a path relative to the skill's directory, one of: reference.md, templates/fill.py"),
            "{err}"
        );
    }
}

/// Layouts of the public Agent Skills repository (anthropics/skills) whose helpers are
/// Python or shell, not `scripts/execute.js`: each must install as it is.
fn agent_skill(root: &std::path::Path, name: &str, files: &[&str]) -> std::path::PathBuf {
    let dir = root.join(name);
    let md = format!(
        "---\nname: {name}\ndescription: Work with {name} files. Use when the user asks about {name}.\nlicense: Proprietary. LICENSE.txt has complete terms\n---\n\n# {name}\n\nRun `python scripts/main.py` when needed; see [the reference](reference.md).\n"
    );
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), md).unwrap();
    for file in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("# {file}\n")).unwrap();
    }
    dir
}

#[tokio::test]
async fn agent_skills_with_python_and_shell_helpers_install_as_instruction_skills() {
    let data = tempfile::tempdir().unwrap();
    let sources = tempfile::tempdir().unwrap();
    let host = evo_host::Host::builder()
        .data_dir(data.path())
        .config(evo_tests::config(data.path()))
        .embedder(std::sync::Arc::new(
            evo_host::retrieval::embed::HashEmbedder,
        ))
        .build()
        .await
        .unwrap();
    let layouts: [(&str, &[&str]); 4] = [
        (
            "docx",
            &[
                "LICENSE.txt",
                "reference.md",
                "scripts/__init__.py",
                "scripts/document.py",
                "scripts/templates/comments.xml",
                "ooxml/scripts/pack.py",
                "ooxml/schemas/ISO-IEC29500-4_2016/wml.xsd",
            ],
        ),
        (
            "pdf",
            &[
                "LICENSE.txt",
                "forms.md",
                "reference.md",
                "scripts/main.py",
                "scripts/fill_fillable_fields.py",
            ],
        ),
        (
            "web-artifacts-builder",
            &[
                "LICENSE.txt",
                "reference.md",
                "scripts/init-artifact.sh",
                "scripts/bundle-artifact.sh",
            ],
        ),
        (
            "mcp-builder",
            &[
                "LICENSE.txt",
                "reference.md",
                "reference/node_mcp_server.md",
                "scripts/connections.py",
                "scripts/requirements.txt",
            ],
        ),
    ];
    for (name, files) in layouts {
        let dir = agent_skill(sources.path(), name, files);
        let outcome = host
            .install(&dir, InstallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(outcome.skill.unwrap().kind, "static", "{name}");
        let skill = host.skill(name).expect("callable at once");
        assert_eq!(
            skill.kind(),
            evo_host::skill::kernel::executor::ExecutorKind::Static
        );
        let files = skill
            .executor
            .as_any()
            .and_then(|any| any.downcast_ref::<evo_host::engine::loader::StaticExecutor>())
            .unwrap()
            .files()
            .instructions()
            .unwrap();
        let listed: Vec<&str> = files.resources.iter().map(|r| r.path.as_str()).collect();
        for file in files_under(&dir.join("scripts"), &dir) {
            assert!(
                listed.contains(&file.as_str()),
                "{name}: {file} not in {listed:?}"
            );
        }
        assert!(listed.contains(&"reference.md"), "{name}: {listed:?}");
    }
}

fn files_under(dir: &std::path::Path, root: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path, root));
        } else {
            found.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
        }
    }
    found
}

#[test]
fn through_the_cli_a_directory_with_a_fifo_is_refused_not_hung() {
    use std::process::Stdio;

    let home = tempfile::tempdir().unwrap();
    let skill = home.path().join("src/git-commit");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        skill_md("git-commit", "Builds commit messages."),
    )
    .unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(skill.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let mut child =
        evo_tests::cli::command(home.path(), &["skill", "install", skill.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("evo skill install hangs on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(
        evo_tests::cli::stderr(&out).starts_with(
            "error[INVALID_SKILL_STRUCTURE]: Invalid skill structure: pipe is not a regular file (a pipe, socket or device)"
        ),
        "{}",
        evo_tests::cli::stderr(&out)
    );
    assert!(!home.path().join("skills/git-commit").exists());
}
