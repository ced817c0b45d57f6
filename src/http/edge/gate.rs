//! One middleware for the routes that need a client key: the request's bounds (body size,
//! request timeout), the key, and on the call routes the client's limits, in that order.
//!
//! The same three steps as the separate layers `/mcp` keeps (`bound_request`,
//! `require_client`, `limit_calls`, with `mcp::client_answers` between the first two), in one
//! `from_fn` layer: axum gives each `from_fn` layer, on every request, a boxed future, a boxed
//! copy of the layers under it and a boxed call of them, and a held call keeps all of them
//! (memory per held call and fast-fail, BENCHMARKS.md).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::auth::{Keys, authenticate};
use super::limits::{ClientLimits, limit};
use super::server::{RequestBounds, bounded};
use crate::telemetry::Telemetry;

/// What [`guard`] checks a request against.
#[derive(Clone)]
pub(crate) struct Gate {
    /// The body limit and the request timeout.
    pub bounds: RequestBounds,
    /// The client keys (and the admin key).
    pub keys: Keys,
    /// The per-client limits, on the tool-call routes; refusals are counted in the telemetry.
    pub limits: Option<(Arc<ClientLimits>, Arc<Telemetry>)>,
}

/// Middleware: 413 for a declared body over the limit, then, within the request timeout
/// (503), 401 without a client key, 429 over the client's limits, else the route.
pub(crate) async fn guard(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    bounded(gate.bounds, request, |mut request| async move {
        if let Err(refused) = authenticate(&gate.keys, &mut request) {
            return *refused;
        }
        match &gate.limits {
            Some((limits, telemetry)) => limit(limits, telemetry, request, next).await,
            None => next.run(request).await,
        }
    })
    .await
}
