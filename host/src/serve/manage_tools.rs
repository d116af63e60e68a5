//! The MCP management tools (`evo serve --manage`): an agent extends the server it
//! uses — searches the configured registries, installs a skill from one, uninstalls
//! one, lists what is installed, shows and changes what a skill is granted — with its
//! user confirming every change.
//!
//! A change is asked of the user as a dangerous call is (see [`super::confirm`]): the
//! question names the skill, the digest and signer of what would be installed or is
//! installed, and what the skill asks for. A client that cannot be asked gets the
//! host's `[tools] confirm` policy (refused, unless the operator set `allow`). An
//! install installs exactly the digest the user was shown. Every change and refusal is a
//! row of the security log, by `mcp:CLIENT`.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Value, json};

use super::openapi::GrantValues;
use super::{Refusal, Shared};
use crate::error::{BlockReason, Error};
use crate::host::{Change, Operator, RegistryInstall};
use crate::skill::kernel::confirm::{ConfirmPolicy, Confirmation, Confirmer, Risk};
use crate::skill::kernel::executor::SkillOutput;

const INSTALL: &str = "evo_install_skill";
const UNINSTALL: &str = "evo_uninstall_skill";
const LIST: &str = "evo_list_skills";
const GRANTS: &str = "evo_skill_grants";
const GRANT: &str = "evo_grant";
const REVOKE: &str = "evo_revoke";
const SEARCH: &str = "evo_search_registries";

/// Whether `name` is one of the management tools.
pub(super) fn is_tool(name: &str) -> bool {
    [INSTALL, UNINSTALL, LIST, GRANTS, GRANT, REVOKE, SEARCH].contains(&name)
}

