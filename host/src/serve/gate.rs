//! What `evo serve --http` checks before any route runs, and the shape of every refusal:
//!
//! - on a loopback bind, the `Host` a request names must be loopback too, on every route
//!   and method: a page whose DNS name was rebound to 127.0.0.1 sends its own name there,
//!   with or without an `Origin`;
//! - a request with an `Origin` must come from a loopback page, one the operator allowed,
//!   or the page's own server (an `Origin` naming the `Host` the request is sent to: the
//!   console's own pages);
//! - with a token, every request carries it (`Authorization: Bearer …`, compared in
//!   constant time) or the cookie of a console session ([`super::signin`]); a console
//!   page asked for without either answers 401 with the sign-in form;
//! - a refusal made below the handlers (the body limit, the JSON reader, an unknown route)
//!   is the API's `{ code, error, hint }`.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::reply::failure;
use super::signin::{Refused, Scope, SignIns};

#[derive(Debug, Clone)]
pub(super) struct Gate {
    /// The token that calls skills (`--token`), if requests must carry one.
    call: Option<Credential>,
    /// The token that also changes the server (`--admin-token`): installs, grants.
    admin: Option<Credential>,
    origins: Arc<Vec<String>>,
    /// The origins the operator allowed (`--allow-origin`), without the loopback ones:
    /// the only pages besides the server's own that may change it.
    operator_origins: Arc<Vec<String>>,
    /// Bound to loopback: the `Host` header must name loopback too.
    loopback: bool,
    /// The console's cookie, named after the port bound: browsers send a cookie to
    /// every port of a host, and two servers on one machine must not sign each other out.
    cookie: String,
    /// The console's sessions and the wrong guesses of its sign-in form.
    sign_ins: Arc<SignIns>,
}

/// One token: its SHA-256, so comparing takes the same time whatever its length.
#[derive(Debug, Clone)]
struct Credential {
    token: [u8; 32],
}

impl Credential {
    fn new(token: &str) -> Self {
        Self {
            token: Sha256::digest(token.as_bytes()).into(),
        }
    }

    /// Whether `given` is this token.
    fn is(&self, given: &str) -> bool {
        same_hash(given, &self.token)
    }
}

impl Gate {
    /// The checks for a server bound to loopback (`loopback`) or not on `port`, with
    /// the `token` that calls, the `admin` token that also manages, the browser
    /// `origins` it allows, and the console's `sign_ins` (made for the same tokens).
    pub(super) fn new(
        token: Option<&str>,
        admin: Option<&str>,
        origins: Vec<String>,
        operator_origins: Vec<String>,
        loopback: bool,
        port: u16,
        sign_ins: SignIns,
    ) -> Self {
        Self {
            call: token.map(Credential::new),
            admin: admin.map(Credential::new),
            origins: Arc::new(origins),
            operator_origins: Arc::new(operator_origins),
            loopback,
            cookie: format!("evo_console_{port}"),
            sign_ins: Arc::new(sign_ins),
        }
    }

    /// The name of the console's sign-in cookie.
    pub(super) fn cookie_name(&self) -> &str {
        &self.cookie
    }

    /// Whether the console has a sign-in: some token is set.
    pub(super) fn has_token(&self) -> bool {
        self.call.is_some() || self.admin.is_some()
    }

    /// A console sign-in by `client` with `token`: a new session's id (the cookie's
    /// value), unless the token is none of this server's or the client guessed too often.
    pub(super) async fn sign_in(
        &self,
        token: &str,
        client: Option<IpAddr>,
    ) -> Result<String, Refused> {
        self.sign_ins.sign_in(client, token).await
    }

    /// Ends the session whose cookie `headers` carry, if any.
    pub(super) async fn sign_out(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, &self.cookie) {
            self.sign_ins.sign_out(id).await;
        }
    }

    /// Ends every console session, if `scope` is the highest this server gives (the
    /// admin token's, or the call token's on a server without one); how many this node
    /// knew of.
    pub(super) async fn sign_out_everywhere(&self, scope: Scope) -> Option<usize> {
        let highest = if self.manages() {
            Scope::Admin
        } else {
            Scope::Call
        };
        if scope < highest {
            return None;
        }
        Some(self.sign_ins.sign_out_everywhere().await)
    }

    /// What `headers` let a request do: the admin token (or a session it opened)
    /// manages; the call token (or a session it opened), or nothing when the server has
    /// no call token, calls; `None` when a token is needed and missing or wrong.
    async fn scope(&self, headers: &HeaderMap) -> Option<Scope> {
        let given = bearer(headers).unwrap_or("");
        if self.admin.as_ref().is_some_and(|a| a.is(given)) {
            return Some(Scope::Admin);
        }
        let session = match cookie(headers, &self.cookie) {
            Some(id) => self.sign_ins.scope(id).await,
            None => None,
        };
        if session == Some(Scope::Admin) {
            return Some(Scope::Admin);
        }
        match &self.call {
            None => Some(Scope::Call),
            Some(call) => (call.is(given) || session.is_some()).then_some(Scope::Call),
        }
    }

    /// Whether the server has an admin token at all.
    pub(super) fn manages(&self) -> bool {
        self.admin.is_some()
    }
}

