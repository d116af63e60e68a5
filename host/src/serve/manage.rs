//! The routes that change what a server offers: install (from a registry, or an
//! uploaded component or skill ZIP), uninstall, update, and each skill's grants. They
//! need the admin token ([`super::gate::admin_only`]); every change, and every refusal
//! of one, is a row of the security log under the caller `http`.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::Shared;
use super::openapi::{GrantValues, InstallQuery, InstallRequest, InstalledQuery};
use super::reply::{evo_failure, failure};
use crate::error::Error;
use crate::host::RegistryInstall;
use crate::host::{Change, Operator};
use crate::packages::InstallOptions;

/// Who the HTTP API's changes are made by, in the security log.
const WHO: &str = "http";

/// The management routes, for the admin token only.
pub(super) fn router(shared: &Arc<Shared>) -> Router<Arc<Shared>> {
    use axum::routing::{get, post};
    // An upload may be as large as a local install may be: the largest component (or
    // skill archive) accepted, not the largest message.
    let cap = shared
        .host
        .config()
        .engine
        .max_component_mb
        .saturating_mul(1 << 20)
        .max(crate::packages::MAX_ARCHIVE_BYTES);
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    Router::new()
        .route(
            "/v1/skills",
            post(install).layer(axum::extract::DefaultBodyLimit::max(cap)),
        )
        .route("/v1/skills/{name}", axum::routing::delete(uninstall))
        .route("/v1/skills/{name}/update", post(update))
        .route("/v1/skills/{name}/grants", get(grants).post(grant))
        .route("/v1/skills/{name}/grants/revoke", post(revoke))
        .route("/v1/installed", get(installed))
}

fn operator(shared: &Shared) -> Operator {
    Operator {
        who: WHO.to_owned(),
        dirs: Some(shared.host.config().serve.grant_dirs.clone()),
    }
}

/// `POST /v1/skills`: `{"reference": "oci://…"}` as JSON installs from a registry; a
/// component (`application/wasm`) or a skill ZIP (`application/zip`) as the body, with
/// `?file=NAME.wasm` naming it, installs what was sent.
async fn install(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<InstallQuery>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let host = &shared.host;
    if kind.starts_with("application/json") {
        let request: InstallRequest = match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(e) => {
                return failure(
                    "INVALID_INPUT",
                    format!("the request body is not an install request: {e}"),
                    Some(
                        "send {\"reference\": \"oci://REGISTRY/REPOSITORY:TAG\"}, or the component itself as application/wasm",
                    ),
                );
            }
        };
        let options = RegistryInstall {
            overwrite: request.overwrite,
            name: request.as_name.clone(),
            ..RegistryInstall::default()
        };
        let result = host
            .install_from_registry(&request.reference, options)
            .await;
        let arguments = json!({ "reference": request.reference, "as": request.as_name });
        host.audit("skill_install", WHO, arguments, result.as_ref().map(drop));
        return match result {
            Ok(installed) => (StatusCode::CREATED, Json(value_of(&installed))).into_response(),
            Err(e) => evo_failure(&e),
        };
    }
    let upload = kind.starts_with("application/wasm") || kind.starts_with("application/zip");
    if !upload {
        return failure(
            "INVALID_INPUT",
            format!(
                "an install is JSON (a registry reference), a component (application/wasm) or a skill ZIP (application/zip), not {kind:?}"
            ),
            Some("set Content-Type to one of those three"),
        );
    }
    let wasm = kind.starts_with("application/wasm");
    let cap = if wasm {
        host.config()
            .engine
            .max_component_mb
            .saturating_mul(1 << 20)
    } else {
        crate::packages::MAX_ARCHIVE_BYTES
    };
    if body.len() as u64 > cap {
        let error = Error::Registry {
            code: "ARTIFACT_TOO_LARGE",
            message: format!(
                "the upload is {} bytes, over the {cap} bytes a {} may be here",
                body.len(),
                if wasm { "component" } else { "skill archive" }
            ),
            transient: false,
        };
        host.audit(
            "skill_install",
            WHO,
            json!({ "bytes": body.len() }),
            Err(&error),
        );
        return evo_failure(&error);
    }
    let file = query
        .file
        .unwrap_or_else(|| if wasm { "component.wasm" } else { "skill.zip" }.to_owned());
    // Only a file name: what the component is called after, never a path to write.
    if file.is_empty() || file.contains(['/', '\\']) || file.starts_with('.') {
        return failure(
            "INVALID_INPUT",
            format!("file={file:?}: give a plain file name, like fs.wasm"),
            Some("the component is named after the file (without .wasm)"),
        );
    }
    let result = async {
        let dir = tempfile::tempdir().map_err(Error::io_at(&std::env::temp_dir()))?;
        let path = dir.path().join(&file);
        std::fs::write(&path, &body).map_err(Error::io_at(&path))?;
        host.install(
            &path,
            InstallOptions {
                overwrite: query.overwrite,
                name: query.as_name.clone(),
                ..InstallOptions::default()
            },
        )
        .await
    }
    .await;
    let arguments = json!({ "file": file, "bytes": body.len(), "as": query.as_name });
    host.audit("skill_install", WHO, arguments, result.as_ref().map(drop));
    match result {
        Ok(outcome) => (StatusCode::CREATED, Json(value_of(&outcome))).into_response(),
        Err(e) => evo_failure(&e),
    }
}

