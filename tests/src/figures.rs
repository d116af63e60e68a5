//! Published figures as recorded results. Every bench and measuring script writes what
//! it measured to `bench-results/NAME.json` (the value, its unit, the command, the
//! commit, the machine, the date), and the documents quote a record next to each
//! number with a marker (for a ratio, `A ÷ B`, two figures of the same run; against a
//! budget made of two costs, `A ÷ (B + C)`, three):
//!
//! ```text
//! 1.82 ms [1.81, 1.83]<!--fig tools/read-1mb-->
//! ```
//!
//! [`check`] finds a quoted number that differs from its record, a marker naming no
//! record, and a measured figure with no marker; [`stale`] lists the records whose
//! measured code changed after they were taken; [`quote`] rewrites each quoted number
//! from its record, at the precision the text shows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

/// A bench's `main`: runs its criterion groups, then records every benchmark they
/// measured in `bench-results/NAME.json`, over the code under the paths given.
///
/// ```ignore
/// evo_tests::recorded_main!("kernel", &["host/src/skill"], benches);
/// ```
#[macro_export]
macro_rules! recorded_main {
    ($name:literal, $paths:expr, $($group:path),+ $(,)?) => {
        fn main() {
            let recorder = $crate::figures::Recorder::new(
                $name,
                concat!("./scripts/bench ", $name),
                $paths,
            );
            $($group();)+
            criterion::Criterion::default()
                .configure_from_args()
                .final_summary();
            match recorder.unmeasured() {
                Some(mode) => println!(
                    "nothing recorded in bench-results/{}.json: criterion's {mode} measures nothing",
                    $name
                ),
                None => {
                    let recorded = recorder.criterion_all();
                    println!("{recorded} figure(s) recorded in bench-results/{}.json", $name);
                }
            }
        }
    };
}

/// The option of criterion's that runs benchmarks without measuring them, if `args`
/// (a bench's command line) name one: `--profile-time` (each benchmark run for a
/// profiler), `--test` (each run once) or `--list`. A run in such a mode records
/// nothing, not even the figures a bench times itself after criterion's: the machine was
/// busy with a profiler, or nothing was timed.
pub fn unmeasured_mode(args: impl IntoIterator<Item = String>) -> Option<&'static str> {
    args.into_iter().skip(1).find_map(|arg| {
        let option = arg.split('=').next().unwrap_or_default();
        ["--profile-time", "--test", "--list"]
            .into_iter()
            .find(|mode| *mode == option)
    })
}

/// The directory the records live in, at the workspace's root.
pub fn results_dir(workspace: &Path) -> PathBuf {
    workspace.join("bench-results")
}

/// The workspace this crate is built in.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The documents whose figures must quote a record.
pub const QUOTING: [&str; 3] = ["BENCHMARKS.md", "README.md", "CHANGELOG.md"];

/// Writes the figures of one bench (or script) run into `bench-results/NAME.json`,
/// keeping the figures of that record this run did not measure.
#[derive(Debug)]
pub struct Recorder {
    name: String,
    command: String,
    paths: Vec<String>,
    run: Value,
    workspace: PathBuf,
    /// When this recorder was made: criterion's files older than that are an earlier
    /// run's, not this one's.
    since: std::time::SystemTime,
    /// Criterion's mode that measures nothing, when this process runs in one: then
    /// nothing is written.
    unmeasured: Option<&'static str>,
}

impl Recorder {
    /// A recorder for the record `name`, measured by `command`, over the code under
    /// `paths` (what `--stale` compares with the record's commit).
    pub fn new(name: &str, command: &str, paths: &[&str]) -> Self {
        let workspace = workspace();
        let since = std::time::SystemTime::now();
        let mut run = run_facts(&workspace, paths);
        // Which run a figure came from (this process's first recorder's time): a ratio
        // divides two figures of one run.
        static RUN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let id = RUN.get_or_init(|| {
            since
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        });
        run["run"] = json!(id);
        Self {
            name: name.to_owned(),
            command: command.to_owned(),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            run,
            workspace,
            since,
            unmeasured: unmeasured_mode(std::env::args()),
        }
    }

