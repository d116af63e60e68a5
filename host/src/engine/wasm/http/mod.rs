//! Outbound HTTP for Wasm skills (`wasi:http/outgoing-handler`), deny by default.
//!
//! Every request is checked before a connection is made:
//!
//! 1. its origin (scheme, host, port) must be inside one of the skill's granted host
//!    patterns (what it asked for ∩ what the operator allows);
//! 2. the host's addresses are resolved here, and a name that resolves into the
//!    machine or a private network is refused unless the grant names that address
//!    outright (`http://127.0.0.1:8080`): a public name cannot be pointed at the
//!    operator's network (DNS rebinding). A plain-HTTP request is then sent to the very
//!    address that was checked; an HTTPS one is bound to the name by its certificate;
//! 3. a call makes at most [`MAX_REQUESTS_PER_CALL`] requests, sends at most
//!    [`MAX_BYTES_OUT_PER_CALL`] bytes of request bodies and reads at most
//!    [`MAX_BYTES_IN_PER_CALL`] bytes of response bodies; its time is the call's own
//!    deadline, which bounds a request that hangs like any other host call.
//!
//! Secrets (see [`crate::secrets`]): a `{{secret:NAME}}` in a header or the query is
//! replaced with the value only when the request's origin is inside the host the secret
//! was granted for; a request whose headers, URL or body carry the value of any secret is
//! refused (the skill never had it: this is an attempt to send it on); and responses
//! have every value masked before the guest reads them, so an API that echoes the
//! header back cannot hand the value over.
//!
//! Redirects are not followed by the host: a guest that follows one sends a new request,
//! checked like the first. Refusals go to the guest as `HTTP-request-denied` (or
//! `destination-IP-prohibited`) and to the security log: `evo::security` and a `blocked`
//! row of the call history (`evo tool history --status blocked`), whatever the guest
//! does with the error.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http_body_util::BodyExt as _;
use serde_json::json;
use ureq::http;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

mod body;
mod handler;
mod send;

pub(super) use self::handler::add_to_linker;

use self::body::{Budget, Capped, OnSecret, Scan};
use super::scrub::Scrub;
use crate::capabilities::{Grant, HostPattern};
use crate::secrets::Secrets;
use crate::skill::kernel::SkillContext;

/// Most outbound requests one call may make.
pub const MAX_REQUESTS_PER_CALL: u32 = 64;
/// Most bytes of request bodies one call may send.
pub const MAX_BYTES_OUT_PER_CALL: u64 = 16 << 20;
/// Most bytes of response bodies one call may read.
pub const MAX_BYTES_IN_PER_CALL: u64 = 64 << 20;

/// The checks of one call's outbound requests.
#[derive(Debug)]
pub(super) struct Outbound {
    skill: Arc<str>,
    /// What of the skill's grant its requests are checked against: its hosts, and its
    /// secrets, each for its host.
    grant: Arc<Grant>,
    requests: u32,
    sent: Arc<Budget>,
    received: Arc<Budget>,
    /// Every secret's value, to put in and to keep out.
    pub(super) scrub: Scrub,
    /// The calling frame, for the security log.
    ctx: Option<SkillContext>,
    /// The reason of the last refusal, for callers that report it themselves.
    pub(in crate::engine::wasm) last_refusal: Arc<std::sync::Mutex<Option<String>>>,
    /// The call's connections that ended, closed with its state.
    linger: send::Linger,
}

impl Outbound {
    pub(super) fn new(skill: Arc<str>, grant: &Grant, ctx: Option<SkillContext>) -> Self {
        let secrets = match &ctx {
            Some(ctx) if !grant.hosts.is_empty() => ctx.kernel().secrets(),
            _ => Arc::default(),
        };
        Self {
            skill,
            grant: Arc::new(Grant {
                hosts: grant.hosts.clone(),
                secrets: grant.secrets.clone(),
                ..Grant::default()
            }),
            requests: 0,
            sent: Budget::new(MAX_BYTES_OUT_PER_CALL),
            received: Budget::new(MAX_BYTES_IN_PER_CALL),
            scrub: Scrub::new(secrets, ctx.clone()),
            ctx,
            last_refusal: Arc::default(),
            linger: send::Linger::default(),
        }
    }

    /// Writes a refused request to the security log.
    fn refuse(ctx: Option<&SkillContext>, skill: &str, method: &str, uri: &str, reason: &str) {
        let message = format!("outbound request refused: {reason}");
        match ctx {
            Some(ctx) => {
                ctx.record_refusal(
                    "http",
                    &json!({ "method": method, "url": uri }),
                    &message,
                    "the skill's grant does not cover this request; allow the host (`--allow-host`, [grants] in evo.toml) only if you trust the skill with it",
                );
            }
            None => tracing::warn!(target: "evo::security", skill, "blocked: {message}"),
        }
    }

