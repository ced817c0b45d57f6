//! One middleware for the routes that need a client key: the request's bounds (body size,
//! request timeout), the key, and on the call routes the client's limits, in that order.
//!
//! `/mcp` has a guard of its own (`mcp::client_answers::guard`): the same steps, an MCP body read
//! to tell a tool call before the limits, and its refusals shaped as JSON-RPC errors. Each is one
//! `from_fn` layer: axum gives each `from_fn` layer, on every request, a boxed future, a boxed
//! copy of the layers under it and a boxed call of them, and a held call keeps all of them
//! (memory per held call and fast-fail, BENCHMARKS.md). The checks run before the layer's
//! future exists, so a held call keeps only the timer and the admission of them.

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tower::Service as _;

use super::auth::{Keys, authenticate};
use super::body::declared_too_large;
use super::limits::{Admission, ClientLimits, admit};
use super::server::{RequestBounds, request_timed_out};
use super::streams::StreamLimits;
use crate::telemetry::Telemetry;

/// What [`guard`] checks a request against. The router holds it in an `Arc`: axum clones a
/// middleware's state for every request, and one reference count is cheaper to change than the
/// three inside.
pub(crate) struct Gate {
    /// The body limit and the request timeout.
    pub bounds: RequestBounds,
    /// The client keys (and the admin key).
    pub keys: Keys,
    /// The per-client limits, on the tool-call routes; refusals are counted in the telemetry.
    pub limits: Option<(Arc<ClientLimits>, Arc<Telemetry>)>,
    /// The event streams open, on `/mcp` (whose `GET` is a session's stream; [`guard`] never
    /// reads it: the other stream routes count theirs in their handlers).
    pub streams: Option<(Arc<StreamLimits>, Arc<Telemetry>)>,
}

/// Middleware: 413 for a declared body over the limit, then 401 without a client key, 429 over
/// the client's limits, else the route, within the request timeout (503).
///
/// A plain function, not an `async fn`: every check is synchronous, and the future it returns
/// keeps only what a held call needs (the timer, the route's boxed future, the client's
/// admission). An `async fn` keeps its arguments (the request, the gate) and each step's state
/// beside the route's future for as long as a slow provider holds the call: 3.1 KB of every
/// held call (memory per held call, BENCHMARKS.md). Never on `/mcp`, whose refusals are
/// JSON-RPC errors and whose limits read the body (`mcp::client_answers::guard` there).
pub(crate) fn guard(
    State(gate): State<Arc<Gate>>,
    mut request: Request,
    mut next: Next,
) -> impl Future<Output = Response> {
    let checked = check(&gate, &mut request).map(|admission| {
        let limit = gate.bounds.timeout;
        (
            tokio::time::timeout(limit, next.call(request)),
            limit,
            admission,
        )
    });
    async move {
        let (run, limit, admission) = match checked {
            Ok(running) => running,
            Err(refused) => return *refused,
        };
        let answered = match run.await {
            Ok(Ok(res)) => res,
            Ok(Err(never)) => match never {},
            Err(_) => request_timed_out(limit),
        };
        drop(admission);
        answered
    }
}

/// [`guard`]'s checks, in order: the declared body size, the client key (which it adds to
/// `request` as its [`super::auth::Caller`]), and the client's limits (an admission to hold
/// while the call runs, on the tool-call routes).
fn check(gate: &Gate, request: &mut Request) -> Result<Option<Admission>, Box<Response>> {
    check_size_and_key(gate, request)?;
    match &gate.limits {
        Some((limits, telemetry)) => admit(limits, telemetry, request),
        None => Ok(None),
    }
}

/// [`guard`]'s first two checks: the declared body size, then the client key (added to
/// `request` as its [`super::auth::Caller`]). `/mcp`'s own guard (`mcp::client_answers::guard`)
/// makes them too, and admits a request by its body afterwards.
pub(crate) fn check_size_and_key(gate: &Gate, request: &mut Request) -> Result<(), Box<Response>> {
    if let Some(refused) = declared_too_large(request.headers(), gate.bounds.max_body_bytes) {
        return Err(Box::new(refused));
    }
    authenticate(&gate.keys, request)
}
