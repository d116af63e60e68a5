//! `evo tool …`: the tool registry — list, describe, call, and the call history.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;
use evo_host::Host;
use evo_host::RunOptions;
use evo_host::tools::ToolRequest;
use evo_host::{
    skills::CallFilter as Filter, skills::CallRecord as Record, skills::CallStatus as Status,
};
use evo_host::{tools::Always, tools::Confirmer};
use serde_json::json;

use super::args::{self, Grants, Sources};
use super::{Failure, Globals, internal, out};

#[derive(Debug, Subcommand)]
pub(crate) enum ToolCommand {
    /// List every tool with its permission level.
    List {
        #[command(flatten)]
        sources: Sources,
    },
    /// Show a tool's descriptor: parameters, return value, examples, notes.
    Describe {
        /// The tool (a name or an alias such as `Read`).
        name: String,
        /// Print the Markdown documentation page instead.
        #[arg(long)]
        markdown: bool,
        #[command(flatten)]
        sources: Sources,
    },
    /// Call a tool the way an agent does (`execute_tool`) and print its ToolResult.
    Call {
        /// The tool (a name or an alias).
        name: String,
        /// The arguments as JSON, or `-` to read them from stdin.
        #[arg(long, short, default_value = "{}")]
        input: String,
        /// The call's id, echoed as `call_id`.
        #[arg(long, default_value = "cli")]
        id: String,
        /// Confirm dangerous calls without asking.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
    /// The call history, newest first.
    History {
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Per-tool figures (calls, mean, p95, max, failure rate) and advice for slow tools.
    Stats {
        /// Only calls in this last period (e.g. 30m, 24h, 7d).
        #[arg(long, value_name = "PERIOD")]
        since: Option<String>,
    },
    /// Write the call history to a file (or stdout) as JSON or CSV.
    Export {
        /// json or csv.
        #[arg(long, default_value = "json")]
        format: String,
        /// The file to write (atomically); stdout when not given.
        #[arg(long, short)]
        output: Option<PathBuf>,
        #[command(flatten)]
        filter: FilterArgs,
    },
}

/// Which calls.
#[derive(Debug, clap::Args)]
pub(crate) struct FilterArgs {
    /// Only calls of this tool.
    #[arg(long)]
    tool: Option<String>,
    /// Only calls by this caller: cli, mcp (evo serve), an agent run, or the calling skill.
    #[arg(long)]
    caller: Option<String>,
    /// Only calls that ended so: success, error or blocked (refusals: the security log).
    #[arg(long)]
    status: Option<String>,
    /// Only calls in this last period (e.g. 30m, 24h, 7d).
    #[arg(long, value_name = "PERIOD")]
    since: Option<String>,
    /// Only calls that failed with this error code (e.g. PERMISSION_DENIED: what the
    /// sandbox refused from inside a skill).
    #[arg(long, value_name = "CODE")]
    code: Option<String>,
    /// At most this many (history: 20 unless given; export: all).
    #[arg(long)]
    limit: Option<u64>,
}

pub(crate) async fn run(command: ToolCommand, globals: &Globals) -> Result<(), Failure> {
    match command {
        ToolCommand::List { sources } => {
            let host = args::host(globals, &sources, &Grants::default()).await?;
            list(&host, globals.json)
        }
        ToolCommand::Describe {
            name,
            markdown,
            sources,
        } => {
            let host = args::host(globals, &sources, &Grants::default()).await?;
            let descriptor = host.tool_descriptor(&name)?;
            if markdown {
                out!("{}", descriptor.markdown(host.config().tools.locale));
            } else if globals.json {
                out!("{}", serde_json::to_string(&descriptor).map_err(internal)?);
            } else {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&descriptor).map_err(internal)?
                );
            }
            Ok(())
        }
        ToolCommand::Call {
            name,
            input,
            id,
            yes,
            sources,
            grants,
        } => {
            let arguments = super::skill::read_input(input)?;
            let host = args::host(globals, &sources, &grants).await?;
            let confirmer: Option<Arc<dyn Confirmer>> = if yes {
                Some(Arc::new(Always(true)))
            } else {
                crate::confirm::terminal()
            };
            let result = host
                .execute_tool(
                    ToolRequest {
                        id,
                        tool_name: name,
                        arguments,
                    },
                    RunOptions {
                        caller: Some("cli".into()),
                        single_call: true,
                        confirmer,
                        ..RunOptions::default()
                    },
                )
                .await;
            if let Err(e) = host.flush_stats() {
                eprintln!("warning: could not record the call: {e}");
            }
            if globals.json {
                // `success` as every other command's JSON has it.
                let mut value = serde_json::to_value(&result).map_err(internal)?;
                value["success"] = serde_json::json!(result.status == Status::Success);
                out!("{value}");
            } else if result.status == Status::Success {
                match result.output.get("content").and_then(|c| c.as_str()) {
                    Some(content) if result.metadata["tool"] == "read" => {
                        crate::write_stdout(format_args!("{content}"));
                    }
                    _ => out!(
                        "{}",
                        serde_json::to_string_pretty(&result.output).map_err(internal)?
                    ),
                }
            }
            match result.status {
                Status::Success => Ok(()),
                status => {
                    eprintln!(
                        "{}[{}]: {}",
                        status.name(),
                        result.code.as_deref().unwrap_or("ERROR"),
                        result.error.as_deref().unwrap_or_default()
                    );
                    if let Some(hint) = &result.hint {
                        eprintln!("  hint: {hint}");
                    }
                    // 3 refused before it ran, 2 a request at fault (an unknown tool, a
                    // missing parameter), 1 a tool that failed: the code's answer, as
                    // for `evo skill run` and the HTTP API.
                    Err(Failure::Reported(match (status, result.code.as_deref()) {
                        (Status::Blocked, _) => 3,
                        (_, Some(code)) => evo_host::errors::answer_for(code, false).exit,
                        (_, None) if result.bad_input => 2,
                        (_, None) => 1,
                    }))
                }
            }
        }
        ToolCommand::History { filter } => {
            let host = args::host(globals, &Sources::default(), &Grants::default()).await?;
            let mut filter = filter.resolve()?;
            filter.limit = filter.limit.or(Some(20));
            let records = host.history(&filter)?;
            if globals.json {
                out!("{}", serde_json::to_string(&records).map_err(internal)?);
                return Ok(());
            }
            if records.is_empty() {
                out!("no calls recorded (yet) that match");
            }
            for r in &records {
                out!(
                    "{}  {:<8} {:<14} {:<8} {:>9.1} ms  {}{}",
                    when(r.at_ms),
                    r.status.name(),
                    r.tool,
                    r.caller,
                    r.duration_ms,
                    r.arguments,
                    r.error
                        .as_ref()
                        .map(|e| format!("\n      {e}"))
                        .unwrap_or_default()
                );
            }
            Ok(())
        }
        ToolCommand::Stats { since } => {
            let host = args::host(globals, &Sources::default(), &Grants::default()).await?;
            let since_ms = since.as_deref().map(since_ms).transpose()?;
            let stats = host.tool_stats(since_ms)?;
            let locale = host.config().tools.locale;
            let advice = evo_host::skills::call_suggestions(&stats, locale);
            if globals.json {
                out!("{}", json!({ "tools": stats, "suggestions": advice }));
                return Ok(());
            }
            out!(
                "{:<16} {:>7} {:>10} {:>10} {:>10} {:>8}",
                "tool",
                "calls",
                "mean ms",
                "p95 ms",
                "max ms",
                "failed"
            );
            for s in &stats {
                let slow = if s.average_ms > evo_host::skills::SLOW_CALL_MS {
                    "  ⚠ over 500 ms"
                } else {
                    ""
                };
                out!(
                    "{:<16} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>7.1}%{slow}",
                    s.tool,
                    s.calls,
                    s.average_ms,
                    s.p95_ms,
                    s.max_ms,
                    s.failure_rate * 100.0
                );
            }
            for line in advice {
                out!("hint: {line}");
            }
            Ok(())
        }
        ToolCommand::Export {
            format,
            output,
            filter,
        } => {
            let host = args::host(globals, &Sources::default(), &Grants::default()).await?;
            let records = host.history(&filter.resolve()?)?;
            let bytes = match format.as_str() {
                "json" => serde_json::to_vec_pretty(&records).map_err(internal)?,
                "csv" => csv(&records)?,
                other => {
                    return Err(Failure::usage(
                        "INVALID_ARGUMENT",
                        format!("--format {other}: not an export format"),
                        Some("use json or csv"),
                    ));
                }
            };
            match output {
                None => {
                    crate::write_stdout(format_args!("{}", String::from_utf8_lossy(&bytes)));
                }
                Some(path) => {
                    write_atomic(&path, &bytes)?;
                    eprintln!("wrote {} calls to {}", records.len(), path.display());
                }
            }
            Ok(())
        }
    }
}

