//! The way out for a native script granted hosts: an HTTP proxy the host serves on a
//! Unix socket in the script's workspace (`.evo/http.sock`, relative to where the
//! script starts). The script itself still has no network (its namespace has none);
//! every request it sends to the socket goes out through the same checks as a Wasm
//! skill's (`send_checked`: the grant, addresses, secrets put in for their host only,
//! masked responses), so a native script never holds a secret either.
//!
//! ```js
//! const http = require('http');
//! http.request({ socketPath: '.evo/http.sock', path: 'https://api.github.com/user',
//!                headers: { authorization: 'Bearer {{secret:GITHUB_TOKEN}}' } }, …);
//! ```
//!
//! The request target is the full URL (proxy form); plain HTTP goes to the socket, and
//! the host speaks TLS to an `https://` target.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use ureq::http;
use wasmtime_wasi_http::io::TokioIo;

use crate::capabilities::Grant;
use crate::skill::kernel::SkillContext;

/// Where the socket is, relative to the script's workspace.
pub const SOCKET: &str = ".evo/http.sock";

/// What the proxy answers with: the target's body, or its own refusal.
type Body = UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error>;

struct Proxy {
    skill: Arc<str>,
    grant: Arc<Grant>,
    ctx: SkillContext,
    timeout: Duration,
}

/// The proxy of one call; stops when dropped.
pub(super) struct Egress {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Egress {
    /// Serves the proxy for `skill` in `workspace`: one HTTP/1 connection per accepted
    /// stream, each request through [`forward`].
    pub(super) fn start(
        workspace: &Path,
        skill: &str,
        grant: Arc<Grant>,
        ctx: SkillContext,
        timeout: Duration,
    ) -> std::io::Result<Self> {
        let path: PathBuf = workspace.join(SOCKET);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let listener = tokio::net::UnixListener::bind(&path)?;
        let proxy = Arc::new(Proxy {
            skill: skill.into(),
            grant,
            ctx,
            timeout,
        });
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let proxy = proxy.clone();
                let service = hyper::service::service_fn(move |request| {
                    let proxy = proxy.clone();
                    async move { Ok::<_, std::convert::Infallible>(forward(&proxy, request).await) }
                });
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
                // Connections that ended are reaped as others come.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self { task })
    }
}

fn refused(status: http::StatusCode, message: String) -> http::Response<Body> {
    let body = http_body_util::Full::new(Bytes::from(message))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Sends one request of the script's on, through the checks.
async fn forward(
    proxy: &Proxy,
    request: http::Request<hyper::body::Incoming>,
) -> http::Response<Body> {
    let (mut parts, body) = request.into_parts();
    if parts.uri.scheme().is_none() || parts.uri.authority().is_none() {
        return refused(
            http::StatusCode::BAD_REQUEST,
            format!(
                "{}: send the full URL as the request path (`path: 'https://host/…'`)",
                parts.uri
            ),
        );
    }
    // The proxy's own headers are not the target's.
    for name in ["host", "connection", "proxy-connection", "keep-alive"] {
        parts.headers.remove(name);
    }
    let body = body
        .map_err(|e| wasmtime_wasi_http::Error::InternalError(Some(e.to_string())))
        .boxed_unsync();
    let request = http::Request::from_parts(parts, body);
    match crate::engine::wasm::send_checked(
        proxy.skill.clone(),
        &proxy.grant,
        proxy.ctx.clone(),
        request,
        proxy.timeout,
    )
    .await
    {
        Ok(response) => response,
        Err(message) => refused(http::StatusCode::FORBIDDEN, message),
    }
}
