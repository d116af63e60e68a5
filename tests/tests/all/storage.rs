//! The same behaviour on both storage backends: SQLite in the data directory, and a
//! PostgreSQL database shared by several nodes (a fresh database on the throwaway
//! cluster `scripts/postgres.sh` starts; `EVO_TEST_POSTGRES` names it).

use std::sync::Arc;

use evo_host::memory::{Action, Category, MemoryConfig, MemoryManager, SearchOptions, Source};
use evo_host::storage::{Pg, Storage};

pub use evo_tests::shared::postgres_url;
use evo_tests::shared::{backends, eventually, memory};

#[test]
fn stores_decide_supersede_search_and_forget_alike() {
    let dir = tempfile::tempdir().unwrap();
    for (name, storage) in backends(dir.path()) {
        let memory = memory(&storage, dir.path());
        let first = memory
            .decide(
                "The user prefers dark mode in the editor.",
                Category::Preference,
            )
            .unwrap();
        assert_eq!(first.action, Action::Add, "{name}");
        let again = memory
            .decide("user prefers dark mode in editors", Category::Preference)
            .unwrap();
        assert_eq!(
            (again.action, again.id.as_str()),
            (Action::Noop, first.id.as_str()),
            "{name}"
        );

        let old = memory
            .decide("Deploys happen on Tuesday afternoons", Category::Decision)
            .unwrap();
        let new = memory
            .decide("Deploys happen on Thursday afternoons", Category::Decision)
            .unwrap();
        assert_eq!(
            (new.action, new.supersedes.as_deref()),
            (Action::Update, Some(old.id.as_str())),
            "{name}"
        );
        let hits = memory.search("when do deploys happen", 5).unwrap();
        assert_eq!(
            hits.len(),
            1,
            "{name}: the superseded entry is hidden: {hits:?}"
        );
        assert_eq!(
            hits[0].text, "Deploys happen on Thursday afternoons",
            "{name}"
        );
        let all = memory
            .search_with(
                "when do deploys happen",
                &SearchOptions {
                    include_superseded: true,
                    ..SearchOptions::limit(5)
                },
            )
            .unwrap();
        assert_eq!(all.len(), 2, "{name}: {all:?}");
        let history = memory.history(&new.id).unwrap();
        assert_eq!(history.versions.len(), 2, "{name}");
        assert_eq!(history.events.len(), 2, "{name}: {:?}", history.events);

        let bob = memory
            .decide("Bob leads the search team", Category::Entity)
            .unwrap();
        let by_source = memory
            .search_with(
                "who leads the search team",
                &SearchOptions {
                    sources: vec![Source::Capture],
                    ..SearchOptions::limit(5)
                },
            )
            .unwrap();
        assert!(
            by_source.is_empty(),
            "{name}: only user entries exist: {by_source:?}"
        );
        let forgotten = memory.forget(&bob.id).unwrap();
        assert_eq!(forgotten.ids, std::slice::from_ref(&bob.id), "{name}");
        assert!(
            memory
                .search("who leads the search team", 5)
                .unwrap()
                .iter()
                .all(|h| h.id != bob.id),
            "{name}"
        );
        // Forgetting the newest version forgets the ones it superseded.
        assert_eq!(memory.forget(&new.id).unwrap().deleted, 2, "{name}");
        let status = memory.status().unwrap();
        assert_eq!((status.entries, status.superseded), (1, 0), "{name}");
    }
}

#[test]
fn a_memory_stored_on_one_node_is_found_on_another_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    for (name, storage) in backends(dir.path()) {
        let one = memory(&storage, dir.path());
        let three = memory(&storage, dir.path());
        // Node three has searched (and so loaded its index) before the store.
        assert!(
            three.search("release train", 5).unwrap().is_empty(),
            "{name}"
        );
        let stored = one
            .decide(
                "The release train leaves every second Monday",
                Category::Fact,
            )
            .unwrap();
        eventually(&format!("{name}: node three finds it"), || {
            let hits = three
                .search("when does the release train leave", 5)
                .unwrap();
            hits.first()
                .is_some_and(|h| h.id == stored.id)
                .then_some(())
        });
        let hit = &three
            .search("when does the release train leave", 5)
            .unwrap()[0];
        assert_eq!(
            hit.text, "The release train leaves every second Monday",
            "{name}"
        );
        // Forgotten on node three: gone from node one's index too.
        assert_eq!(
            three.forget(&stored.id).unwrap().ids,
            std::slice::from_ref(&stored.id),
            "{name}"
        );
        eventually(&format!("{name}: node one forgets it"), || {
            one.search("when does the release train leave", 5)
                .unwrap()
                .iter()
                .all(|h| h.id != stored.id)
                .then_some(())
        });
    }
}

