//! `evo` killed at random moments of its writes: a short seeded run here,
//! `./scripts/crash` at length.

#[test]
fn a_kill_at_any_moment_loses_nothing_acknowledged_and_breaks_nothing() {
    let root = tempfile::tempdir().unwrap();
    let report = evo_tests::crash::Harness::new(
        &evo_tests::evo_bin(),
        root.path(),
        std::path::Path::new(evo_tests::skills::CALCULATE),
        2026,
    )
    .run(90);
    // The run did what it says: many commands were killed, enough finished to be
    // checked, and most kinds of write ran (which ones depends on what earlier kills
    // left: an uninstall needs an acknowledged install).
    assert!(report.killed >= 20, "{report:?}");
    assert!(report.acknowledged >= 5, "{report:?}");
    assert!(report.by_operation.len() >= 7, "{report:?}");
}