    /// The granted pattern `uri`'s origin is inside, or why it is refused.
    fn admit(&mut self, uri: &http::Uri) -> Result<(HostPattern, String, u16), String> {
        let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
        let host = uri
            .host()
            .ok_or_else(|| format!("{uri}: the request names no host"))?
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(match scheme.as_str() {
            "http" => 80,
            _ => 443,
        });
        let origin = format!("{scheme}://{host}:{port}");
        if self.requests >= MAX_REQUESTS_PER_CALL {
            return Err(format!(
                "{origin}: this call already made {MAX_REQUESTS_PER_CALL} requests, the most one call may make"
            ));
        }
        let pattern = self
            .grant
            .admit_origin(&self.skill, (&scheme, &host, port))?
            .clone();
        self.requests += 1;
        Ok((pattern, host, port))
    }
}

/// The addresses of `host`, each allowed only if it is public or `pattern` names it.
async fn resolve(
    pattern: &HostPattern,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, (HttpError, String)> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match literal.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((literal, port))
            .await
            .map_err(|e| (HttpError::DestinationNotFound, format!("{host}: {e}")))?
            .collect(),
    };
    if addresses.is_empty() {
        return Err((
            HttpError::DestinationNotFound,
            format!("{host}: the name has no addresses"),
        ));
    }
    if !pattern.names_address()
        && let Some(internal) = addresses.iter().find(|a| evo_manifest::is_internal(a.ip()))
    {
        return Err((
            HttpError::DestinationIpProhibited,
            format!(
                "{host}:{port} resolves to {}, inside the machine or a private network, which only a grant naming that address allows",
                internal.ip()
            ),
        ));
    }
    Ok(addresses)
}

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for Outbound {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> ResponseFuture {
        drop(fut);
        let admitted = self.admit(request.uri());
        let skill = self.skill.clone();
        let ctx = self.ctx.clone();
        let (sent, received) = (self.sent.clone(), self.received.clone());
        let secrets = self.scrub.secrets().clone();
        let grant = self.grant.clone();
        let last_refusal = self.last_refusal.clone();
        let linger = self.linger.clone();
        Box::new(async move {
            let method = request.method().to_string();
            let uri = request.uri().to_string();
            let refusal: Refusal = Arc::new({
                let (skill, method, uri) = (skill.clone(), method.clone(), uri.clone());
                move |reason: &str| {
                    *last_refusal
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Some(reason.to_owned());
                    Outbound::refuse(ctx.as_ref(), &skill, &method, &uri, reason);
                }
            });
            let refuse = |code: HttpError, reason: &str| {
                refusal(reason);
                code
            };
            let (pattern, host, port) =
                admitted.map_err(|reason| refuse(HttpError::HttpRequestDenied, &reason))?;
            let (mut parts, body) = request.into_parts();
            let scheme = parts.uri.scheme_str().unwrap_or("https").to_owned();
            let origin = format!("{scheme}://{host}:{port}");
            put_secrets(&mut parts, &secrets, &grant, &skill, (&scheme, &host, port)).map_err(
                |reason| refuse(HttpError::HttpRequestDenied, &format!("{origin}: {reason}")),
            )?;
            let addresses = resolve(&pattern, &host, port)
                .await
                .map_err(|(code, reason)| refuse(code, &reason))?;
            let body = Capped::new(body, sent, HttpError::HttpRequestBodySize).boxed_unsync();
            let body = if secrets.is_empty() {
                body
            } else {
                Scan::new(body, secrets.clone(), OnSecret::Refuse(refusal.clone())).boxed_unsync()
            };
            let request = http::Request::from_parts(parts, body);
            // Sent to the addresses that were checked, not to a second lookup of the
            // name; the Host header keeps the name.
            let server_name = host.trim_start_matches('[').trim_end_matches(']');
            let response = send::send(request, &addresses, server_name, options, linger).await?;
            let (mut parts, body) = response.into_parts();
            let body = Capped::new(
                body.boxed_unsync(),
                received,
                HttpError::HttpResponseBodySize,
            )
            .boxed_unsync();
            let body = if secrets.is_empty() {
                body
            } else {
                for value in parts.headers.values_mut() {
                    if let Some(name) = secrets.find(value.as_bytes()) {
                        tracing::info!(target: "evo::security", skill = %skill, "the response carried the value of secret {name}; masked");
                        *value = http::HeaderValue::from_static("[REDACTED]");
                    }
                }
                Scan::new(body, secrets, OnSecret::Mask(skill.clone())).boxed_unsync()
            };
            // The body drives the connection: nothing runs beside it.
            Ok((
                http::Response::from_parts(parts, body),
                Box::new(async { Ok(()) })
                    as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}

/// Writes a refusal to the security log.
type Refusal = Arc<dyn Fn(&str) + Send + Sync>;

/// The body of a response to a checked request.
pub type HttpBody = WasiBody;

/// Sends one request for `skill` from the host itself (a service skill), through every
/// check a Wasm skill's request goes through: the grant's hosts, secrets for their host
/// only, addresses, the byte budgets, masked responses. `timeout` bounds connecting and
/// each wait for bytes. The error says why the request was refused or failed.
pub(crate) async fn send_checked(
    skill: Arc<str>,
    grant: &Grant,
    ctx: SkillContext,
    request: http::Request<WasiBody>,
    timeout: std::time::Duration,
) -> Result<http::Response<WasiBody>, String> {
    let origin = {
        let uri = request.uri();
        format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("https"),
            uri.authority().map_or("", |a| a.as_str())
        )
    };
    let mut request = request;
    if !request.headers().contains_key(http::header::HOST)
        && let Some(authority) = request.uri().authority().cloned()
        && let Ok(host) = http::HeaderValue::from_str(authority.as_str())
    {
        request.headers_mut().insert(http::header::HOST, host);
    }
    let mut outbound = Outbound::new(skill, grant, Some(ctx));
    let options = RequestOptions {
        connect_timeout: Some(timeout),
        first_byte_timeout: Some(timeout),
        between_bytes_timeout: Some(timeout),
    };
    let sent = outbound.send_request(request, Some(options), Box::new(async { Ok(()) }));
    match Box::into_pin(sent).await {
        // The body drives the connection; `io` has nothing left to do.
        Ok((response, _io)) => Ok(response),
        Err(code) => {
            let refused = outbound
                .last_refusal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            Err(match refused {
                Some(reason) => format!("the host refused the request: {reason}"),
                None => format!("{origin}: the request failed: {code}"),
            })
        }
    }
}

/// Puts the granted secrets in for their `{{secret:NAME}}` placeholders in the headers
/// and the query of a request to `origin`; refuses a request that names a secret not
/// granted for that origin, or that already carries a secret's value.
fn put_secrets(
    parts: &mut http::request::Parts,
    secrets: &Secrets,
    grant: &Grant,
    skill: &str,
    origin: (&str, &str, u16),
) -> Result<(), String> {
    let carried = |text: &[u8]| -> Result<(), String> {
        match secrets.find(text) {
            Some(name) => Err(format!(
                "the request carries the value of secret {name}, which {skill} was never given: a secret leaves only through its placeholder, to its host"
            )),
            None => Ok(()),
        }
    };
    let value = |name: &str| -> Result<String, String> {
        grant.check_secret(skill, name, origin)?;
        secrets.value(name).map(str::to_owned).ok_or_else(|| {
            format!("no secret named {name} is set; set it with `evo secret set {name}`")
        })
    };
    carried(parts.uri.to_string().as_bytes())?;
    for header in parts.headers.values() {
        carried(header.as_bytes())?;
    }
    if let Some(query) = parts.uri.path_and_query().map(|p| p.as_str().to_owned())
        && let Some(replaced) = crate::secrets::substitute(&query, value)?
    {
        let mut uri = std::mem::take(&mut parts.uri).into_parts();
        uri.path_and_query = Some(
            replaced
                .parse()
                .map_err(|_| "the query with the secret put in is not a valid URL".to_owned())?,
        );
        parts.uri = http::Uri::from_parts(uri).map_err(|e| e.to_string())?;
    }
    for header in parts.headers.values_mut() {
        let Ok(text) = header.to_str() else { continue };
        if let Some(replaced) = crate::secrets::substitute(text, value)? {
            let mut put = http::HeaderValue::from_str(&replaced)
                .map_err(|_| "a header with the secret put in is not a valid header".to_owned())?;
            put.set_sensitive(true);
            *header = put;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::send::MAX_LINGERING;
    use super::*;

    fn outbound(hosts: &[&str]) -> Outbound {
        let grant = Grant {
            hosts: hosts
                .iter()
                .map(|h| HostPattern::parse(h).unwrap())
                .collect(),
            ..Grant::default()
        };
        Outbound::new("fetch".into(), &grant, None)
    }

    #[test]
    fn only_granted_origins_are_admitted_and_calls_are_capped() {
        let mut out = outbound(&["http://127.0.0.1:9000", "https://*.example.com"]);
        let uri = |u: &str| u.parse::<http::Uri>().unwrap();
        let (pattern, host, port) = out.admit(&uri("http://127.0.0.1:9000/x?y=1")).unwrap();
        assert_eq!(
            (pattern.to_string(), host.as_str(), port),
            ("http://127.0.0.1:9000".to_owned(), "127.0.0.1", 9000)
        );
        let (pattern, host, port) = out.admit(&uri("https://api.example.com/v1")).unwrap();
        assert_eq!(
            (pattern.to_string(), host.as_str(), port),
            ("https://*.example.com".to_owned(), "api.example.com", 443)
        );
        let refused = out.admit(&uri("http://127.0.0.1:9001/")).unwrap_err();
        assert_eq!(
            refused,
            "http://127.0.0.1:9001: not among the hosts granted to fetch (http://127.0.0.1:9000, https://*.example.com)"
        );
        assert!(
            out.admit(&uri("http://api.example.com/")).is_err(),
            "scheme"
        );
        for _ in 2..MAX_REQUESTS_PER_CALL {
            out.admit(&uri("https://api.example.com/")).unwrap();
        }
        assert!(
            out.admit(&uri("https://api.example.com/"))
                .unwrap_err()
                .contains("already made 64 requests")
        );
        let none = outbound(&[])
            .admit(&uri("https://api.example.com/"))
            .unwrap_err();
        assert!(
            none.contains("fetch was granted no outbound hosts"),
            "{none}"
        );
    }

    #[tokio::test]
    async fn names_that_resolve_inside_are_refused_unless_the_address_is_granted() {
        let by_name = HostPattern::parse("http://localhost.example:9000").unwrap();
        // `localhost` itself is named outright, so it is allowed to be internal.
        let named = HostPattern::parse("http://localhost:9000").unwrap();
        let addresses = resolve(&named, "localhost", 9000).await.unwrap();
        assert!(
            addresses
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 9000),
            "{addresses:?}"
        );
        let literal = HostPattern::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!(
            resolve(&literal, "127.0.0.1", 9000).await.unwrap(),
            ["127.0.0.1:9000".parse::<SocketAddr>().unwrap()]
        );
        // A name (here a literal standing in for what a name resolved to) reaching
        // loopback without a grant naming the address is refused.
        let Err((code, reason)) = resolve(&by_name, "127.0.0.1", 9000).await else {
            panic!("a name resolving to loopback was let through");
        };
        assert!(matches!(code, HttpError::DestinationIpProhibited));
        assert_eq!(
            reason,
            "127.0.0.1:9000 resolves to 127.0.0.1, inside the machine or a private network, which only a grant naming that address allows"
        );
    }

    #[tokio::test]
    async fn connections_that_ended_close_with_the_call_and_past_the_cap_at_once() {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        // A server that answers each connection once and then reports when the client
        // closed it (its read sees the end of the stream).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (closed, closes) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { return };
                let closed = closed.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let body = format!("answer {n}");
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    stream
                        .write_all(format!("{head}{body}").as_bytes())
                        .unwrap();
                    let mut rest = Vec::new();
                    let _ = reader.read_to_end(&mut rest);
                    let _ = closed.send(n);
                });
            }
        });
        let origin = format!("http://127.0.0.1:{port}");
        let mut out = outbound(&[&origin]);
        let requests = MAX_LINGERING + 2;
        for n in 0..requests {
            let request = http::Request::get(format!("{origin}/"))
                .header(http::header::HOST, format!("127.0.0.1:{port}"))
                .body(
                    http_body_util::Empty::new()
                        .map_err(|never| match never {})
                        .boxed_unsync(),
                )
                .unwrap();
            let sent = out.send_request(request, None, Box::new(async { Ok(()) }));
            let (response, _io) = Box::into_pin(sent).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, format!("answer {n}"));
        }
        // The first four stay open with the call; the two past the cap were closed.
        assert_eq!(out.linger.count(), MAX_LINGERING);
        let wait = Duration::from_secs(60);
        let mut early = vec![
            closes.recv_timeout(wait).unwrap(),
            closes.recv_timeout(wait).unwrap(),
        ];
        early.sort_unstable();
        assert_eq!(early, [MAX_LINGERING, MAX_LINGERING + 1]);
        assert!(closes.try_recv().is_err(), "a kept connection was closed");
        // Dropping the call's state closes the rest.
        drop(out);
        let mut late: Vec<usize> = (0..MAX_LINGERING)
            .map(|_| closes.recv_timeout(wait).unwrap())
            .collect();
        late.sort_unstable();
        assert_eq!(late, (0..MAX_LINGERING).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn bodies_past_the_call_budget_fail_with_the_size_error() {
        let budget = Budget::new(10);
        let body = |text: &'static str| {
            http_body_util::Full::new(bytes::Bytes::from(text))
                .map_err(|never| match never {})
                .boxed_unsync()
        };
        let first = Capped::new(
            body("123456"),
            budget.clone(),
            HttpError::HttpResponseBodySize,
        );
        assert_eq!(first.collect().await.unwrap().to_bytes(), "123456");
        // The budget is the call's, not the request's: a second body gets what is left.
        let second = Capped::new(body("12345"), budget, HttpError::HttpResponseBodySize);
        assert!(matches!(
            second.collect().await,
            Err(HttpError::HttpResponseBodySize(Some(10)))
        ));
    }
}