fn list(host: &Host, json: bool) -> Result<(), Failure> {
    let tools = host.list_tools();
    if json {
        out!("{}", serde_json::to_string(&tools).map_err(internal)?);
        return Ok(());
    }
    for t in &tools {
        let summary = super::skill::first_sentence(&t.description);
        out!(
            "{:<20} {:<10} {:<9} {summary}",
            t.name,
            t.permission.name(),
            t.kind
        );
    }
    Ok(())
}

impl FilterArgs {
    fn resolve(self) -> Result<Filter, Failure> {
        let status = self
            .status
            .map(|s| {
                Status::parse(&s).ok_or_else(|| {
                    Failure::usage(
                        "INVALID_ARGUMENT",
                        format!("--status {s}: not a status"),
                        Some("use success, error or blocked"),
                    )
                })
            })
            .transpose()?;
        Ok(Filter {
            tool: self.tool,
            caller: self.caller,
            status,
            since_ms: self.since.as_deref().map(since_ms).transpose()?,
            code: self.code,
            limit: self.limit,
        })
    }
}

/// The Unix time, in ms, `period` (`30s`, `30m`, `24h`, `7d`) ago.
fn since_ms(period: &str) -> Result<i64, Failure> {
    let bad = || {
        Failure::usage(
            "INVALID_ARGUMENT",
            format!("--since {period}: not a period"),
            Some("use a number and a unit: 30s, 30m, 24h or 7d"),
        )
    };
    let split = period.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (count, unit) = period.split_at(split);
    let count: i64 = count.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Ok(now - count.saturating_mul(seconds).saturating_mul(1_000))
}

