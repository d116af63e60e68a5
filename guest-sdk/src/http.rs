//! Outbound HTTP from a skill, over `wasi:http`.
//!
//! The host checks every request against the hosts the skill asks for in its manifest
//! (`capabilities.hosts`) and the operator allows; anything else fails with
//! [`Error::Denied`] naming the origin, before a connection is made. Redirects are not
//! followed for you: a `3xx` comes back as a response, and following it is a new
//! request, checked like the first.
//!
//! ```no_run
//! # fn run() -> Result<(), evo_guest::Error> {
//! let response = evo_guest::http::get("https://api.example.com/v1/rates")?;
//! let rates: serde_json::Value = response.json()?;
//! # Ok(()) }
//! ```
//!
//! ## Secrets
//!
//! A skill that needs an API key never holds it. It asks for the secret for a host in its
//! manifest ([`crate::Manifest::secret`]) and writes [`secret`]`(NAME)` where the value
//! goes; the host puts the value there in requests to that host only, refuses a request
//! that would carry it anywhere else, and redacts it from responses, so an API that
//! echoes the header back cannot hand it to the skill.
//!
//! ```no_run
//! # fn run() -> Result<(), evo_guest::Error> {
//! use evo_guest::http::{Request, secret, send};
//! let request = Request::get("https://api.github.com/user")
//!     .header("authorization", format!("Bearer {}", secret("GITHUB_TOKEN")));
//! let user = send(&request)?;
//! # Ok(()) }
//! ```

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

use crate::Error;

/// Largest response body read, in bytes.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// A request to send with [`send`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// `http://` or `https://` URL.
    pub url: String,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body (empty for none).
    pub body: Vec<u8>,
}

