//! Every published figure is a recorded result: BENCHMARKS.md, README.md and
//! CHANGELOG.md quote each measured number from a record in `bench-results/` (a
//! `<!--fig RECORD/KEY-->` marker right after it), and the number shown is the
//! record's at the precision shown. A figure with no marker, a marker naming no
//! record, and a record with no commit, date or machine all fail here.

#[test]
fn every_published_figure_agrees_with_its_record() {
    let problems = evo_tests::figures::check(&evo_tests::figures::workspace());
    assert!(
        problems.is_empty(),
        "{}\n\nRe-run the bench that records a figure (`./scripts/bench NAME`), then `./scripts/bench --quote` to copy the records into the text",
        problems.join("\n")
    );
}

#[test]
fn every_record_names_the_command_that_measures_it() {
    let workspace = evo_tests::figures::workspace();
    let records = evo_tests::figures::records(&workspace);
    assert!(!records.is_empty(), "bench-results/ holds no record");
    for (name, record) in records {
        let command = record["command"].as_str().unwrap_or_default();
        let runs = command
            .split_whitespace()
            .next()
            .is_some_and(|program| workspace.join(program).is_file());
        assert!(
            runs,
            "bench-results/{name}.json: {command:?} is not a script of this repository"
        );
        assert!(
            record["paths"].as_array().is_some_and(|p| !p.is_empty()),
            "bench-results/{name}.json names no code it measures, so nothing can say it is stale"
        );
    }
}