#[test]
fn nodes_storing_at_once_lose_nothing_and_store_a_fact_once() {
    let dir = tempfile::tempdir().unwrap();
    for (name, storage) in backends(dir.path()) {
        let nodes: Vec<Arc<MemoryManager>> = (0..3)
            .map(|_| Arc::new(memory(&storage, dir.path())))
            .collect();
        let handles: Vec<_> = (0..6_u64)
            .map(|t| {
                let memory = nodes[t as usize % 3].clone();
                std::thread::spawn(move || {
                    for i in 0..5 {
                        let text = format!(
                            "Service {} listens on port {}",
                            t * 10 + i,
                            7000 + t * 10 + i
                        );
                        assert!(memory.store(&text, None).unwrap().stored, "{text}");
                    }
                    // Every node stores the same fact: one of them adds it.
                    memory
                        .decide("The on-call rota changes on Fridays", Category::Fact)
                        .unwrap()
                        .action
                })
            })
            .collect();
        let actions: Vec<Action> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            actions.iter().filter(|a| **a == Action::Add).count(),
            1,
            "{name}: {actions:?}"
        );
        // A search never misses a commit another node made more than the stated bound
        // before it began (the last notification may still be on its way).
        std::thread::sleep(evo_host::memory::store::SHARED_FRESH_FOR);
        for node in &nodes {
            assert_eq!(
                node.status().unwrap().entries,
                31,
                "{name}: each sees every write"
            );
        }
    }
}

/// "Make it impossible to miss one: each node follows a sequence ... and catches up
/// from its last seen number after a missed or reconnected listener": a commit whose
/// notification never comes (the trigger made silent) and one made after every
/// listener was cut off are both seen by a search that begins the stated bound later.
#[test]
fn a_node_sees_a_commit_whose_notice_never_came_or_came_to_no_listener() {
    let dir = tempfile::tempdir().unwrap();
    let url = postgres_url();
    let pg = Pg::connect(&url, None).unwrap();
    let storage = Storage::Shared(pg.clone());
    let (writer, reader) = (memory(&storage, dir.path()), memory(&storage, dir.path()));
    let bound = evo_host::memory::store::SHARED_FRESH_FOR;
    let seen = |expected: usize| {
        std::thread::sleep(bound);
        assert_eq!(reader.status().unwrap().entries, expected);
    };
    writer
        .store("The staging database is db-stage-1", None)
        .unwrap();
    seen(1);

    // Silent commits: the trigger numbers the change but announces nothing.
    let sql = pg.conn().unwrap();
    sql.batch(
        "CREATE OR REPLACE FUNCTION memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             INSERT INTO memory_changes (entry)
                 VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.rowid ELSE NEW.rowid END);
             RETURN NULL;
         END $$;",
    )
    .unwrap();
    writer.store("The build server is ci-7", None).unwrap();
    seen(2);
    writer.store("Deploys happen on Tuesdays", None).unwrap();
    seen(3);

    // Every listener of this database cut off mid-stream.
    let cut = sql
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
            &[],
        )
        .unwrap();
    assert!(!cut.is_empty(), "the nodes were listening");
    writer
        .store("The on-call phone is in the top drawer", None)
        .unwrap();
    seen(4);
}

