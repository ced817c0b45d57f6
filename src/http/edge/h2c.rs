//! HTTP/2 on one connection: many calls as streams, under the limits HTTP/1.1 connections keep.
//!
//! An agent runtime that makes many calls at once needs one connection instead of one per call
//! in flight, so the gateway speaks cleartext HTTP/2 beside HTTP/1.1 on the same port (the
//! accept loop tells them apart, `preface`; a client may also switch an HTTP/1.1 connection
//! over, `upgrade`). hyper's HTTP/2 server runs each stream as its own task, and every stream
//! passes the same router, so the request timeout, body limit, auth and per-client limits
//! hold per call exactly as on HTTP/1.1. What differs is per connection:
//!
//! - **Streams**: at most `[server] max_concurrent_streams` at once, announced in the
//!   connection's SETTINGS; a stream beyond it is refused (`REFUSED_STREAM`, which a client
//!   retries, since nothing of it ran). The connection takes one slot of `max_connections`,
//!   however many streams it carries.
//! - **Idle**: HTTP/1.1's header read timer bounds a connection between requests; here a
//!   connection with no stream in flight for `[server] header_read_timeout` is closed (GOAWAY).
//!   A stream counts from its request head to the end of its answer's body, so an event stream
//!   keeps its connection, and a client that trickles a request's headers never reaches the
//!   router and is idle all along. The goodbye is bounded too: a graceful close waits for the
//!   client to answer a PING (or, after an `h2c` upgrade, for its preface), and a client that
//!   never does is dropped after another `header_read_timeout`, so silent sockets cannot hold
//!   the connection cap's slots.
//! - **Answers not taken**: a client that stops reading (a stream's flow-control window left
//!   at zero) would hold its streams, their answers' memory and its connection's slot for
//!   ever, since hyper waits for window before it even asks the body for more. So an answer
//!   that is not an event stream and has not been sent whole `[server] header_read_timeout`
//!   after its head is taken as a client that stopped reading, and the connection is closed
//!   at once, as HTTP/1.1's would be by the socket's own send buffer filling. Event streams
//!   (`text/event-stream`) send as events come, and are bounded by the stream caps instead.
//! - **Shutdown**: draining sends GOAWAY; streams already started finish, new ones are refused.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::Service as _;

use super::holding::holding;

/// What one HTTP/2 connection is held to (from `[server]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Http2Limits {
    /// Streams in flight at most.
    pub max_concurrent_streams: u32,
    /// How long a connection with no stream in flight stays open.
    pub idle_timeout: Duration,
}

/// Serves HTTP/2 on `io` until the client closes, it stays idle, or draining ends it.
pub(crate) async fn serve<I>(
    io: I,
    router: Router,
    peer: SocketAddr,
    limits: Http2Limits,
    draining: &CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (busy, mut idle) = watch::channel(0usize);
    let (sending, mut stuck) = watch::channel(Sending::default());
    let service = Streams {
        router,
        peer,
        busy: Arc::new(busy),
        sending: Arc::new(sending),
    };
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_concurrent_streams);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let why = tokio::select! {
        res = conn.as_mut() => {
            if let Err(e) = res {
                tracing::debug!(%peer, error = %e, "HTTP/2 connection closed with an error");
            }
            return;
        }
        _ = draining.cancelled() => "draining",
        _ = idle_for(&mut idle, limits.idle_timeout) => "idle",
        _ = not_taken_for(&mut stuck, limits.idle_timeout) => {
            // Nothing graceful: a client that reads nothing would not read a GOAWAY either.
            tracing::info!(%peer, after = ?limits.idle_timeout, "HTTP/2 connection closed: the client took no answer for the header read timeout");
            return;
        }
    };
    conn.as_mut().graceful_shutdown();
    // Draining is bounded for every connection at once (`shutdown_grace`). After an idle
    // close, the connection ends when the client answers the GOAWAY's PING (or sends its
    // preface, after an upgrade), or when it has again been idle for the limit: a stream that
    // slipped in before the GOAWAY still finishes, a silent client is dropped.
    let closed = match why {
        "idle" => tokio::select! {
            res = conn => Some(res),
            _ = idle_for(&mut idle, limits.idle_timeout) => None,
        },
        _ => Some(conn.await),
    };
    match closed {
        Some(Ok(())) => {}
        Some(Err(e)) => {
            tracing::debug!(%peer, error = %e, why, "HTTP/2 connection closed with an error while closing");
        }
        None => {
            tracing::debug!(%peer, why, "HTTP/2 connection dropped: the client did not answer its closing");
        }
    }
}

/// Completes once no stream has been in flight for `limit`.
async fn idle_for(streams: &mut watch::Receiver<usize>, limit: Duration) {
    loop {
        let in_flight = *streams.borrow_and_update();
        let changed = match in_flight {
            0 => match tokio::time::timeout(limit, streams.changed()).await {
                Err(_) => return,
                Ok(changed) => changed,
            },
            _ => streams.changed().await,
        };
        if changed.is_err() {
            // The connection's service is gone, so the connection is ending on its own.
            return std::future::pending().await;
        }
    }
}

