//! `cargo bench -p evo-tests --bench packages`
//!
//! Installing a small skill from a ZIP, including validation, the atomic rename, the
//! marker and indexing, then uninstalling it (budget for the install: < 50 ms). Floor in
//! the same run: extracting the same archive with the `zip` crate alone.
//!
//! With 1,000 skills installed: a page of `list_skills` (floor: reading the 1,000 install
//! records from disk without parsing them) and `search_skills` (floor: the FTS5 keyword
//! query alone, the same cached statement the hybrid search runs as one of its two
//! halves). Every row checks its result once before it is timed.

use std::hint::black_box;
use std::io::{Cursor, Write as _};
use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use evo_host::db::Db;
use evo_host::memory::HashEmbedder;
use evo_host::packages::index::SkillIndex;
use evo_host::packages::{InstallOptions, ListQuery, SkillManager};

fn archive() -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills-native/git-commit");
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for file in ["SKILL.md", "skill.json", "scripts/execute.js"] {
        writer
            .start_file(
                format!("git-commit/{file}"),
                zip::write::SimpleFileOptions::default(),
            )
            .expect("starts");
        writer
            .write_all(&std::fs::read(root.join(file)).expect("reads"))
            .expect("writes");
    }
    writer.finish().expect("finishes").into_inner()
}

fn install(c: &mut Criterion) {
    let zip = archive();
    let mut group = c.benchmark_group("skill_install");
    let extract = || {
        let dir = tempfile::tempdir().expect("tempdir");
        zip::ZipArchive::new(Cursor::new(&zip))
            .expect("opens")
            .extract(dir.path())
            .expect("extracts");
        dir
    };
    assert!(
        extract()
            .path()
            .join("git-commit/scripts/execute.js")
            .is_file()
    );
    group.bench_function("floor: extract the archive with the zip crate", |b| {
        b.iter(|| black_box(extract()));
    });
    let data = tempfile::tempdir().expect("tempdir");
    let index = SkillIndex::new(Db::open(data.path()).expect("db"), Arc::new(HashEmbedder));
    let manager = SkillManager::new(data.path()).with_index(index);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let install_and_uninstall = || {
        let installing = manager.install_skill(&zip, InstallOptions::default());
        let installed = runtime.block_on(installing).expect("installs");
        (
            installed,
            manager.uninstall_skill("git-commit").expect("uninstalls"),
        )
    };
    let (installed, uninstalled) = install_and_uninstall();
    assert_eq!(installed.name, "git-commit");
    assert_eq!(installed.message, "Skill installed successfully");
    assert_eq!(uninstalled.message, "Skill uninstalled successfully");
    assert!(!manager.root().join("git-commit").exists());
    group.bench_function(
        "evo: install (validate, digest, rename, marker, index) + uninstall",
        |b| b.iter(|| black_box(install_and_uninstall())),
    );
    group.finish();
}

/// Twelve words of a small vocabulary per skill, picked by a fixed generator.
fn description(i: usize) -> String {
    const WORDS: [&str; 48] = [
        "convert",
        "csv",
        "json",
        "pdf",
        "image",
        "resize",
        "translate",
        "text",
        "weather",
        "forecast",
        "currency",
        "rates",
        "git",
        "commit",
        "message",
        "summarize",
        "email",
        "calendar",
        "invite",
        "spreadsheet",
        "chart",
        "audio",
        "transcribe",
        "video",
        "clip",
        "search",
        "web",
        "page",
        "markdown",
        "table",
        "database",
        "query",
        "backup",
        "files",
        "archive",
        "zip",
        "upload",
        "cloud",
        "invoice",
        "receipt",
        "expense",
        "report",
        "slides",
        "deck",
        "font",
        "poster",
        "brand",
        "logo",
    ];
    let mut state = (i as u64)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1);
    (0..12)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            WORDS[(state >> 33) as usize % WORDS.len()]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn catalogue(c: &mut Criterion) {
    let data = tempfile::tempdir().expect("tempdir");
    let index = SkillIndex::new(Db::open(data.path()).expect("db"), Arc::new(HashEmbedder));
    let manager = SkillManager::new(data.path()).with_index(index);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    for i in 0..1_000 {
        let name = format!("skill-{i:04}");
        let md = format!(
            "---\nname: {name}\ndescription: {}\ntags: [t{}]\n---\nDo it.\n",
            description(i),
            i % 10
        );
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        writer
            .start_file(
                format!("{name}/SKILL.md"),
                zip::write::SimpleFileOptions::default(),
            )
            .expect("starts");
        writer.write_all(md.as_bytes()).expect("writes");
        let zip = writer.finish().expect("finishes").into_inner();
        runtime
            .block_on(manager.install_skill(&zip, InstallOptions::default()))
            .expect("installs");
    }
    let mut group = c.benchmark_group("catalogue_1000");
    let read_records = || {
        let mut records = 0;
        for entry in std::fs::read_dir(manager.root()).expect("lists").flatten() {
            if let Ok(text) = std::fs::read(entry.path().join(".vectorized")) {
                records += usize::from(!text.is_empty());
            }
        }
        records
    };
    assert_eq!(read_records(), 1_000);
    group.bench_function("floor: read the 1,000 install records", |b| {
        b.iter(|| black_box(read_records()));
    });
    let query = ListQuery {
        tags: vec!["t3".into()],
        page: Some(1),
        limit: Some(20),
        ..ListQuery::default()
    };
    let listing = manager.list_skills(&query).expect("lists");
    assert_eq!((listing.total, listing.skills.len()), (100, 20));
    group.bench_function("evo: list_skills, page 1 of 20, tag filter", |b| {
        b.iter(|| black_box(manager.list_skills(&query).expect("lists")));
    });
    let db = Db::open(data.path()).expect("db");
    // The same statement Evo's keyword half runs, prepared once and cached as Evo's is.
    let keyword_floor = || -> Vec<(String, f64)> {
        db.read(|c| {
            let mut q = c.prepare_cached(
                "SELECT name, -bm25(skill_index_fts) FROM skill_index_fts WHERE skill_index_fts MATCH ?1",
            )?;
            let rows = q.query_map(["\"convert\" OR \"csv\" OR \"json\""], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            rows.collect()
        })
        .expect("queries")
    };
    let keyword_hits = keyword_floor();
    assert!(keyword_hits.len() > 10, "{}", keyword_hits.len());
    group.bench_function("floor: FTS5 keyword query alone (cached statement)", |b| {
        b.iter(|| black_box(keyword_floor()));
    });
    let hits = manager
        .search_skills("convert csv json", 10)
        .expect("searches");
    assert_eq!(hits.len(), 10);
    assert!(
        keyword_hits.iter().any(|(name, _)| *name == hits[0].name),
        "the best hit has a query word: {hits:?}"
    );
    group.bench_function("evo: search_skills (keywords + embeddings), top 10", |b| {
        b.iter(|| {
            black_box(
                manager
                    .search_skills("convert csv json", 10)
                    .expect("searches"),
            )
        });
    });
    group.finish();
}

criterion_group!(benches, install, catalogue);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/packages",
    "host/src/skill/manifest/package",
    "tests/benches/packages.rs",
];

evo_tests::recorded_main!("packages", PATHS, benches);
