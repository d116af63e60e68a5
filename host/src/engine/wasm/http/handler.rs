//! Evo's own `wasi:http/outgoing-handler.handle` and the `future-incoming-response` it
//! returns, in place of wasmtime-wasi-http's.
//!
//! wasmtime-wasi-http runs every response as a task of its own, which a multi-thread
//! runtime may run on another thread than the guest that waits for it: each request
//! then crosses between threads and back, even one refused before it connects. Here a
//! request without a body is sent from where its guest is: `handle` starts it (checked,
//! then refused or connecting) without waiting, and the guest's pollable, or `get`,
//! polls it on from there. Nothing runs beside the guest, so nothing crosses threads.
//!
//! A request with a body keeps a task of its own. Its guest writes the body after
//! handing the request over, and the body's stream takes only two writes before
//! something must read them: the guest, blocked in its third, would never get to
//! polling the request that reads them.
//!
//! Every check of [`super::Outbound`] applies to both: only where the request's future
//! is polled differs. Building the request from the guest's resource mirrors
//! wasmtime-wasi-http's own `handle`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use http_body_util::{BodyExt as _, Empty};
use ureq::http;
use wasmtime::component::{Linker, Resource, ResourceType};
use wasmtime_wasi::p2::Pollable;
use wasmtime_wasi::runtime::AbortOnDropJoinHandle;
use wasmtime_wasi_http::p2::bindings::http::types::{
    ErrorCode, HostFutureIncomingResponse as _, Method, Scheme,
};
use wasmtime_wasi_http::p2::body::HostIncomingBody;
use wasmtime_wasi_http::p2::types::{
    HostFutureIncomingResponse, HostIncomingResponse, HostOutgoingRequest,
};
use wasmtime_wasi_http::{
    Error as HttpError, FieldMap, RequestOptions, WasiBody, WasiHttpHooks, WasiHttpView as _,
};

use super::super::state::{HostState, reached};

/// The `wasi:http` interfaces whose functions are replaced (the version
/// wasmtime-wasi-http defines; guests importing an older 0.2 version are linked to it).
const HTTP_TYPES: &str = "wasi:http/types@0.2.12";
const OUTGOING_HANDLER: &str = "wasi:http/outgoing-handler@0.2.12";

type Response = Result<http::Response<WasiBody>, HttpError>;

/// What `get` answers: nothing yet, the response or its error, or `Err(())` once taken.
type Got = Option<Result<Result<Resource<HostIncomingResponse>, ErrorCode>, ()>>;

/// What backs a `future-incoming-response`.
pub(in crate::engine::wasm) enum FutureResponse {
    /// A request without a body: polled where the guest waits.
    Here(Pin<Box<dyn Future<Output = Response> + Send>>),
    /// A request with a body: run as a task of its own, which reads the body as the
    /// guest writes it.
    Task(AbortOnDropJoinHandle<Response>),
    Ready(Response),
    /// Taken by `get`.
    Consumed,
}

#[async_trait::async_trait]
impl Pollable for FutureResponse {
    async fn ready(&mut self) {
        let response = match self {
            Self::Here(future) => future.await,
            Self::Task(task) => task.await,
            Self::Ready(_) | Self::Consumed => return,
        };
        *self = Self::Ready(response);
    }
}

impl FutureResponse {
    /// Polls the response once without waiting for it.
    fn poll_once(&mut self) {
        let mut cx = Context::from_waker(Waker::noop());
        let polled = match self {
            Self::Here(future) => future.as_mut().poll(&mut cx),
            Self::Task(task) => Pin::new(task).poll(&mut cx),
            Self::Ready(_) | Self::Consumed => return,
        };
        if let Poll::Ready(response) = polled {
            *self = Self::Ready(response);
        }
    }
}

/// Replaces `outgoing-handler.handle` and the `future-incoming-response` resource (its
/// drop, `subscribe` and `get`: every function that names it) with Evo's own. Call after
/// `wasi:http` is added to `linker`.
pub(in crate::engine::wasm) fn add_to_linker(
    linker: &mut Linker<HostState>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let replaced = replace(linker);
    linker.allow_shadowing(false);
    replaced
}

