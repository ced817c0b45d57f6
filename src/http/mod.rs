//! The HTTP edge: axum routes, authentication, body limits and JSON errors.
//!
//! **Architecture invariant:** this is the only module that knows the gateway's own wire JSON
//! (request bodies, error bodies, the catalog shape) and the agent protocols' shapes. It turns
//! requests into [`CallRequest`](crate::call::CallRequest)s and renders
//! [`Envelope`](crate::call::Envelope)s; it never talks to a provider. Inside it, only `mcp`
//! imports rmcp, and only `manifest` knows the OpenAI, Anthropic, Gemini and MCP tool shapes.

mod agents;
mod auth;
mod calls;
mod catalog;
mod error;
mod jobs;
mod json;
pub mod limits;
mod mcp;
mod native;
mod openapi;
mod ops;
pub mod server;
mod trace;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use auth::{Access, Caller, ClientKeys, Keys};
pub use error::ApiError;
pub use limits::ClientLimits;

use crate::call::Gateway;
use crate::config::Config;

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The call pipeline.
    pub gateway: Arc<Gateway>,
    /// Metrics, alerts and event streams.
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// The configuration (prompts, policies).
    pub config: Arc<Config>,
    /// The body limit, for error messages.
    pub max_body_bytes: usize,
    /// Background mode, when a job store is configured.
    pub jobs: Option<crate::jobs::Jobs>,
    /// Client keys and the admin key (as digests).
    pub keys: Keys,
    /// Per-client rate and in-flight limits of the tool-call routes.
    pub limits: Arc<ClientLimits>,
    /// How long one request may take (`[server] request_timeout`, resolved).
    pub request_timeout: Duration,
}

impl AppState {
    /// Authorizes a request for `access`; `what` names an admin action in messages.
    pub(crate) fn authorize(
        &self,
        headers: &axum::http::HeaderMap,
        access: Access,
        what: &str,
    ) -> Result<Caller, Box<axum::response::Response>> {
        self.keys
            .authorize(headers, access, what, &self.config.auth.admin_key_env)
    }
}

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
            limits::limit_calls,
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
            auth::require_client,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(api)
        .merge(ops::routes())
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.request_timeout,
            server::request_timeout,
        ))
        .layer(trace::layer())
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
