//! `cargo bench -p evo-tests --bench tools` (needs `rg` on PATH for the grep peer)
//!
//! The built-in file tools through the kernel (gates, history, statistics), each next to
//! the command-line tool that does the same work, in the same run (budget ≤ 1.5×):
//!
//! - `read` of a 1 MB, 16,384-line file, every line numbered, next to `cat -n`;
//! - `grep` for `fn ` over this repository (`.gitignore` respected, paths and line
//!   numbers) next to `rg -n 'fn '`;
//! - `glob "**/*.rs"` over this repository next to `find` pruning `target` and `.git`
//!   (glob also stats every file to sort by modification time; find does not sort).
//!
//! The peers are processes, so their figures include a fork and exec (~1 ms here); the
//! tools run in-process, which is how an agent or `evo serve` calls them. So each group
//! also has an in-process floor: the same tool called directly, without the kernel (no
//! gates, history or statistics), with the same input and the same answer; Evo's own
//! overhead is the difference. `read` also reads a 10 MB file (its budget: 100 ms).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::kernel::{Kernel, RunOptions, SkillContext};
use evo_host::tools::Tool;
use serde_json::{Value, json};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .canonicalize()
        .expect("exists")
}

fn context(root: &Path) -> SkillContext {
    let registry = Arc::new(SkillTable::new());
    evo_host::tools::register_builtins(&registry, root).expect("registers");
    Arc::new(Kernel::new(registry)).context(RunOptions::default())
}

/// `tool` called directly with `input` (its schema's defaults applied, as the kernel
/// applies them), without the kernel's gates, history and statistics.
fn direct(
    runtime: &tokio::runtime::Runtime,
    ctx: &SkillContext,
    tool: &dyn Tool,
    name: &str,
    input: &Value,
) -> Value {
    let mut input = input.clone();
    ctx.kernel()
        .registry()
        .get(name)
        .expect("registered")
        .input_schema()
        .apply_defaults(&mut input);
    runtime
        .block_on(tool.call(input, ctx.clone()))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs `program` to completion, checking it succeeded.
fn run(program: &str, args: &[&str], dir: &Path) -> Vec<u8> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (install it to run this bench)"));
    assert!(out.status.success(), "{program} failed");
    out.stdout
}

fn call(runtime: &tokio::runtime::Runtime, ctx: &SkillContext, tool: &str, input: &Value) -> Value {
    runtime
        .block_on(ctx.call(tool, input.clone()))
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let line = "The quick brown fox jumps over the lazy dog, again and agai\n";
    assert_eq!(line.len(), 60);
    let lines = 16_384;
    std::fs::write(dir.path().join("big.txt"), line.repeat(lines)).expect("writes");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = context(dir.path());
    let input = json!({ "file_path": "big.txt", "limit": lines });
    // Checked once before timing: the whole file, numbered as cat -n numbers it.
    let out = call(&runtime, &ctx, "read", &input);
    let cat = run("cat", &["-n", "big.txt"], dir.path());
    assert_eq!(
        out["content"].as_str().expect("text").as_bytes(),
        cat.as_slice()
    );
    assert_eq!(out["total_lines"], lines);

    let tool = evo_host::tools::read::Read::new(dir.path());
    assert_eq!(direct(&runtime, &ctx, &tool, "read", &input), out);

    let mut group = c.benchmark_group("read_1mb");
    group.bench_function("peer: cat -n", |b| {
        b.iter(|| black_box(run("cat", &["-n", "big.txt"], dir.path())));
    });
    group.bench_function("floor: read, called without the kernel", |b| {
        b.iter(|| black_box(direct(&runtime, &ctx, &tool, "read", &input)));
    });
    group.bench_function("evo: read (every line, through the kernel)", |b| {
        b.iter(|| black_box(call(&runtime, &ctx, "read", &input)));
    });
    group.finish();

    // 10 MB, 174,763 lines of 60 bytes: measured, not extrapolated from 1 MB.
    let lines = 10 * 1024 * 1024 / 60 + 1;
    std::fs::write(dir.path().join("huge.txt"), line.repeat(lines)).expect("writes");
    let input = json!({ "file_path": "huge.txt", "limit": lines });
    let out = call(&runtime, &ctx, "read", &input);
    assert_eq!(out["total_lines"], lines);
    let mut group = c.benchmark_group("read_10mb");
    group.sample_size(20);
    group.bench_function("peer: cat -n", |b| {
        b.iter(|| black_box(run("cat", &["-n", "huge.txt"], dir.path())));
    });
    group.bench_function("evo: read (every line, through the kernel)", |b| {
        b.iter(|| black_box(call(&runtime, &ctx, "read", &input)));
    });
    group.finish();
}

