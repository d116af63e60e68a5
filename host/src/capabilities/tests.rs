use super::*;

#[test]
fn nothing_is_granted_by_default() {
    let requested = RequestedCapabilities {
        dirs: vec![DirRequest::new("/data", Access::Read, "files").unwrap()],
        llm: true,
        memory: MemoryAccess::ReadWrite,
        hosts: vec![HostRequest {
            host: HostPattern::parse("api.example.com").unwrap(),
            reason: "the API".into(),
        }],
        secrets: vec![SecretRequest {
            name: "API_KEY".into(),
            host: HostPattern::parse("api.example.com").unwrap(),
            reason: "the API's key".into(),
        }],
    };
    let grant = Grant::new(&requested, &Policy::default());
    assert!(grant.dirs.is_empty());
    assert!(!grant.llm);
    assert_eq!(grant.memory, MemoryAccess::None);
    assert!(grant.hosts.is_empty());
    assert!(grant.secrets.is_empty());
    assert_eq!(grant.refused.len(), 5);
    assert_eq!(
        grant.refused[3],
        "outbound host https://api.example.com: the host policy does not allow it; grant it with --allow-host https://api.example.com or in [grants] hosts"
    );
    assert_eq!(
        grant.refused[4],
        "secret API_KEY for https://api.example.com: the host policy does not allow it; grant it with --allow-secret API_KEY or in [grants] secrets"
    );
    let policy = Policy {
        secrets: vec!["API_KEY".into()],
        ..Policy::default()
    };
    assert_eq!(
        Grant::new(&requested, &policy).secrets,
        [SecretGrant {
            name: "API_KEY".into(),
            host: HostPattern::parse("api.example.com").unwrap()
        }]
    );
}

#[test]
fn a_component_that_cannot_ask_gets_all_that_is_named_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let docs = DirPolicy::new(dir.path(), "/docs", Access::Read).unwrap();
    let api = HostPattern::parse("https://api.example.com").unwrap();
    let mut named = Policy {
        dirs: vec![docs.clone()],
        llm: true,
        memory: MemoryAccess::Read,
        secrets: vec!["API_KEY".into()],
        ..Policy::default()
    };
    let grant = Grant::named(&named);
    assert_eq!(grant.dirs.len(), 1);
    assert_eq!(grant.dirs[0].guest, "/docs");
    assert!(grant.llm);
    assert_eq!(grant.memory, MemoryAccess::Read);
    // A secret goes only to hosts granted by name, and here there are none.
    assert!(grant.secrets.is_empty());
    assert_eq!(grant.refused.len(), 1, "{:?}", grant.refused);
    assert!(grant.refused[0].starts_with("secret API_KEY: a component that asks for nothing gets a secret only for the hosts granted to it by name"));
    assert_eq!(grant.lacks(&named), ["secret API_KEY"]);

    named.hosts.push(api.clone());
    let grant = Grant::named(&named);
    assert_eq!(grant.hosts, std::slice::from_ref(&api));
    assert_eq!(
        grant.secrets,
        [SecretGrant {
            name: "API_KEY".into(),
            host: api
        }]
    );
    assert!(grant.refused.is_empty() && grant.lacks(&named).is_empty());
    // Nothing of it reaches a grant that did not get it, value by value.
    let lacks = Grant::default().lacks(&named);
    assert_eq!(lacks.len(), 5, "{lacks:?}");
    assert_eq!(
        lacks[0],
        format!("directory {}::/docs", docs.host.display())
    );
}

#[test]
fn what_is_named_is_the_entry_with_what_was_given_added() {
    let api = HostPattern::parse("https://api.example.com").unwrap();
    let mut policy = Policy {
        llm: true,
        ..Policy::default()
    };
    assert!(
        policy.named_for("io").is_none(),
        "the shared policy names nobody"
    );
    policy.given.insert(
        "io".into(),
        Policy {
            hosts: vec![api.clone()],
            ..Policy::default()
        },
    );
    assert_eq!(
        policy.named_for("io").unwrap().hosts,
        std::slice::from_ref(&api)
    );
    assert!(!policy.named_for("io").unwrap().llm);
    policy.skills.insert(
        "io".into(),
        Policy {
            memory: MemoryAccess::Read,
            ..Policy::default()
        },
    );
    let named = policy.named_for("io").unwrap();
    assert_eq!(
        (named.memory, named.hosts.as_slice()),
        (MemoryAccess::Read, [api].as_slice())
    );
    assert!(policy.allows_anything() && !Policy::default().allows_anything());
}

