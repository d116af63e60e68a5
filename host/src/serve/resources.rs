//! The files of the served instruction skills as MCP resources (`skill://NAME/PATH`):
//! listed a page at a time, read whole up to a cap.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourcesResult, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
};
use serde_json::json;

use super::Shared;
use crate::engine::loader::StaticExecutor;
use crate::skill::kernel::executor::ExecutorKind;
use crate::skill::kernel::table::RegisteredSkill;

/// Resources per `resources/list` page.
pub const RESOURCES_PAGE: usize = 100;
/// The largest resource file served whole.
const MAX_RESOURCE_BYTES: u64 = 16 << 20;

/// A page of resources from `cursor` (an index this server gave) on.
pub(super) fn list(
    shared: &Shared,
    cursor: Option<String>,
) -> Result<ListResourcesResult, McpError> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            McpError::invalid_params(format!("{cursor:?} is not a cursor this server gave"), None)
        })?,
    };
    let mut resources = Vec::new();
    let mut next = None;
    let mut index = 0usize;
    'skills: for skill in instruction_skills(shared) {
        let Some(files) = files_of(&skill) else {
            continue;
        };
        for file in files.listing() {
            if index >= start {
                if resources.len() == RESOURCES_PAGE {
                    next = Some(index.to_string());
                    break 'skills;
                }
                let mut resource = Resource::new(
                    format!("skill://{}/{}", skill.meta.name, file.path),
                    format!("{}/{}", skill.meta.name, file.path),
                )
                .with_mime_type(file.media_type)
                .with_size(file.bytes);
                if file.path == "SKILL.md" {
                    resource = resource.with_description(skill.meta.description.clone());
                }
                resources.push(resource);
            }
            index += 1;
        }
    }
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = next;
    Ok(result)
}

/// The resource `uri` names, whole.
pub(super) fn read(shared: &Shared, uri: &str) -> Result<ReadResourceResponse, McpError> {
    let (name, path) = parse_uri(uri).ok_or_else(|| unknown_resource(uri))?;
    let skill = shared
        .served(name)
        .filter(|s| s.kind() == ExecutorKind::Static)
        .ok_or_else(|| unknown_resource(uri))?;
    let files = files_of(&skill).ok_or_else(|| unknown_resource(uri))?;
    // Checks the path stays inside the skill and names a file.
    let resource = files.resource(path).map_err(|_| unknown_resource(uri))?;
    if resource.bytes > MAX_RESOURCE_BYTES {
        return Err(McpError::invalid_params(
            format!(
                "{uri} is {} bytes; the most served is {MAX_RESOURCE_BYTES}",
                resource.bytes
            ),
            None,
        ));
    }
    let full = files.dir().join(&resource.path);
    let bytes = std::fs::read(&full)
        .map_err(|e| McpError::internal_error(format!("could not read {uri}: {e}"), None))?;
    let contents = match String::from_utf8(bytes) {
        Ok(text) if resource.kind == "text" => ResourceContents::text(text, uri),
        Ok(text) => ResourceContents::blob(base64_of(text.as_bytes()), uri),
        Err(e) => ResourceContents::blob(base64_of(e.as_bytes()), uri),
    }
    .with_mime_type(resource.media_type);
    Ok(ReadResourceResult::new(vec![contents]).into())
}

/// The served instruction skills.
pub(super) fn instruction_skills(shared: &Shared) -> Vec<Arc<RegisteredSkill>> {
    shared
        .served_skills()
        .into_iter()
        .filter(|s| s.kind() == ExecutorKind::Static)
        .collect()
}

pub(super) fn files_of(
    skill: &RegisteredSkill,
) -> Option<&crate::skill::manifest::package::disclosure::SkillFiles> {
    skill
        .executor
        .as_any()
        .and_then(|any| any.downcast_ref::<StaticExecutor>())
        .map(StaticExecutor::files)
}

/// `skill://NAME/PATH` → (NAME, PATH).
fn parse_uri(uri: &str) -> Option<(&str, &str)> {
    uri.strip_prefix("skill://")?.split_once('/')
}

fn unknown_resource(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!("no resource {uri}; resources/list shows what this server has"),
        Some(json!({ "uri": uri })),
    )
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
