//! Node-style scripts as components. A native skill's `scripts/execute.js` reads its
//! input from stdin (`fs.readFileSync(0)`) and prints its output. One that uses no
//! Node-only API can run as a component instead: [`eligibility`] says whether it may,
//! and why not; [`wrap`] turns it into a module for ComponentizeJS, with `require('fs')`,
//! `console`, and `process` shimmed onto the call's input and output.
//!
//! Eligibility is only the first filter: the install compares the component's answers
//! with the script's on the skill's examples, and keeps the script when they differ.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use serde_json::Value;

/// Modules a component cannot offer: processes, sockets, the OS.
const NODE_ONLY: [&str; 16] = [
    "child_process",
    "cluster",
    "dgram",
    "dns",
    "http",
    "http2",
    "https",
    "inspector",
    "module",
    "net",
    "os",
    "path",
    "tls",
    "v8",
    "vm",
    "worker_threads",
];

/// Other constructs a component cannot run, and why.
const UNSUPPORTED: [(&str, &str); 6] = [
    ("process.stdin", "reads stdin as a stream (`process.stdin`)"),
    ("process.chdir", "changes directory (`process.chdir`)"),
    ("process.cwd", "uses the working directory (`process.cwd`)"),
    (
        "\\p{",
        "uses Unicode property escapes (`\\p{…}`), which the component's JavaScript engine lacks",
    ),
    ("await ", "is asynchronous (`await`)"),
    (".then(", "is asynchronous (a promise's `.then`)"),
];

/// `fs` functions other than `readFileSync`: a component has no files.
const FILE_CALLS: [&str; 44] = [
    "access",
    "accessSync",
    "appendFile",
    "appendFileSync",
    "chmod",
    "chmodSync",
    "copyFile",
    "copyFileSync",
    "cp",
    "cpSync",
    "createReadStream",
    "createWriteStream",
    "exists",
    "existsSync",
    "lstat",
    "lstatSync",
    "mkdir",
    "mkdirSync",
    "mkdtemp",
    "mkdtempSync",
    "open",
    "openSync",
    "opendir",
    "opendirSync",
    "promises",
    "readdir",
    "readdirSync",
    "readFile",
    "readlink",
    "readlinkSync",
    "rename",
    "renameSync",
    "rm",
    "rmSync",
    "rmdir",
    "rmdirSync",
    "stat",
    "statSync",
    "unlink",
    "unlinkSync",
    "watch",
    "writeFile",
    "writeFileSync",
    "truncateSync",
];

/// `Ok` when `source` uses nothing a component cannot offer; else why it must stay a
/// native script, in words for `evo skill info`.
pub fn eligibility(source: &str) -> Result<(), String> {
    for module in required_modules(source) {
        let name = module.strip_prefix("node:").unwrap_or(&module);
        if name == "fs" {
            continue;
        }
        if NODE_ONLY.contains(&name) {
            return Err(format!("uses require('{module}'), a Node-only module"));
        }
        return Err(format!(
            "uses require('{module}'), which a component cannot load"
        ));
    }
    if let Some(why) = file_access(source) {
        return Err(why);
    }
    if let Some((_, why)) = UNSUPPORTED
        .iter()
        .find(|(needle, _)| source.contains(needle))
    {
        return Err((*why).to_owned());
    }
    if source.contains("import ") && source.contains(" from ") {
        return Err("is an ES module (`import … from`); only CommonJS scripts are wrapped".into());
    }
    Ok(())
}

/// Why `source` needs files, if it does: an `fs` function called (`fs.x(` or a
/// destructured `x(`) other than `readFileSync(0)` / `readFileSync('/dev/stdin')`, the
/// one read the wrapper serves from the call's input.
fn file_access(source: &str) -> Option<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut at = 0;
    while at < source.len() {
        let rest = &source[at..];
        let Some(start) = rest.find(is_ident) else {
            break;
        };
        let word_len = rest[start..]
            .find(|c| !is_ident(c))
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        let before = source[..at + start].chars().next_back();
        let after = rest[start + word_len..].trim_start();
        at += start + word_len;
        if before.is_some_and(is_ident) {
            continue;
        }
        let called = after.starts_with('(');
        let promises = word == "promises" && before == Some('.');
        if FILE_CALLS.contains(&word) && called || promises {
            return Some(format!("uses the file system (`fs.{word}`)"));
        }
        if word == "readFileSync" && called {
            let argument = after[1..].trim_start();
            let stdin = argument.starts_with('0')
                || argument
                    .get(1..)
                    .is_some_and(|a| a.starts_with("/dev/stdin"));
            if !stdin {
                return Some(
                    "reads a file (`fs.readFileSync` of a path; a component is served stdin only)"
                        .into(),
                );
            }
        }
    }
    None
}

