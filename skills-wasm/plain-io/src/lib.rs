//! A plain WIT component that reaches outside itself only through WASI: files through
//! `wasi:filesystem` (Rust's `std::fs`), the network through `wasi:http`. Built with
//! `wit-bindgen` and the `wasip2` crate; no Evo SDK.

#![allow(
    unsafe_code,
    clippy::undocumented_unsafe_blocks,
    reason = "the glue wit-bindgen generates"
)]

wit_bindgen::generate!({ world: "io", path: "wit" });

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

struct Component;

impl Guest for Component {
    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))
    }

    fn fetch(url: String) -> Result<String, String> {
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(format!("{url}: not an http(s) URL"));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let request = OutgoingRequest::new(Fields::new());
        let bad = |what: &str| format!("{url}: {what}");
        request
            .set_method(&Method::Get)
            .map_err(|()| bad("method"))?;
        request
            .set_scheme(Some(&scheme))
            .map_err(|()| bad("scheme"))?;
        request
            .set_authority(Some(authority))
            .map_err(|()| bad("authority"))?;
        request
            .set_path_with_query(Some(path))
            .map_err(|()| bad("path"))?;
        let body = request.body().map_err(|()| bad("body"))?;
        let pending =
            outgoing_handler::handle(request, None).map_err(|e| format!("{url}: {e:?}"))?;
        OutgoingBody::finish(body, None).map_err(|e| format!("{url}: {e:?}"))?;
        pending.subscribe().block();
        let response = match pending.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(e))) => return Err(format!("{url}: {e:?}")),
            _ => return Err(format!("{url}: no response")),
        };
        let status = response.status();
        let incoming = response.consume().map_err(|()| bad("response body"))?;
        let stream = incoming.stream().map_err(|()| bad("response stream"))?;
        let mut text = Vec::new();
        loop {
            match stream.blocking_read(64 << 10) {
                Ok(chunk) => text.extend(chunk),
                Err(StreamError::Closed) => break,
                Err(e) => return Err(format!("{url}: {e:?}")),
            }
        }
        Ok(format!("{status} {}", String::from_utf8_lossy(&text)))
    }
}

export!(Component);
