//! What git prints, as the `git` tool's structured results: `status --porcelain=v2`,
//! `--numstat --patch` and `log` records.

use super::{Changed, Commit, Diff, FileChange, RECORD, Status, UNIT};

/// `git status --porcelain=v2 --branch` as `{ branch, upstream, ahead, behind, clean,
/// files: [{ path, index, worktree }], untracked: [...] }`.
pub(super) fn parse_status(out: &str) -> Status {
    let mut status = Status {
        branch: None,
        upstream: None,
        ahead: 0,
        behind: 0,
        clean: false,
        files: Vec::new(),
        untracked: Vec::new(),
    };
    for line in out.lines() {
        if let Some(head) = line.strip_prefix("# branch.head ") {
            status.branch = Some(head.to_owned());
        } else if let Some(up) = line.strip_prefix("# branch.upstream ") {
            status.upstream = Some(up.to_owned());
        } else if let Some(ab) = line.strip_prefix("# branch.ab ") {
            let mut parts = ab.split(' ');
            status.ahead = parts.next().and_then(|a| a.parse().ok()).unwrap_or(0);
            status.behind = parts
                .next()
                .and_then(|b| b.parse().ok())
                .map_or(0, |b: i64| -b);
        } else if let Some(path) = line.strip_prefix("? ") {
            status.untracked.push(path.to_owned());
        } else if line.starts_with("1 ") || line.starts_with("2 ") || line.starts_with("u ") {
            let fields: Vec<&str> = line
                .splitn(if line.starts_with('2') { 10 } else { 9 }, ' ')
                .collect();
            let xy = fields.get(1).copied().unwrap_or("..");
            let path = fields.last().copied().unwrap_or_default();
            let (path, from) = match path.split_once('\t') {
                Some((to, from)) => (to, Some(from)),
                None => (path, None),
            };
            let state = |c: Option<char>| match c {
                Some('M') => "modified",
                Some('A') => "added",
                Some('D') => "deleted",
                Some('R') => "renamed",
                Some('C') => "copied",
                Some('U') => "unmerged",
                Some('T') => "type_changed",
                _ => "unchanged",
            };
            status.files.push(Changed {
                path: path.to_owned(),
                from: from.map(str::to_owned),
                index: state(xy.chars().next()),
                worktree: state(xy.chars().nth(1)),
            });
        }
    }
    status.clean = status.files.is_empty() && status.untracked.is_empty();
    status
}

/// `--numstat --patch` output as `{ files: [{ path, added, deleted }], patch }`.
pub(super) fn parse_diff(out: &str) -> Diff {
    let (stats, patch) = match out.find("diff --git") {
        Some(at) => out.split_at(at),
        None => (out, ""),
    };
    let files = stats
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let added = parts.next()?;
            let deleted = parts.next()?;
            let path = parts.next()?;
            // Binary files show `-` for both counts.
            Some(FileChange {
                path: path.to_owned(),
                added: added.parse().ok(),
                deleted: deleted.parse().ok(),
            })
        })
        .collect();
    Diff {
        files,
        patch: patch.to_owned(),
        commit: None,
    }
}

/// `git log` records (fields split by UNIT, records by RECORD) as commits.
pub(super) fn parse_commits(out: &str) -> Vec<Commit> {
    out.split(RECORD)
        .filter_map(|record| {
            let record = record.trim_start_matches('\n');
            let mut f = record.splitn(5, UNIT);
            let hash = f.next().filter(|h| !h.is_empty())?;
            Some(Commit {
                hash: hash.to_owned(),
                author: f.next()?.to_owned(),
                email: f.next()?.to_owned(),
                date: f.next()?.to_owned(),
                subject: f.next()?.trim_end().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn status_is_structured() {
        let out = "# branch.oid abc\n# branch.head main\n# branch.upstream origin/main\n# branch.ab +2 -1\n1 .M N... 100644 100644 100644 a b src/lib.rs\n1 A. N... 000000 100644 100644 0 b new.rs\n2 R. N... 100644 100644 100644 a b R100 to.rs\tfrom.rs\n? notes.txt\n";
        assert_eq!(
            serde_json::to_value(parse_status(out)).unwrap(),
            json!({
                "branch": "main", "upstream": "origin/main", "ahead": 2, "behind": 1, "clean": false,
                "files": [
                    { "path": "src/lib.rs", "index": "unchanged", "worktree": "modified" },
                    { "path": "new.rs", "index": "added", "worktree": "unchanged" },
                    { "path": "to.rs", "from": "from.rs", "index": "renamed", "worktree": "unchanged" }
                ],
                "untracked": ["notes.txt"]
            })
        );
    }

    #[test]
    fn diffs_and_logs_are_structured() {
        let diff = parse_diff(
            "3\t1\tsrc/lib.rs\n-\t-\tlogo.png\ndiff --git a/src/lib.rs b/src/lib.rs\n+x\n",
        );
        let diff = serde_json::to_value(diff).unwrap();
        assert_eq!(
            diff["files"],
            json!([{ "path": "src/lib.rs", "added": 3, "deleted": 1 }, { "path": "logo.png", "added": null, "deleted": null }])
        );
        assert!(diff["patch"].as_str().unwrap().starts_with("diff --git"));
        let log = parse_commits(
            "h1\u{1f}Ann\u{1f}a@x\u{1f}2026-01-01T00:00:00Z\u{1f}First\u{1e}\nh2\u{1f}Bo\u{1f}b@x\u{1f}2026-01-02T00:00:00Z\u{1f}Second\u{1e}\n",
        );
        assert_eq!(log.len(), 2);
        assert_eq!(log[1].subject, "Second");
    }
}