    /// Criterion's option this process runs under that measures nothing (see
    /// [`unmeasured_mode`]), if any: then this recorder writes nothing.
    pub fn unmeasured(&self) -> Option<&'static str> {
        self.unmeasured
    }

    /// Records `value` in `unit` under `key`.
    pub fn value(&self, key: &str, value: f64, unit: &str) {
        self.write(key, json!({ "value": value, "unit": unit }));
    }

    /// Records a median with its interval.
    pub fn interval(&self, key: &str, value: f64, low: f64, high: f64, unit: &str) {
        self.write(
            key,
            json!({ "value": value, "low": low, "high": high, "unit": unit }),
        );
    }

    /// Records every benchmark criterion measured since this recorder was made, each
    /// under its full id (`group/function`), and returns how many.
    pub fn criterion_all(&self) -> usize {
        let mut found = BTreeMap::new();
        visit(&criterion_home(&self.workspace), &mut |path| {
            if path.ends_with("new/benchmark.json")
                && let Some(id) =
                    read_record(path).and_then(|b| b["full_id"].as_str().map(str::to_owned))
                && let Some(estimate) =
                    criterion_estimate(&path.with_file_name("estimates.json"), self.since)
            {
                found.insert(id, estimate);
            }
        });
        for (id, (median, low, high)) in &found {
            self.interval(id, *median, *low, *high, "ns");
        }
        found.len()
    }

    fn file(&self) -> PathBuf {
        results_dir(&self.workspace).join(format!("{}.json", self.name))
    }

    fn write(&self, key: &str, mut figure: Value) {
        if self.unmeasured.is_some() {
            return;
        }
        let path = self.file();
        let mut record = read_record(&path).unwrap_or_else(|| json!({ "figures": {} }));
        record["name"] = json!(self.name);
        record["command"] = json!(self.command);
        record["paths"] = json!(self.paths);
        let facts = self.run.as_object().expect("an object");
        for (k, v) in facts {
            figure[k] = v.clone();
        }
        record["figures"][key] = figure;
        let text = serde_json::to_string_pretty(&sorted(record)).expect("serialises") + "\n";
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("bench-results/");
        let temp = path.with_extension("json.tmp");
        std::fs::write(&temp, text).expect("writes the record");
        std::fs::rename(&temp, &path).expect("renames the record");
    }
}

/// Keys in order, so that a record's diff shows what changed.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, sorted(v)))
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect::<Map<_, _>>(),
        ),
        other => other,
    }
}

fn read_record(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn git(workspace: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .current_dir(workspace)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// What every figure of a run carries: the commit (and whether the measured code had
/// changes beyond it), the date, the machine and the compiler.
fn run_facts(workspace: &Path, paths: &[&str]) -> Value {
    let commit = git(workspace, &["rev-parse", "HEAD"]).unwrap_or_default();
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(paths);
    let dirty = git(workspace, &status).is_some_and(|s| !s.is_empty());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    json!({
        "commit": commit,
        "dirty": dirty,
        "date": date,
        "machine": {
            "cpu": cpu,
            "cores": cores,
            "os": format!("{} {kernel}", std::env::consts::OS),
            // With swap on, Evo's pool puts each Wasm slot's memory back whole after a
            // call (a memset of up to 4 MiB) instead of only the pages it wrote.
            "swap": evo_host::engine::wasm::resets_memory_whole(),
        },
        "rustc": rustc,
    })
}

/// Criterion's median and its 95 % interval, in nanoseconds, from the `estimates.json`
/// at `path`, if criterion wrote it after `since` (an earlier run's is not this one's).
fn criterion_estimate(path: &Path, since: std::time::SystemTime) -> Option<(f64, f64, f64)> {
    let written = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    if written < since {
        return None;
    }
    let estimates = read_record(path)?;
    let median = &estimates["median"];
    Some((
        median["point_estimate"].as_f64()?,
        median["confidence_interval"]["lower_bound"].as_f64()?,
        median["confidence_interval"]["upper_bound"].as_f64()?,
    ))
}

/// Where criterion writes its measurements, as criterion itself decides it: under the
/// target directory of the workspace `cargo bench` runs in, or under `target/` of the
/// working directory when the bench binary runs by itself.
fn criterion_home(workspace: &Path) -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    if std::env::var_os("CARGO").is_some() {
        return workspace.join("target/criterion");
    }
    PathBuf::from("target/criterion")
}

fn visit(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            visit(&path, f);
        } else {
            f(&path);
        }
    }
}

