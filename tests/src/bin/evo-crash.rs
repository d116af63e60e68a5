//! Kills `evo` at random moments of its writes and checks what is left:
//! `./scripts/crash [ITERATIONS] [SEED]` (see `evo_tests::crash`).

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: usize = args.next().map_or(300, |a| a.parse().expect("ITERATIONS"));
    let seed: u64 = args.next().map_or(19, |a| a.parse().expect("SEED"));
    let evo = std::env::current_exe()
        .expect("own path")
        .with_file_name("evo");
    assert!(
        evo.is_file(),
        "{} is missing: cargo build -p evo-cli",
        evo.display()
    );
    let root = tempfile::tempdir().expect("tempdir");
    let started = std::time::Instant::now();
    let report = evo_tests::crash::Harness::new(
        &evo,
        root.path(),
        std::path::Path::new(evo_tests::skills::CALCULATE),
        seed,
    )
    .run(iterations);
    println!(
        "{iterations} iterations, seed {seed}, {:.0} s: {} commands, {} killed mid-way, {} acknowledged writes and removals checked, {} corrupt cache files rebuilt; no integrity failure, no lost or half-done write",
        started.elapsed().as_secs_f64(),
        report.commands,
        report.killed,
        report.acknowledged,
        report.caches_rebuilt
    );
    for (operation, (runs, killed)) in &report.by_operation {
        println!("  {operation}: {runs} runs, {killed} killed");
    }
}