#[test]
fn hosts_are_the_requests_the_policy_covers() {
    let request = |h: &str| HostRequest {
        host: HostPattern::parse(h).unwrap(),
        reason: String::new(),
    };
    let requested = RequestedCapabilities {
        hosts: vec![
            request("api.github.com"),
            request("http://127.0.0.1:9000"),
            request("https://evil.example"),
            request("http://localhost:*"),
        ],
        ..Default::default()
    };
    let policy = Policy {
        hosts: [
            "https://*.github.com",
            "http://127.0.0.1:9000",
            "https://other.example",
            "http://localhost:8080",
        ]
        .map(|h| HostPattern::parse(h).unwrap())
        .to_vec(),
        ..Policy::default()
    };
    let grant = Grant::new(&requested, &policy);
    let granted: Vec<String> = grant.hosts.iter().map(ToString::to_string).collect();
    assert_eq!(
        granted,
        [
            "https://api.github.com",
            "http://127.0.0.1:9000",
            "http://localhost:8080"
        ],
        "any port asked for, one allowed: that one"
    );
    assert_eq!(grant.refused.len(), 1, "{:?}", grant.refused);
}

#[test]
fn memory_is_the_lesser_of_request_and_policy() {
    let table = [
        (
            MemoryAccess::None,
            MemoryAccess::ReadWrite,
            MemoryAccess::None,
        ),
        (
            MemoryAccess::Read,
            MemoryAccess::ReadWrite,
            MemoryAccess::Read,
        ),
        (
            MemoryAccess::ReadWrite,
            MemoryAccess::Read,
            MemoryAccess::Read,
        ),
        (
            MemoryAccess::ReadWrite,
            MemoryAccess::ReadWrite,
            MemoryAccess::ReadWrite,
        ),
    ];
    for (requested, allowed, expected) in table {
        let grant = Grant::new(
            &RequestedCapabilities {
                memory: requested,
                ..Default::default()
            },
            &Policy {
                memory: allowed,
                ..Default::default()
            },
        );
        assert_eq!(grant.memory, expected, "{requested:?} ∩ {allowed:?}");
    }
}

#[test]
fn each_kind_reads_the_same_policy_from_its_grants_key_and_from_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().display().to_string();
    // One value of each kind, as evo.toml writes it and as its flag takes it.
    let cases: [(&str, toml::Value, Option<String>); 6] = [
        (
            "dirs",
            toml::Value::Array(vec![format!("{host}::/data:ro").into()]),
            Some(format!("{host}::/data:ro")),
        ),
        ("llm", true.into(), None),
        ("memory", "read".into(), Some("read".into())),
        ("exec", true.into(), None),
        (
            "hosts",
            toml::Value::Array(vec!["https://*.github.com".into()]),
            Some("https://*.github.com".into()),
        ),
        (
            "secrets",
            toml::Value::Array(vec!["API_KEY".into()]),
            Some("API_KEY".into()),
        ),
    ];
    assert_eq!(
        cases.iter().map(|c| c.0).collect::<Vec<_>>(),
        ALL.iter().map(|c| c.key()).collect::<Vec<_>>(),
        "a case for every kind"
    );
    for (key, value, flag_value) in cases {
        let capability = by_key(key).unwrap();
        let flag = Policy::flags()
            .find(|f| f.key == format!("grants.{key}"))
            .unwrap();
        assert_eq!(flag.value_name.is_some(), flag_value.is_some(), "{key}");

        let mut configured = Policy::default();
        capability
            .configure(&mut configured, &value, Path::new("/"))
            .unwrap();
        let mut widened = Policy::default();
        widened.widen(flag, flag_value.as_deref()).unwrap();
        assert_eq!(
            capability.show(&configured),
            capability.show(&widened),
            "{key}"
        );
        assert_ne!(
            capability.show(&configured),
            capability.show(&Policy::default()),
            "{key}: the value allows something"
        );
    }
}

#[test]
fn a_wrong_value_is_refused_with_what_was_expected() {
    let mut policy = Policy::default();
    for (key, value, expected) in [
        (
            "llm",
            toml::Value::from("yes"),
            "expected true or false, found a string",
        ),
        (
            "hosts",
            toml::Value::from("https://a.example"),
            "expected a list of strings, e.g. [\"…\"], found a string",
        ),
        (
            "memory",
            toml::Value::from(2),
            "expected none, read or read-write, found an integer",
        ),
    ] {
        let error = by_key(key)
            .unwrap()
            .configure(&mut policy, &value, Path::new("/"))
            .unwrap_err();
        assert_eq!(error, expected, "{key}");
    }
    let memory = Policy::flags().find(|f| f.long == "allow-memory").unwrap();
    assert_eq!(
        policy.widen(memory, Some("all")).unwrap_err(),
        "\"all\" is not a memory access"
    );
}

#[test]
fn open_world_is_the_language_model_or_an_outbound_host() {
    assert!(!Grant::default().is_open_world());
    let llm = Grant {
        llm: true,
        ..Grant::default()
    };
    let hosts = Grant {
        hosts: vec![HostPattern::parse("https://api.example.com").unwrap()],
        ..Grant::default()
    };
    let memory = Grant {
        memory: MemoryAccess::ReadWrite,
        ..Grant::default()
    };
    assert!(llm.is_open_world() && hosts.is_open_world());
    assert!(!memory.is_open_world());
}

