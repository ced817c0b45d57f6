//! The accept loop: inbound limits on connections, and graceful shutdown.
//!
//! `axum::serve` cannot bound how long a client takes to send its headers, nor how many
//! connections are open, so faregate runs its own loop over hyper's HTTP/1 and HTTP/2
//! connections (the shape of mini-redis's `Listener`):
//!
//! - **Connections**: a semaphore of `[server] max_connections` permits is taken *before*
//!   `accept`, and its permit lives as long as the connection, whichever protocol it speaks.
//!   At the cap, new clients wait in the kernel's listen backlog instead of costing the gateway
//!   memory and file descriptors.
//! - **Protocols**: HTTP/1.1 and cleartext HTTP/2 on the same port. A client that opens with
//!   the HTTP/2 preface speaks HTTP/2 from its first byte (`preface`, `h2c`); an HTTP/1.1
//!   request that asks for `Upgrade: h2c` is answered `101` and continues as HTTP/2 on the
//!   same connection, slot and timers (`upgrade`).
//! - **Header read timeout** (`[server] header_read_timeout`): a connection that has sent
//!   nothing to tell its protocol by then is closed; after that, hyper closes an HTTP/1.1
//!   connection whose request head has not fully arrived in time, so a slow-loris client that
//!   trickles its headers byte by byte holds a connection for at most that long (twice, for
//!   its first request). The same timer bounds an idle keep-alive connection between two
//!   requests, and an HTTP/2 connection with no stream in flight.
//! - **Request timeout** ([`bound_request`], `[server] request_timeout`): from the headers to
//!   the response head, longer than every tool's deadline, so it only fires when something
//!   is wrong (a body trickled in slowly, a stuck handler) and answers 503 with a JSON message.
//!   Streams (SSE) are not cut: their response head is sent at once. On HTTP/2 it holds per
//!   stream, as do the body limit and every other layer of the router.
//! - **Closing**: every connection is closed through [`Lingering`], which shuts the write side
//!   first and reads what the client still sends for a bounded time, so an answer given before
//!   the whole request was read (a 413) is not lost to a reset.
//! - **Shutdown**: when the shutdown future completes, the listener is dropped (new
//!   connections are refused), `on_shutdown` runs (event streams end, job workers stop
//!   claiming), every connection is told to finish its current request and close (HTTP/2:
//!   GOAWAY, streams already started finish), and the loop waits up to `[server]
//!   shutdown_grace` for them. Connections still open after that are closed.
//!
//! Peer addresses reach handlers as axum's `ConnectInfo<SocketAddr>`.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::future::RouteFuture;
use futures::future::Either;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::Service as _;

use super::error::ApiError;
use super::h2c::{self, Http2Limits};
use super::linger::Lingering;
use super::preface::{self, Protocol, Rewind};
use super::repoll::Repoll;
use super::upgrade;

/// The inbound limits of the accept loop (from `[server]`).
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// How long a request head may take to arrive (and an idle keep-alive connection lasts).
    pub header_read_timeout: Duration,
    /// Open connections at most.
    pub max_connections: u32,
    /// Streams one HTTP/2 connection may carry at once.
    pub max_concurrent_streams: u32,
    /// How long in-flight requests may take to finish once shutdown starts.
    pub shutdown_grace: Duration,
}

/// Serves `router` on `listener` until `shutdown` completes, then drains (see the module docs).
/// `on_shutdown` runs once, right after the listener is closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
    on_shutdown: impl FnOnce() + Send,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(options.max_connections.max(1) as usize));
    let draining = CancellationToken::new();
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // The permit first: at the cap, nobody is accepted until a connection closes.
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break, // never closed; a closed semaphore would mean no more connections
            },
        };
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Per-connection errors (a reset before accept) and descriptor exhaustion
                    // are both survivable; back off a little so the latter does not spin.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        connections.spawn(Repoll::new(connection(
            stream,
            peer,
            router.clone(),
            permit,
            draining.clone(),
            options,
        )));
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    on_shutdown();
    draining.cancel();
    let open = connections.len();
    let drained = tokio::time::timeout(options.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            still_open = connections.len(),
            grace_s = options.shutdown_grace.as_secs_f64(),
            "closing connections still busy after the shutdown grace period"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    } else if open > 0 {
        tracing::info!(connections = open, "in-flight requests finished");
    }
    Ok(())
}

