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
//! 3. a call makes at most [`MAX_REQUESTS_PER_CALL`] requests.
//!
//! Redirects are not followed by the host: a guest that follows one sends a new request,
//! checked like the first. Refusals go to the guest as `HTTP-request-denied` (or
//! `destination-IP-prohibited`) and to the security log (`evo::security`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http_body_util::BodyExt as _;
use ureq::http;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::capabilities::HostPattern;

/// Most outbound requests one call may make.
pub const MAX_REQUESTS_PER_CALL: u32 = 64;

/// The checks of one call's outbound requests.
#[derive(Debug)]
pub(super) struct Outbound {
    skill: Arc<str>,
    hosts: Vec<HostPattern>,
    requests: u32,
}

impl Outbound {
    pub(super) fn new(skill: Arc<str>, hosts: Vec<HostPattern>) -> Self {
        Self {
            skill,
            hosts,
            requests: 0,
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
            .hosts
            .iter()
            .find(|p| p.matches_origin(&scheme, &host, port))
            .cloned()
            .ok_or_else(|| {
                if self.hosts.is_empty() {
                    format!(
                        "{origin}: {} was granted no outbound hosts; the skill must ask for it in its manifest (capabilities.hosts) and the operator must allow it (--allow-host or [grants] hosts)",
                        self.skill
                    )
                } else {
                    format!(
                        "{origin}: not among the hosts granted to {} ({})",
                        self.skill,
                        self.hosts
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            })?;
        self.requests += 1;
        Ok((pattern, host, port))
    }
}

/// The addresses of `host`, each allowed only if it is public or `pattern` names it.
async fn resolve(
    pattern: &HostPattern,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, HttpError> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match literal.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((literal, port))
            .await
            .map_err(|_| HttpError::DestinationNotFound)?
            .collect(),
    };
    if addresses.is_empty() {
        return Err(HttpError::DestinationNotFound);
    }
    if !pattern.names_address()
        && let Some(internal) = addresses.iter().find(|a| evo_manifest::is_internal(a.ip()))
    {
        tracing::warn!(
            target: "evo::security",
            "outbound request to {host}:{port} refused: it resolves to {}, inside the machine or a private network, which only a grant naming that address allows",
            internal.ip()
        );
        return Err(HttpError::DestinationIpProhibited);
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
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> ResponseFuture {
        drop(fut);
        let admitted = self.admit(request.uri());
        let skill = self.skill.clone();
        Box::new(async move {
            let (pattern, host, port) = admitted.map_err(|reason| {
                tracing::warn!(target: "evo::security", "{skill}: outbound request refused: {reason}");
                HttpError::HttpRequestDenied
            })?;
            let addresses = resolve(&pattern, &host, port).await?;
            if request.uri().scheme_str() == Some("http") {
                // Send to the address that was checked, not to a second lookup of the
                // name; the Host header keeps the name.
                let address = addresses[0];
                let path = request
                    .uri()
                    .path_and_query()
                    .map_or("/", |p| p.as_str())
                    .to_owned();
                *request.uri_mut() = http::Uri::builder()
                    .scheme("http")
                    .authority(address.to_string())
                    .path_and_query(path)
                    .build()
                    .map_err(|_| HttpError::HttpRequestUriInvalid)?;
            }
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(|body| body.boxed_unsync()),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbound(hosts: &[&str]) -> Outbound {
        Outbound::new(
            "fetch".into(),
            hosts
                .iter()
                .map(|h| HostPattern::parse(h).unwrap())
                .collect(),
        )
    }

    #[test]
    fn only_granted_origins_are_admitted_and_calls_are_capped() {
        let mut out = outbound(&["http://127.0.0.1:9000", "https://*.example.com"]);
        let uri = |u: &str| u.parse::<http::Uri>().unwrap();
        assert!(out.admit(&uri("http://127.0.0.1:9000/x?y=1")).is_ok());
        assert!(out.admit(&uri("https://api.example.com/v1")).is_ok());
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
        assert!(resolve(&named, "localhost", 9000).await.is_ok());
        let literal = HostPattern::parse("http://127.0.0.1:9000").unwrap();
        assert!(resolve(&literal, "127.0.0.1", 9000).await.is_ok());
        // A name (here a literal standing in for what a name resolved to) reaching
        // loopback without a grant naming the address is refused.
        assert!(matches!(
            resolve(&by_name, "127.0.0.1", 9000).await,
            Err(HttpError::DestinationIpProhibited)
        ));
    }
}