#[test]
fn a_skill_entry_replaces_the_default_for_that_skill_only() {
    let policy = Policy {
        llm: false,
        skills: [(
            "notes".to_owned(),
            Policy {
                llm: true,
                memory: MemoryAccess::ReadWrite,
                ..Policy::default()
            },
        )]
        .into(),
        ..Policy::default()
    };
    assert!(policy.for_skill("notes").llm);
    assert_eq!(policy.for_skill("notes").memory, MemoryAccess::ReadWrite);
    assert!(!policy.for_skill("calculate").llm);
    assert_eq!(policy.for_skill("calculate").memory, MemoryAccess::None);
}

#[test]
fn each_kind_checks_its_own_requests_and_says_how_to_be_granted() {
    let none = Grant::default();
    assert_eq!(
        none.check_llm("notes").unwrap_err(),
        "notes was not granted the language model; the skill must request it in its manifest and the operator must allow it"
    );
    assert_eq!(
        none.check_memory("notes", MemoryAccess::Read).unwrap_err(),
        "notes was not granted read access to memory; the skill must request it in its manifest and the operator must allow it"
    );
    let reader = Grant {
        llm: true,
        memory: MemoryAccess::Read,
        ..Grant::default()
    };
    assert_eq!(reader.check_llm("notes"), Ok(()));
    assert_eq!(reader.check_memory("notes", MemoryAccess::Read), Ok(()));
    assert!(
        reader
            .check_memory("notes", MemoryAccess::ReadWrite)
            .unwrap_err()
            .contains("not granted write access to memory")
    );
    assert!(
        reader
            .check_suggested_writes("notes")
            .unwrap_err()
            .contains("`--allow-memory read-write`")
    );
    let api = HostPattern::parse("https://api.example.com").unwrap();
    let fetch = Grant {
        hosts: vec![api.clone()],
        secrets: vec![SecretGrant {
            name: "API_KEY".into(),
            host: api.clone(),
        }],
        ..Grant::default()
    };
    let origin = ("https", "api.example.com", 443);
    let elsewhere = ("https", "evil.example", 443);
    assert_eq!(fetch.admit_origin("fetch", origin), Ok(&api));
    assert_eq!(
        fetch.admit_origin("fetch", elsewhere).unwrap_err(),
        "https://evil.example:443: not among the hosts granted to fetch (https://api.example.com)"
    );
    assert!(
        none.admit_origin("fetch", origin)
            .unwrap_err()
            .contains("fetch was granted no outbound hosts")
    );
    assert_eq!(fetch.check_secret("fetch", "API_KEY", origin), Ok(()));
    assert_eq!(
        fetch
            .check_secret("fetch", "API_KEY", elsewhere)
            .unwrap_err(),
        "secret API_KEY is granted to fetch for https://api.example.com only, not for this host"
    );
    assert!(
        fetch
            .check_secret("fetch", "OTHER", origin)
            .unwrap_err()
            .starts_with("secret OTHER is not granted to fetch")
    );
    let mut policy = Policy::default();
    assert!(
        policy
            .check_exec("pdf")
            .unwrap_err()
            .contains("`exec = true` under [grants.skill.pdf]")
    );
    policy.exec = true;
    assert_eq!(policy.check_exec("pdf"), Ok(()));
}

#[test]
fn a_sandbox_is_set_up_with_every_directory_granted_and_nothing_else() {
    #[derive(Default)]
    struct Opened(Vec<String>);
    impl Sandbox for Opened {
        fn preopen(&mut self, dir: &DirGrant) -> Result<(), String> {
            if dir.guest == "/broken" {
                return Err(format!("cannot open {}", dir.guest));
            }
            self.0.push(format!("{}:{:?}", dir.guest, dir.access));
            Ok(())
        }
    }
    let root = tempfile::tempdir().unwrap();
    let dir = |guest: &str, access| DirGrant {
        host: root.path().to_owned(),
        guest: guest.to_owned(),
        access,
    };
    let grant = Grant {
        dirs: vec![dir("/data", Access::Read), dir("/out", Access::ReadWrite)],
        llm: true,
        ..Grant::default()
    };
    let mut opened = Opened::default();
    confine(&grant, &mut opened).unwrap();
    assert_eq!(opened.0, ["/data:Read", "/out:ReadWrite"]);
    let broken = Grant {
        dirs: vec![dir("/broken", Access::Read)],
        ..Grant::default()
    };
    assert_eq!(
        confine(&broken, &mut Opened::default()),
        Err("cannot open /broken".to_owned())
    );
}
