//! What the docs say is what happens: every code block of README.md, docs/ and
//! docs/authoring/ is checked, each page in a fresh directory with a fresh data
//! directory. A block is one of:
//!
//! - `<!-- fixture: PATH -->`: the file PATH of this repository (which other tests build
//!   and run);
//! - `<!-- run -->`: run, command by command (`evo …`, `cd DIR`, `> FILE` for stdout, a
//!   line ending in `\` continued on the next); a command's comment may say what it
//!   prints (`# → TEXT`: its output holds TEXT, spaces aside) and how it ends
//!   (`(exit N)`; else it must succeed);
//! - `<!-- output -->`: what the last command of the run block before it printed;
//! - `<!-- transcript -->`: `$ COMMAND` lines, each followed by what it prints
//!   (memory ids may differ, consistently);
//! - `<!-- file: PATH -->`: written to PATH in the page's directory (a `skill.json`, the
//!   data directory's `.evo-home/evo.toml`) for the blocks after it;
//! - `<!-- not run: REASON -->`: shown only, for REASON (a model, the network, another
//!   node: what CI cannot have).
//!
//! The registry a page names at `localhost:5000` (the usual address of one run locally)
//! is the test's (`EVO_TEST_REGISTRY`, started by `scripts/registry.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

use evo_tests::cli::{author_command, stderr, stdout};
use evo_tests::skills;

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

/// One command of a run block: its text, and the comment after it (with the comment
/// lines under it).
#[derive(Debug, PartialEq)]
struct Step {
    command: String,
    comment: String,
}

/// The commands of a run block: `\` continues a line; a line that is only a comment
/// belongs to the command above it.
fn steps(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with('#') && pending.is_empty() {
            if let Some(last) = steps.last_mut() {
                last.comment.push(' ');
                last.comment.push_str(trimmed);
            }
            continue;
        }
        // A comment starts after two spaces or more, which no command here contains.
        let (command, comment) = match line.find("  #") {
            Some(at) => (line[..at].trim(), line[at..].trim()),
            None => (trimmed, ""),
        };
        if let Some(start) = command.strip_suffix('\\') {
            pending.push_str(start.trim());
            pending.push(' ');
            continue;
        }
        steps.push(Step {
            command: format!("{pending}{command}"),
            comment: comment.to_owned(),
        });
        pending.clear();
    }
    steps
}

/// What a comment says a command prints (`→ TEXT`) and its exit status (`(exit N)`).
fn expectations(comment: &str) -> (Option<String>, i32) {
    let status = comment
        .split("(exit ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let printed = comment.split_once('→').map(|(_, rest)| {
        let rest = rest.split("(exit ").next().unwrap_or(rest);
        rest.trim().trim_end_matches(['#', ',', ' ']).to_owned()
    });
    (printed.filter(|p| !p.is_empty()), status)
}

fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A page's directory: its working directory, its data directory, where `cd` went.
struct Page {
    name: String,
    home: PathBuf,
    cwd: PathBuf,
}