/// `DELETE /v1/skills/{name}`.
async fn uninstall(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let host = shared.host.clone();
    let result = {
        let (host, name) = (host.clone(), name.clone());
        tokio::task::spawn_blocking(move || host.uninstall(&name))
            .await
            .unwrap_or_else(|e| Err(Error::Engine(format!("the uninstall stopped: {e}"))))
    };
    host.audit(
        "skill_uninstall",
        WHO,
        json!({ "skill": name }),
        result.as_ref().map(drop),
    );
    match result {
        Ok(outcome) => Json(value_of(&outcome)).into_response(),
        Err(e) => evo_failure(&e),
    }
}

/// `POST /v1/skills/{name}/update` with a JSON body (`{}`: a form a page of another
/// site could send is not one): follows the tag it was installed from.
async fn update(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    Json(_): Json<Value>,
) -> Response {
    let host = &shared.host;
    let result = host.update_from_registry(&name).await;
    host.audit(
        "skill_update",
        WHO,
        json!({ "skill": name }),
        result.as_ref().map(drop),
    );
    match result {
        Ok(updated) => {
            let mut body = value_of(&updated);
            body["moved"] = json!(updated.from != updated.to);
            Json(body).into_response()
        }
        Err(e) => evo_failure(&e),
    }
}

/// `GET /v1/skills/{name}/grants`.
async fn grants(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    match shared.host.skill_grants(&name) {
        Ok(grants) => Json(value_of(&grants)).into_response(),
        Err(e) => evo_failure(&e),
    }
}

async fn grant(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    Json(values): Json<GrantValues>,
) -> Response {
    change(&shared, &name, Change::Grant, &values).await
}

async fn revoke(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    Json(values): Json<GrantValues>,
) -> Response {
    change(&shared, &name, Change::Revoke, &values).await
}

async fn change(shared: &Shared, name: &str, change: Change, values: &GrantValues) -> Response {
    let values = values.to_values();
    match shared
        .host
        .change_grants(name, change, &values, &operator(shared))
        .await
    {
        Ok(grants) => Json(value_of(&grants)).into_response(),
        Err(e) => evo_failure(&e),
    }
}

/// `GET /v1/installed`: what is installed, with where each came from.
async fn installed(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<InstalledQuery>,
) -> Response {
    let host = shared.host.clone();
    super::reply::blocking("listing the installed skills", move || {
        let listing = host.manager()?.list_skills(&crate::packages::ListQuery {
            name: query.name,
            tags: Vec::new(),
            page: query.page,
            limit: query.limit,
        })?;
        Ok(Json(value_of(&listing)))
    })
    .await
}

fn value_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
