//! The HTTP server: routes, the edge every request passes, and the handlers.
//!
//! **Architecture invariant:** this is the only module that knows axum and the gateway's own
//! HTTP answers (error bodies, the catalog shape, the job API). It turns requests into calls
//! through [`crate::agents`] (the protocols' shapes, pure) and `calls` (the one path to the
//! gateway or the job queue), and renders the answers; it never talks to a provider.
//!
//! - `routes/`: the route table the router, the routed paths and the OpenAPI paths are built
//!   from;
//! - `edge/`: the accept loop, the request timeout, authentication, per-client limits, body
//!   reading and the one error → JSON mapping;
//! - `api/`: the native call endpoint, the catalog, the job API and the OpenAI and Anthropic
//!   routes (the OpenAPI document is rendered in `routes/`, from the table);
//! - `mcp/`: `/mcp`, the only module that imports rmcp;
//! - `ops/`: breakers, alerts, events, metrics and the dashboard;
//! - `calls`: running parsed calls; `state`: what every handler can reach.

mod api;
mod calls;
mod edge;
mod mcp;
mod ops;
mod routes;
mod state;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::MethodRouter;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;

pub use edge::{
    ApiError, Caller, ClientId, ClientLimits, ClientSetup, Keys, Role, ServeOptions, StreamLimits,
    client_setup, serve,
};
pub use routes::ROUTED_PATHS;
pub use state::{
    AppState, ConfigSource, ReloadError, ReloadSummary, SharedState, budgets as client_budgets,
    client_share, provider_reserve,
};

pub(crate) use edge::share_client_rates;
pub(crate) use ops::keep_in_step as keep_configs_in_step;
use routes::{Guard, Handler, ROUTES};

/// The whole HTTP API, built from the route table (`routes/table.rs`).
///
/// Layer order (axum's `Router::layer` wraps outward, so the last added runs first):
/// 1. the request span (`trace`), on each route so it knows the matched path; every answer
///    below is traced (the status it records is final: the step above keeps it);
/// 2. a `Content-Length` over the body limit is refused at once with 413, before anything
///    waits for the body; then the request timeout, so a stuck handler still answers a JSON
///    503 (one layer, `edge::bound_request`);
/// 3. client-key authentication (routes guarded `Client` and `Call`; the probes are open and
///    the operations routes authorize per route), before anything reads the body, so an
///    unauthenticated client cannot make the gateway read a large body;
/// 4. on the tool-call routes only (guarded `Call`: native, OpenAI, Anthropic, `/mcp`): the
///    per-client rate and in-flight limits, after authentication (they count per key) and
///    before the body;
/// 5. the body limit, applied as the handler reads the body.
///
/// Steps 2 to 4 are one `from_fn` layer (`edge::guard`) on the `Client` and `Call` routes, in
/// that order; `/mcp` has one of its own (`mcp::guard`), which reads an MCP body to tell a tool
/// call before the limits, and answers every refusal as a JSON-RPC error.
///
/// Every refusal is JSON: a wrong method gets the table's JSON 405 (each route's method
/// fallback, inside the route's layers, with the `Allow` header the table derives), and `/mcp`
/// turns rmcp's plain-text refusals into the same shape on its own route, so the calls that are
/// not refused pay for no wrapper.
///
/// `/mcp` sits behind the same checks; rmcp then checks `Host` and `Origin` (`[mcp]` in
/// `faregate.toml`) and enforces the same body limit itself. Its guard (`mcp::guard`) also
/// reshapes what comes back: its 401, 403, 413, 429 and 503 carry a JSON-RPC error, the only
/// body MCP clients show their users, and an ended session is 200. `shutdown` ends MCP
/// sessions, their requests and streams when cancelled (`run` does so after the drain; a
/// `GET /mcp` stream ends earlier, with the telemetry's streams).
pub fn router(state: AppState, shutdown: CancellationToken) -> Router {
    let state: SharedState = Arc::new(state);
    let mut open = Router::new();
    let mut client = Router::new();
    let mut calls = Router::new();
    let mut self_authorized = Router::new();
    // `/mcp` has a guard of its own (`mcp::guard`), so it is built apart and merged in.
    let mut mcp_route = Router::new();
    for route in ROUTES {
        let is_mcp = route
            .operations
            .iter()
            .any(|op| matches!(op.handler, Handler::Mcp));
        let group = match route.guard {
            _ if is_mcp => &mut mcp_route,
            Guard::Open => &mut open,
            Guard::Client => &mut client,
            Guard::Call => &mut calls,
            Guard::SelfAuthorized => &mut self_authorized,
        };
        let routed = std::mem::take(group);
        *group = if is_mcp {
            routed.route(route.path, mcp::service(state.clone(), shutdown.clone()))
        } else {
            let methods = route
                .operations
                .iter()
                .filter_map(|op| op.handler.method_router(op.verb))
                .reduce(MethodRouter::merge);
            match methods {
                Some(methods) => routed.route(
                    route.path,
                    methods.fallback(edge::method_not_allowed(route.allow())),
                ),
                None => routed,
            }
        };
    }
    // A path no route serves is answered behind the outer layers too (traced, bounded).
    let unrouted = Router::new().fallback(edge::no_route);
    layered(&state, Guard::Open, false, open)
        .merge(layered(&state, Guard::Client, false, client))
        .merge(layered(&state, Guard::Call, false, calls))
        .merge(layered(&state, Guard::Call, true, mcp_route))
        .merge(layered(
            &state,
            Guard::SelfAuthorized,
            false,
            self_authorized,
        ))
        .merge(layered(&state, Guard::Open, false, unrouted))
        .with_state(state)
}

