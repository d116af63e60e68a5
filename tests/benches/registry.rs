//! `./scripts/bench registry` (needs the loopback registry `scripts/registry.sh` starts:
//! `EVO_TEST_REGISTRY`)
//!
//! Installing a skill from the loopback registry next to installing the same component
//! from disk, each through the public `Host` and followed by its uninstall: the
//! difference is what pulling costs (manifest, signature lookup, blob hashed as it
//! streams) over reading the file.
//!
//! Pulling an 18 MB Python component (componentize-py's text-stats) through Evo's client
//! — manifest checked, signatures looked up, the layer's size capped and its digest
//! checked as it streams — next to the floor: a plain GET of the same blob from the same
//! registry with the same HTTP client (ureq), read to the end and not checked. Every row
//! checks its result once before it is timed.

use std::hint::black_box;
use std::io::Read as _;

use criterion::{Criterion, Throughput, criterion_group};
use evo_host::Host;
use evo_host::oci::{Caps, Kind, Reference, Registries, Registry, RegistrySettings, TrustSettings};
use evo_host::packages::InstallOptions;
use evo_host::registry::RegistryInstall;
use evo_tests::skills;

fn registry_address() -> String {
    std::env::var("EVO_TEST_REGISTRY").expect(
        "EVO_TEST_REGISTRY is not set: run ./scripts/bench registry, which starts a registry",
    )
}

fn session(address: &str) -> Registry {
    let settings = RegistrySettings {
        insecure: vec![address.to_owned()],
        ..RegistrySettings::default()
    };
    Registry::new(
        Registries::new(settings, std::sync::Arc::default()),
        &TrustSettings::default(),
    )
    .expect("a session")
}

fn install(c: &mut Criterion) {
    let address = registry_address();
    let component = std::fs::read(skills::TEXT_STATS).expect("the component");
    let reference = Reference::parse(&format!("{address}/bench/text-stats:1.0")).unwrap();
    let digest = session(&address)
        .publish(
            &reference,
            Kind::Component,
            &component,
            &serde_json::Value::Null,
            None,
        )
        .expect("published");
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("evo.toml"),
        format!("[registries]\ninsecure = [\"{address}\"]\n"),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let host = runtime.block_on(async {
        Host::builder()
            .data_dir(data.path())
            .config(evo_tests::config(data.path()))
            .build()
            .await
            .expect("host")
    });
    let pinned = format!("oci://{}@{digest}", reference.name());
    let from_disk = || {
        runtime.block_on(async {
            let installed = host
                .install(
                    std::path::Path::new(skills::TEXT_STATS),
                    InstallOptions::overwrite(),
                )
                .await
                .expect("installs");
            host.uninstall("text-stats").expect("uninstalls");
            installed
        })
    };
    let from_registry = || {
        runtime.block_on(async {
            let options = RegistryInstall {
                overwrite: true,
                ..RegistryInstall::default()
            };
            let installed = host
                .install_from_registry(&pinned, options)
                .await
                .expect("installs");
            host.uninstall("text-stats").expect("uninstalls");
            installed
        })
    };
    let disk = from_disk();
    let pulled = from_registry();
    assert_eq!(disk.name, "text-stats");
    assert_eq!(pulled.outcome.name, "text-stats");
    assert_eq!(pulled.source.digest, digest);
    assert_eq!(
        disk.digest, pulled.outcome.digest,
        "the same skill either way"
    );

    let mut group = c.benchmark_group("registry_install");
    group.sample_size(20);
    group.bench_function("peer: install text-stats.wasm from disk + uninstall", |b| {
        b.iter(|| black_box(from_disk()));
    });
    group.bench_function(
        "evo: install oci://…/text-stats@digest + uninstall",
        |b| {
            b.iter(|| black_box(from_registry()));
        },
    );
    group.finish();
}

fn pull(c: &mut Criterion) {
    let address = registry_address();
    let component = std::fs::read(skills::PY_TEXT_STATS).expect("the Python component");
    let reference = Reference::parse(&format!("{address}/bench/py-text-stats:1.0")).unwrap();
    let registry = session(&address);
    let digest = registry
        .publish(
            &reference,
            Kind::Component,
            &component,
            &serde_json::Value::Null,
            None,
        )
        .expect("published");
    let pinned = reference.at(&digest);
    let caps = Caps {
        component: 64 << 20,
        archive: 100 << 20,
    };
    let layer = evo_host::oci::artifact::digest_of(&component);
    let blob_url = format!("http://{address}/v2/bench/py-text-stats/blobs/{layer}");
    let agent = ureq::Agent::new_with_defaults();
    let raw_get = || {
        let mut bytes = Vec::new();
        agent
            .get(&blob_url)
            .call()
            .expect("answers")
            .into_body()
            .into_reader()
            .read_to_end(&mut bytes)
            .expect("reads");
        bytes
    };
    let evo_pull = || registry.pull(&pinned, caps, None).expect("pulls");
    assert_eq!(raw_get(), component);
    let pulled = evo_pull();
    assert_eq!(pulled.bytes, component);
    assert_eq!(pulled.digest, digest);

    let mut group = c.benchmark_group("registry_pull");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(component.len() as u64));
    group.bench_function("floor: GET the 18 MB blob (ureq, unchecked)", |b| {
        b.iter(|| black_box(raw_get()));
    });
    group.bench_function(
        "evo: pull (manifest, signatures, blob checked as it streams)",
        |b| {
            b.iter(|| black_box(evo_pull()));
        },
    );
    group.finish();
}

criterion_group!(benches, install, pull);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/oci",
    "host/src/packages",
    "host/src/host",
    "scripts/registry.sh",
    "tests/benches/registry.rs",
];

evo_tests::recorded_main!("registry", PATHS, benches);
