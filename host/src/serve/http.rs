//! `evo serve --http ADDR`: MCP over streamable HTTP at `/mcp`, and a plain HTTP API
//! under `/v1` with its OpenAPI document at `/v1/openapi.json`.
//!
//! Security, as the MCP spec asks of local servers:
//!
//! - loopback by default; binding any other address needs a bearer token, which every
//!   request must then carry (`Authorization: Bearer …`, compared in constant time);
//! - a request from a browser page of another origin (an `Origin` header that is not
//!   loopback or one the operator allowed) is refused with 403 — DNS rebinding
//!   protection;
//! - on a loopback bind, a request whose `Host` does not name loopback is refused with
//!   403 on every route: a page whose DNS name was rebound to 127.0.0.1 sends its own
//!   name there, with or without an `Origin`;
//! - every refusal, the body limit's and the JSON reader's included, is the API's error
//!   shape `{ code, error, hint }`;
//! - MCP sessions have ids and expire after [`SESSION_IDLE`] without a request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::gate::{self, Gate};
use super::openapi::{AgentRun, CallRow, CallsQuery, Health, StorageHealth, openapi_document};
use super::reply::{blocking, evo_failure, failure};
use super::signin::Scope;
use super::signin::SignIns;
use super::{Server, Shared};
use crate::error::Error;

/// An MCP session with no request for this long is closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// How `evo serve --http` listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to bind.
    pub addr: SocketAddr,
    /// The bearer token every request must carry; required for a non-loopback bind.
    pub token: Option<String>,
    /// The token that also changes the server (install, uninstall, update, grant,
    /// revoke); without one, the API changes nothing.
    pub admin_token: Option<String>,
    /// Browser origins allowed besides loopback ones (`https://app.example.com`).
    pub allowed_origins: Vec<String>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A non-loopback bind without a token.
    #[error(
        "refusing to serve on {0} without a token: anyone who can reach it could run your skills"
    )]
    TokenRequired(SocketAddr),
    /// A token short or plain enough to be guessed.
    #[error(
        "the {which} carries about {bits} bits; at least {min} are needed so that it cannot be guessed",
        min = super::signin::MIN_TOKEN_BITS
    )]
    WeakToken {
        /// Which: `call token` or `admin token`.
        which: &'static str,
        /// About how many bits it carries.
        bits: u32,
    },
    /// The address could not be bound.
    #[error("could not listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Binds `options.addr` and serves until `shutdown` resolves; then takes no new calls,
/// gives those running [`super::stdio::GRACE`] to finish, and returns.
pub async fn serve(
    shared: Arc<Shared>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<(), StartError> {
    if !options.addr.ip().is_loopback() && options.token.is_none() {
        return Err(StartError::TokenRequired(options.addr));
    }
    for (which, token) in [
        ("call token", &options.token),
        ("admin token", &options.admin_token),
    ] {
        let bits = token.as_deref().map_or(u32::MAX, super::signin::token_bits);
        if bits < super::signin::MIN_TOKEN_BITS {
            return Err(StartError::WeakToken { which, bits });
        }
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: options.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: options.addr,
        source,
    })?;
    let stop = CancellationToken::new();
    tokio::spawn(shared.clone().watch_catalogue(stop.clone()));
    // Calls are recorded under this node's name: the machine's, and the port it serves.
    let kernel = shared.host.kernel();
    kernel.name_node(format!("{}:{}", kernel.node(), addr.port()));
    let app = router(shared.clone(), &options, addr, stop.clone());
    on_ready(addr);
    let graceful = {
        let shared = shared.clone();
        let stop = stop.clone();
        async move {
            shutdown.await;
            shared.drain();
            let deadline = tokio::time::Instant::now() + super::stdio::GRACE;
            while !shared.idle() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            shared.abort();
            stop.cancel();
        }
    };
    // The console's sign-in throttles wrong tokens by the client's address.
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(graceful)
        .await
        .map_err(|source| StartError::Bind { addr, source });
    shared.flush_stats().await;
    served
}