/// Whether SHA-256 of `given` is `expected`, compared in constant time.
fn same_hash(given: &str, expected: &[u8; 32]) -> bool {
    let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
    bool::from(subtle::ConstantTimeEq::ct_eq(&given[..], &expected[..]))
}

/// The value of the cookie `name` a request sends, if it sends it.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
}

/// The `Host` a request names (its header, or the URI's authority over HTTP/2), without
/// the port; `None` when it names none.
fn requested_host(request: &Request) -> Option<String> {
    let authority = match request.headers().get(header::HOST) {
        Some(value) => value.to_str().ok()?.to_owned(),
        None => request.uri().authority()?.as_str().to_owned(),
    };
    let authority = axum::http::uri::Authority::try_from(authority.as_str()).ok()?;
    Some(
        authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase(),
    )
}

/// Whether `host` (no port) can only mean this machine: `localhost` or a loopback
/// address. A rebound DNS name is neither, whatever it resolves to.
fn names_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What is wrong with the request's `Host` header when it is not one `host[:port]`:
/// several headers (a proxy and the server could each read another), or user
/// information (`evil.example@127.0.0.1`, which a URL parser reads as the host after
/// the `@` and a person as the one before it).
fn malformed_host(request: &Request) -> Option<&'static str> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first = hosts.next()?;
    if hosts.next().is_some() {
        return Some("the request has several Host headers");
    }
    match first.to_str() {
        Ok(value) if value.contains('@') => {
            Some("the Host header holds user information (`…@`), which a host never has")
        }
        Ok(_) => None,
        Err(_) => Some("the Host header is not text"),
    }
}

/// The Host, token and origin checks, before anything else.
pub(super) async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    if let Some(problem) = malformed_host(&request) {
        return failure(
            "INVALID_REQUEST",
            problem.to_owned(),
            Some("send one `Host: HOST[:PORT]` header, as HTTP/1.1 clients do"),
        );
    }
    if gate.loopback {
        match requested_host(&request) {
            Some(host) if names_loopback(&host) => {}
            Some(host) => {
                return failure(
                    "HOST_REFUSED",
                    format!(
                        "requests for the host {host} are refused: this server listens on loopback"
                    ),
                    Some(
                        "call it as localhost, 127.0.0.1 or [::1]; a web page whose name resolves to this machine (DNS rebinding) is refused on purpose. To serve other names, bind another address with a token (`evo serve --http 0.0.0.0:PORT --token …`)",
                    ),
                );
            }
            None => {
                // Not a refusal: a request without a Host is not HTTP/1.1.
                return failure(
                    "INVALID_REQUEST",
                    "the request names no host (or an unreadable one)".into(),
                    Some("send a `Host` header naming localhost, 127.0.0.1 or [::1]"),
                );
            }
        }
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        // A page of this server, or one the operator named, may do anything its token
        // allows. Other loopback pages (another port of this machine, where anything
        // may be listening) may only read: a cross-origin form post or `no-cors` fetch
        // needs no preflight, so it would otherwise call skills with the browser's
        // cookie, or with no token at all on loopback.
        let own = same_origin(origin, &request) || origin_allowed(origin, &gate.operator_origins);
        let reads = matches!(
            *request.method(),
            axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
        );
        let may_read = reads && origin_allowed(origin, &gate.origins);
        if !(own || may_read) {
            let (message, hint) = if origin_allowed(origin, &gate.origins) {
                (
                    format!(
                        "a page at {origin} may read from this server but not call skills or change anything"
                    ),
                    "call it from this server's own pages (its console), the CLI or a client that sends no Origin; `evo serve --allow-origin ORIGIN` lets another page do so",
                )
            } else {
                (
                    format!("requests from the web page at {origin} are refused"),
                    "a browser page may call Evo only from an origin the operator allows (`evo serve --allow-origin`)",
                )
            };
            return failure("ORIGIN_REFUSED", message, Some(hint));
        }
    }
    let mut request = request;
    if let Some(scope) = gate.scope(request.headers()).await {
        request.extensions_mut().insert(scope);
        return next.run(request).await;
    }
    let path = request.uri().path();
    if super::pages::is_public(path) {
        return next.run(request).await;
    }
    if request.method() == axum::http::Method::GET && super::pages::is_page(path) {
        let wanted = request.uri().path_and_query().map_or(path, |p| p.as_str());
        return super::pages::login_page(StatusCode::UNAUTHORIZED, wanted, None);
    }
    let mut response = failure(
        "UNAUTHORIZED",
        "a valid bearer token is required".into(),
        Some(
            "send `Authorization: Bearer <token>` with the token `evo serve` was given (--token or EVO_TOKEN); in a browser, sign in at /login",
        ),
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// Before a route that changes the server: the request must carry the admin token
/// (403 otherwise, saying how to get one).
pub(super) async fn admin_only(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    // A page of another origin (another port of this machine included) never changes
    // the server, whatever cookie its browser sends along.
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !same_origin(origin, &request) && !origin_allowed(origin, &gate.operator_origins) {
            return failure(
                "ORIGIN_REFUSED",
                format!("a page at {origin} may not change this server"),
                Some(
                    "change it from its own console, the CLI, or a client that sends no Origin; `evo serve --allow-origin` lists other pages that may",
                ),
            );
        }
    }
    if request.extensions().get::<Scope>() == Some(&Scope::Admin) {
        return next.run(request).await;
    }
    let (message, hint) = if gate.manages() {
        (
            "this route changes the server and needs the admin token; the token sent only calls skills",
            "send `Authorization: Bearer <admin token>` (the one `evo serve` was given with --admin-token or EVO_ADMIN_TOKEN); in the console, sign in with it",
        )
    } else {
        (
            "this server takes no changes over HTTP: it was started without an admin token",
            "start it with --admin-token (or EVO_ADMIN_TOKEN) to install, uninstall, update, grant and revoke through the API and the console",
        )
    };
    failure("ADMIN_REQUIRED", message.into(), Some(hint))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether `origin` (`scheme://host[:port]`) matches one of `allowed`, where a `:*`
/// port matches any port and an entry without a port matches only the scheme's
/// default one.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let (host, port) = split_port(rest, scheme);
    allowed.iter().any(|entry| {
        let Some((s, r)) = entry.split_once("://") else {
            return false;
        };
        if !s.eq_ignore_ascii_case(scheme) {
            return false;
        }
        match r.strip_suffix(":*") {
            Some(h) => h.eq_ignore_ascii_case(host),
            None => {
                let (h, p) = split_port(r, s);
                h.eq_ignore_ascii_case(host) && p == port
            }
        }
    })
}

