//! The bodies of checked requests and responses: counted against the call's byte
//! budgets ([`Capped`]) and scanned for secret values ([`Scan`]).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

use super::Refusal;
use crate::secrets::Secrets;

/// What a [`Scan`] does with a secret's value in the bytes it passes on.
pub(super) enum OnSecret {
    /// Fails the body (a request the guest sends) and logs the attempt.
    Refuse(Refusal),
    /// Overwrites it (a response the guest reads), keeping the length.
    Mask(Arc<str>),
}

/// A body scanned for secret values. A value may be split across frames, so the last
/// `longest - 1` bytes are held back until the next frame (or the end) shows what
/// follows them.
pub(super) struct Scan {
    inner: WasiBody,
    secrets: Arc<Secrets>,
    on_secret: OnSecret,
    held: Vec<u8>,
    /// A trailers frame waiting for the held bytes to go first.
    trailers: Option<Frame<Bytes>>,
    ended: bool,
}

impl Scan {
    pub(super) fn new(inner: WasiBody, secrets: Arc<Secrets>, on_secret: OnSecret) -> Self {
        Self {
            inner,
            secrets,
            on_secret,
            held: Vec::new(),
            trailers: None,
            ended: false,
        }
    }

    /// Scans what is held; an error when a value must not pass.
    fn check(&mut self) -> Result<(), HttpError> {
        match &self.on_secret {
            OnSecret::Refuse(refusal) => {
                if let Some(name) = self.secrets.find(&self.held) {
                    refusal(&format!(
                        "the request body carries the value of secret {name}: a secret leaves only through its placeholder, to its host"
                    ));
                    return Err(HttpError::HttpRequestDenied);
                }
            }
            OnSecret::Mask(skill) => {
                for name in self.secrets.mask(&mut self.held) {
                    tracing::info!(target: "evo::security", skill = %skill, "the response carried the value of secret {name}; masked");
                }
            }
        }
        Ok(())
    }
}

impl Body for Scan {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        loop {
            if let Some(trailers) = self.trailers.take() {
                return Poll::Ready(Some(Ok(trailers)));
            }
            if self.ended {
                if self.held.is_empty() {
                    return Poll::Ready(None);
                }
                let rest = std::mem::take(&mut self.held);
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
            }
            let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.ended = true;
                    continue;
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => frame,
            };
            match frame.into_data() {
                Ok(data) => {
                    self.held.extend_from_slice(&data);
                    if let Err(e) = self.check() {
                        return Poll::Ready(Some(Err(e)));
                    }
                    let keep = self
                        .secrets
                        .longest()
                        .saturating_sub(1)
                        .min(self.held.len());
                    let ready = self.held.len() - keep;
                    if ready > 0 {
                        let out: Vec<u8> = self.held.drain(..ready).collect();
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                    }
                }
                Err(trailers) => {
                    // What is held was scanned already; it goes before the trailers.
                    self.ended = true;
                    self.trailers = Some(trailers);
                    if !self.held.is_empty() {
                        let rest = std::mem::take(&mut self.held);
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.held.is_empty() && self.trailers.is_none()
    }

    /// Both refusing and masking keep the length, so the inner body's hint holds (and a
    /// `content-length` the guest set stays true).
    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let held = self.held.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + held);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}

/// Bytes one call may still move in one direction.
#[derive(Debug)]
pub(super) struct Budget {
    limit: u64,
    left: AtomicU64,
}

impl Budget {
    pub(super) fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            left: AtomicU64::new(limit),
        })
    }

    /// Takes `n` bytes; false when fewer are left.
    fn take(&self, n: u64) -> bool {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }
}

/// A body whose bytes are counted against a call's [`Budget`]; past it, the body fails
/// with `over(limit)` (`HTTP-request-body-size` / `HTTP-response-body-size`).
pub(super) struct Capped {
    inner: WasiBody,
    budget: Arc<Budget>,
    over: fn(Option<u64>) -> HttpError,
}

impl Capped {
    pub(super) fn new(
        inner: WasiBody,
        budget: Arc<Budget>,
        over: fn(Option<u64>) -> HttpError,
    ) -> Self {
        Self {
            inner,
            budget,
            over,
        }
    }
}

impl Body for Capped {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
            && !self.budget.take(data.len() as u64)
        {
            return Poll::Ready(Some(Err((self.over)(Some(self.budget.limit)))));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
