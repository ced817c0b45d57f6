//! The accept loop: inbound limits on connections, and graceful shutdown.
//!
//! `axum::serve` cannot bound how long a client takes to send its headers, nor how many
//! connections are open, so faregate runs its own loop over hyper's HTTP/1 connection (the
//! shape of mini-redis's `Listener`):
//!
//! - **Connections**: a semaphore of `[server] max_connections` permits is taken *before*
//!   `accept`, and its permit lives as long as the connection. At the cap, new clients wait in
//!   the kernel's listen backlog instead of costing the gateway memory and file descriptors.
//! - **Header read timeout** (`[server] header_read_timeout`): hyper closes a connection whose
//!   request head has not fully arrived in time, so a slow-loris client that trickles its
//!   headers byte by byte holds a connection for at most that long. The same timer bounds an
//!   idle keep-alive connection between two requests.
//! - **Request timeout** ([`bound_request`], `[server] request_timeout`): from the headers to
//!   the response head, longer than every tool's deadline, so it only fires when something
//!   is wrong (a body trickled in slowly, a stuck handler) and answers 503 with a JSON message.
//!   Streams (SSE) are not cut: their response head is sent at once.
//! - **Closing**: every connection is closed through [`Lingering`], which shuts the write side
//!   first and reads what the client still sends for a bounded time, so an answer given before
//!   the whole request was read (a 413) is not lost to a reset.
//! - **Shutdown**: when the shutdown future completes, the listener is dropped (new
//!   connections are refused), `on_shutdown` runs (event streams end, job workers stop
//!   claiming), every connection is told to finish its current request and close, and the loop
//!   waits up to `[server] shutdown_grace` for them. Connections still open after that are
//!   closed.
//!
//! HTTP/1.1 only: agent clients speak it, and an HTTP/2 preface sniffer would read without the
//! header timer. Peer addresses reach handlers as axum's `ConnectInfo<SocketAddr>`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::error::ApiError;
use super::linger::Lingering;

/// The inbound limits of the accept loop (from `[server]`).
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// How long a request head may take to arrive (and an idle keep-alive connection lasts).
    pub header_read_timeout: Duration,
    /// Open connections at most.
    pub max_connections: u32,
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
        connections.spawn(connection(
            stream,
            peer,
            router.clone(),
            permit,
            draining.clone(),
            options.header_read_timeout,
        ));
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

/// One connection: HTTP/1.1 with the header timer, closed gracefully when draining starts.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    permit: OwnedSemaphorePermit,
    draining: CancellationToken,
    header_read_timeout: Duration,
) {
    let _ = stream.set_nodelay(true);
    let service = router.map_request(move |mut req: Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        req
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let conn = builder.serve_connection(
        TokioIo::new(Lingering::new(stream)),
        TowerToHyperService::new(service),
    );
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
    drop(permit);
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
    // MCP clients read a refusal only as a JSON-RPC error (`error::as_json_rpc`); this layer is
    // outside `/mcp`'s own, so it shapes its two refusals there itself.
    let mcp = request.uri().path() == super::MCP_PATH;
    if let Some(refused) = super::body::declared_too_large(request.headers(), bounds.max_body_bytes)
    {
        return match mcp {
            // Boxed: the refusal's future does not grow every call's.
            true => Box::pin(super::as_json_rpc(refused)).await,
            false => refused,
        };
    }
    let limit = bounds.timeout;
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(res) => res,
        Err(_) if mcp => Box::pin(super::as_json_rpc(request_timed_out(limit))).await,
        Err(_) => request_timed_out(limit),
    }
}

/// The 503 of a request that took longer than the request timeout `limit`.
fn request_timed_out(limit: Duration) -> Response {
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
