//! `evo skill info`: what a caller needs to know about a skill.

use evo_host::Error;
use evo_host::packages::InstallRecord;
use evo_host::sandbox::IsolationLevel;
use evo_host::skills::StaticExecutor;
use evo_host::{grants::Access, grants::MemoryAccess, grants::RequestedCapabilities};
use evo_host::{wasm::PlainComponent, wasm::PlainExecutor};
use evo_host::{wasm::WasmExecutor, wasm::WasmSkill};
use serde_json::json;

use crate::args::{self, Grants, Sources};
use crate::{Failure, Globals, internal, out};

pub(super) async fn info(
    globals: &Globals,
    skill: &str,
    sources: &Sources,
    grants: &Grants,
) -> Result<(), Failure> {
    let (host, _) = args::host_for(globals, sources, grants, skill).await?;
    // A plain component of many functions (a file, a directory, or installed, by its
    // name) is described whole: each function, and why the others are not skills.
    let component_named = |name: &str| {
        host.skills().iter().find_map(|s| {
            s.executor
                .as_any()?
                .downcast_ref::<PlainExecutor>()
                .map(PlainExecutor::component)
                .filter(|c| c.meta().name == name || c.skills().any(|m| m.name == name))
                .cloned()
        })
    };
    if host.skill(skill).is_none()
        && let Some(component) = component_named(skill)
    {
        return component_info(globals, skill, &component, &host);
    }
    let name = match host.resolve(skill).await {
        Err(Error::ChooseFunction { skills, .. })
            if let Some(component) = skills.first().and_then(|s| component_named(s)) =>
        {
            return component_info(globals, skill, &component, &host);
        }
        Err(_) => args::resolve(&host, skill).await?,
        Ok(name) => name,
    };
    let registered = host
        .skill(&name)
        .ok_or(Error::SkillNotFound { name: name.clone() })?;
    let wasm = registered
        .executor
        .as_any()
        .and_then(|any| any.downcast_ref::<WasmExecutor>())
        .map(WasmExecutor::skill);
    let plain = registered
        .executor
        .as_any()
        .and_then(|any| any.downcast_ref::<PlainExecutor>());
    let mut value = json!({ "manifest": registered.meta, "kind": registered.kind() });
    if let Some(plain) = plain {
        let component = plain.component();
        value["function"] = json!(plain.function());
        value["component"] = json!(component.meta().name);
        value["limits"] = json!(component.limits());
        value["grant"] = json!(component.grant());
        value["digest"] = json!(component.digest());
        value["loadedFrom"] = json!(component.load_source());
    }
    if let Some(skill) = wasm {
        value["limits"] = json!(skill.limits());
        value["grant"] = json!(skill.grant());
        value["apiVersion"] = json!(skill.info().api_version);
        value["sdk"] = json!(skill.info().sdk);
        value["digest"] = json!(skill.digest());
        value["loadedFrom"] = json!(skill.load_source());
    }
    let instructions = registered
        .executor
        .as_any()
        .and_then(|any| any.downcast_ref::<StaticExecutor>())
        .map(|s| s.files().instructions())
        .transpose()?;
    if let Some(instructions) = &instructions {
        value["instructions"] = json!({
            "sections": instructions.sections.iter().map(|s| json!({ "heading": s.heading, "level": s.level })).collect::<Vec<_>>(),
            "codeBlocks": instructions.code_blocks,
            "resources": instructions.resources,
        });
    }
    if registered.kind() == evo_host::skills::ExecutorKind::Native {
        let protections = host.sandbox_protections().await;
        value["isolation"] = json!({
            "level": IsolationLevel::of(&protections),
            "protections": protections,
        });
    }
    let record = InstallRecord::read(&evo_host::config::skills_dir(host.data_dir()).join(&name));
    if let Some(record) = &record {
        value["installed"] = json!(record);
    }
    if globals.json {
        out!("{value}");
        return Ok(());
    }
    let meta = &registered.meta;
    out!("{} {} — {}", meta.name, meta.version, meta.description);
    out!("  kind:       {}", registered.kind());
    if let Some(runs_as) = record.as_ref().and_then(InstallRecord::runs_as_text) {
        out!("  runs as:    {runs_as}");
    }
    out!("  category:   {}", meta.category);
    if !meta.tags.is_empty() {
        out!("  tags:       {}", meta.tags.join(", "));
    }
    if let Some(isolation) = value.get("isolation") {
        let level = IsolationLevel::of(
            &serde_json::from_value::<Vec<String>>(isolation["protections"].clone())
                .unwrap_or_default(),
        );
        out!("  isolation:  {} — {}", level.name(), level.describe());
    }
    if let Some(plain) = plain {
        let component = plain.component();
        out!(
            "  function:   {} of the component {} (plain WIT, no Evo SDK)",
            plain.function(),
            component.meta().name
        );
        print_limits(component.limits());
        print_grant(
            component.grant(),
            &component.meta().capabilities,
            &host.secrets(),
        );
        out!("  digest:     sha256:{}", component.digest());
    }
    match wasm {
        Some(skill) => print_wasm(skill, &host.secrets()),
        None if plain.is_some() => {}
        None => out!(
            "  timeout:    {} ms, {} retries",
            meta.timeout_ms,
            meta.retry
        ),
    }
    if !meta.calls.is_empty() {
        out!("  calls:      {}", meta.calls.join(", "));
    }
    if wasm.is_none() && plain.is_none() {
        // What it asks for, and what it gets here: the same rule as a Wasm skill's grant.
        print_requests(&meta.capabilities, registered.kind().as_str());
        let grant = host.grant_of(&name).unwrap_or_default();
        let native = registered.kind() == evo_host::skills::ExecutorKind::Native;
        for origin in &grant.hosts {
            if native {
                // A native script has no network of its own; granted hosts are reached
                // through the host's proxy in its workspace.
                out!(
                    "  granted:    outbound HTTP to {origin}, through the host's proxy at {}",
                    evo_host::sandbox::EGRESS_SOCKET
                );
            } else {
                out!("  granted:    outbound HTTP to {origin}");
            }
        }
        print_secrets(&grant, &host.secrets());
        for refused in &grant.refused {
            out!("  not granted: {refused}");
        }
    }
    if let Some(instructions) = &instructions {
        for section in &instructions.sections {
            out!(
                "  section:    {}{}",
                "  ".repeat(usize::from(section.level.saturating_sub(1))),
                section.heading
            );
        }
        if !instructions.code_blocks.is_empty() {
            let n = instructions.code_blocks.len();
            out!("  code:       {n} block{}", if n == 1 { "" } else { "s" });
        }
        for resource in &instructions.resources {
            out!(
                "  resource:   {} ({} bytes, {})",
                resource.path,
                resource.bytes,
                resource.kind
            );
        }
    }
    if let Some(record) = &record {
        let when = chrono::DateTime::from_timestamp_millis(
            i64::try_from(record.installed_at).unwrap_or(0),
        )
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
        out!("  installed:  {when}, files sha256:{}", record.digest);
        if !record.published_as.is_empty() {
            out!(
                "  named:      {} by its author, installed as {} (`--as`)",
                record.published_as,
                record.name
            );
        }
        if let Some(source) = &record.source {
            print_source(source);
        }
        let approved = &record.capabilities;
        if approved.is_empty() {
            out!("  approved:   nothing beyond computation, at install");
        }
        for request in requests(approved) {
            out!("  approved:   {request}, at install");
        }
    }
    // The one thing a caller needs: what to send and what comes back.
    out!("input schema:");
    out!(
        "{}",
        indent(&serde_json::to_string_pretty(&meta.input).map_err(internal)?)
    );
    out!("output schema:");
    out!(
        "{}",
        indent(&serde_json::to_string_pretty(&meta.output).map_err(internal)?)
    );
    Ok(())
}