/// Whether `origin` is the server the request is sent to: its host and port are the
/// request's `Host` (a page of this server calling its own API, as the console does).
fn same_origin(origin: &str, request: &Request) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let Some(host) = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let (origin_host, origin_port) = split_port(rest, scheme);
    let (host, port) = split_port(host, scheme);
    origin_host.eq_ignore_ascii_case(host) && origin_port == port
}

fn split_port<'a>(authority: &'a str, scheme: &str) -> (&'a str, Option<u16>) {
    let default = match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    // `[::1]:8080`, `host:8080`, `host`.
    match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()),
        _ => (authority, default),
    }
}

/// A refusal made below the handlers (the body limit, the JSON reader, an unknown route
/// or method, the MCP transport's own checks) in the API's shape `{ code, error, hint }`:
/// a plain-text error body is moved into `error`, with a code for its status.
pub(super) async fn as_error_body(response: Response) -> Response {
    let status = response.status();
    let is_json_or_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            // JSON, an event stream, or a page of the console (its sign-in form).
            t.contains("json") || t.starts_with("text/event-stream") || t.starts_with("text/html")
        });
    if !(status.is_client_error() || status.is_server_error()) || is_json_or_stream {
        return response;
    }
    let (parts, body) = response.into_parts();
    // Refusals made below the handlers are a line or two; more is not an error text.
    let text = axum::body::to_bytes(body, 64 << 10)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let (code, hint) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => (
            "MESSAGE_TOO_LARGE",
            "send a smaller body; `serve.max_message_kb` in the server's evo.toml sets the limit",
        ),
        StatusCode::NOT_FOUND => (
            "NOT_FOUND",
            "`GET /v1/openapi.json` lists the API's routes; MCP is served at /mcp",
        ),
        StatusCode::METHOD_NOT_ALLOWED => (
            "METHOD_NOT_ALLOWED",
            "`GET /v1/openapi.json` lists each route's methods",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "INVALID_INPUT",
            "send the body as JSON with `Content-Type: application/json`",
        ),
        s if s.is_client_error() => (
            "INVALID_INPUT",
            "fix the request as the message says; `GET /v1/openapi.json` describes every body",
        ),
        _ => (
            "INTERNAL_ERROR",
            "retry; if it persists, the server's log says more",
        ),
    };
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_owned()
    } else {
        text
    };
    let mut response = failure(code, message, Some(hint));
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            response.headers_mut().insert(name, value.clone());
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_by_scheme_host_and_port() {
        let allowed = [
            "http://localhost:*".to_owned(),
            "http://[::1]:*".to_owned(),
            "https://app.example.com".to_owned(),
        ];
        for (origin, ok) in [
            ("http://localhost:3000", true),
            ("http://LOCALHOST", true),
            ("http://[::1]:8080", true),
            ("https://localhost:3000", false),
            ("https://app.example.com", true),
            ("https://app.example.com:443", true),
            ("https://app.example.com:8443", false),
            ("http://app.example.com", false),
            ("http://evil.example", false),
            ("http://localhost.evil.example", false),
            ("null", false),
        ] {
            assert_eq!(origin_allowed(origin, &allowed), ok, "{origin}");
        }
    }

    #[test]
    fn a_bearer_token_is_read_case_insensitively() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "bearer abc".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }
}