/// Every record in `bench-results/`, by name.
pub fn records(workspace: &Path) -> BTreeMap<String, Value> {
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(results_dir(workspace)) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json")
            && let Some(stem) = path.file_stem()
        {
            let record = read_record(&path).unwrap_or(Value::Null);
            found.insert(stem.to_string_lossy().into_owned(), record);
        }
    }
    found
}

/// A marker: `<!--fig RECORD/KEY-->`, right after the number it vouches for.
static MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<!--fig ([A-Za-z0-9_.-]+)/([^>]+?)-->").expect("regex"));

/// The figure a marker vouches for: a number, its unit, and an optional `[low, high]`.
static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d[\d,]*(?:\.\d+)?)(?:\s?(ns|µs|ms|s|minutes|min|B|kB|KB|KiB|MB|MiB|GB|GiB|%|×|k/s|/s|crates))?(?:\s\[(\d[\d,]*(?:\.\d+)?),\s(\d[\d,]*(?:\.\d+)?)\])?\**$")
        .expect("regex")
});

/// A measured figure in prose: a number with a unit of time, size, share or ratio.
static MEASURED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\w.§-])(\d[\d,]*(?:\.\d+)?)\s?(ns|µs|ms|MB|MiB|KiB|kB|GB|GiB|%|×|k/s|calls/s|tokens/s|crates)(?:\W|$)")
        .expect("regex")
});

/// Words right before a number that make it a budget, a cap or a setting, not a
/// measurement.
static NOT_MEASURED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(≤|≥|<|>|budget|cap|capped at|cut at|limit|at most|at least|up to|over|past|larger than|first|every|allocating an?|default|deadline|max|--[a-z-]+)\W*$")
        .expect("regex")
});

/// Words right after a number's unit that make it a setting or the size of an input.
static SETTING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[\s\W]{0,4}(\w+ ){0,2}(cap|limit|budget|heap|deadline|timeout|file|files|input|read|archive|download|component|interval)\b")
        .expect("regex")
});

/// The factor that turns a value in `unit` into the record's `base` unit.
fn factor(unit: &str, base: &str) -> Option<f64> {
    let f = match (unit, base) {
        ("ns", "ns") | ("B", "B") | ("%", "%") | ("×", "×") | ("", _) | ("/s", "/s") => 1.0,
        ("s", "s") | ("minutes" | "min", "min") => 1.0,
        ("µs", "ns") => 1e3,
        ("ms", "ns") => 1e6,
        ("s", "ns") => 1e9,
        ("ms", "s") => 1e-3,
        ("minutes" | "min", "s") => 60.0,
        ("kB" | "KB", "B") => 1e3,
        ("KiB", "B") => 1024.0,
        ("MB", "B") => 1e6,
        ("MiB", "B") => 1024.0 * 1024.0,
        ("GB", "B") => 1e9,
        ("GiB", "B") => 1024.0 * 1024.0 * 1024.0,
        ("k/s", "/s") => 1e3,
        ("crates", "count") => 1.0,
        _ => return None,
    };
    Some(f)
}

fn number(text: &str) -> f64 {
    text.replace(',', "").parse().expect("digits")
}

fn decimals(text: &str) -> usize {
    text.split_once('.').map_or(0, |(_, d)| d.len())
}