impl Page {
    /// Runs one command line as a user would; returns what it printed.
    fn run(&mut self, line: usize, step: &Step) -> String {
        let words = shlex::split(&step.command)
            .unwrap_or_else(|| panic!("{}:{line}: cannot split {:?}", self.name, step.command));
        let mut env = Vec::new();
        let mut rest = words.as_slice();
        while let Some((assignment, tail)) = rest.split_first()
            && let Some((name, value)) = assignment.split_once('=')
            && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            env.push((name.to_owned(), value.to_owned()));
            rest = tail;
        }
        let (rest, into) = match rest {
            [head @ .., redirect, file] if redirect == ">" => (head, Some(file.clone())),
            _ => (rest, None),
        };
        match rest {
            [cd, dir] if cd == "cd" => {
                self.cwd = self.cwd.join(dir);
                String::new()
            }
            [evo, args @ ..] if evo == "evo" => {
                let args: Vec<String> = args.iter().map(|a| local_registry(a)).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let out = author_command(&self.cwd, &self.home, &args)
                    .envs(env)
                    // English messages, whatever the machine's locale.
                    .env("LANG", "C.UTF-8")
                    .env_remove("LC_ALL")
                    .env_remove("LC_MESSAGES")
                    .output()
                    .expect("evo runs");
                let (printed, status) = expectations(&step.comment);
                let both = format!("{}{}", stdout(&out), stderr(&out));
                assert_eq!(
                    out.status.code(),
                    Some(status),
                    "{}:{line}: `{}` exited otherwise than the docs say:\n{both}",
                    self.name,
                    step.command
                );
                if let Some(printed) = printed {
                    assert!(
                        squeeze(&both).contains(&squeeze(&printed)),
                        "{}:{line}: `{}` does not print {printed:?}:\n{both}",
                        self.name,
                        step.command
                    );
                }
                if let Some(file) = into {
                    std::fs::write(self.cwd.join(file), stdout(&out).as_bytes()).unwrap();
                }
                stdout(&out)
            }
            _ => {
                assert!(
                    step.comment.contains("# once"),
                    "{}:{line}: `{}` is neither `evo`, `cd`, nor set-up marked `# once`",
                    self.name,
                    step.command
                );
                self.check_set_up(line, &step.command);
                String::new()
            }
        }
    }

    /// A set-up step marked `# once` is not run here: it would reach the network, and
    /// the test environment has installed the same thing already. What it installs must
    /// be exactly what the tests installed, so that the page's next commands are the
    /// ones tested.
    fn check_set_up(&self, line: usize, command: &str) {
        let scripts = workspace().join("scripts");
        let read = |path: PathBuf| {
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}:{line}: {}: {e}", self.name, path.display()))
        };
        if command == "npm install" {
            let project: serde_json::Value =
                serde_json::from_str(&read(self.cwd.join("package.json"))).unwrap();
            let tested: serde_json::Value =
                serde_json::from_str(&read(scripts.join("componentize-js/package.json"))).unwrap();
            assert_eq!(
                project["devDependencies"], tested["dependencies"],
                "{}:{line}: `npm install` would install other packages than the tests build with",
                self.name
            );
        } else if command.ends_with("pip install -r requirements.txt") {
            let script = read(scripts.join("componentize-py.sh"));
            let version = script
                .lines()
                .find_map(|l| l.strip_prefix("COMPONENTIZE_PY_VERSION="))
                .expect("componentize-py.sh pins a version");
            assert_eq!(
                read(self.cwd.join("requirements.txt")).trim(),
                format!("componentize-py=={version}"),
                "{}:{line}: `pip install` would install another componentize-py than the tests build with",
                self.name
            );
        } else if command == "rustup target add wasm32-wasip2" {
            assert!(
                read(scripts.join("toolchain.sh")).contains("--target wasm32-wasip2"),
                "{}:{line}: the tests' toolchain does not add the target the page adds",
                self.name
            );
        } else {
            panic!(
                "{}:{line}: `{command}` is a set-up step this test cannot check: teach \
                 `check_set_up` what it installs and where the tests install the same",
                self.name
            );
        }
    }
}

/// `text` with the registry at `localhost:5000` replaced by the test's.
fn local_registry(text: &str) -> String {
    if !text.contains("localhost:5000") {
        return text.to_owned();
    }
    let registry = std::env::var("EVO_TEST_REGISTRY").expect(
        "EVO_TEST_REGISTRY is not set: a page uses a registry; run ./scripts/test (or `source scripts/registry.sh` first)",
    );
    text.replace("localhost:5000", &registry)
}