/// The management tools, as `tools/list` shows them.
pub(super) fn tools() -> Vec<Tool> {
    let grant_values = json!({
        "name": { "type": "string", "description": "The skill, or a plain component's name" },
        "dirs": { "type": "array", "items": { "type": "string" }, "description": "Host directories as HOST::GUEST or HOST::GUEST:ro (to revoke, the guest path is enough); each below a directory the server's operator lets be granted ([serve] grant_dirs)" },
        "hosts": { "type": "array", "items": { "type": "string" }, "description": "Outbound HTTP origins, [scheme://]host[:port]" },
        "secrets": { "type": "array", "items": { "type": "string" }, "description": "Secrets by name, put into its requests to its granted hosts" },
        "memory": { "type": "string", "enum": ["read", "read-write"], "description": "Access to long-term memory" },
        "llm": { "type": "boolean", "description": "The language model" }
    });
    let name_only = json!({ "name": { "type": "string", "description": "The skill, or a plain component's name" } });
    [
        (INSTALL, "Install a skill from one of the server's configured OCI registries (oci://REGISTRY/REPOSITORY:TAG). The user is shown what it is (digest, signer, what it asks for) and confirms; the new tools appear in tools/list.", json!({
            "reference": { "type": "string", "description": "oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST" },
            "overwrite": { "type": "boolean", "description": "Replace an installed skill of the same name" },
            "as": { "type": "string", "description": "Install under this name instead of the skill's own (beside a tool or skill of that name)" }
        }), vec!["reference"], false),
        (UNINSTALL, "Uninstall a skill (the user confirms); its tools leave tools/list.", name_only.clone(), vec!["name"], false),
        (LIST, "List the installed skills with where each came from: registry reference, digest, signer.", json!({}), vec![], true),
        (GRANTS, "Show what a skill asks for, what it holds, and its own grants.", name_only, vec!["name"], true),
        (GRANT, "Grant a skill a directory, an outbound host, a secret, memory or the language model, by name (the user confirms). A plain component with no manifest gets all of it; a skill with a manifest gets what it asks for within it.", grant_values.clone(), vec!["name"], false),
        (REVOKE, "Take away what a skill was granted by name (the user confirms).", grant_values, vec!["name"], false),
        (SEARCH, "Search the server's configured OCI registries for skills to install: each repository's name, title, description and keywords. Answers references to pass to evo_install_skill, and which registries offer no listing.", json!({
            "query": { "type": "string", "description": "What the skill should do, in a few words" }
        }), vec!["query"], true),
    ]
    .into_iter()
    .map(|(name, description, properties, required, read_only)| {
        let schema: JsonObject = serde_json::from_value(json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }))
        .unwrap_or_default();
        Tool::new(name, description, Arc::new(schema)).annotate(
            ToolAnnotations::new()
                .read_only(read_only)
                .destructive(!read_only)
                .open_world(name == INSTALL || name == SEARCH),
        )
    })
    .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Install {
    reference: String,
    #[serde(default)]
    overwrite: bool,
    #[serde(default, rename = "as")]
    as_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Search {
    query: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Named {
    name: String,
}

/// Unknown keys are refused by `values`' own rule (a flattened struct's).
#[derive(Deserialize)]
struct Granting {
    name: String,
    #[serde(flatten)]
    values: GrantValues,
}

/// Runs management tool `tool` with `input` for the client `client`; a change goes
/// ahead only when `confirmer` (the client's user) says yes, or, when nobody can be
/// asked, the host's policy allows it.
pub(super) async fn run(
    shared: Arc<Shared>,
    tool: String,
    input: Value,
    client: String,
    confirmer: Option<Arc<dyn Confirmer>>,
) -> Result<SkillOutput, Refusal> {
    let by = Operator {
        who: format!("mcp:{client}"),
        dirs: Some(shared.host.config().serve.grant_dirs.clone()),
    };
    let ask = Ask {
        shared: &shared,
        tool: &tool,
        logged: logged_as(&tool),
        confirmer,
        who: &by.who,
    };
    let output = act(&ask, &by, input).await;
    output.map(SkillOutput::from).map_err(Refusal::Failed)
}

/// What management tool `ask.tool` does with `input`.
async fn act(ask: &Ask<'_>, by: &Operator, input: Value) -> crate::Result<Value> {
    let (host, tool) = (&ask.shared.host, ask.tool);
    match tool {
        LIST => {
            let listing = host
                .manager()
                .and_then(|m| m.list_skills(&Default::default()));
            listing.map(|l| json!(l))
        }
        SEARCH => {
            let Search { query } = parse(tool, input)?;
            host.search_registries(&query, false)
                .await
                .map(|found| json!(found))
        }
        GRANTS => {
            let Named { name } = parse(tool, input)?;
            host.skill_grants(&name).map(|g| json!(g))
        }
        INSTALL => install(ask, parse(tool, input)?).await,
        UNINSTALL => {
            let Named { name } = parse(tool, input)?;
            uninstall(ask, &name).await
        }
        GRANT | REVOKE => {
            let Granting { name, values } = parse(tool, input)?;
            let change = if tool == GRANT {
                Change::Grant
            } else {
                Change::Revoke
            };
            change_grants(ask, &name, change, &values, by).await
        }
        _ => Err(Error::ToolNotFound {
            name: tool.to_owned(),
        }),
    }
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, input: Value) -> crate::Result<T> {
    serde_json::from_value(input).map_err(|e| Error::InvalidInput {
        skill: tool.to_owned(),
        reason: format!("the arguments do not fit: {e}"),
    })
}

/// The security log's name for what management tool `tool` changes: the CLI's and
/// the HTTP API's names for the same change.
fn logged_as(tool: &str) -> &'static str {
    match tool {
        INSTALL => "skill_install",
        UNINSTALL => "skill_uninstall",
        GRANT => "skill_grant",
        REVOKE => "skill_revoke",
        _ => "skill_manage",
    }
}

/// Who is asked before a change, and for which tool.
struct Ask<'a> {
    shared: &'a Shared,
    tool: &'a str,
    /// The row's name in the security log.
    logged: &'a str,
    confirmer: Option<Arc<dyn Confirmer>>,
    who: &'a str,
}

impl Ask<'_> {
    /// Asks the user to confirm `warning` about `arguments`; `Ok` to go ahead. A no,
    /// or nobody to ask under a `deny` policy, is a refusal written to the security log.
    async fn confirm(&self, warning: String, arguments: Value) -> crate::Result<()> {
        let request = Confirmation {
            tool: self.tool.to_owned(),
            arguments: arguments.clone(),
            risk: Risk::High,
            warning,
        };
        let (yes, why) = match &self.confirmer {
            Some(confirmer) => (confirmer.confirm(&request).await, "the user declined it"),
            None => (
                self.shared.host.config().tools.confirm == ConfirmPolicy::Allow,
                "this client cannot be asked to confirm it, and [tools] confirm is not \"allow\"",
            ),
        };
        if yes {
            return Ok(());
        }
        let error = Error::Blocked {
            tool: self.tool.to_owned(),
            message: format!("not done: {why}; nothing was changed"),
            reason: BlockReason::Confirmation,
        };
        self.shared
            .host
            .audit(self.logged, self.who, arguments, Err(&error));
        Err(error)
    }
}