#[test]
fn on_the_retrieval_set_postgres_ranks_as_sqlite_does() {
    use evo_tests::retrieval;

    let set = retrieval::generate(2026);
    let dir = tempfile::tempdir().unwrap();
    let [(_, sqlite), (_, postgres)] = backends(dir.path());
    let local = memory(&sqlite, dir.path());
    let shared = memory(&postgres, dir.path());
    for turn in &set.turns {
        let a = local.decide(&turn.text, turn.category).unwrap();
        let b = shared.decide(&turn.text, turn.category).unwrap();
        assert_eq!(a.action, b.action, "{:?}", turn.text);
    }
    // Scored by a node that opens the database now, on statistics of the whole set: the
    // node that wrote keeps those it read for a while (a few seconds), and autovacuum
    // analyzes the table when the machine lets it (0.960 of first hits alike under a
    // loaded CI, when it had run partway through the writes), so what is ranked would
    // depend on how fast the writes went. ANALYZE is what autovacuum does once it
    // catches up.
    let Storage::Shared(pg) = &postgres else {
        unreachable!("the second backend is PostgreSQL")
    };
    pg.conn().unwrap().batch("ANALYZE memory_entries").unwrap();
    let shared = memory(&postgres, dir.path());
    let on_sqlite = retrieval::score(&set, |q| texts(&local, q));
    let on_postgres = retrieval::score(&set, |q| texts(&shared, q));
    // The keyword side ranks by ts_rank weighted by each term's idf instead of bm25
    // (docs/decisions.md): the fused ranking is as good, within a few questions.
    let as_good = |postgres: f64, sqlite: f64| postgres >= sqlite - 0.03;
    assert!(
        as_good(on_postgres.recall_at_1, on_sqlite.recall_at_1)
            && as_good(on_postgres.recall_at_5, on_sqlite.recall_at_5)
            && as_good(on_postgres.mrr, on_sqlite.mrr)
            && as_good(on_postgres.kept_at_20, on_sqlite.kept_at_20)
            && on_postgres.stale_at_1 <= on_sqlite.stale_at_1 + 0.03,
        "postgres {on_postgres:?} vs sqlite {on_sqlite:?}"
    );
    let mut same_first = 0;
    for question in &set.questions {
        let a = local.search(&question.text, 1).unwrap();
        let b = shared.search(&question.text, 1).unwrap();
        same_first += usize::from(a.first().map(|h| &h.text) == b.first().map(|h| &h.text));
    }
    let share = same_first as f64 / set.questions.len() as f64;
    eprintln!(
        "postgres {on_postgres:?}\nsqlite {on_sqlite:?}\nthe same first hit for {share:.3} of the questions"
    );
    // 0.994 when written: the two keyword indexes split a few texts differently
    // (PostgreSQL keeps host names and version numbers whole).
    assert!(
        share >= 0.97,
        "the same first hit for {share:.3} of the questions"
    );
}

fn texts(memory: &MemoryManager, query: &str) -> Vec<String> {
    memory
        .search(query, 100)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

#[test]
fn a_node_with_another_embedder_is_refused_instead_of_re_embedding_everyones_memory() {
    let dir = tempfile::tempdir().unwrap();
    let [_, (_, shared)] = backends(dir.path());
    memory(&shared, dir.path())
        .decide("Backups run nightly at 02:00", Category::Fact)
        .unwrap();
    let error = MemoryManager::open_in(
        &shared,
        dir.path(),
        Arc::new(crate::memory::Upper),
        MemoryConfig::default(),
    )
    .unwrap_err();
    assert_eq!(error.code(), "DATABASE_ERROR");
    let message = error.to_string();
    assert!(
        message.contains("is embedded with evo-hash-v2-256, and this node embeds with test-upper-64: give every node the same embedder"),
        "{message}"
    );
    // Switching every node is one reindex, on any node.
    let (switched, count) = MemoryManager::reindex_in(
        &shared,
        dir.path(),
        Arc::new(crate::memory::Upper),
        &|_, _| {},
    )
    .unwrap();
    assert_eq!(count, 1);
    assert_eq!(switched.status().unwrap().embedder, "test-upper-64");
    let other = MemoryManager::open_in(
        &shared,
        dir.path(),
        Arc::new(crate::memory::Upper),
        MemoryConfig::default(),
    )
    .unwrap();
    assert_eq!(
        other.search("when do backups run", 1).unwrap()[0].text,
        "Backups run nightly at 02:00"
    );
}

#[test]
fn the_password_in_a_storage_url_is_never_printed() {
    let home = tempfile::tempdir().unwrap();
    // A port nothing listens on: every command that needs the database fails.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://evo:hunter2pw@127.0.0.1:{port}/evo");
    for args in [
        &["config", "show"][..],
        &["config", "show", "--json"],
        &["memory", "search", "anything"],
        &["db", "status"],
        &["doctor"],
    ] {
        let out = evo_tests::cli::command(home.path(), args)
            .env("EVO_STORAGE_URL", &url)
            .output()
            .unwrap();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!printed.contains("hunter2pw"), "{args:?}: {printed}");
        assert!(
            printed.contains(&format!("postgres://evo:***@127.0.0.1:{port}/evo")),
            "{args:?}: {printed}"
        );
        if args == ["doctor"] {
            // Reported as a check, beside what can be checked without it.
            assert_eq!(out.status.code(), Some(1), "{printed}");
            assert!(printed.contains("ok    data directory"), "{printed}");
            assert!(
                printed.contains("FAIL  storage            database: postgres://evo:***@"),
                "{printed}"
            );
        }
    }
}

