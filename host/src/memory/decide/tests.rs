//! The rules of `decide`, each with the texts that show it.

use super::*;

fn is_update(old: &str, new: &str) -> bool {
    matches!(relate(old, new), Relation::Update { .. })
}

fn is_different(old: &str, new: &str) -> bool {
    matches!(relate(old, new), Relation::Different(_))
}

#[test]
fn restatements_are_the_same_words_in_any_form() {
    for (old, new) in [
        (
            "The user prefers dark mode in the editor.",
            "user prefers dark mode in editors",
        ),
        ("I like green tea", "I really like green tea"),
        (
            "Dark mode is what the user prefers",
            "The user prefers dark mode",
        ),
        ("用户喜欢深色模式", "用户喜欢深色模式。"),
    ] {
        assert_eq!(relate(old, new), Relation::Restatement, "{old} / {new}");
    }
}

#[test]
fn a_new_value_of_the_same_attribute_is_an_update() {
    assert_eq!(
        relate("My phone number is 555-1234", "My phone number is 555-9876"),
        Relation::Update {
            from: "555-1234".into(),
            to: "555-9876".into()
        }
    );
    assert!(is_update(
        "Deploys happen on Tuesday afternoons",
        "Deploys happen on Thursday afternoons"
    ));
    assert!(is_update(
        "The user prefers dark mode",
        "The user now prefers light mode"
    ));
    assert!(is_update(
        "The alpha server listens on port 8000",
        "The alpha server listens on port 9000"
    ));
}

#[test]
fn facts_of_one_shape_about_different_things_are_different() {
    let relation = relate(
        "The alpha server listens on port 8000",
        "The bravo server listens on port 8001",
    );
    assert_eq!(
        relation,
        Relation::Different(
            "a different subject: \"alpha\" → \"bravo\", \"8000\" → \"8001\"".into()
        )
    );
    assert!(is_different("Alice leads payments", "Bob leads payments"));
    assert!(is_different(
        "The config lives in /etc/evo/a.toml",
        "The config lives in /etc/evo/a.toml and /srv/b.toml"
    ));
    assert!(is_different(
        "The user prefers dark mode",
        "The user prefers green tea"
    ));
    assert!(is_update("端口是8000", "端口是8001"));
    // A name replaced is another subject, wherever it stands.
    assert!(is_different(
        "I had lunch with Sven today, the soup was cold",
        "I had lunch with Bianca today, the soup was cold"
    ));
    assert!(is_different(
        "I had lunch with Sven",
        "I had lunch with Bianca"
    ));
    // A change in the middle of a statement is not its value.
    assert!(is_different(
        "Zara said the search dashboard looks slow again",
        "Zara said the inventory dashboard looks slow again"
    ));
}

#[test]
fn a_change_of_state_announced_in_other_words_is_an_update() {
    // "An update that contradicts a stored fact about the same subject supersedes it."
    assert_eq!(
        relate("Alice lives in Lisbon", "Alice now lives in Porto"),
        Relation::Update {
            from: "Lisbon".into(),
            to: "Porto".into()
        }
    );
    for (old, new) in [
        ("Alice lives in Lisbon", "Alice lives in Porto"),
        ("Alice lives in Lisbon", "Alice moved to Porto last month"),
        ("Alice lives in Lisbon", "Alice's new home is in Porto"),
        (
            "Alice lives in Lisbon",
            "Alice is living in Porto these days",
        ),
        (
            "Alice lives in Lisbon",
            "Alice has been based in Porto since the spring",
        ),
        (
            "Alice works at Initech as a nurse",
            "Alice now works at Globex as a pilot",
        ),
        (
            "The billing service listens on port 8000",
            "We switched the billing service over to port 9000",
        ),
        (
            "The billing service listens on port 8000",
            "Port 9000 is where billing listens now",
        ),
        (
            "The Atlas deadline is November 5",
            "Project Atlas is now due November 7",
        ),
        (
            "The Atlas deadline is November 5",
            "Atlas got pushed back to November 9",
        ),
    ] {
        assert!(is_update(old, new), "{old} / {new}: {:?}", relate(old, new));
    }
}

#[test]
fn a_change_of_another_attribute_or_subject_keeps_both() {
    // "Every distinct fact still findable": what a change does not replace stays.
    for (old, new) in [
        // Another attribute of the same subject.
        (
            "Alice works at Initech as a nurse",
            "Alice moved to Porto last month",
        ),
        (
            "Alice's dog is called Biscuit",
            "Alice moved to Porto last month",
        ),
        ("Alice lives in Lisbon", "Alice joined the Porto office"),
        (
            "Alice lives in Lisbon",
            "Alice moved the Atlas deadline to November 9",
        ),
        // Another subject with the same value.
        ("Alice lives in Lisbon", "Bruno now lives in Lisbon"),
        ("Alice lives in Lisbon", "Bruno moved to Porto"),
        // No value of the same kind.
        (
            "Alice lives in Lisbon",
            "Alice is based in the quiet room this week",
        ),
        (
            "The billing service listens on port 8000",
            "The billing service had a port scan alert on Friday",
        ),
        (
            "The billing service listens on port 8000",
            "The billing service keeps its data in PostgreSQL",
        ),
        (
            "The Atlas deadline is November 5",
            "Project Atlas is due for a database review",
        ),
        // A name replaced in an event.
        ("I had lunch with Sven", "I had lunch with Bianca"),
        (
            "Project Meridian is now due November 13",
            "Project Atlas is now due November 11",
        ),
        (
            "Service 12 listens on port 7012",
            "Service 13 listens on port 7013",
        ),
        (
            "Step 39: w5dec25 w6cfebd wcc2800",
            "Step 46: w7e78df wa753ee w4f26c9",
        ),
        // An earlier change of another subject.
        (
            "We switched the gateway service over to port 9003",
            "We switched the audit service over to port 9015",
        ),
    ] {
        assert!(
            is_different(old, new),
            "{old} / {new}: {:?}",
            relate(old, new)
        );
    }
}

#[test]
fn negation_makes_a_different_fact() {
    assert_eq!(
        relate(
            "Deploys are allowed on Friday",
            "Deploys are not allowed on Friday"
        ),
        Relation::Different("one says no where the other does not".into())
    );
    assert!(is_different(
        "The user likes coffee",
        "The user doesn't like coffee"
    ));
    assert!(is_different("用户喜欢咖啡", "用户不喜欢咖啡"));
}