/// `routes` behind every edge layer of `guard`, steps 1 to 5 above (`mcp::guard` for `/mcp`):
/// the request span and the request's bounds for every route, client-key
/// authentication for `Client` and `Call`, the per-client limits for `Call`, and the body
/// limit.
///
/// All in one `layer` call: axum boxes each route once per `layer` call, and every request
/// clones each box (with everything inside it) once per layer above it, so a layer added on
/// its own cost every call several allocations and a copy of the layers under it.
fn layered(
    state: &AppState,
    guard: Guard,
    mcp: bool,
    routes: Router<SharedState>,
) -> Router<SharedState> {
    let bounds = edge::RequestBounds {
        timeout: state.request_timeout,
        max_body_bytes: state.max_body_bytes,
    };
    let traced = ServiceBuilder::new().layer(edge::trace_layer());
    let bounded = middleware::from_fn_with_state(bounds, edge::bound_request);
    let body_limit = DefaultBodyLimit::max(state.max_body_bytes);
    let limits = (state.limits.clone(), state.telemetry.clone());
    // Steps 2 to 4 in one layer (`edge::guard`), for the client's routes.
    let guarded = |limits| {
        middleware::from_fn_with_state(
            Arc::new(edge::Gate {
                bounds,
                keys: state.keys.clone(),
                limits,
                streams: None,
            }),
            edge::guard,
        )
    };
    match guard {
        Guard::Call if mcp => routes.layer(
            traced
                .layer(middleware::from_fn_with_state(
                    Arc::new(edge::Gate {
                        bounds,
                        keys: state.keys.clone(),
                        limits: Some(limits),
                        streams: Some((state.streams.clone(), state.telemetry.clone())),
                    }),
                    mcp::guard,
                ))
                .layer(body_limit),
        ),
        Guard::Call => routes.layer(traced.layer(body_limit).layer(guarded(Some(limits)))),
        Guard::Client => routes.layer(traced.layer(body_limit).layer(guarded(None))),
        // The operations routes read a body only once their handler has authorized the caller
        // (forcing a breaker), and never more than the limit.
        Guard::Open | Guard::SelfAuthorized => {
            routes.layer(traced.layer(bounded).layer(body_limit))
        }
    }
}
