//! Sends a checked request over a connection of its own, to the addresses the host
//! checked (never a second lookup of the name), and hands back a response whose body
//! drives the connection.
//!
//! `wasmtime_wasi_http::default_send_request` runs the connection as a task of its own
//! beside the body: every frame then crosses from that task to the guest's, often from
//! one thread to another. Here whoever reads the body polls the connection too, so a
//! response is read where the guest waits for it. `TCP_NODELAY` is set: a request's
//! head and its body go out as they are written, not after the server's delayed ACK.
//!
//! A connection that has ended (its response read, nothing more to send) is closed with
//! the call's store, after the answer, instead of on the way to it: closing a TCP
//! connection is a system call that also takes the peer's half through its state
//! changes, about a tenth of a loopback GET. See [`Linger`].

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use ureq::http;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody};

/// How long a wait lasts when the request's options do not say (the call's deadline
/// ends the call sooner).
const NO_TIMEOUT: Duration = Duration::from_secs(600);

/// Sends `request` to the first of `addresses` that accepts a connection; over TLS
/// when the request's scheme is `https`, checking the certificate for `server_name`.
pub(super) async fn send(
    mut request: http::Request<WasiBody>,
    addresses: &[SocketAddr],
    server_name: &str,
    options: Option<RequestOptions>,
    linger: Linger,
) -> Result<http::Response<WasiBody>, HttpError> {
    let wait = |pick: fn(&RequestOptions) -> Option<Duration>| {
        options.as_ref().and_then(pick).unwrap_or(NO_TIMEOUT)
    };
    let (connect_timeout, first_byte_timeout, between_bytes_timeout) = (
        wait(|o| o.connect_timeout),
        wait(|o| o.first_byte_timeout),
        wait(|o| o.between_bytes_timeout).max(Duration::from_nanos(1)),
    );
    let tls = request.uri().scheme() == Some(&http::uri::Scheme::HTTPS);
    let tcp = tokio::time::timeout(connect_timeout, connect(addresses))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)??;
    let stream = if tls {
        let name = rustls::pki_types::ServerName::try_from(server_name.to_owned())?;
        let connecting = tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp);
        let tls = tokio::time::timeout(connect_timeout, connecting)
            .await
            .map_err(|_| HttpError::ConnectionTimeout)?
            .map_err(HttpError::Tls)?;
        Stream::Tls(Box::new(tls))
    } else {
        Stream::Plain(tcp)
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    // The request line carries the path only; the Host header names the server.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| HttpError::HttpRequestUriInvalid)?;

    // Drive the connection while waiting for the response's head.
    let mut conn = Some(Box::pin(conn));
    let mut response = std::pin::pin!(tokio::time::timeout(
        first_byte_timeout,
        sender.send_request(request)
    ));
    let response = std::future::poll_fn(|cx| {
        if let Poll::Ready(answer) = response.as_mut().poll(cx) {
            return Poll::Ready(answer);
        }
        match linger.drive(&mut conn, cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Ok(Err(e))),
            // The connection ended cleanly: the answer is ready or never comes.
            Poll::Ready(Ok(())) => response.as_mut().poll(cx),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
    .map_err(|_| HttpError::ConnectionReadTimeout)??;
    let mut timer = tokio::time::interval(between_bytes_timeout);
    timer.reset();
    Ok(response.map(|incoming| {
        Driven {
            incoming,
            conn,
            timer,
            linger,
        }
        .boxed_unsync()
    }))
}

/// Connects to the first address that accepts, or fails with the last one's error.
async fn connect(addresses: &[SocketAddr]) -> Result<TcpStream, HttpError> {
    let mut last = None;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => {
                // Small writes go out at once: a request is a head and a body.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(HttpError::Connect(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "no address to connect to",
        )
    })))
}

/// The TLS client configuration: the Mozilla roots (webpki-roots), no client
/// certificate; built once.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|builder| {
                    builder
                        .with_root_certificates(roots.clone())
                        .with_no_client_auth()
                })
                .unwrap_or_else(|_| {
                    // The ring provider supports the default versions; keep a working
                    // configuration if a future release disagrees.
                    rustls::ClientConfig::builder()
                        .with_root_certificates(roots)
                        .with_no_client_auth()
                });
            Arc::new(config)
        })
        .clone()
}

/// A connection, plain or over TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    /// The connection is closed when it is dropped, right after this: for a plain one,
    /// closing says all a shutdown would (the peer sees the end of the stream), at one
    /// system call instead of two. TLS sends its close-notify first.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(_) => Poll::Ready(Ok(())),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

type Connection = hyper::client::conn::http1::Connection<TokioIo<Stream>, WasiBody>;

/// A response body that drives its connection as it is read, and fails when no byte
/// comes for the between-bytes timeout.
struct Driven {
    incoming: hyper::body::Incoming,
    conn: Option<Pin<Box<Connection>>>,
    timer: tokio::time::Interval,
    linger: Linger,
}

impl Body for Driven {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        /// What a failure while the body is read is to the guest.
        fn body_error(e: hyper::Error) -> HttpError {
            if e.is_timeout() {
                HttpError::HttpResponseTimeout
            } else {
                HttpError::from(e)
            }
        }
        let this = &mut *self;
        if let Poll::Ready(Err(e)) = this.linger.drive(&mut this.conn, cx) {
            return Poll::Ready(Some(Err(body_error(e))));
        }
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                this.timer.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(body_error(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                ready!(this.timer.poll_tick(cx));
                Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}

/// Most ended connections one call keeps open until its store is dropped; those past it
/// are closed at once, as before.
pub(super) const MAX_LINGERING: usize = 4;

/// The connections of one call that ended cleanly, closed when the call's host state is
/// dropped, after the answer: on a current-thread runtime by the store's delayed drop,
/// on a multi-thread one by the worker that makes the next instance or by a task of its
/// own; in place only outside any runtime. At most [`MAX_LINGERING`] are kept, so a
/// call making many requests holds no more sockets than that beyond the one it is
/// using. A connection that did not end (a body the guest dropped unread) is closed
/// where it is dropped, at once.
#[derive(Clone, Default)]
pub(super) struct Linger(Arc<Mutex<Vec<Pin<Box<Connection>>>>>);

impl Linger {
    /// Drives `conn` while it runs. Once it ends it is taken from there: kept if it
    /// ended cleanly, dropped (closed) with its error returned if not. `Pending` while
    /// it runs, and when there is none.
    fn drive(
        &self,
        conn: &mut Option<Pin<Box<Connection>>>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), hyper::Error>> {
        let Some(running) = conn.as_mut() else {
            return Poll::Pending;
        };
        let ended = ready!(running.as_mut().poll(cx));
        if let Some(ended_conn) = conn.take()
            && ended.is_ok()
        {
            self.keep(ended_conn);
        }
        Poll::Ready(ended)
    }

    /// Keeps `conn` until the call's state is dropped, or drops it now if the call
    /// already keeps as many as it may.
    fn keep(&self, conn: Pin<Box<Connection>>) {
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() < MAX_LINGERING {
            kept.push(conn);
        } else {
            drop(kept);
            drop(conn);
        }
    }

    /// How many ended connections are kept.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

impl std::fmt::Debug for Linger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map_or(0, |kept| kept.len());
        f.debug_tuple("Linger").field(&kept).finish()
    }
}
