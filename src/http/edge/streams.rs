//! Event streams held open, counted per client and in all: `GET /v1/events`,
//! `GET /v1/availability/events` and `GET /mcp` (a session's stream, or its resumption).
//!
//! Why: a stream holds its connection for as long as its client likes, and every connection
//! counts against `[server] max_connections`. Without a cap, one client opening a thousand
//! streams took every connection, and the other clients' calls and even `/healthz` waited in
//! the listen backlog until it let go. The per-client limits of [`limits`](super::limits) count
//! tool calls, which end by themselves; a stream does not, so it needs a count of its own.
//!
//! Two caps, both checked when a stream is opened:
//! - **per client** (`[limits] client_max_streams`, 32 by default; a client is its key, or its
//!   peer address when auth is off, as for the other limits): beyond it, 429 with a JSON body
//!   saying how many are open and what the limit is;
//! - **in all**, half of `[server] max_connections`: whatever the number of clients, streams
//!   never take more than half of the connections, so calls, probes and operators always find
//!   the other half. Beyond it, 503 with `Retry-After`. Derived rather than configured: it is a
//!   share of a setting the operator already chose, and a stream over HTTP/2 takes no
//!   connection of its own, so counting streams is never lower than counting their
//!   connections.
//!
//! A slot is a [`StreamSlot`], held by the answer's body ([`holding`](super::holding)), so it
//! is released when the stream ends: the client closed it, the server ended it (shutdown), or
//! the answer was dropped unsent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::error::ApiError;
use super::holding::holding;
use super::limits::ClientId;
use crate::telemetry::Telemetry;

/// How long a client refused for the share of every stream is told to wait.
const FULL_RETRY_AFTER_S: u64 = 5;

/// The streams open now, by client and in all. Shared behind an `Arc`.
#[derive(Debug)]
pub struct StreamLimits {
    /// Streams one client may hold open; `None` = no cap.
    per_client: Option<u32>,
    /// Streams every client together may hold open; `None` = no cap.
    in_all: Option<u32>,
    /// A std mutex: held only to count, never across an await.
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    /// Clients with at least one stream open (an entry goes when its last stream ends, so the
    /// map is as large as the clients streaming now).
    by_client: HashMap<ClientId, u32>,
    in_all: u32,
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamRefusal {
    /// The client holds this many streams already, its cap.
    Client(u32),
    /// Every client together holds this many, the share of connections streams may take.
    Full(u32),
}

/// One open stream; dropping it releases its slot.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    limits: Arc<StreamLimits>,
    client: ClientId,
}

impl StreamLimits {
    /// `per_client` streams for each client (`[limits] client_max_streams`), and half of
    /// `max_connections` (at least one) for every client together.
    pub fn new(per_client: Option<u32>, max_connections: u32) -> Self {
        StreamLimits {
            per_client,
            in_all: Some((max_connections / 2).max(1)),
            open: Mutex::new(Open::default()),
        }
    }

    /// A slot for one more stream of `client`, or why not.
    pub(crate) fn open(self: &Arc<Self>, client: ClientId) -> Result<StreamSlot, StreamRefusal> {
        let mut open = self.lock();
        if let Some(max) = self.in_all
            && open.in_all >= max
        {
            return Err(StreamRefusal::Full(max));
        }
        let held = open.by_client.get(&client).copied().unwrap_or(0);
        if let Some(max) = self.per_client
            && held >= max
        {
            return Err(StreamRefusal::Client(max));
        }
        open.by_client.insert(client, held + 1);
        open.in_all += 1;
        Ok(StreamSlot {
            limits: Arc::clone(self),
            client,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.limits.lock();
        open.in_all = open.in_all.saturating_sub(1);
        if let Some(held) = open.by_client.get_mut(&self.client) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

impl StreamSlot {
    /// `response` (a stream) holding this slot until it ends; any other answer releases it.
    pub(crate) fn around(self, response: Response) -> Response {
        if response.status().is_success() {
            holding(response, self)
        } else {
            response
        }
    }
}

/// A slot for one more stream of `client`, or the refusal to answer (counted in `telemetry`).
pub(crate) fn open_stream(
    limits: &Arc<StreamLimits>,
    telemetry: &Telemetry,
    client: ClientId,
) -> Result<StreamSlot, Box<Response>> {
    limits.open(client).map_err(|refusal| {
        tracing::info!(%client, ?refusal, "event stream refused");
        let limit = match refusal {
            StreamRefusal::Client(_) => "client_max_streams",
            StreamRefusal::Full(_) => "streams_in_all",
        };
        telemetry.metrics().record_client_limited(limit);
        Box::new(refused(refusal))
    })
}

/// The answer to a refused stream: 429 for the client's own cap, 503 when streams in all hold
/// their share of the connections.
fn refused(refusal: StreamRefusal) -> Response {
    match refusal {
        StreamRefusal::Client(max) => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this client already holds {max} event streams open, its limit ([limits] client_max_streams is {max}); close one (GET /v1/events, /v1/availability/events or /mcp) before opening another"
            ),
        )
        .with("limit", json!("client_max_streams"))
        .with("open", json!(max))
        .with("max", json!(max))
        .into_response(),
        StreamRefusal::Full(max) => {
            let mut res = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the gateway holds {max} event streams open, the most it keeps for streams (half of [server] max_connections, so that calls always find a connection); retry after {FULL_RETRY_AFTER_S} s"
                ),
            )
            .with("limit", json!("streams_in_all"))
            .with("open", json!(max))
            .with("max", json!(max))
            .with("retry_after_s", json!(FULL_RETRY_AFTER_S))
            .into_response();
            res.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(FULL_RETRY_AFTER_S),
            );
            res
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ClientId = ClientId::Key([1; 32]);
    const B: ClientId = ClientId::Key([2; 32]);

    #[test]
    fn a_client_is_held_to_its_cap_and_an_ended_stream_frees_its_slot() {
        let limits = Arc::new(StreamLimits::new(Some(2), 1024));
        let first = limits.open(A);
        let second = limits.open(A);
        assert!(first.is_ok() && second.is_ok());
        assert_eq!(limits.open(A).err(), Some(StreamRefusal::Client(2)));
        assert!(limits.open(B).is_ok(), "another client has its own");
        drop(first);
        assert_eq!(limits.lock().by_client.get(&A), Some(&1));
        assert!(limits.open(A).is_ok(), "an ended stream frees its slot");
        drop(second);
        assert_eq!(
            limits.lock().by_client.len(),
            0,
            "no entry outlives its streams"
        );
    }

    #[test]
    fn streams_in_all_take_at_most_half_the_connections() {
        let limits = Arc::new(StreamLimits::new(None, 5));
        let held: Vec<_> = [A, B].iter().map(|c| limits.open(*c)).collect();
        assert!(held.iter().all(Result::is_ok));
        assert_eq!(limits.open(A).err(), Some(StreamRefusal::Full(2)));
        drop(held);
        assert_eq!(limits.lock().in_all, 0);
        assert!(limits.open(A).is_ok());
    }

    #[tokio::test]
    async fn refusals_say_how_many_are_open_and_what_to_do() {
        let res = refused(StreamRefusal::Client(3));
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        let body = axum::body::to_bytes(res.into_body(), 4096)
            .await
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(v["limit"], "client_max_streams");
        assert_eq!((v["open"].as_u64(), v["max"].as_u64()), (Some(3), Some(3)));
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.contains("close one"))
        );
        let full = refused(StreamRefusal::Full(512));
        assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(full.headers()[header::RETRY_AFTER], "5");
    }
}
