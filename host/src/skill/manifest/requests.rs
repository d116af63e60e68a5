//! What a manifest asks for, checked: capabilities (directories, hosts, secrets, memory,
//! the model) and a service skill's endpoint.

use super::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapabilities {
    #[serde(default)]
    dirs: Vec<RawDir>,
    #[serde(default)]
    llm: bool,
    #[serde(default)]
    memory: MemoryAccess,
    #[serde(default)]
    hosts: Vec<RawHost>,
    #[serde(default)]
    secrets: Vec<RawSecret>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecret {
    name: String,
    host: String,
    #[serde(default)]
    reason: String,
}

/// A host as a manifest may write it: a pattern, or a pattern with a reason.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawHost {
    Pattern(String),
    Request {
        host: String,
        #[serde(default)]
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDir {
    path: String,
    access: Access,
    #[serde(default)]
    reason: String,
}

/// The secrets a manifest asks for, before they are checked against its hosts (which a
/// service skill's endpoint adds to).
pub(super) struct PendingSecrets(Vec<RawSecret>);

/// What a manifest asks for, its secrets apart: they are checked by [`secrets`] once
/// every host request is known.
pub(super) fn capabilities(
    problems: &mut Vec<Problem>,
    value: Option<Value>,
) -> (RequestedCapabilities, PendingSecrets) {
    let Some(value) = value else {
        return (RequestedCapabilities::default(), PendingSecrets(Vec::new()));
    };
    let raw: RawCapabilities = match serde_json::from_value(value) {
        Ok(raw) => raw,
        Err(e) => {
            problems.push(problem(
                "capabilities",
                e.to_string(),
                "use { \"dirs\": [{ \"path\": \"/data\", \"access\": \"read\" }], \"llm\": bool, \"memory\": \"none\"|\"read\"|\"read-write\" }",
            ));
            return (RequestedCapabilities::default(), PendingSecrets(Vec::new()));
        }
    };
    let mut dirs = Vec::new();
    for (i, dir) in raw.dirs.into_iter().enumerate() {
        match DirRequest::new(&dir.path, dir.access, dir.reason) {
            Ok(request) => dirs.push(request),
            Err(message) => problems.push(problem(
                &format!("capabilities.dirs[{i}].path"),
                message,
                "use an absolute guest path without `..`, such as \"/data\"",
            )),
        }
    }
    let mut hosts = Vec::new();
    for (i, host) in raw.hosts.into_iter().enumerate() {
        let (pattern, reason) = match host {
            RawHost::Pattern(pattern) => (pattern, String::new()),
            RawHost::Request { host, reason } => (host, reason),
        };
        match HostPattern::parse(&pattern) {
            Ok(host) => hosts.push(HostRequest { host, reason }),
            Err(message) => problems.push(problem(
                &format!("capabilities.hosts[{i}]"),
                message,
                "use scheme://host[:port], such as \"https://api.github.com\" or \"https://*.example.com\"",
            )),
        }
    }
    let requested = RequestedCapabilities {
        dirs,
        llm: raw.llm,
        memory: raw.memory,
        hosts,
        secrets: Vec::new(),
    };
    (requested, PendingSecrets(raw.secrets))
}

/// Checks each secret against the hosts `capabilities` asks for (a service skill's
/// endpoint included) and adds those that name one of them.
pub(super) fn secrets(
    problems: &mut Vec<Problem>,
    pending: PendingSecrets,
    capabilities: &mut RequestedCapabilities,
) {
    let hosts = &capabilities.hosts;
    let mut secrets = Vec::new();
    for (i, secret) in pending.0.into_iter().enumerate() {
        if let Err(message) = evo_manifest::check_secret_name(&secret.name) {
            problems.push(problem(
                &format!("capabilities.secrets[{i}].name"),
                message,
                "name it as it is set with `evo secret set`, such as \"GITHUB_TOKEN\"",
            ));
            continue;
        }
        match HostPattern::parse(&secret.host) {
            Ok(host) if hosts.iter().any(|h: &HostRequest| h.host.covers(&host)) => {
                secrets.push(SecretRequest {
                    name: secret.name,
                    host,
                    reason: secret.reason,
                });
            }
            Ok(host) => problems.push(problem(
                &format!("capabilities.secrets[{i}].host"),
                format!(
                    "the secret is for {host}, which is not inside the hosts the skill asks for"
                ),
                "ask for the host in capabilities.hosts too, or name one of those hosts",
            )),
            Err(message) => problems.push(problem(
                &format!("capabilities.secrets[{i}].host"),
                message,
                "use scheme://host[:port], such as \"https://api.github.com\"",
            )),
        }
    }
    capabilities.secrets = secrets;
}

/// A service skill's endpoint, checked; its origin becomes a host request if the skill
/// does not ask for it already.
pub(super) fn service(
    problems: &mut Vec<Problem>,
    value: Option<Value>,
    mode: Mode,
    capabilities: &mut RequestedCapabilities,
) -> Option<ServiceSpec> {
    let value = match (value, mode) {
        (None, Mode::Service) => {
            problems.push(problem(
                "service",
                "a service skill needs its endpoint",
                "add \"service\": { \"url\": \"https://api.example.com/v1/run\" }",
            ));
            return None;
        }
        (None, _) => return None,
        (Some(_), mode) if mode != Mode::Service => {
            problems.push(problem(
                "service",
                "only a service skill has an endpoint",
                "set \"mode\": \"service\", or remove `service`",
            ));
            return None;
        }
        (Some(value), _) => value,
    };
    let spec: ServiceSpec = match serde_json::from_value(value) {
        Ok(spec) => spec,
        Err(e) => {
            problems.push(problem(
                "service",
                e.to_string(),
                "use { \"url\": \"https://…\", \"method\": \"POST\", \"headers\": { … }, \"pollMs\": 500 }",
            ));
            return None;
        }
    };
    let origin = spec.url.split_once("://").map(|(scheme, rest)| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        format!("{scheme}://{authority}")
    });
    let Some(Ok(host)) = origin.as_deref().map(HostPattern::parse) else {
        problems.push(problem(
            "service.url",
            format!("{:?} is not an http(s) URL", spec.url),
            "use the endpoint's full URL, such as \"https://api.example.com/v1/summarize\"",
        ));
        return None;
    };
    if !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&spec.method.as_str()) {
        problems.push(problem(
            "service.method",
            format!("{:?} is not a method a service skill uses", spec.method),
            "use POST (the default), PUT, PATCH, GET or DELETE",
        ));
        return None;
    }
    if !capabilities.hosts.iter().any(|h| h.host.covers(&host)) {
        capabilities.hosts.push(HostRequest {
            host,
            reason: "the service endpoint".into(),
        });
    }
    Some(spec)
}