async fn install(ask: &Ask<'_>, request: Install) -> crate::Result<Value> {
    let host = &ask.shared.host;
    let arguments = json!({ "reference": request.reference, "as": request.as_name });
    let preview = match host.preview_from_registry(&request.reference).await {
        Ok(preview) => preview,
        Err(e) => {
            host.audit(ask.logged, ask.who, arguments, Err(&e));
            return Err(e);
        }
    };
    let signer = preview.source.signer.as_ref().map_or_else(
        || "nobody (unsigned)".to_owned(),
        |s| format!("{} ({})", s.key, s.fingerprint),
    );
    let named = match &request.as_name {
        Some(name) => format!("{} as {name}", preview.name),
        None => preview.name.clone(),
    };
    let warning = format!(
        "install {named} from {} — digest {}, signed by {signer}; it asks for: {}",
        preview.source.reference,
        preview.source.digest,
        asks(&preview.skill.capabilities)
    );
    ask.confirm(warning, arguments.clone()).await?;
    let result = host
        .install_from_registry(
            &request.reference,
            RegistryInstall {
                overwrite: request.overwrite,
                expect_digest: Some(preview.source.digest.clone()),
                name: request.as_name.clone(),
                ..RegistryInstall::default()
            },
        )
        .await;
    host.audit(ask.logged, ask.who, arguments, result.as_ref().map(drop));
    result.map(|installed| json!(installed))
}

async fn uninstall(ask: &Ask<'_>, name: &str) -> crate::Result<Value> {
    let host = &ask.shared.host;
    let arguments = json!({ "skill": name });
    let installed = host
        .manager()?
        .list_skills(&Default::default())?
        .skills
        .into_iter()
        .find(|s| s.name == name);
    let Some(installed) = installed else {
        let error = Error::SkillNotFound {
            name: name.to_owned(),
        };
        host.audit(ask.logged, ask.who, arguments, Err(&error));
        return Err(error);
    };
    let from = installed.source.as_ref().map_or_else(
        || "a local file".to_owned(),
        |s| format!("{} ({})", s.reference, s.digest),
    );
    ask.confirm(
        format!("uninstall {name}, installed from {from}"),
        arguments.clone(),
    )
    .await?;
    let result = host.uninstall(name);
    host.audit(ask.logged, ask.who, arguments, result.as_ref().map(drop));
    result.map(|outcome| json!(outcome))
}

async fn change_grants(
    ask: &Ask<'_>,
    name: &str,
    change: Change,
    values: &GrantValues,
    by: &Operator,
) -> crate::Result<Value> {
    let host = &ask.shared.host;
    let values = values.to_values();
    let arguments = json!({ "skill": name, "values": values });
    // Refused before the user is asked about it: a change that cannot be made.
    if let Err(e) = host.check_grants(name, change, &values, by) {
        host.audit(ask.logged, ask.who, arguments, Err(&e));
        return Err(e);
    }
    let current = host.skill_grants(name)?;
    let what: Vec<String> = values
        .iter()
        .map(|v| {
            if v.value.is_empty() {
                v.kind.clone()
            } else {
                format!("{} {}", v.kind, v.value)
            }
        })
        .collect();
    let verb = match change {
        Change::Grant => "grant",
        Change::Revoke => "revoke from",
    };
    let record = host.installed_record(&current.kept_under);
    let provenance = record.map_or_else(String::new, |r| {
        let signer = r
            .source
            .as_ref()
            .and_then(|s| s.signer.as_ref())
            .map_or("nobody (unsigned)".to_owned(), |s| s.key.clone());
        format!(" — digest sha256:{}, signed by {signer}", r.digest)
    });
    let warning = format!(
        "{verb} {}{provenance}: {}; it asks for: {}",
        current.kept_under,
        what.join(", "),
        asks(&current.asked)
    );
    ask.confirm(warning, arguments).await?;
    host.change_grants(name, change, &values, by)
        .await
        .map(|grants| json!(grants))
}

/// What a skill asks for, in a phrase.
fn asks(capabilities: &crate::capabilities::RequestedCapabilities) -> String {
    let mut parts: Vec<String> = capabilities
        .dirs
        .iter()
        .map(|d| format!("directory {}", d.path))
        .collect();
    parts.extend(
        capabilities
            .hosts
            .iter()
            .map(|h| format!("host {}", h.host)),
    );
    parts.extend(
        capabilities
            .secrets
            .iter()
            .map(|s| format!("secret {}", s.name)),
    );
    if capabilities.llm {
        parts.push("the language model".into());
    }
    if capabilities.memory != crate::capabilities::MemoryAccess::None {
        parts.push(format!("memory ({})", capabilities.memory.as_str()));
    }
    if parts.is_empty() {
        "nothing (a plain component with no manifest gets only what is granted to it by name)"
            .into()
    } else {
        parts.join(", ")
    }
}
