//! `evo` killed at random moments of its writes (issue 19): a short seeded run here,
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
    // The run did what it says: most commands were killed, and enough finished to be
    // checked.
    assert!(report.killed >= 30, "{report:?}");
    assert!(report.acknowledged >= 5, "{report:?}");
    assert_eq!(
        report.by_operation.len(),
        9,
        "every operation ran: {report:?}"
    );
}