/// Each thing `caps` asks for, in words (`outbound HTTP to https://api.github.com (the
/// GitHub API)`), as `evo skill install` and `evo skill info` print them.
pub(super) fn requests(caps: &RequestedCapabilities) -> Vec<String> {
    let reason = |r: &str| {
        if r.is_empty() {
            String::new()
        } else {
            format!(" ({r})")
        }
    };
    let mut lines = Vec::new();
    for dir in &caps.dirs {
        let access = match dir.access {
            Access::Read => "read-only",
            Access::ReadWrite => "read-write",
        };
        lines.push(format!(
            "directory {} ({access}){}",
            dir.path,
            reason(&dir.reason)
        ));
    }
    for host in &caps.hosts {
        lines.push(format!(
            "outbound HTTP to {}{}",
            host.host,
            reason(&host.reason)
        ));
    }
    for secret in &caps.secrets {
        lines.push(format!(
            "secret {} for {}{}",
            secret.name,
            secret.host,
            reason(&secret.reason)
        ));
    }
    if caps.llm {
        lines.push("the language model".into());
    }
    if caps.memory != MemoryAccess::None {
        lines.push(format!("memory ({})", caps.memory.as_str()));
    }
    lines
}

/// `source:` lines: the registry reference, manifest digest and signer.
pub(super) fn print_source(source: &evo_host::registry::RegistrySource) {
    out!("  source:     oci://{}", source.reference);
    out!("  manifest:   {}", source.digest);
    match &source.signer {
        Some(signer) => out!("  signed by:  {} ({})", signer.key, signer.fingerprint),
        None => out!("  signed by:  nobody Evo trusts (no [trust] key verified a signature)"),
    }
}

/// `requests:` lines: what the manifest asks for, before any grant, and what a skill of
/// `kind` uses by being one (an llm skill the model, a native script the programs its
/// sandbox holds).
pub(super) fn print_requests(caps: &RequestedCapabilities, kind: &str) {
    let mut lines = requests(caps);
    match kind {
        "llm" if !caps.llm => lines.push("the language model (an llm skill is a prompt for it)".into()),
        "native" => lines.push(
            "a Node process, which may run the programs of its sandbox (git, …; `evo doctor` shows how it is confined)"
                .into(),
        ),
        _ => {}
    }
    if lines.is_empty() {
        out!("  requests:   nothing (pure computation)");
    }
    for line in lines {
        out!("  requests:   {line}");
    }
}

