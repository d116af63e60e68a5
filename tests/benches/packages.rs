//! `cargo bench -p evo-tests --bench packages`
//!
//! Installing a small skill from a ZIP, including validation, the atomic rename, the
//! marker and indexing, then uninstalling it (budget for the install: < 50 ms). Floor in
//! the same run: extracting the same archive with the `zip` crate alone.

use std::hint::black_box;
use std::io::{Cursor, Write as _};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use evo_host::db::Db;
use evo_host::memory::HashEmbedder;
use evo_host::packages::index::SkillIndex;
use evo_host::packages::{InstallOptions, SkillManager};

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
    group.bench_function("floor: extract the archive with the zip crate", |b| {
        b.iter(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            zip::ZipArchive::new(Cursor::new(&zip))
                .expect("opens")
                .extract(dir.path())
                .expect("extracts");
            black_box(dir)
        });
    });
    let data = tempfile::tempdir().expect("tempdir");
    let index = SkillIndex::new(Db::open(data.path()).expect("db"), Arc::new(HashEmbedder));
    let manager = SkillManager::new(data.path()).with_index(index);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    group.bench_function(
        "evo: install (validate, digest, rename, marker, index) + uninstall",
        |b| {
            b.iter(|| {
                let installing = manager.install_skill(&zip, InstallOptions::default());
                black_box(runtime.block_on(installing).expect("installs"));
                black_box(manager.uninstall_skill("git-commit").expect("uninstalls"));
            });
        },
    );
    group.finish();
}

criterion_group!(benches, install);
criterion_main!(benches);
