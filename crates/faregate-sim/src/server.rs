//! The simulator's accept loop: HTTP/1.1 and h2c on one port, with graceful shutdown.
//!
//! Its own loop rather than `axum::serve`, which speaks both too but leaves hyper's HTTP/2
//! limit of 200 streams per connection unsettable, too few for the load scripts' held calls.

use std::sync::atomic::Ordering;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;

use crate::Simulator;

/// The most HTTP/2 streams the simulator lets a client have in flight on one connection. A
/// gateway speaking h2c with prior knowledge (`[providers.X] http2_prior_knowledge`) sends every
/// call in flight on one connection, and the load scripts hold 10,000 calls at a hanging
/// provider: under hyper's default of 200, the rest would wait in the gateway's client and never
/// reach the provider. A real provider's limit is usually lower; the gateway's client then
/// queues streams over it, which the scripts can show with fewer held calls.
pub const MAX_CONCURRENT_STREAMS: u32 = 20_000;

/// Serves `sim` on `listener` until `shutdown` completes, then ends hung and slow requests
/// (503) and drains connections.
///
/// Each connection speaks HTTP/1.1 or, when it opens with the HTTP/2 preface, h2c (HTTP/2 with
/// prior knowledge), told apart by hyper-util's `auto` builder. Not `axum::serve`, which does
/// both too but leaves hyper's HTTP/2 limit of 200 streams per connection unsettable
/// ([`MAX_CONCURRENT_STREAMS`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    sim: Simulator,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let inner = sim.inner.clone();
    let router = sim.router();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS);
    let graceful = GracefulShutdown::new();
    let shutdown = std::pin::pin!(shutdown);
    let mut shutdown = shutdown;
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was accepted: the
                    // listener stays usable, and a pause lets descriptors come back.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    inner.closing.store(true, Ordering::SeqCst);
    inner.epoch.send_modify(|e| *e += 1);
    graceful.shutdown().await;
    Ok(())
}