/// The answers of one connection being sent: when each one's head was ready, by an id that
/// grows with time, so the first is the oldest.
#[derive(Debug, Default)]
struct Sending {
    next: u64,
    since: BTreeMap<u64, Instant>,
}

/// Completes once an answer has been in [`Sending`] for `limit`: the client stopped taking it.
async fn not_taken_for(sending: &mut watch::Receiver<Sending>, limit: Duration) {
    loop {
        let oldest = sending
            .borrow_and_update()
            .since
            .iter()
            .next()
            .map(|(id, at)| (*id, *at));
        match oldest {
            None => {
                if sending.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
            Some((id, at)) => {
                tokio::time::sleep_until(at + limit).await;
                if sending.borrow().since.contains_key(&id) {
                    return;
                }
            }
        }
    }
}

/// One answer being sent, in [`Sending`] until dropped (with its body: sent, or the stream
/// reset).
struct Answering {
    sending: Arc<watch::Sender<Sending>>,
    id: u64,
}

impl Answering {
    fn begin(sending: &Arc<watch::Sender<Sending>>) -> Self {
        let mut id = 0;
        // Only the first answer of an empty list wakes the watcher: a later one is younger
        // than the one it already waits on.
        sending.send_if_modified(|s| {
            id = s.next;
            s.next += 1;
            s.since.insert(id, Instant::now());
            s.since.len() == 1
        });
        Answering {
            sending: Arc::clone(sending),
            id,
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        let id = self.id;
        self.sending.send_if_modified(|s| {
            s.since.remove(&id);
            false
        });
    }
}

/// The per-connection service: the router, with the peer's address, the stream count and the
/// answers being sent.
#[derive(Clone)]
struct Streams {
    router: Router,
    peer: SocketAddr,
    busy: Arc<watch::Sender<usize>>,
    sending: Arc<watch::Sender<Sending>>,
}

impl hyper::service::Service<Request<Incoming>> for Streams {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        // A `host` header that names another authority than `:authority` makes the request
        // malformed (RFC 9113, 8.3.1): refused before any check reads one of the two (the
        // `/mcp` Host check reads `host`).
        if let Some(refused) = authority_mismatch(&request) {
            return Box::pin(std::future::ready(Ok(refused)));
        }
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let busy = InFlight::enter(&self.busy);
        // The router is always ready (axum's `Router::poll_ready`), so it is called directly:
        // `oneshot` would keep the request beside the router's future for the whole call.
        let answer = self.router.clone().call(request);
        let sending = Arc::clone(&self.sending);
        Box::pin(async move {
            let response = answer.await?;
            let streamed = response
                .headers()
                .get(axum::http::header::CONTENT_TYPE)
                .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
            let answering = (!streamed).then(|| Answering::begin(&sending));
            Ok(holding(response, (busy, answering)))
        })
    }
}

/// A 400 for a request whose `host` header and `:authority` name different hosts.
fn authority_mismatch(request: &Request<Incoming>) -> Option<Response> {
    use axum::response::IntoResponse as _;
    let authority = request.uri().authority()?;
    let host = request.headers().get(axum::http::header::HOST)?;
    (!host
        .as_bytes()
        .eq_ignore_ascii_case(authority.as_str().as_bytes()))
    .then(|| {
        super::ApiError::bad_request(
            "the host header and :authority name different hosts; send one, or the same in both",
        )
        .into_response()
    })
}

/// One stream in flight, counted until dropped.
struct InFlight(Arc<watch::Sender<usize>>);

impl InFlight {
    fn enter(busy: &Arc<watch::Sender<usize>>) -> Self {
        busy.send_modify(|n| *n += 1);
        InFlight(Arc::clone(busy))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_means_no_stream_for_the_whole_limit() {
        let (busy, mut idle) = watch::channel(0usize);
        let busy = Arc::new(busy);
        let limit = Duration::from_secs(10);
        let started = tokio::time::Instant::now();
        let watcher = tokio::spawn(async move { idle_for(&mut idle, limit).await });
        tokio::time::sleep(Duration::from_secs(6)).await;
        let stream = InFlight::enter(&busy);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!watcher.is_finished(), "a stream in flight keeps it open");
        drop(stream);
        let left_at = tokio::time::Instant::now();
        watcher.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            left_at.elapsed(),
            limit,
            "idle counts from the last stream's end"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(46));
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_not_taken_for_the_whole_limit_ends_the_wait() {
        let (sending, mut stuck) = watch::channel(Sending::default());
        let sending = Arc::new(sending);
        let limit = Duration::from_secs(10);
        let started = Instant::now();
        let watcher = tokio::spawn(async move { not_taken_for(&mut stuck, limit).await });
        let taken = Answering::begin(&sending);
        tokio::time::sleep(Duration::from_secs(4)).await;
        let stuck_one = Answering::begin(&sending);
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(taken);
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(
            !watcher.is_finished(),
            "the first answer was taken in time; the second has waited 9 s"
        );
        watcher.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(14),
            "the second answer, begun at 4 s, not taken by 14 s"
        );
        drop(stuck_one);
    }
}