fn grep(c: &mut Criterion) {
    let root = repository();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = context(&root);
    let input = json!({ "pattern": "fn ", "output_mode": "content", "head_limit": 10_000 });
    let out = call(&runtime, &ctx, "grep", &input);
    let rg = String::from_utf8(run(
        "rg",
        &["-n", "--no-heading", "--color=never", "fn "],
        &root,
    ))
    .expect("utf-8");
    let mut ours: Vec<&str> = out["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|l| l.as_str().expect("line"))
        .collect();
    let mut theirs: Vec<&str> = rg.lines().collect();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(out["truncated"], false, "the limit holds every line");
    assert_eq!(ours, theirs, "the same lines as rg");

    let tool = evo_host::tools::grep::Grep::new(&root);
    assert_eq!(direct(&runtime, &ctx, &tool, "grep", &input), out);

    let mut group = c.benchmark_group("grep_repository");
    group.bench_function("peer: rg -n 'fn '", |b| {
        b.iter(|| {
            black_box(run(
                "rg",
                &["-n", "--no-heading", "--color=never", "fn "],
                &root,
            ))
        });
    });
    group.bench_function("floor: grep, called without the kernel", |b| {
        b.iter(|| black_box(direct(&runtime, &ctx, &tool, "grep", &input)));
    });
    group.bench_function("evo: grep content (through the kernel)", |b| {
        b.iter(|| black_box(call(&runtime, &ctx, "grep", &input)));
    });
    group.finish();
}

fn glob(c: &mut Criterion) {
    let root = repository();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = context(&root);
    let input = json!({ "pattern": "**/*.rs", "limit": 10_000 });
    let find_args = [
        ".", "(", "-path", "./target", "-o", "-path", "*/.*", ")", "-prune", "-o", "-name", "*.rs",
        "-type", "f", "-print",
    ];
    let out = call(&runtime, &ctx, "glob", &input);
    let found = String::from_utf8(run("find", &find_args, &root)).expect("utf-8");
    let mut ours: Vec<String> = out["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f.as_str().expect("path").to_owned())
        .collect();
    let mut theirs: Vec<String> = found
        .lines()
        .map(|l| l.trim_start_matches("./").to_owned())
        .collect();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs, "the same files as find");

    let tool = evo_host::tools::glob::Glob::new(&root);
    let floor = direct(&runtime, &ctx, &tool, "glob", &input);
    assert_eq!(floor["files"], out["files"], "the same files");

    let mut group = c.benchmark_group("glob_rs");
    group.bench_function("peer: find -name '*.rs' (target, .git pruned)", |b| {
        b.iter(|| black_box(run("find", &find_args, &root)));
    });
    group.bench_function("floor: glob, called without the kernel", |b| {
        b.iter(|| black_box(direct(&runtime, &ctx, &tool, "glob", &input)));
    });
    group.bench_function("evo: glob **/*.rs (through the kernel)", |b| {
        b.iter(|| black_box(call(&runtime, &ctx, "glob", &input)));
    });
    group.finish();
}

criterion_group!(benches, read, grep, glob);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/tools",
    "host/src/skill/kernel",
    "tests/benches/tools.rs",
];

evo_tests::recorded_main!("tools", PATHS, benches);
