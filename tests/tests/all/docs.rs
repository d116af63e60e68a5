//! `docs/authoring/` cannot drift: every code block in it is checked. A block under
//! `<!-- fixture: PATH -->` must be the file PATH of this repository (which other tests
//! build and run); a block under `<!-- run -->` is run, command by command, in a fresh
//! directory with a fresh data directory; a block under `<!-- output -->` must be what
//! the last command of the run block before it printed.

use evo_tests::cli::{author_command, stderr, stdout};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A fenced block and the marker comment above it.
#[derive(Debug)]
struct Block {
    marker: String,
    text: String,
    line: usize,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut lines = page.lines().enumerate().peekable();
    let mut marker = String::new();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim();
        if let Some(comment) = trimmed
            .strip_prefix("<!--")
            .and_then(|c| c.strip_suffix("-->"))
        {
            marker = comment.trim().to_owned();
            continue;
        }
        if trimmed.starts_with("```") {
            let mut text = String::new();
            for (_, line) in lines.by_ref() {
                if line.trim_start().starts_with("```") {
                    break;
                }
                text.push_str(line);
                text.push('\n');
            }
            found.push(Block {
                marker: std::mem::take(&mut marker),
                text,
                line: n + 1,
            });
            continue;
        }
        if !trimmed.is_empty() {
            marker.clear();
        }
    }
    found
}

/// Runs one `<!-- run -->` block's commands in `cwd` (which `cd` changes); returns the
/// last command's stdout. `evo` is this build's binary; a command other than `evo` or
/// `cd` must be set-up marked `# once`, which the test suite has done already (the
/// pinned toolchains are in the environment).
fn run_block(page: &str, block: &Block, cwd: &mut PathBuf, home: &Path) -> String {
    let mut last = String::new();
    for line in block.text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (command_text, comment) = match line.find("   #") {
            Some(at) => (line[..at].trim(), line[at..].trim()),
            None => (line, ""),
        };
        let words = shlex::split(command_text)
            .unwrap_or_else(|| panic!("{page}:{}: cannot split {command_text:?}", block.line));
        let mut env = Vec::new();
        let mut rest = words.as_slice();
        while let Some((assignment, tail)) = rest.split_first()
            && let Some((name, value)) = assignment.split_once('=')
            && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            env.push((name.to_owned(), value.to_owned()));
            rest = tail;
        }
        match rest {
            [cd, dir] if cd == "cd" => *cwd = cwd.join(dir),
            [evo, args @ ..] if evo == "evo" => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let out = author_command(cwd, home, &args)
                    .envs(env)
                    .output()
                    .expect("evo runs");
                assert!(
                    out.status.success(),
                    "{page}:{}: `{command_text}` failed:\n{}{}",
                    block.line,
                    stdout(&out),
                    stderr(&out)
                );
                last = stdout(&out);
            }
            _ => assert!(
                comment.contains("# once"),
                "{page}:{}: `{command_text}` is neither `evo`, `cd`, nor set-up marked `# once`",
                block.line
            ),
        }
    }
    last
}

#[test]
fn every_code_block_in_the_authoring_docs_is_a_fixture_or_runs() {
    let docs = workspace().join("docs/authoring");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    assert!(pages.len() >= 5, "{pages:?}");
    let mut checked = 0;
    for path in pages {
        let page = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let work = tempfile::tempdir().unwrap();
        let home = work.path().join(".evo-home");
        copy_dir(&docs.join("examples"), &work.path().join("examples"));
        let mut cwd = work.path().to_owned();
        let mut last_output: Option<String> = None;
        for block in blocks(&text) {
            let marker = block.marker.as_str();
            if let Some(file) = marker.strip_prefix("fixture:") {
                let file = file.trim();
                let fixture = std::fs::read_to_string(workspace().join(file))
                    .unwrap_or_else(|e| panic!("{page}:{}: {file}: {e}", block.line));
                assert_eq!(
                    block.text.trim_end(),
                    fixture.trim_end(),
                    "{page}:{}: the block differs from {file}",
                    block.line
                );
            } else if marker == "run" {
                last_output = Some(run_block(&page, &block, &mut cwd, &home));
            } else if marker == "output" {
                let printed = last_output.take().unwrap_or_else(|| {
                    panic!(
                        "{page}:{}: an output block needs a run block before it",
                        block.line
                    )
                });
                assert_eq!(
                    block.text.trim_end(),
                    printed.trim_end(),
                    "{page}:{}: the output shown is not what the commands print",
                    block.line
                );
            } else {
                panic!(
                    "{page}:{}: a code block needs `<!-- fixture: PATH -->`, `<!-- run -->` or `<!-- output -->` above it",
                    block.line
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} blocks checked");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn the_block_reader_sees_markers_and_fences() {
    let page = "intro\n<!-- run -->\n```sh\nevo --help\n```\ntext\n```json\n{}\n```\n";
    let found = blocks(page);
    assert_eq!(found.len(), 2);
    assert_eq!(
        (found[0].marker.as_str(), found[0].text.as_str()),
        ("run", "evo --help\n")
    );
    // Text between a marker and a block detaches the marker.
    assert_eq!(found[1].marker, "");
}