/// A ZIP of `(path, bytes)` entries, as a hostile writer to the database makes it.
fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write as _;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, bytes) in files {
        writer
            .start_file(*path, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// A host on the shared database at `url`, with `home` as its data directory.
async fn node(home: &std::path::Path, url: &str) -> evo_host::Host {
    std::fs::create_dir_all(home).unwrap();
    let mut config = evo_tests::config(home);
    config.storage.url = Some(url.to_owned());
    evo_host::Host::builder()
        .data_dir(home)
        .config(config)
        .build()
        .await
        .expect("the node starts")
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_packages_in_the_shared_database_install_nothing_and_replace_nothing() {
    // Someone who can write to the database (or a damaged row) plants packages beside a
    // good one. A node taking them from the catalogue must treat them as it treats any
    // archive, and more: a package stored under one name must not replace another skill.
    let url = postgres_url();
    let root = tempfile::tempdir().unwrap();
    let first = node(&root.path().join("one"), &url).await;
    let good = evo_tests::shared::answer_component(root.path(), "answer", 42);
    first
        .install(&good, evo_host::packages::InstallOptions::default())
        .await
        .unwrap();

    let impostor_dir = tempfile::tempdir().unwrap();
    let impostor = std::fs::read(evo_tests::shared::answer_component(
        impostor_dir.path(),
        "answer",
        66,
    ))
    .unwrap();
    let planted = [
        // Climbs out of the skills directory.
        (
            "escape",
            "sha256:0001",
            zip_of(&[
                (
                    "escape/SKILL.md",
                    b"---\nname: escape\ndescription: escapes\n---\n",
                ),
                ("escape/../../../outside.txt", b"written outside"),
            ]),
        ),
        // Stored as `liar`, but it is another `answer`: it would overwrite the good one.
        (
            "liar",
            "sha256:0002",
            zip_of(&[("answer/skill.wasm", &impostor)]),
        ),
        // Not a ZIP at all.
        ("garbage", "sha256:0003", b"not a zip".to_vec()),
    ];
    let pg = Pg::connect(&url, None).unwrap();
    for (name, digest, bytes) in planted {
        pg.run(move |client| async move {
            client
                .execute(
                    "INSERT INTO packages (digest, bytes, stored_at) VALUES ($1, $2, 0)",
                    &[&digest, &bytes],
                )
                .await?;
            client
                .execute(
                    "INSERT INTO installs (name, digest, record, installed_at) VALUES ($1, $2, '{}', 0)",
                    &[&name, &digest],
                )
                .await
        })
        .unwrap();
    }

    // A second node starts, and the first one refreshes: both have the good skill, as it
    // was published, and nothing else.
    let second = node(&root.path().join("two"), &url).await;
    first.refresh().await.unwrap();
    for host in [&first, &second] {
        assert_eq!(
            host.call("answer", serde_json::json!({})).await.unwrap(),
            serde_json::json!({ "n": 42 })
        );
        for name in ["escape", "liar", "garbage"] {
            assert_eq!(
                host.call(name, serde_json::json!({}))
                    .await
                    .unwrap_err()
                    .code(),
                "SKILL_NOT_FOUND",
                "{name}"
            );
        }
        let installed: Vec<String> = std::fs::read_dir(host.data_dir().join("skills"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            installed,
            ["answer"],
            "nothing else, not even a staging directory"
        );
    }
    for place in [
        root.path(),
        &root.path().join("one"),
        &root.path().join("two"),
    ] {
        assert!(
            !place.join("outside.txt").exists(),
            "{} holds what a package wrote outside its directory",
            place.display()
        );
    }
    // The node refuses them without deleting them: they are left for an operator.
    let refused: i64 = pg
        .run(|client| async move {
            Ok(client
                .query_one("SELECT count(*) FROM packages", &[])
                .await?
                .get(0))
        })
        .unwrap();
    assert_eq!(refused, 4, "the good package and the three planted ones");
    second.refresh().await.unwrap();
    assert_eq!(
        second.call("answer", serde_json::json!({})).await.unwrap(),
        serde_json::json!({ "n": 42 })
    );
}

#[test]
fn an_agent_whose_shared_storage_stops_mid_session_answers_without_recall_and_says_why() {
    use std::io::{BufRead as _, BufReader, Write as _};

    use serde_json::{Value, json};

    // "An error reading memory fails nothing: the system logs a warning and answers
    // without recall."
    let cluster = evo_tests::shared::OwnCluster::start();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        format!("[storage]\nurl = \"{}\"\n", cluster.url()),
    )
    .unwrap();
    let script = home.path().join("script.json");
    let direct = json!({ "intents": [], "routing": { "strategy": "direct_answer", "direct_response": "Noted." } });
    // The index's clear pick for "what is 6 * 7?" is calculate: the model takes it.
    let routed = json!({ "use_tool": true, "input": { "expression": "6 * 7" } });
    std::fs::write(
        &script,
        json!({ "responses": [direct.to_string(), routed.to_string(), "It is 42."] }).to_string(),
    )
    .unwrap();
    let mut chat = evo_tests::cli::scripted_chat(home.path(), &script);
    let mut stdin = chat.stdin.take().unwrap();
    let mut events = BufReader::new(chat.stdout.take().unwrap()).lines();
    // The events of one turn, up to its `done` (or `error`).
    let mut turn = |message: &str| {
        writeln!(stdin, "{message}").unwrap();
        let mut turn = Vec::new();
        for line in events.by_ref() {
            let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let end = event["type"] == "done" || event["type"] == "error";
            turn.push(event);
            if end {
                break;
            }
        }
        turn
    };

    let first = turn("I prefer tea over coffee");
    assert_eq!(first.last().unwrap()["content"], "Noted.", "{first:?}");
    assert!(first.iter().all(|e| e["type"] != "warning"), "{first:?}");

    cluster.stop();
    let second = turn("what is 6 * 7?");
    let done = second.last().unwrap();
    assert_eq!(
        (&done["type"], &done["content"]),
        (&json!("done"), &json!("It is 42.")),
        "{second:?}"
    );
    let warnings: Vec<&str> = second
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("memory could not be read, so this answer has no recall: ")),
        "{warnings:?}"
    );
    assert!(
        second
            .iter()
            .any(|e| e["type"] == "skill_call" && e["skill"] == "calculate"),
        "{second:?}"
    );
    writeln!(stdin, "/exit").unwrap();
    drop(stdin);
    let status = chat.wait().unwrap();
    assert!(status.success());
}

/// A CA, and a server certificate (PEM, key PEM) it signed for `names`.
fn certificates(names: &[&str]) -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "Evo test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let cert = rcgen::CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

#[test]
fn shared_storage_over_tls_checks_the_server_as_sslmode_says() {
    let (ca, cert, key) = certificates(&["localhost"]);
    let (other_ca, _, _) = certificates(&["localhost"]);
    let cluster = evo_tests::shared::OwnCluster::start_tls(&cert, &key);
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("ca.pem"), &ca).unwrap();
    std::fs::write(root.path().join("other-ca.pem"), &other_ca).unwrap();
    // `evo memory store` on a node whose [storage] url is `url`.
    let store = |name: &str, url: &str| {
        let home = root.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("evo.toml"),
            format!("[storage]\nurl = \"{url}\"\n"),
        )
        .unwrap();
        evo_tests::cli::evo(
            &home,
            &["memory", "store", "The vault is in the north wing"],
        )
    };
    let ca_file = root.path().join("ca.pem").display().to_string();
    let other_file = root.path().join("other-ca.pem").display().to_string();
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "{}", evo_tests::cli::stderr(&out));
    };
    let refused = |out: std::process::Output, why: &str| {
        let stderr = evo_tests::cli::stderr(&out);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(why), "{why:?} not in: {stderr}");
    };

    // verify-full: the right CA and the name the certificate is for.
    ok(store(
        "full",
        &format!(
            "{}?sslmode=verify-full&sslrootcert={ca_file}",
            cluster.url_at("localhost")
        ),
    ));
    // A wrong name: refused by verify-full, taken by verify-ca.
    refused(
        store(
            "wrong-name",
            &format!(
                "{}?sslmode=verify-full&sslrootcert={ca_file}",
                cluster.url()
            ),
        ),
        "certificate not valid for name",
    );
    refused(
        store(
            "wrong-name-again",
            &format!(
                "{}?sslmode=verify-full&sslrootcert={ca_file}",
                cluster.url()
            ),
        ),
        "for sslmode=verify-full the URL's host must be a name the certificate is for",
    );
    ok(store(
        "ca-only",
        &format!("{}?sslmode=verify-ca&sslrootcert={ca_file}", cluster.url()),
    ));
    // A wrong CA: refused.
    refused(
        store(
            "wrong-ca",
            &format!(
                "{}?sslmode=verify-ca&sslrootcert={other_file}",
                cluster.url()
            ),
        ),
        "invalid peer certificate",
    );
    // require: encrypted, not checked (libpq's rule).
    ok(store(
        "require",
        &format!("{}?sslmode=require", cluster.url()),
    ));
    // A plain server: refused when TLS is required, never fallen back from.
    let plain = postgres_url();
    refused(store("plain", &format!("{plain}?sslmode=require")), "TLS");
    // prefer would fall back to plain text: said, not done.
    refused(
        store("prefer", &format!("{}?sslmode=prefer", cluster.url())),
        "sslmode=prefer falls back to plain text without a word",
    );
}