/// `granted:` lines for the secrets of `grant`, saying which are not set yet.
fn print_secrets(grant: &evo_host::grants::Grant, secrets: &evo_host::secrets::Secrets) {
    for secret in &grant.secrets {
        let set = if secrets.value(&secret.name).is_some() {
            String::new()
        } else {
            format!(" (not set: `evo secret set {}`)", secret.name)
        };
        out!(
            "  granted:    secret {} for {}{set}",
            secret.name,
            secret.host
        );
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn print_wasm(skill: &WasmSkill, secrets: &evo_host::secrets::Secrets) {
    print_limits(skill.limits());
    print_grant(skill.grant(), &skill.meta().capabilities, secrets);
    out!(
        "  api:        evo:skill@{}{}",
        skill.info().api_version,
        skill
            .info()
            .sdk
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    );
    out!("  digest:     sha256:{}", skill.digest());
}

fn print_limits(limits: &evo_host::wasm::WasmLimits) {
    out!(
        "  limits:     {} ms, {} MiB memory, {} bytes output{}",
        limits.timeout_ms,
        limits.memory_mib,
        limits.output_bytes,
        limits
            .fuel
            .map(|f| format!(", {f} fuel"))
            .unwrap_or_default()
    );
}

/// What a Wasm component asks for (`requested`) and what `grant` gives it here.
fn print_grant(
    grant: &evo_host::grants::Grant,
    requested: &RequestedCapabilities,
    secrets: &evo_host::secrets::Secrets,
) {
    print_requests(requested, "wasm");
    print_held(grant, secrets);
}

/// What `grant` gives a skill here, and what it asked for and was not given.
pub(super) fn print_held(grant: &evo_host::grants::Grant, secrets: &evo_host::secrets::Secrets) {
    for dir in &grant.dirs {
        let access = match dir.access {
            Access::Read => "read-only",
            Access::ReadWrite => "read-write",
        };
        out!(
            "  granted:    {} → {} ({access})",
            dir.host.display(),
            dir.guest
        );
    }
    for host in &grant.hosts {
        out!("  granted:    outbound HTTP to {host}");
    }
    print_secrets(grant, secrets);
    if grant.llm {
        out!("  granted:    the language model");
    }
    if grant.memory != MemoryAccess::None {
        out!("  granted:    memory ({})", grant.memory.as_str());
    }
    for (key, value) in &grant.config {
        out!("  config:     {key} = {value:?}");
    }
    for refused in &grant.refused {
        out!("  not granted: {refused}");
    }
}

/// `evo skill info FILE.wasm` for a plain component of several functions: the
/// component, each function that is a skill, and each that is not with the reason.
fn component_info(
    globals: &Globals,
    file: &str,
    component: &PlainComponent,
    host: &evo_host::Host,
) -> Result<(), Failure> {
    let secrets = &host.secrets();
    let record = InstallRecord::read(
        &evo_host::config::skills_dir(host.data_dir()).join(&component.meta().name),
    );
    let skills: Vec<_> = component
        .skills()
        .map(|meta| {
            json!({
                "name": meta.name,
                "function": component.function_of(&meta.name),
                "description": meta.description,
                "input": meta.input,
                "output": meta.output,
            })
        })
        .collect();
    if globals.json {
        let value = json!({
            "component": component.meta(),
            "kind": "wasm",
            "skills": skills,
            "unusable": component.unusable(),
            "limits": component.limits(),
            "grant": component.grant(),
            "digest": component.digest(),
            "loadedFrom": component.load_source(),
            "installed": record,
        });
        out!("{value}");
        return Ok(());
    }
    let meta = component.meta();
    out!("{} {} — {}", meta.name, meta.version, meta.description);
    out!(
        "  kind:       wasm, a plain component: {} function{} callable as skills",
        skills.len(),
        if skills.len() == 1 { "" } else { "s" }
    );
    print_limits(component.limits());
    print_grant(component.grant(), &meta.capabilities, secrets);
    out!("  digest:     sha256:{}", component.digest());
    if let Some(source) = record.as_ref().and_then(|r| r.source.as_ref()) {
        print_source(source);
    }
    if std::path::Path::new(file).exists() {
        out!("skills (run one with `evo skill run {file}#FUNCTION`):");
    } else {
        out!("skills:");
    }
    let width = component.skills().map(|m| m.name.len()).max().unwrap_or(0);
    for meta in component.skills() {
        out!(
            "  {:width$}  {}  {}",
            meta.name,
            component.function_of(&meta.name).unwrap_or_default(),
            meta.description
        );
    }
    if !component.unusable().is_empty() {
        out!("not skills:");
        for unusable in component.unusable() {
            out!("  {}: {}", unusable.function, unusable.reason);
        }
    }
    Ok(())
}