/// The module names in `require('…')` calls, in order.
fn required_modules(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("require(") {
        rest = &rest[at + "require(".len()..];
        let trimmed = rest.trim_start();
        let Some(quote) = trimmed
            .chars()
            .next()
            .filter(|c| matches!(c, '\'' | '"' | '`'))
        else {
            found.push("(a computed name)".to_owned());
            continue;
        };
        let inner = &trimmed[1..];
        if let Some(end) = inner.find(quote) {
            found.push(inner[..end].to_owned());
        }
    }
    found
}

/// The ComponentizeJS module for `source` with `manifest` (the skill's `skill.json`):
/// it imports `./evo-skill.js`, runs the script once per call with the input as its
/// stdin, and parses what it printed as the output.
pub fn wrap(source: &str, manifest: &Value) -> String {
    // A shebang line is not JavaScript inside a function body.
    let body = match source.strip_prefix("#!") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, body)| body),
        None => source,
    };
    let mut manifest = manifest.clone();
    if let Some(fields) = manifest.as_object_mut() {
        fields.insert("mode".into(), Value::String("code".into()));
    }
    format!(
        r#"// Generated by evo from scripts/execute.js: the script, run as a component.
import {{ defineSkill, SkillError, context }} from './evo-skill.js';

const MANIFEST = {manifest};

class Exit {{
  constructor(code) {{
    this.code = code;
  }}
}}

function format(args) {{
  return args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
}}

function runScript(stdin) {{
  let stdout = '';
  const fs = {{
    readFileSync(file, encoding) {{
      if (file === 0 || file === '/dev/stdin') return stdin;
      throw new Error(`fs.readFileSync(${{JSON.stringify(file)}}) is not available to a component`);
    }},
  }};
  const require = (name) => {{
    if (name === 'fs' || name === 'node:fs') return fs;
    throw new Error(`require('${{name}}') is not available to a component`);
  }};
  const console = {{
    log: (...args) => {{ stdout += format(args) + '\n'; }},
    info: (...args) => {{ stdout += format(args) + '\n'; }},
    warn: (...args) => context.log('warn', format(args)),
    error: (...args) => context.log('warn', format(args)),
    debug: (...args) => context.log('debug', format(args)),
  }};
  const process = {{
    argv: ['node', 'scripts/execute.js'],
    env: {{}},
    exitCode: undefined,
    exit(code) {{ throw new Exit(code === undefined ? 0 : code); }},
    stdout: {{ write(text) {{ stdout += String(text); return true; }} }},
    stderr: {{ write(text) {{ context.log('warn', String(text)); return true; }} }},
  }};
  const module = {{ exports: {{}} }};
  try {{
    (function (require, console, process, module, exports) {{
{body}
    }})(require, console, process, module, module.exports);
  }} catch (e) {{
    if (!(e instanceof Exit)) throw e;
    if (e.code !== 0) throw SkillError.failed(`the script exited with status ${{e.code}}`);
  }}
  if (process.exitCode) throw SkillError.failed(`the script exited with status ${{process.exitCode}}`);
  return stdout;
}}

export const skill = defineSkill({{
  manifest: MANIFEST,
  execute(input) {{
    const printed = runScript(JSON.stringify(input));
    try {{
      return JSON.parse(printed);
    }} catch {{
      throw SkillError.failed(`the script did not print JSON: ${{printed.slice(0, 200)}}`);
    }}
  }},
}});
"#
    )
}

/// How long ComponentizeJS may take to build a script's component (seconds are usual);
/// past it the build is killed and the skill stays a script.
pub const BUILD_DEADLINE: Duration = Duration::from_secs(300);

