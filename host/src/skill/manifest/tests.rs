use super::*;

#[test]
fn every_field_the_sdk_writes_is_the_field_the_host_reads() {
    let written = evo_manifest::SkillManifest {
        category: Some("math".into()),
        mode: Some("code".into()),
        input: serde_json::json!({ "type": "object" }),
        output: serde_json::json!({ "type": "object" }),
        version: Some("2.1.0".into()),
        tags: vec!["readonly".into()],
        requests: vec!["what is three plus four?".into()],
        author: Some("Ada".into()),
        timeout: Some(1_500),
        retry: Some(2),
        calls: vec!["calculate".into()],
        limits: RequestedLimits {
            memory_mib: Some(16),
            fuel: Some(1_000),
            output_bytes: Some(4_096),
        },
        capabilities: RequestedCapabilities {
            dirs: vec![DirRequest::new("/data", Access::Read, "input").unwrap()],
            llm: true,
            memory: MemoryAccess::Read,
            hosts: vec![HostRequest {
                host: HostPattern::parse("https://*.example.com").unwrap(),
                reason: "the rates API".into(),
            }],
            secrets: vec![SecretRequest {
                name: "RATES_KEY".into(),
                host: HostPattern::parse("https://api.example.com").unwrap(),
                reason: "the rates API's key".into(),
            }],
        },
        ..evo_manifest::SkillManifest::new("sum", "Adds.")
    };
    let meta = SkillMeta::from_json(&serde_json::to_string(&written).unwrap()).unwrap();
    assert_eq!(
        (
            meta.name.as_str(),
            meta.description.as_str(),
            meta.category.as_str()
        ),
        ("sum", "Adds.", "math")
    );
    assert_eq!((meta.mode, meta.version.as_str()), (Mode::Code, "2.1.0"));
    assert_eq!((meta.input, meta.output), (written.input, written.output));
    assert_eq!((meta.tags, meta.calls), (written.tags, written.calls));
    assert_eq!(meta.author, written.author);
    assert_eq!(meta.requests, written.requests);
    assert_eq!((meta.timeout_ms, meta.retry), (1_500, 2));
    assert_eq!(meta.limits, written.limits);
    assert_eq!(meta.capabilities, written.capabilities);
}

#[test]
fn defaults_are_the_documented_ones() {
    let meta = SkillMeta::from_json(r#"{"name":"memory_search","description":"d"}"#).unwrap();
    assert_eq!(meta.version, "1.0.0");
    assert_eq!(meta.timeout_ms, 30_000);
    assert_eq!(meta.retry, 0);
    assert!(meta.calls.is_empty());
    assert!(meta.tags.is_empty());
    assert_eq!(meta.category, "general");
    assert_eq!(meta.mode, Mode::Code);
}

#[test]
fn every_problem_is_reported_at_once() {
    let problems = SkillMeta::from_json(
        r#"{"version":"one","timeout":-5,"input":7,"capabilities":{"dirs":[{"path":"../etc","access":"read"}]}}"#,
    )
    .unwrap_err();
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "name",
            "description",
            "input",
            "version",
            "timeout",
            "capabilities.dirs[0].path"
        ]
    );
    assert_eq!(
        problems[0].message,
        "Missing required fields: name, description"
    );
}

#[test]
fn names_follow_the_pattern() {
    for ok in [
        "calculate",
        "git-commit",
        "memory_search",
        "a",
        &"a".repeat(64),
    ] {
        assert!(is_valid_name(ok), "{ok}");
    }
    for bad in ["", "Calculate", "1abc", "-a", "a b", "a.b", &"a".repeat(65)] {
        assert!(!is_valid_name(bad), "{bad}");
    }
}

#[test]
fn a_secret_is_asked_for_by_name_for_a_host_the_skill_asks_for() {
    let problems = SkillMeta::from_json(
        r#"{"name":"gh","description":"GitHub.","capabilities":{
            "hosts":["https://api.github.com"],
            "secrets":[
                {"name":"github-token","host":"https://api.github.com"},
                {"name":"GITHUB_TOKEN","host":"https://evil.example"},
                {"name":"GITHUB_TOKEN","host":"https://api.github.com","reason":"the API"}
            ]}}"#,
    )
    .unwrap_err();
    let found: Vec<(&str, &str)> = problems
        .iter()
        .map(|p| (p.field.as_str(), p.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                "capabilities.secrets[0].name",
                "\"github-token\" is not a secret name: use capital letters, digits and `_`, starting with a letter, at most 64 (GITHUB_TOKEN)"
            ),
            (
                "capabilities.secrets[1].host",
                "the secret is for https://evil.example, which is not inside the hosts the skill asks for"
            ),
        ]
    );
}

#[test]
fn requests_are_a_few_short_sentences() {
    let manifest = |requests: Value| {
        SkillMeta::from_json(
            &serde_json::json!({ "name": "x", "description": "d", "requests": requests })
                .to_string(),
        )
    };
    assert_eq!(
        manifest(serde_json::json!(["how many words is this?"]))
            .unwrap()
            .requests,
        ["how many words is this?"]
    );
    let fields = |requests| -> Vec<String> {
        manifest(requests)
            .unwrap_err()
            .into_iter()
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect()
    };
    assert_eq!(
        fields(serde_json::json!(vec!["a"; 9])),
        ["requests: lists 9 requests, more than 8"]
    );
    assert_eq!(
        fields(serde_json::json!([" ", "x".repeat(201)])),
        [
            "requests[0]: is empty",
            "requests[1]: is 201 characters long, more than 200"
        ]
    );
}