/// Whether `shown` (as printed) is `value` (in the shown unit) at the shown precision.
fn agrees(shown: &str, value: f64) -> bool {
    let step = 10f64.powi(-(decimals(shown) as i32));
    (number(shown) - value).abs() <= step / 2.0 + value.abs() * 1e-9
}

/// `value` printed with `decimals` digits after the point, thousands grouped as `like`.
fn print(value: f64, decimals: usize, like: &str) -> String {
    let text = format!("{value:.decimals$}");
    if !like.contains(',') {
        return text;
    }
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let digits: Vec<char> = int.chars().collect();
    let mut grouped = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(*c);
    }
    match frac {
        Some(f) => format!("{grouped}.{f}"),
        None => grouped,
    }
}

/// The figure a marker names: `KEY` in the record, or for `A ÷ B` the ratio of two
/// figures of the record measured in the same run, in `×`; `B` may be a sum,
/// `(B1 + B2)`, of figures of that run too.
fn figure_of(record: &Value, key: &str) -> Result<Value, String> {
    let one = |k: &str| {
        let f = &record["figures"][k];
        if f.is_null() {
            Err(format!("no figure {k:?}"))
        } else {
            Ok(f.clone())
        }
    };
    let Some((a, b)) = key.split_once(" ÷ ") else {
        return one(key);
    };
    let a = one(a)?;
    let divisors = match b.strip_prefix('(').and_then(|b| b.strip_suffix(')')) {
        Some(sum) => sum.split(" + ").map(one).collect::<Result<Vec<_>, _>>()?,
        None => vec![one(b)?],
    };
    let mut divisor = 0.0;
    for b in &divisors {
        if a["run"] != b["run"] || a["commit"] != b["commit"] || a["unit"] != b["unit"] {
            return Err(format!(
                "{key}: the two sides were not measured in the same run"
            ));
        }
        divisor += b["value"].as_f64().unwrap_or(f64::NAN);
    }
    let value = a["value"].as_f64().unwrap_or(f64::NAN) / divisor;
    Ok(json!({ "value": value, "unit": "×" }))
}

/// One problem with a quoted figure, as `file:line: what`.
fn problem(file: &str, text: &str, at: usize, what: String) -> String {
    let line = text[..at].matches('\n').count() + 1;
    format!("{file}:{line}: {what}")
}

/// Every disagreement between the documents and the records: a marker naming no
/// record or figure, a number that is not its record's (for a ratio, not the quotient
/// of two figures of one run), and a measured figure with no marker.
pub fn check(workspace: &Path) -> Vec<String> {
    let records = records(workspace);
    let mut problems = check_records(&records);
    for file in QUOTING {
        let Ok(text) = std::fs::read_to_string(workspace.join(file)) else {
            continue;
        };
        problems.extend(check_text(file, &text, &records));
    }
    problems
}