/// `at_ms` as `YYYY-MM-DD HH:MM:SS` (UTC); a time chrono cannot hold (beyond year
/// 262,143) as its milliseconds.
fn when(at_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(at_ms).map_or_else(
        || format!("{at_ms} ms"),
        |at| at.format("%Y-%m-%d %H:%M:%S").to_string(),
    )
}

fn csv(records: &[Record]) -> Result<Vec<u8>, Failure> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| Failure::usage("INTERNAL_ERROR", e.to_string(), None);
    writer
        .write_record([
            "id",
            "time",
            "at_ms",
            "caller",
            "task_id",
            "tool",
            "arguments",
            "status",
            "duration_ms",
            "error",
        ])
        .map_err(fail)?;
    for r in records {
        writer
            .write_record([
                r.id.to_string(),
                when(r.at_ms),
                r.at_ms.to_string(),
                r.caller.clone(),
                r.task_id.clone(),
                r.tool.clone(),
                r.arguments.clone(),
                r.status.name().to_owned(),
                format!("{:.3}", r.duration_ms),
                r.error.clone().unwrap_or_default(),
            ])
            .map_err(fail)?;
    }
    writer
        .into_inner()
        .map_err(|e| Failure::usage("INTERNAL_ERROR", e.to_string(), None))
}

fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<(), Failure> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let io = |e: std::io::Error| {
        Failure::Evo(evo_host::Error::Io {
            path: path.to_owned(),
            source: e,
        })
    };
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    temp.write_all(bytes).map_err(io)?;
    temp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
