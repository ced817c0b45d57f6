//! The HTTP server: routes, the edge every request passes, and the handlers.
//!
//! **Architecture invariant:** this is the only module that knows axum and the gateway's own
//! HTTP answers (error bodies, the catalog shape, the job API). It turns requests into calls
//! through [`crate::agents`] (the protocols' shapes, pure) and `calls` (the one path to the
//! gateway or the job queue), and renders the answers; it never talks to a provider.
//!
//! - `edge/`: the accept loop, the request timeout, authentication, per-client limits, body
//!   reading and the one error → JSON mapping;
//! - `api/`: the native call endpoint, the catalog, the job API, the OpenAPI document and the
//!   OpenAI and Anthropic routes;
//! - `mcp/`: `/mcp`, the only module that imports rmcp;
//! - `ops/`: breakers, alerts, events, metrics and the dashboard;
//! - `calls`: running parsed calls; `state`: what every handler can reach.

mod api;
mod calls;
mod edge;
mod mcp;
mod ops;
mod state;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use edge::{
    ApiError, Caller, ClientId, ClientKeys, ClientLimits, KeyDigest, Keys, Role, ServeOptions,
    serve,
};
pub use state::AppState;

use api::{agents, catalog, jobs, native, openapi};

/// Every path [`router`] serves (a test reads the router's source to keep this list exact, and
/// the OpenAPI document is checked against it).
pub const ROUTED_PATHS: &[&str] = &[
    "/healthz",
    "/readyz",
    "/openapi.json",
    "/v1/tools",
    "/v1/tools/{tool}",
    "/v1/tools/{tool}/call",
    "/v1/prompts/agent-guidance",
    "/v1/jobs",
    "/v1/jobs/{job_id}",
    "/v1/breakers",
    "/v1/breakers/{key}",
    "/v1/breakers/{key}/force",
    "/v1/alerts",
    "/v1/events",
    "/metrics",
    "/dashboard",
    "/v1/openai/tool_calls",
    "/v1/anthropic/tool_use",
    "/mcp",
];

/// The whole HTTP API.
///
/// Layer order (axum's `Router::layer` wraps outward, so the last added runs first):
/// 1. the request span (`trace`), outermost, so every answer below is traced;
/// 2. the request timeout, so a stuck handler still answers a JSON 503;
/// 3. client-key authentication (not on `/healthz`, `/readyz` and the operations routes, which
///    authorize per route), before anything reads the body, so an unauthenticated client
///    cannot make the gateway read a large body;
/// 4. on the tool-call routes only (native, OpenAI, Anthropic, `/mcp`): the per-client rate
///    and in-flight limits, after authentication (they count per key) and before the body;
/// 5. the body limit, applied as the handler reads the body.
///
/// `/mcp` sits behind the same checks; rmcp then checks `Host` and `Origin` (`[mcp]` in
/// `faregate.toml`) and enforces the same body limit itself. `shutdown` ends MCP sessions and
/// streams when cancelled.
pub fn router(state: AppState, shutdown: CancellationToken) -> Router {
    let mcp = mcp::service(state.clone(), shutdown);
    let calls = Router::new()
        .route("/v1/tools/{tool}/call", post(native::call_tool))
        .route("/v1/openai/tool_calls", post(agents::openai_tool_calls))
        .route("/v1/anthropic/tool_use", post(agents::anthropic_tool_use))
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            edge::limit_calls,
        ));
    let api = Router::new()
        .route("/openapi.json", get(openapi_json))
        .route("/v1/tools", get(catalog::list))
        .route("/v1/tools/{tool}", get(catalog::one))
        .route("/v1/prompts/agent-guidance", get(catalog::agent_guidance))
        .route("/v1/jobs", get(jobs::list))
        .route("/v1/jobs/{job_id}", get(jobs::one))
        .merge(calls)
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(middleware::from_fn_with_state(
            state.keys.clone(),
            edge::require_client,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(api)
        .merge(ops::routes())
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.request_timeout,
            edge::request_timeout,
        ))
        .layer(edge::trace_layer())
        .with_state(state)
}

async fn openapi_json(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> impl IntoResponse {
    axum::Json(openapi::document(&state))
}

async fn healthz() -> impl IntoResponse {
    axum::Json(json!({ "status": "ok" }))
}

async fn readyz(axum::extract::State(state): axum::extract::State<AppState>) -> impl IntoResponse {
    let tools = state.gateway.tools().len();
    if tools == 0 {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({ "status": "not_ready", "message": "no tool is served" })),
        )
    } else {
        (
            StatusCode::OK,
            axum::Json(json!({ "status": "ready", "tools": tools })),
        )
    }
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route {}; see GET /v1/tools and POST /v1/tools/{{tool}}/call",
        uri.path()
    ))
}