/// What is wrong with the records themselves: a figure missing a field every figure
/// has, and a bench's figure measured with swap on.
fn check_records(records: &BTreeMap<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, record) in records {
        let Some(figures) = record["figures"].as_object() else {
            problems.push(format!(
                "bench-results/{name}.json: not a record (no figures)"
            ));
            continue;
        };
        let bench = record["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("./scripts/bench "));
        for (key, figure) in figures {
            for field in ["value", "unit", "commit", "date", "machine"] {
                if figure.get(field).is_none() {
                    problems.push(format!("bench-results/{name}.json: {key} has no {field}"));
                }
            }
            if bench && figure["machine"]["swap"] == json!(true) {
                problems.push(format!(
                    "bench-results/{name}.json: {key} was measured with swap on, where Evo's pool puts each Wasm slot's memory back whole after a call; the benches are recorded with swap off: turn it off (`swapoff -a`) and run `{}` again",
                    record["command"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    problems
}

/// The record markers in `text`, less those shown as code (`` `<!--fig …-->` ``), as
/// the documentation of markers does.
fn markers(text: &str) -> impl Iterator<Item = regex::Captures<'_>> {
    MARKER
        .captures_iter(text)
        .filter(|m| !text[..m.get(0).expect("match").start()].ends_with('`'))
}

/// [`check`] for one document's text.
pub fn check_text(file: &str, text: &str, records: &BTreeMap<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut vouched = Vec::new();
    for marker in markers(text) {
        let whole = marker.get(0).expect("match");
        // A marker names a figure; a size in its key (`echo-bytes 64 KiB`) is not one.
        vouched.push(whole.range());
        let (name, key) = (&marker[1], &marker[2]);
        let figure = match records.get(name).map(|r| figure_of(r, key)) {
            Some(Ok(figure)) => figure,
            Some(Err(e)) => {
                problems.push(problem(
                    file,
                    text,
                    whole.start(),
                    format!("quotes {name}/{key}: {e}"),
                ));
                continue;
            }
            None => {
                problems.push(problem(
                    file,
                    text,
                    whole.start(),
                    format!("quotes {name}/{key}, which no record in bench-results/ holds"),
                ));
                continue;
            }
        };
        let figure = &figure;
        let before = &text[..whole.start()];
        let Some(quoted) = QUOTED.captures(before) else {
            problems.push(problem(
                file,
                text,
                whole.start(),
                format!("{name}/{key}: no number right before the marker"),
            ));
            continue;
        };
        vouched.push(quoted.get(0).expect("match").start()..whole.start());
        let unit = quoted.get(2).map_or("", |u| u.as_str());
        let base = figure["unit"].as_str().unwrap_or_default();
        let Some(f) = factor(unit, base) else {
            problems.push(problem(
                file,
                text,
                whole.start(),
                format!("{name}/{key}: shown in {unit:?}, recorded in {base:?}"),
            ));
            continue;
        };
        let mut pairs = vec![(&quoted[1], figure["value"].as_f64())];
        if let (Some(low), Some(high)) = (quoted.get(3), quoted.get(4)) {
            pairs.push((low.as_str(), figure["low"].as_f64()));
            pairs.push((high.as_str(), figure["high"].as_f64()));
        }
        for (shown, recorded) in pairs {
            match recorded {
                Some(v) if agrees(shown, v / f) => {}
                Some(v) => problems.push(problem(
                    file,
                    text,
                    whole.start(),
                    format!(
                        "{name}/{key}: the text says {shown} {unit}, the record {} {unit}",
                        print(v / f, decimals(shown), shown)
                    ),
                )),
                None => problems.push(problem(
                    file,
                    text,
                    whole.start(),
                    format!("{name}/{key}: the record has no interval"),
                )),
            }
        }
    }
    // Markers and fenced code aside, no measured figure may stand without a marker.
    let mut in_code = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if !in_code {
            let plain = strip_code_spans(line);
            for m in MEASURED.captures_iter(&plain) {
                let at = m.get(1).expect("number").start();
                let lead = &plain[..at];
                let covered = vouched.iter().any(|r| r.contains(&(offset + at)));
                let trail = &plain[m.get(2).expect("unit").end()..];
                if !covered && !NOT_MEASURED.is_match(lead) && !SETTING.is_match(trail) {
                    problems.push(problem(
                        file,
                        text,
                        offset + at,
                        format!(
                            "\"{} {}\" is a measured figure with no record marker",
                            &m[1], &m[2]
                        ),
                    ));
                }
            }
        }
        offset += line.len();
    }
    problems
}

/// `line` with inline code blanked to spaces (same length, so offsets still hold).
fn strip_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        }
        if in_code || c == '`' {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    out
}

/// Every record whose figures were taken before a change to the code it measures:
/// `(record, the command that measures it, figure keys, commits since)`.
pub fn stale(workspace: &Path) -> Vec<(String, String, Vec<String>, usize)> {
    let mut out = Vec::new();
    for (name, record) in records(workspace) {
        let paths: Vec<String> = record["paths"]
            .as_array()
            .map(|p| {
                p.iter()
                    .filter_map(|p| p.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut by_commit: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (key, figure) in record["figures"].as_object().into_iter().flatten() {
            let commit = figure["commit"].as_str().unwrap_or_default().to_owned();
            by_commit.entry(commit).or_default().push(key.clone());
        }
        for (commit, keys) in by_commit {
            let mut args = vec![
                "rev-list".to_owned(),
                "--count".into(),
                format!("{commit}..HEAD"),
                "--".into(),
            ];
            args.extend(paths.iter().cloned());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let since = git(workspace, &args)
                .and_then(|n| n.parse().ok())
                .unwrap_or(usize::MAX);
            if since > 0 {
                let command = record["command"].as_str().unwrap_or_default().to_owned();
                out.push((name.clone(), command, keys, since));
            }
        }
    }
    out
}

/// Rewrites every quoted number in the documents from its record, at the precision
/// the text shows; returns how many numbers changed.
pub fn quote(workspace: &Path) -> usize {
    let records = records(workspace);
    let mut changed = 0;
    for file in QUOTING {
        let path = workspace.join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for marker in markers(&text) {
            let whole = marker.get(0).expect("match");
            let figure = records
                .get(&marker[1])
                .and_then(|r| figure_of(r, &marker[2]).ok());
            let (Some(figure), Some(quoted)) = (figure, QUOTED.captures(&text[..whole.start()]))
            else {
                continue;
            };
            let unit = quoted.get(2).map_or("", |u| u.as_str());
            let Some(f) = factor(unit, figure["unit"].as_str().unwrap_or_default()) else {
                continue;
            };
            for (group, field) in [(1, "value"), (3, "low"), (4, "high")] {
                if let (Some(m), Some(v)) = (quoted.get(group), figure[field].as_f64()) {
                    let new = print(v / f, decimals(m.as_str()), m.as_str());
                    if new != m.as_str() {
                        edits.push((m.range(), new));
                    }
                }
            }
        }
        if edits.is_empty() {
            continue;
        }
        changed += edits.len();
        let mut text = text;
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        for (range, new) in edits {
            text.replace_range(range, &new);
        }
        let temp = path.with_extension("md.tmp");
        std::fs::write(&temp, text).expect("writes");
        std::fs::rename(&temp, &path).expect("renames");
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> BTreeMap<String, Value> {
        BTreeMap::from([(
            "tools".to_owned(),
            json!({ "figures": {
                "read": { "value": 1_823_000.0, "low": 1_810_000.0, "high": 1_830_400.0, "unit": "ns" },
                "size": { "value": 39_757_000.0, "unit": "B" },
            }}),
        )])
    }

    #[test]
    fn a_quoted_number_is_checked_against_its_record_at_the_shown_precision() {
        let ok =
            "| read | 1.82 ms [1.81, 1.83]<!--fig tools/read--> |\n39.8 MB<!--fig tools/size-->\n";
        assert_eq!(check_text("X.md", ok, &records()), Vec::<String>::new());
        let off = "read takes 1.90 ms<!--fig tools/read-->\n";
        let found = check_text("X.md", off, &records());
        assert_eq!(
            found,
            ["X.md:1: tools/read: the text says 1.90 ms, the record 1.82 ms"]
        );
    }

    #[test]
    fn a_measured_figure_without_a_marker_or_a_marker_without_a_record_fails() {
        let text = "The call takes 12.5 µs.\nBudget ≤ 1.5×, cap 64 MiB.\n`3 ms` in code\n2 ms<!--fig nope/x-->\n";
        let found = check_text("X.md", text, &records());
        assert_eq!(
            found,
            [
                "X.md:4: quotes nope/x, which no record in bench-results/ holds",
                "X.md:1: \"12.5 µs\" is a measured figure with no record marker",
                "X.md:4: \"2 ms\" is a measured figure with no record marker",
            ]
        );
    }

    #[test]
    fn a_ratio_divides_two_figures_of_one_run() {
        let mut records = records();
        let figures = &mut records.get_mut("tools").unwrap()["figures"];
        for (k, v) in [("evo", 12.0), ("floor", 10.0), ("old", 5.0)] {
            figures[k] = json!({ "value": v, "unit": "ns", "commit": "c1", "run": 7 });
        }
        figures["old"]["run"] = json!(6);
        let text = "1.20×<!--fig tools/evo ÷ floor--> and 2.4×<!--fig tools/evo ÷ old-->\n";
        assert_eq!(
            check_text("X.md", text, &records),
            [
                "X.md:1: quotes tools/evo ÷ old: evo ÷ old: the two sides were not measured in the same run",
                "X.md:1: \"2.4 ×\" is a measured figure with no record marker",
            ]
        );
    }

    #[test]
    fn a_ratio_may_divide_by_a_sum_of_figures_of_the_same_run() {
        let mut records = records();
        let figures = &mut records.get_mut("tools").unwrap()["figures"];
        for (k, v) in [
            ("evo", 26.0),
            ("client", 15.0),
            ("instance", 5.0),
            ("old", 5.0),
        ] {
            figures[k] = json!({ "value": v, "unit": "ns", "commit": "c1", "run": 7 });
        }
        figures["old"]["run"] = json!(6);
        let text = "1.30×<!--fig tools/evo ÷ (client + instance)-->\n\
                    1.2×<!--fig tools/evo ÷ (client + instance)-->\n\
                    1.3×<!--fig tools/evo ÷ (client + old)-->\n\
                    1.3×<!--fig tools/evo ÷ (client + nope)-->\n";
        assert_eq!(
            check_text("X.md", text, &records),
            [
                "X.md:2: tools/evo ÷ (client + instance): the text says 1.2 ×, the record 1.3 ×",
                "X.md:3: quotes tools/evo ÷ (client + old): evo ÷ (client + old): the two sides were not measured in the same run",
                "X.md:4: quotes tools/evo ÷ (client + nope): no figure \"nope\"",
                "X.md:3: \"1.3 ×\" is a measured figure with no record marker",
                "X.md:4: \"1.3 ×\" is a measured figure with no record marker",
            ]
        );
    }

    #[test]
    fn a_bench_run_by_criterion_without_measuring_records_nothing() {
        let args = |line: &str| line.split(' ').map(str::to_owned).collect::<Vec<_>>();
        for (line, mode) in [
            (
                "network --bench outbound --profile-time 6",
                Some("--profile-time"),
            ),
            ("network --bench --profile-time=6", Some("--profile-time")),
            ("network --test", Some("--test")),
            ("network --bench --list", Some("--list")),
            ("network --bench", None),
            ("network --bench remote", None),
            // The bench's own name is not an option.
            ("--test --bench", None),
        ] {
            assert_eq!(unmeasured_mode(args(line)), mode, "{line}");
        }
    }

    #[test]
    fn a_bench_figure_measured_with_swap_on_is_refused() {
        let figure = |swap: bool| {
            json!({ "value": 1.0, "unit": "ns", "commit": "c1", "date": "d",
                    "machine": { "cores": 2, "swap": swap } })
        };
        let records = BTreeMap::from([
            (
                "wasm".to_owned(),
                json!({ "command": "./scripts/bench wasm", "figures": {
                    "on": figure(true), "off": figure(false),
                }}),
            ),
            (
                "suite".to_owned(),
                json!({ "command": "./scripts/suite-cost", "figures": { "on": figure(true) } }),
            ),
        ]);
        assert_eq!(
            check_records(&records),
            [
                "bench-results/wasm.json: on was measured with swap on, where Evo's pool puts each Wasm slot's memory back whole after a call; the benches are recorded with swap off: turn it off (`swapoff -a`) and run `./scripts/bench wasm` again"
            ]
        );
    }

    #[test]
    fn printing_keeps_the_texts_grouping() {
        assert_eq!(print(14027.4, 0, "14,027"), "14,027");
        assert_eq!(print(1234567.891, 1, "1,234,567.9"), "1,234,567.9");
        assert_eq!(print(1234.5, 2, "1234.50"), "1234.50");
    }
}