fn replace(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(HTTP_TYPES)?;
    types.resource(
        "future-incoming-response",
        ResourceType::host::<FutureResponse>(),
        |mut store, rep| {
            store
                .data_mut()
                .table
                .delete(Resource::<FutureResponse>::new_own(rep))?;
            Ok(())
        },
    )?;
    types.func_wrap(
        "[method]future-incoming-response.subscribe",
        |mut store, (id,): (Resource<FutureResponse>,)| {
            let state = reached(store.data_mut());
            Ok((wasmtime_wasi::p2::subscribe(&mut state.table, id)?,))
        },
    )?;
    types.func_wrap(
        "[method]future-incoming-response.get",
        |mut store, (id,): (Resource<FutureResponse>,)| Ok((get(reached(store.data_mut()), &id)?,)),
    )?;
    linker.instance(OUTGOING_HANDLER)?.func_wrap(
        "handle",
        |mut store,
         (request, options): (
            Resource<HostOutgoingRequest>,
            Option<Resource<RequestOptions>>,
        )| { Ok((handle(reached(store.data_mut()), request, options)?,)) },
    )?;
    Ok(())
}

/// The response, once it is there: `None` before, an error (`Some(Err(()))`) once taken.
fn get(state: &mut HostState, id: &Resource<FutureResponse>) -> wasmtime::Result<Got> {
    let entry = state.table.get_mut(id)?;
    entry.poll_once();
    let response = match std::mem::replace(entry, FutureResponse::Consumed) {
        FutureResponse::Ready(response) => response,
        FutureResponse::Consumed => return Ok(Some(Err(()))),
        pending => {
            *entry = pending;
            return Ok(None);
        }
    };
    match response {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            let headers = FieldMap::new_immutable(&mut state.outbound, parts.headers);
            let response = state.table.push(HostIncomingResponse {
                status: parts.status.as_u16(),
                headers,
                body: Some(HostIncomingBody::new(body)),
            })?;
            Ok(Some(Ok(Ok(response))))
        }
        // wasmtime-wasi-http's own `get` turns the error into the guest's error code,
        // as it would have for its own future.
        Err(error) => {
            let failed = state
                .table
                .push(HostFutureIncomingResponse::Ready(Err(error)))?;
            let rep = failed.rep();
            let code = state.http().get(failed);
            state
                .table
                .delete(Resource::<HostFutureIncomingResponse>::new_own(rep))?;
            code
        }
    }
}

/// Sends the guest's `request` through [`super::Outbound`]'s checks, as
/// wasmtime-wasi-http's `handle` builds it.
fn handle(
    state: &mut HostState,
    request: Resource<HostOutgoingRequest>,
    options: Option<Resource<RequestOptions>>,
) -> wasmtime::Result<Result<Resource<FutureResponse>, ErrorCode>> {
    let options = match options {
        Some(options) => Some(state.table.delete(options)?),
        None => None,
    };
    let request = state.table.delete(request)?;
    let built = match build(&mut state.outbound, request) {
        Ok(built) => built,
        Err(code) => return Ok(Err(code)),
    };
    let (request, has_body) = built;
    let future = state
        .outbound
        .send_request(request, options, Box::new(async { Ok(()) }));
    let future = Pin::from(future);
    let response = async move { future.await.map(|(response, _io)| response) };
    let entry = if has_body {
        FutureResponse::Task(wasmtime_wasi::runtime::spawn(response))
    } else {
        let mut here = FutureResponse::Here(Box::pin(response));
        // Started now, as far as it goes without waiting: checked, and refused or
        // connecting, before the guest waits for it.
        here.poll_once();
        here
    };
    Ok(Ok(state.table.push(entry)?))
}