/// One connection: its protocol told from its first bytes within the header timeout, then
/// served until it closes or draining closes it.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    permit: OwnedSemaphorePermit,
    draining: CancellationToken,
    options: ServeOptions,
) {
    let _ = stream.set_nodelay(true);
    let mut stream = Lingering::new(stream);
    let sniffed = tokio::select! {
        sniffed = tokio::time::timeout(options.header_read_timeout, preface::sniff(&mut stream)) => sniffed,
        _ = draining.cancelled() => return,
    };
    let http2 = Http2Limits {
        max_concurrent_streams: options.max_concurrent_streams,
        idle_timeout: options.header_read_timeout,
    };
    match sniffed {
        Ok(Ok((Protocol::Http2, read))) => {
            h2c::serve(Rewind::new(read, stream), router, peer, http2, &draining).await;
        }
        Ok(Ok((Protocol::Http1, read))) => {
            http1(
                Rewind::new(read, stream),
                peer,
                router,
                &draining,
                options,
                http2,
            )
            .await;
        }
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "connection closed before a request"),
        Err(_) => {
            tracing::debug!(%peer, "connection closed: nothing arrived within the header read timeout")
        }
    }
    drop(permit);
}

/// HTTP/1.1 with the header timer; an agreed `Upgrade: h2c` continues as HTTP/2.
async fn http1(
    io: Rewind<Lingering>,
    peer: SocketAddr,
    router: Router,
    draining: &CancellationToken,
    options: ServeOptions,
    http2: Http2Limits,
) {
    let switched = Arc::new(Mutex::new(None));
    let service = Http1 {
        router: router.clone(),
        peer,
        switched: Arc::clone(&switched),
        body_read_timeout: options.header_read_timeout,
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    let conn = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        res = conn.as_mut() => {
            if let Err(e) = res {
                tracing::debug!(%peer, error = %e, "connection closed with an error");
            }
        }
        _ = draining.cancelled() => {
            conn.as_mut().graceful_shutdown();
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection closed with an error while draining");
            }
        }
    }
    let switch = switched.lock().ok().and_then(|mut s| s.take());
    if let Some(switch) = switch {
        match switch.connection().await {
            Ok(io) => h2c::serve(io, router, peer, http2, draining).await,
            Err(e) => tracing::debug!(%peer, error = %e, "h2c upgrade failed"),
        }
    }
}

/// The HTTP/1.1 service: the router, with the peer's address; a request that asks for h2c (in
/// a way `upgrade` takes up) is answered `101` and its switch left for [`http1`].
#[derive(Clone)]
struct Http1 {
    router: Router,
    peer: SocketAddr,
    switched: Arc<Mutex<Option<upgrade::Switch>>>,
    body_read_timeout: Duration,
}

type Switching = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Http1 {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<RouteFuture<Infallible>, Switching>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        if !upgrade::wants_h2c(&request) {
            // Called directly (the router is always ready): `oneshot` would keep the request
            // beside the router's future for the whole call.
            return Either::Left(self.router.clone().call(request));
        }
        let switched = Arc::clone(&self.switched);
        let read_for = self.body_read_timeout;
        Either::Right(Box::pin(async move {
            Ok(match upgrade::switch(request, read_for).await {
                Ok((switch, response)) => {
                    if let Ok(mut slot) = switched.lock() {
                        *slot = Some(switch);
                    }
                    response
                }
                Err(refused) => refused,
            })
        }))
    }
}

/// What [`bound_request`] holds every request to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestBounds {
    /// `[server] request_timeout`, resolved.
    pub timeout: Duration,
    /// The body limit, in bytes.
    pub max_body_bytes: usize,
}

/// Middleware: 413 at once for a `Content-Length` over the body limit, before anything waits
/// for the body; then 503 with a JSON message when the request takes longer than the request
/// timeout. One layer for both: each `from_fn` layer costs every call a boxed future and a
/// route dispatch, and the fast-fail path is measured in instructions.
pub(crate) async fn bound_request(
    State(bounds): State<RequestBounds>,
    request: Request,
    next: Next,
) -> Response {
    // `gate::guard` makes the same two checks for the routes it guards.
    if let Some(refused) = super::body::declared_too_large(request.headers(), bounds.max_body_bytes)
    {
        return refused;
    }
    let limit = bounds.timeout;
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(res) => res,
        Err(_) => request_timed_out(limit),
    }
}

/// The 503 of a request that took longer than the request timeout `limit`.
pub(crate) fn request_timed_out(limit: Duration) -> Response {
    tracing::warn!(
        limit_s = limit.as_secs_f64(),
        "request abandoned at the request timeout"
    );
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the request did not finish within the gateway's request timeout ({} s, [server] request_timeout) and was abandoned; a search can be retried, and a booking retried with the same idempotency_key is never made twice",
            limit.as_secs_f64()
        ),
    )
    .into_response()
}