impl Request {
    /// A `GET` of `url`.
    pub fn get(url: impl Into<String>) -> Self {
        Self {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A `POST` of `value` as JSON to `url`.
    pub fn post_json(url: impl Into<String>, value: &serde_json::Value) -> Self {
        Self {
            method: "POST".into(),
            url: url.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    /// This request with one more header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A response: status, headers, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower-case) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| {
            Error::failed(format!(
                "the response (status {}) is not the JSON expected: {e}",
                self.status
            ))
        })
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The placeholder the host replaces with the value of secret `name` (`{{secret:NAME}}`),
/// in a header or the query of a request to the host the secret was granted for.
pub fn secret(name: &str) -> String {
    format!("{{{{secret:{name}}}}}")
}

/// `GET url`.
pub fn get(url: &str) -> Result<Response, Error> {
    send(&Request::get(url))
}

/// `POST` `value` as JSON to `url`.
pub fn post_json(url: &str, value: &serde_json::Value) -> Result<Response, Error> {
    send(&Request::post_json(url, value))
}

/// Sends `request` and reads the whole response.
pub fn send(request: &Request) -> Result<Response, Error> {
    let (scheme, authority, path) = split_url(&request.url)?;
    let origin = format!(
        "{}://{authority}",
        if matches!(scheme, Scheme::Http) {
            "http"
        } else {
            "https"
        }
    );
    let mut entries: Vec<(String, Vec<u8>)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.as_bytes().to_vec()))
        .collect();
    // The body's length is known: say it, so the server reads the whole body before it
    // answers (a chunked body can still be on its way when a server replies and closes).
    if !request.body.is_empty() && !entries.iter().any(|(n, _)| n == "content-length") {
        entries.push((
            "content-length".into(),
            request.body.len().to_string().into_bytes(),
        ));
    }
    let headers = Fields::from_list(&entries).map_err(|e| {
        Error::invalid_input(format!("a header of the request is not allowed: {e:?}"))
    })?;
    let outgoing = OutgoingRequest::new(headers);
    let method = match request.method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "HEAD" => Method::Head,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_owned()),
    };
    let invalid = |what: &str| Error::invalid_input(format!("{}: {what}", request.url));
    outgoing
        .set_method(&method)
        .map_err(|()| invalid("bad method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| invalid("bad scheme"))?;
    outgoing
        .set_authority(Some(&authority))
        .map_err(|()| invalid("bad host"))?;
    outgoing
        .set_path_with_query(Some(&path))
        .map_err(|()| invalid("bad path"))?;
    // A request without a body takes none: the host can then send it from where the
    // guest waits for its response, without a task of its own to read a body.
    let body = if request.body.is_empty() {
        None
    } else {
        Some(
            outgoing
                .body()
                .map_err(|()| Error::failed("the request body was taken"))?,
        )
    };
    let pending = outgoing_handler::handle(outgoing, None).map_err(|e| refused(&origin, &e))?;
    if let Some(body) = body {
        {
            let stream = body
                .write()
                .map_err(|()| Error::failed("the request body cannot be written"))?;
            for chunk in request.body.chunks(4096) {
                stream.blocking_write_and_flush(chunk).map_err(|e| {
                    Error::failed(format!("{origin}: sending the body failed: {e:?}"))
                })?;
            }
        }
        OutgoingBody::finish(body, None).map_err(|e| refused(&origin, &e))?;
    }
    pending.subscribe().block();
    let incoming = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(refused(&origin, &e)),
        Some(Err(())) | None => return Err(Error::failed(format!("{origin}: no response"))),
    };
    let status = incoming.status();
    let headers = incoming
        .headers()
        .entries()
        .into_iter()
        .map(|(n, v)| (n, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let body = incoming
        .consume()
        .map_err(|()| Error::failed(format!("{origin}: the response body was taken")))?;
    let bytes = read_body(&origin, &body)?;
    drop(IncomingBody::finish(body));
    Ok(Response {
        status,
        headers,
        body: bytes,
    })
}

fn read_body(origin: &str, body: &IncomingBody) -> Result<Vec<u8>, Error> {
    let stream = body
        .stream()
        .map_err(|()| Error::failed(format!("{origin}: the response body cannot be read")))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(Error::failed(format!(
                        "{origin}: the response is larger than {} MiB",
                        MAX_RESPONSE_BYTES >> 20
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok(bytes),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Error::failed(format!(
                    "{origin}: reading the response failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
}

/// The error a refused or failed request becomes.
fn refused(origin: &str, code: &ErrorCode) -> Error {
    match code {
        ErrorCode::HttpRequestDenied => Error::denied(format!(
            "{origin}: the host refused the request: this skill was not granted that host; ask for it in the manifest's capabilities.hosts, and the operator must allow it (--allow-host or [grants] hosts)"
        )),
        ErrorCode::DestinationIpProhibited => Error::denied(format!(
            "{origin}: the name resolves to an address inside the machine or a private network; only a grant naming that address reaches it"
        )),
        other => Error::failed(format!("{origin}: the request failed: {other:?}")),
    }
}

/// `(scheme, authority, path with query)` of an `http(s)://` URL.
fn split_url(url: &str) -> Result<(Scheme, String, String), Error> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else {
        return Err(Error::invalid_input(format!(
            "{url:?} is not an http:// or https:// URL"
        )));
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.is_empty() || authority.contains('@') {
        return Err(Error::invalid_input(format!(
            "{url:?} names no host (or a user, which is not supported)"
        )));
    }
    let mut path = rest[end..].split('#').next().unwrap_or("").to_owned();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    Ok((scheme, authority.to_owned(), path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let (scheme, authority, path) = split_url("http://127.0.0.1:9000/a/b?x=1#frag").unwrap();
        assert!(matches!(scheme, Scheme::Http));
        assert_eq!(
            (authority.as_str(), path.as_str()),
            ("127.0.0.1:9000", "/a/b?x=1")
        );
        let (_, authority, path) = split_url("https://api.example.com?q").unwrap();
        assert_eq!(
            (authority.as_str(), path.as_str()),
            ("api.example.com", "/?q")
        );
        assert!(split_url("ftp://x").is_err());
        assert!(split_url("https://user@host/").is_err());
    }
}