/// The request `request` describes, and whether it has a body; or the error code the
/// guest gets for a request that cannot be sent.
fn build(
    hooks: &mut super::Outbound,
    request: HostOutgoingRequest,
) -> Result<(http::Request<WasiBody>, bool), ErrorCode> {
    let internal = |message: String| ErrorCode::InternalError(Some(message));
    // The `content-length` header is otherwise only checked when the body is written
    // or finished, neither of which a guest must do: checked here, a malformed one
    // never reaches the wire.
    let content_length = content_length(&request.headers).map_err(internal)?;
    if request.body.is_none() && content_length.is_some_and(|n| n != 0) {
        return Err(ErrorCode::HttpRequestBodySize(Some(0)));
    }
    let method = match request.method {
        Method::Get => http::Method::GET,
        Method::Head => http::Method::HEAD,
        Method::Post => http::Method::POST,
        Method::Put => http::Method::PUT,
        Method::Delete => http::Method::DELETE,
        Method::Connect => http::Method::CONNECT,
        Method::Options => http::Method::OPTIONS,
        Method::Trace => http::Method::TRACE,
        Method::Patch => http::Method::PATCH,
        Method::Other(method) => http::Method::from_bytes(method.as_bytes())
            .map_err(|_| ErrorCode::HttpRequestMethodInvalid)?,
    };
    let scheme = match request.scheme {
        Some(scheme) => {
            let scheme = match scheme {
                Scheme::Http => http::uri::Scheme::HTTP,
                Scheme::Https => http::uri::Scheme::HTTPS,
                Scheme::Other(scheme) => http::uri::Scheme::try_from(scheme.as_str())
                    .map_err(|_| ErrorCode::HttpProtocolError)?,
            };
            if !hooks.is_supported_scheme(&scheme) {
                return Err(ErrorCode::HttpProtocolError);
            }
            scheme
        }
        None => hooks.default_scheme().ok_or(ErrorCode::HttpProtocolError)?,
    };
    let authority = request.authority.unwrap_or_default();
    let mut uri = http::Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str());
    if let Some(path) = request.path_with_query {
        uri = uri.path_and_query(path);
    }
    let uri = uri
        .build()
        .map_err(wasmtime_wasi_http::p2::http_request_error)?;
    let mut builder = http::Request::builder().method(method).uri(uri);
    if hooks.set_host_header() {
        builder = builder.header(http::header::HOST, authority.as_str());
    }
    for (name, value) in request.headers.iter() {
        builder = builder.header(name, value);
    }
    let has_body = request.body.is_some();
    let body = request.body.unwrap_or_else(|| {
        Empty::new()
            .map_err(|never: std::convert::Infallible| match never {})
            .boxed_unsync()
    });
    let request = builder.body(body).map_err(|e| internal(e.to_string()))?;
    Ok((request, has_body))
}

/// The `content-length` of `headers`, if they have one; an error for several, or for
/// one that is not a run of decimal digits.
fn content_length(headers: &http::HeaderMap) -> Result<Option<u64>, String> {
    let mut values = headers.get_all(http::header::CONTENT_LENGTH).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("multiple `content-length` header values".into());
    }
    let text = value.to_str().unwrap_or_default();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid `content-length` header value: {value:?}"));
    }
    text.parse()
        .map(Some)
        .map_err(|e| format!("invalid `content-length` header value {text}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::content_length;
    use ureq::http::{HeaderMap, HeaderValue, header::CONTENT_LENGTH};

    #[test]
    fn a_content_length_is_one_run_of_decimal_digits() {
        let headers = |values: &[&'static str]| {
            let mut map = HeaderMap::new();
            for value in values {
                map.append(CONTENT_LENGTH, HeaderValue::from_static(value));
            }
            map
        };
        assert_eq!(content_length(&headers(&[])), Ok(None));
        assert_eq!(content_length(&headers(&["0"])), Ok(Some(0)));
        assert_eq!(content_length(&headers(&["1024"])), Ok(Some(1024)));
        for bad in ["+5", "-1", "", "1 2", "0x10", "99999999999999999999999"] {
            assert!(
                content_length(&headers(&[bad])).is_err(),
                "{bad:?} was taken for a length"
            );
        }
        assert_eq!(
            content_length(&headers(&["1", "1"])),
            Err("multiple `content-length` header values".to_owned())
        );
    }
}