/// Builds `source` (with `manifest`) into the component `out` with ComponentizeJS
/// (`EVO_COMPONENTIZE_JS`, the path of its `cli.js`), in a temporary directory, within
/// [`BUILD_DEADLINE`]. `Err` says why not, in words for `evo skill info`.
pub async fn componentize(source: &str, manifest: &Value, out: &Path) -> Result<(), String> {
    let tool = std::env::var_os("EVO_COMPONENTIZE_JS")
        .filter(|t| !t.is_empty() && Path::new(t).is_file())
        .ok_or("ComponentizeJS is not installed here (set EVO_COMPONENTIZE_JS to its cli.js)")?;
    let work = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let write = |name: &str, text: &str| {
        let path = work.path().join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write("skill.js", &wrap(source, manifest))?;
    write("evo-skill.js", super::templates::EVO_SKILL_JS)?;
    write("wit/skill.wit", super::templates::SKILL_WIT)?;
    let built = work.path().join("skill.wasm");
    let build = Command::new("node")
        .current_dir(work.path())
        .arg(&tool)
        .args(["skill.js", "--wit", "wit", "--world-name", "plugin"])
        .args(["--disable", "fetch-event", "--out"])
        .arg(&built)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(BUILD_DEADLINE, build)
        .await
        .map_err(|_| {
            format!(
                "ComponentizeJS did not finish within {} s",
                BUILD_DEADLINE.as_secs()
            )
        })?
        .map_err(|e| format!("could not start node: {e}"))?;
    if !output.status.success() || !built.is_file() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("ComponentizeJS could not build it: {last}"));
    }
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(&built, out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_that_reads_stdin_and_prints_is_eligible() {
        let script = "const fs = require('fs');\nconst input = JSON.parse(fs.readFileSync(0, 'utf8'));\nconsole.log(JSON.stringify({ n: input.n + 1 }));\n";
        assert_eq!(eligibility(script), Ok(()));
        let script = "const { readFileSync } = require('node:fs');\nconst text = readFileSync('/dev/stdin', 'utf8');\nconst open = { stat: 1 }.stat;\nconsole.log(JSON.stringify({ open }));\n";
        assert_eq!(eligibility(script), Ok(()));
    }

    #[test]
    fn node_only_apis_keep_a_script_native_and_say_why() {
        let cases = [
            (
                "const { execFileSync } = require('child_process');",
                "uses require('child_process'), a Node-only module",
            ),
            (
                "const path = require(\"node:path\");",
                "uses require('node:path'), a Node-only module",
            ),
            (
                "const lodash = require('lodash');",
                "uses require('lodash'), which a component cannot load",
            ),
            (
                "const m = require(name);",
                "uses require('(a computed name)'), which a component cannot load",
            ),
            (
                "process.stdin.on('data', f);",
                "reads stdin as a stream (`process.stdin`)",
            ),
            (
                "const w = 'x'.match(/[\\p{L}]+/u);",
                "uses Unicode property escapes (`\\p{…}`), which the component's JavaScript engine lacks",
            ),
            (
                "fs.writeFileSync('out.json', text);",
                "uses the file system (`fs.writeFileSync`)",
            ),
            (
                "const { readdirSync } = require('fs');\nfor (const f of readdirSync('.')) {}",
                "uses the file system (`fs.readdirSync`)",
            ),
            (
                "const p = require('fs').promises;",
                "uses the file system (`fs.promises`)",
            ),
            (
                "const rows = fs.readFileSync('data.csv', 'utf8');",
                "reads a file (`fs.readFileSync` of a path; a component is served stdin only)",
            ),
            (
                "import fs from 'fs';",
                "is an ES module (`import … from`); only CommonJS scripts are wrapped",
            ),
        ];
        for (script, why) in cases {
            assert_eq!(eligibility(script), Err(why.to_owned()), "{script}");
        }
    }

    #[test]
    fn the_wrapper_embeds_the_manifest_and_the_script_without_its_shebang() {
        let manifest =
            serde_json::json!({ "name": "inc", "description": "d", "input": {}, "output": {} });
        let module = wrap("#!/usr/bin/env node\nconsole.log('{}');\n", &manifest);
        assert!(module.contains(r#"const MANIFEST = {"description":"d","input":{},"mode":"code","name":"inc","output":{}};"#), "{module}");
        assert!(module.contains("\nconsole.log('{}');\n"));
        assert!(!module.contains("#!"));
    }
}