/// Memory ids (`mem-` and 16 hex digits) renamed by order of appearance, so that a
/// transcript's ids match a run's when they are used consistently.
fn same_ids(text: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("mem-") {
        out.push_str(&rest[..at]);
        let id: String = rest[at + 4..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        if id.len() == 16 {
            let n = seen.iter().position(|s| *s == id).unwrap_or_else(|| {
                seen.push(id.clone());
                seen.len() - 1
            });
            out.push_str(&format!("mem-#{n}"));
            rest = &rest[at + 4 + id.len()..];
        } else {
            out.push_str("mem-");
            rest = &rest[at + 4..];
        }
    }
    out.push_str(rest);
    out
}

/// The pages: README.md, docs/*.md, docs/authoring/*.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![workspace().join("README.md")];
    for dir in ["docs", "docs/authoring"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(workspace().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

/// Where README.md's commands run: what a clone of this repository holds (its files
/// as `git ls-files` lists them, committed afresh), and the example components
/// `./scripts/demo` builds into `examples/`. Nothing else: a path the README names
/// that a clone does not have fails here.
fn clean_clone(dir: &Path) {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(workspace())
        .output()
        .expect("git runs");
    assert!(listed.status.success(), "git ls-files: {}", stderr(&listed));
    for file in listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let file = std::str::from_utf8(file).expect("the repository's paths are UTF-8");
        let from = workspace().join(file);
        // Listed but deleted in this working tree: a clone of it would not have it.
        if !from.is_file() {
            continue;
        }
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    // As `./scripts/demo` leaves them.
    for (built, name) in [
        (skills::CALCULATE, "calculate.wasm"),
        (skills::FILE_HEAD, "file_head.wasm"),
        (skills::NOTES, "notes.wasm"),
    ] {
        std::fs::copy(built, dir.join("examples").join(name)).unwrap();
    }
    let demo = std::fs::read_to_string(workspace().join("scripts/demo")).unwrap();
    assert!(
        demo.contains("cp \"$skills\"/{calculate,file_head,notes}.wasm examples/"),
        "scripts/demo no longer builds the components README.md runs into examples/"
    );
    commit_all(dir, "a clone");
}

/// `git init` in `dir` and one commit of everything there.
fn commit_all(dir: &Path, message: &str) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=Docs", "-c", "user.email=docs@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", message]);
}

/// What the commands of docs/ work on: the example components under the names the
/// pages give them, a copy of docs/, and a small Cargo project in a git repository (the
/// built-in tools' project).
fn fixtures(dir: &Path) {
    std::fs::copy(skills::CALCULATE, dir.join("calculate.wasm")).unwrap();
    std::fs::copy(skills::FILE_HEAD, dir.join("file_head.wasm")).unwrap();
    std::fs::copy(skills::NOTES, dir.join("notes.wasm")).unwrap();
    copy_dir(&workspace().join("docs"), &dir.join("docs"));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"docs-project\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let mut main = String::from("fn main() {\n    println!(\"{}\", add(1, 2));\n}\n\n");
    main.push_str("fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n");
    for n in 0..120 {
        main.push_str(&format!("// line {n} of the project's notes\n"));
    }
    main.push_str("#[test]\nfn adds() {\n    assert_eq!(add(1, 2), 3);\n}\n");
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    std::fs::write(dir.join(".gitignore"), "target/\n.evo-home/\n").unwrap();
    commit_all(dir, "the project the docs' examples work on");
}

#[test]
fn every_code_block_in_the_readme_and_the_docs_is_checked() {
    let mut checked = 0;
    let mut not_run = 0;
    for path in pages() {
        let name = path
            .strip_prefix(workspace())
            .unwrap()
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let work = tempfile::tempdir().unwrap();
        if name == "README.md" {
            clean_clone(work.path());
        } else {
            copy_dir(
                &workspace().join("docs/authoring/examples"),
                &work.path().join("examples"),
            );
            // The plain components docs/authoring/components.md builds from their sources.
            std::fs::copy(skills::PLAIN_KINDS, work.path().join("plain_kinds.wasm")).unwrap();
            std::fs::create_dir_all(work.path().join("io")).unwrap();
            std::fs::copy(skills::PLAIN_IO, work.path().join("io/skill.wasm")).unwrap();
            if !name.starts_with("docs/authoring/") {
                fixtures(work.path());
            }
        }
        let mut page = Page {
            name: name.clone(),
            home: work.path().join(".evo-home"),
            cwd: work.path().to_owned(),
        };
        let mut last_output: Option<String> = None;
        for block in blocks(&text) {
            let marker = block.marker.as_str();
            let line = block.line;
            if let Some(file) = marker.strip_prefix("fixture:") {
                let file = file.trim();
                let fixture = std::fs::read_to_string(workspace().join(file))
                    .unwrap_or_else(|e| panic!("{name}:{line}: {file}: {e}"));
                assert_eq!(
                    block.text.trim_end(),
                    fixture.trim_end(),
                    "{name}:{line}: the block differs from {file}"
                );
            } else if marker == "run" {
                let mut printed = String::new();
                for step in steps(&block.text) {
                    printed = page.run(line, &step);
                }
                last_output = Some(printed);
            } else if marker == "output" {
                let printed = last_output.take().unwrap_or_else(|| {
                    panic!("{name}:{line}: an output block needs a run block before it")
                });
                assert_eq!(
                    block.text.trim_end(),
                    printed.trim_end(),
                    "{name}:{line}: the output shown is not what the commands print"
                );
            } else if marker == "transcript" {
                let (mut shown, mut printed) = (String::new(), String::new());
                for text_line in block.text.lines() {
                    match text_line.strip_prefix("$ ") {
                        Some(command) => {
                            shown.push_str(text_line);
                            shown.push('\n');
                            printed.push_str(text_line);
                            printed.push('\n');
                            let step = Step {
                                command: command.to_owned(),
                                comment: String::new(),
                            };
                            printed.push_str(&page.run(line, &step));
                        }
                        None => {
                            shown.push_str(text_line);
                            shown.push('\n');
                        }
                    }
                }
                assert_eq!(
                    same_ids(shown.trim_end()),
                    same_ids(printed.trim_end()),
                    "{name}:{line}: the transcript is not what the commands print"
                );
            } else if let Some(file) = marker.strip_prefix("file:") {
                let target = work.path().join(file.trim());
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, local_registry(&block.text)).unwrap();
            } else if let Some(reason) = marker.strip_prefix("not run:") {
                assert!(
                    reason.trim().len() >= 10,
                    "{name}:{line}: say why the block is not run"
                );
                not_run += 1;
            } else {
                panic!(
                    "{name}:{line}: a code block needs `<!-- run -->`, `<!-- output -->`, `<!-- transcript -->`, `<!-- file: PATH -->`, `<!-- fixture: PATH -->` or `<!-- not run: REASON -->` above it"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} blocks checked");
    assert!(
        not_run * 3 < checked,
        "{not_run} of {checked} blocks are not run"
    );
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

#[test]
fn commands_continue_and_comments_say_what_they_print() {
    let text = "evo a \\\n  --b c   # → {\"x\": 1}\n                 # (exit 3)\nevo d\n";
    assert_eq!(
        steps(text),
        [
            Step {
                command: "evo a --b c".into(),
                comment: "# → {\"x\": 1} # (exit 3)".into(),
            },
            Step {
                command: "evo d".into(),
                comment: String::new(),
            },
        ]
    );
    assert_eq!(
        expectations("# → {\"x\": 1} # (exit 3)"),
        (Some("{\"x\": 1}".into()), 3)
    );
    assert_eq!(expectations("# shows the manifest"), (None, 0));
    assert_eq!(
        same_ids("mem-0123456789abcdef then mem-fedcba9876543210, mem-0123456789abcdef"),
        "mem-#0 then mem-#1, mem-#0"
    );
}

#[test]
fn the_examples_in_help_name_the_files_the_readme_names() {
    let home = tempfile::tempdir().unwrap();
    let help = stdout(&evo_tests::cli::evo(home.path(), &["--help"]));
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let files: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.ends_with(".wasm"))
        .collect();
    assert!(!files.is_empty(), "{help}");
    for file in files {
        assert!(
            readme.contains(&format!("evo skill run {file}"))
                || readme.contains(&format!("evo skill info {file}")),
            "`evo --help` names {file}, which README.md does not"
        );
    }
}

/// What names a document this repository does not hold: the design notes and the
/// requirements it was built from, the tracker's issues and the work sessions that
/// closed them live elsewhere, so the code, the docs, the scripts and the tool
/// descriptions the model reads state each rule themselves. Each pattern is a regular
/// expression; the last names no product this repository knows.
const OUTSIDE_REFERENCES: [&str; 7] = [
    r"DESIGN\.md|STYLE\.md|[Bb]lueprint|[Ss]eed's|seeds/",
    r"\b[Ii]ssues? #?\d+",
    r"\b[Ss]tops? \d+",
    r"§ ?\d",
    r"\b(this|last|previous|earlier|next) (work )?session\b",
    r"\b[Tt]he (\w+ )?issue (asks|allows|wants|says|proposed|requires)",
    r"EvoLang",
];

#[test]
fn the_repository_points_at_no_document_outside_it() {
    let patterns: Vec<regex::Regex> = OUTSIDE_REFERENCES
        .iter()
        .map(|p| regex::Regex::new(p).unwrap())
        .collect();
    let scan_file = |path: &Path, found: &mut Vec<String>| {
        // This file names what it looks for; a binary file names nothing.
        if path.ends_with("tests/tests/all/docs.rs") {
            return;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(hit) = patterns.iter().find_map(|p| p.find(line)) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, hit.as_str()));
            }
        }
    };
    fn scan(dir: &Path, found: &mut Vec<String>, scan_file: &dyn Fn(&Path, &mut Vec<String>)) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.file_type().unwrap().is_dir() {
                scan_file(&entry.path(), found);
            } else if !matches!(
                name.as_str(),
                "target" | ".git" | "node_modules" | "__pycache__" | "fuzz-corpus" | ".evo-demo"
            ) {
                scan(&entry.path(), found, scan_file);
            }
        }
    }
    // Every file of the repository: its code, docs, scripts, benches and records.
    let mut found = Vec::new();
    scan(&workspace(), &mut found, &scan_file);
    assert!(found.is_empty(), "{}", found.join("\n"));
}