/// The whole application: `/mcp`, `/v1/…`, behind the token and origin checks.
pub fn router(
    shared: Arc<Shared>,
    options: &HttpOptions,
    bound: SocketAddr,
    stop: CancellationToken,
) -> Router {
    let loopback = bound.ip().is_loopback();
    let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .flat_map(|host| [format!("http://{host}:*"), format!("https://{host}:*")])
        .collect();
    origins.extend(options.allowed_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins.clone())
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(shared.settings.max_message_kb << 10);
    if !loopback {
        // Remote clients name the server by whatever host they reach it at; the token
        // is what keeps strangers out.
        config = config.with_allowed_hosts(Vec::<String>::new());
    }
    #[cfg(feature = "postgres")]
    if let Some(pg) = shared.host.storage().shared() {
        // Nodes behind a load balancer: a session started on one goes on on another.
        config.session_store = Some(Arc::new(super::sessions::PgSessions(pg.clone())));
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let mcp = StreamableHttpService::new(
        {
            let shared = shared.clone();
            move || Ok(Server::new(shared.clone()))
        },
        Arc::new(sessions),
        config,
    );
    let sign_ins = SignIns::new(&[
        (options.token.as_deref(), Scope::Call),
        (options.admin_token.as_deref(), Scope::Admin),
    ]);
    // Nodes behind a load balancer: a browser signed in on one is signed in on all.
    #[cfg(feature = "postgres")]
    let sign_ins = sign_ins.shared(shared.host.storage().shared().cloned());
    let gate = Gate::new(
        options.token.as_deref(),
        options.admin_token.as_deref(),
        origins,
        options.allowed_origins.clone(),
        loopback,
        bound.port(),
        sign_ins,
    );
    let manage = super::manage::router(&shared).route_layer(axum::middleware::from_fn_with_state(
        gate.clone(),
        gate::admin_only,
    ));
    Router::new()
        .route("/v1/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/openapi.json", get(openapi))
        .route("/v1/skills", get(super::skills::list))
        .route("/v1/skills/{name}", get(super::skills::get))
        .route("/v1/skills/{name}/call", post(super::skills::call))
        .route("/v1/calls", get(list_calls))
        .route("/v1/calls/live", get(live_calls))
        .route("/v1/stats", get(super::stats::stats))
        .route("/v1/memory/search", post(super::memory::search))
        .route("/v1/memory/entries/{id}", get(super::memory::entry))
        .route("/v1/memory/logs", get(super::memory::log_days))
        .route("/v1/memory/logs/{day}", get(super::memory::log))
        .route("/v1/agent/run", post(agent_run))
        .route(crate::remote::protocol::PATH, get(super::ws::upgrade))
        .merge(manage)
        .with_state(shared.clone())
        .merge(super::console::router(gate.clone()))
        .nest_service("/mcp", mcp)
        .layer(DefaultBodyLimit::max(shared.settings.max_message_kb << 10))
        .layer(axum::middleware::map_response(gate::as_error_body))
        .layer(axum::middleware::from_fn_with_state(gate, gate::check))
}

/// The figures for Prometheus, in the OpenMetrics text format.
async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    let memory = shared.host.memory().clone();
    // A count in the store (a round trip to PostgreSQL when shared); 0 if it fails.
    let memory_entries = tokio::task::spawn_blocking(move || memory.status())
        .await
        .ok()
        .and_then(|status| status.ok())
        .map_or(0, |status| status.entries as u64);
    let engine = shared.host.wasm_engine();
    let (components_from_cache, components_compiled) = engine.map_or((0, 0), |e| e.loads());
    let scraped = crate::skill::observe::metrics::Scraped {
        instances: engine.map_or(0, |engine| engine.live_instances() as u64),
        running: shared.running() as u64,
        queued: shared.queued() as u64,
        slots: shared.settings.max_calls as u64,
        skills: shared.host.skills().len() as u64,
        memory_entries,
        memory_decisions: shared
            .host
            .memory()
            .decisions_made()
            .iter()
            .map(|(action, count)| (action.as_str(), *count))
            .collect(),
        components_from_cache,
        components_compiled,
    };
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::skill::observe::metrics::Metrics::CONTENT_TYPE,
        )],
        shared.host.metrics().encode(scraped),
    )
        .into_response()
}

async fn health(State(shared): State<Arc<Shared>>) -> (StatusCode, Json<Health>) {
    let storage = shared.host.storage().clone();
    // A round trip to PostgreSQL (bounded by the pool's wait); nothing for SQLite.
    let reached: crate::Result<()> = match &storage {
        crate::storage::Storage::Local(_) => Ok(()),
        #[cfg(feature = "postgres")]
        crate::storage::Storage::Shared(_) => tokio::task::spawn_blocking(move || storage.ping())
            .await
            .unwrap_or_else(|e| Err(Error::Engine(e.to_string()))),
    };
    let kind = match shared.host.storage() {
        crate::storage::Storage::Local(_) => "sqlite",
        #[cfg(feature = "postgres")]
        crate::storage::Storage::Shared(_) => "postgres",
    };
    let (code, status) = match (&reached, shared.draining.is_cancelled()) {
        // A balancer stops sending new requests; the calls running finish.
        (_, true) => (StatusCode::SERVICE_UNAVAILABLE, "draining"),
        (Err(_), false) => (StatusCode::SERVICE_UNAVAILABLE, "storage-unreachable"),
        (Ok(()), false) => (StatusCode::OK, "ok"),
    };
    (
        code,
        Json(Health {
            status: status.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            skills: shared.served_skills().len(),
            calls: shared.running(),
            instances: shared
                .host
                .wasm_engine()
                .map_or(0, crate::engine::wasm::WasmEngine::live_instances),
            storage: StorageHealth {
                kind: kind.into(),
                reachable: reached.is_ok(),
                error: reached.err().map(|e| e.to_string()),
            },
        }),
    )
}

