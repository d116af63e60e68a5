//! A hostile plain WIT component built with `wit-bindgen` and the `wasi` bindings (no
//! Evo SDK): every function tries to take more than a call is given — time, memory,
//! result size, stdout, error size, requests and the connections they hold.

#![allow(
    unsafe_code,
    clippy::undocumented_unsafe_blocks,
    reason = "the glue wit-bindgen generates"
)]

wit_bindgen::generate!({ world: "hostile", path: "wit" });

use std::io::Write as _;

use wasip2::http::outgoing_handler::{self, FutureIncomingResponse};
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::OutputStream;

struct Component;

impl Guest for Component {
    fn spin() -> u64 {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
            if n == u64::MAX {
                return n;
            }
        }
    }

    fn hoard(mib: u32) -> u32 {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for _ in 0..mib {
            kept.push(vec![1; 1 << 20]);
        }
        std::hint::black_box(&kept);
        u32::try_from(kept.len()).unwrap_or(u32::MAX)
    }

    fn flood(bytes: u32) -> String {
        "x".repeat(bytes as usize)
    }

    fn heap(n: u32) -> Vec<u8> {
        vec![7; n as usize]
    }

    fn shout(bytes: u32) -> u32 {
        let line = [b'!'; 1024];
        let mut out = std::io::stdout();
        let mut written = 0;
        while written < bytes {
            if out.write_all(&line).is_err() {
                break;
            }
            written = written.saturating_add(1024);
        }
        written
    }

    fn complain(bytes: u32) -> Result<u32, String> {
        Err("e".repeat(bytes as usize))
    }

    fn swarm(url: String, n: u32, mode: SwarmMode) -> Result<SwarmResult, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: not an http:// URL"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let bad = |what: &str| format!("{url}: {what}");
        let mut result = SwarmResult {
            handed: 0,
            answered: 0,
            refused: 0,
            first_refusal: None,
        };
        let refused = |result: &mut SwarmResult, code: String| {
            result.refused += 1;
            result.first_refusal.get_or_insert(code);
        };
        let mut pending: Vec<FutureIncomingResponse> = Vec::new();
        let mut bodies: Vec<(OutgoingBody, OutputStream)> = Vec::new();
        for _ in 0..n {
            let request = OutgoingRequest::new(Fields::new());
            let with_body = mode == SwarmMode::ForgetWithBody;
            let method = if with_body { Method::Post } else { Method::Get };
            request.set_method(&method).map_err(|()| bad("method"))?;
            request
                .set_scheme(Some(&Scheme::Http))
                .map_err(|()| bad("scheme"))?;
            request
                .set_authority(Some(authority))
                .map_err(|()| bad("authority"))?;
            request
                .set_path_with_query(Some(path))
                .map_err(|()| bad("path"))?;
            let body = if with_body {
                let body = request.body().map_err(|()| bad("body"))?;
                let stream = body.write().map_err(|()| bad("body stream"))?;
                Some((body, stream))
            } else {
                None
            };
            match outgoing_handler::handle(request, None) {
                Ok(future) => {
                    result.handed += 1;
                    pending.push(future);
                }
                Err(code) => refused(&mut result, format!("{code:?}")),
            }
            if let Some((body, stream)) = body {
                // A first piece, and never the end.
                stream
                    .blocking_write_and_flush(b"a body that never ends")
                    .map_err(|e| format!("{url}: {e:?}"))?;
                bodies.push((body, stream));
            }
        }
        match mode {
            SwarmMode::Wait => {
                for future in pending {
                    future.subscribe().block();
                    match future.get() {
                        Some(Ok(Ok(_response))) => result.answered += 1,
                        Some(Ok(Err(code))) => refused(&mut result, format!("{code:?}")),
                        other => return Err(format!("{url}: {other:?}")),
                    }
                }
            }
            SwarmMode::Forget | SwarmMode::ForgetWithBody => {
                std::mem::forget(pending);
                std::mem::forget(bodies);
            }
        }
        Ok(result)
    }
}

export!(Component);
