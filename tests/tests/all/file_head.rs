use evo_host::grants::{Access, DirPolicy, Policy};
use evo_host::skill::kernel::SkillContext;
use evo_tests::{engine, load, skills};
use serde_json::json;

/// A host directory with `notes.txt` inside, and `secret.txt` beside it (outside).
struct Fixture {
    _root: tempfile::TempDir,
    data: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(root.path().join("secret.txt"), "the secret").unwrap();
    Fixture { data, _root: root }
}

fn granted(fixture: &Fixture) -> Policy {
    Policy {
        dirs: vec![DirPolicy::new(&fixture.data, "/data", Access::Read).unwrap()],
        ..Policy::default()
    }
}

#[tokio::test]
async fn reads_inside_its_grant() {
    let fixture = fixture();
    let engine = engine();
    let skill = load(&engine, skills::FILE_HEAD, &granted(&fixture)).await;
    assert_eq!(skill.grant().dirs.len(), 1);
    let outcome = skill
        .call(
            r#"{"path":"/data/notes.txt","lines":2}"#,
            &SkillContext::detached(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.output,
        json!({ "lines": ["one", "two"], "truncated": true })
    );
    let outcome = skill
        .call(r#"{"path":"notes.txt"}"#, &SkillContext::detached())
        .await
        .unwrap();
    assert_eq!(
        outcome.output,
        json!({ "lines": ["one", "two", "three"], "truncated": false })
    );
}

#[tokio::test]
async fn is_denied_without_the_grant() {
    let fixture = fixture();
    let engine = engine();
    let skill = load(&engine, skills::FILE_HEAD, &Policy::default()).await;
    assert!(skill.grant().dirs.is_empty());
    assert_eq!(
        skill.grant().refused,
        ["directory /data: no host directory is bound to it (bind one with --dir HOST::/data)"]
    );
    let err = skill
        .call(r#"{"path":"/data/notes.txt"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PERMISSION_DENIED", "{err}");
    drop(fixture);
}

#[tokio::test]
async fn dot_dot_does_not_leave_the_grant() {
    let fixture = fixture();
    let engine = engine();
    let skill = load(&engine, skills::FILE_HEAD, &granted(&fixture)).await;
    let err = skill
        .call(
            r#"{"path":"/data/../secret.txt"}"#,
            &SkillContext::detached(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PERMISSION_DENIED", "{err}");
    let err = skill
        .call(r#"{"path":"../secret.txt"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PERMISSION_DENIED", "{err}");
    assert!(!err.to_string().contains("the secret"));
}

#[tokio::test]
async fn a_symlink_does_not_leave_the_grant() {
    let fixture = fixture();
    std::os::unix::fs::symlink(
        fixture.data.parent().unwrap().join("secret.txt"),
        fixture.data.join("link.txt"),
    )
    .unwrap();
    let engine = engine();
    let skill = load(&engine, skills::FILE_HEAD, &granted(&fixture)).await;
    let err = skill
        .call(r#"{"path":"/data/link.txt"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PERMISSION_DENIED", "{err}");
    assert!(!err.to_string().contains("the secret"));
}

#[tokio::test]
async fn a_read_only_grant_reads_but_a_missing_file_is_not_found() {
    let fixture = fixture();
    let engine = engine();
    let skill = load(&engine, skills::FILE_HEAD, &granted(&fixture)).await;
    let err = skill
        .call(r#"{"path":"/data/missing.txt"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(
        err.to_string(),
        "file-head: not found: /data/missing.txt does not exist"
    );
}