/// Most calls one `GET /v1/calls` lists.
const MAX_LISTED_CALLS: u64 = 1_000;

async fn list_calls(
    State(shared): State<Arc<Shared>>,
    axum::extract::Query(query): axum::extract::Query<CallsQuery>,
) -> Response {
    use crate::skill::observe::store::{Filter, Status};
    let status = match query.status.as_deref().map(|s| (s, Status::parse(s))) {
        Some((name, None)) => {
            return failure(
                "INVALID_INPUT",
                format!("status={name}: not a status"),
                Some("use success, error or blocked"),
            );
        }
        Some((_, status)) => status,
        None => None,
    };
    let filter = Filter {
        tool: query.skill,
        caller: query.caller,
        status,
        since_ms: query.since_ms,
        code: query.code,
        limit: Some(query.limit.unwrap_or(100).min(MAX_LISTED_CALLS)),
    };
    let host = shared.host.clone();
    blocking("reading the history", move || {
        Ok(Json(
            host.history(&filter)?
                .into_iter()
                .map(|r| {
                    let (code, error) = r.error_parts();
                    let (code, error) = (code.map(str::to_owned), error.map(str::to_owned));
                    CallRow {
                        id: r.id,
                        at_ms: r.at_ms,
                        caller: r.caller,
                        task_id: r.task_id,
                        skill: r.tool,
                        arguments: r.arguments,
                        status: r.status.name().to_owned(),
                        duration_ms: r.duration_ms,
                        code,
                        error,
                        hint: r.hint,
                        node: r.node,
                    }
                })
                .collect::<Vec<_>>(),
        ))
    })
    .await
}

/// Calls as they start and finish, as Server-Sent Events (`started`, `finished`, and
/// `lagged` with how many a slow reader missed), until the server stops taking calls.
async fn live_calls(State(shared): State<Arc<Shared>>) -> Response {
    use tokio::sync::broadcast::error::RecvError;
    let calls = shared.host.kernel().live().subscribe();
    let draining = shared.draining.clone();
    let stream = futures_util::stream::unfold(calls, move |mut calls| {
        let draining = draining.clone();
        async move {
            let event = tokio::select! {
                () = draining.cancelled() => return None,
                event = calls.recv() => event,
            };
            let sse = match event {
                Ok(call) => Event::default()
                    .event(call.kind())
                    .json_data(&call)
                    .unwrap_or_else(|_| Event::default().data("{}")),
                Err(RecvError::Lagged(missed)) => Event::default()
                    .event("lagged")
                    .data(json!({ "missed": missed }).to_string()),
                Err(RecvError::Closed) => return None,
            };
            Some((Ok::<_, Infallible>(sse), calls))
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn agent_run(State(shared): State<Arc<Shared>>, Json(request): Json<AgentRun>) -> Response {
    // A client may pick a model only among those the operator allows.
    let allowed = &shared.host.config().llm.models;
    if let Some(model) = request.model.as_ref().filter(|m| !allowed.contains(m)) {
        return evo_failure(&Error::ModelNotAllowed {
            asker: "the request".into(),
            model: model.clone(),
            allowed: allowed.clone(),
        });
    }
    let agent = match shared
        .host
        .agent(|options| options.model = request.model.clone())
    {
        Ok(agent) => agent,
        Err(error) => return evo_failure(&error),
    };
    let events = agent.run_stream(&request.message);
    let stream = futures_util::stream::unfold(events, |mut events| async move {
        let event = events.recv().await?;
        let sse = Event::default()
            .event(event.kind().as_str())
            .json_data(&event)
            .unwrap_or_else(|_| Event::default().data("{}"));
        Some((Ok::<_, Infallible>(sse), events))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn openapi() -> Json<Value> {
    Json(openapi_document())
}
