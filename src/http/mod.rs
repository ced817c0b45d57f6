//! The HTTP edge: axum routes, authentication, body limits and JSON errors.
//!
//! **Architecture invariant:** this is the only module that knows the gateway's own wire JSON
//! (request bodies, error bodies, the catalog shape). It turns requests into
//! [`CallRequest`](crate::call::CallRequest)s and renders [`Envelope`](crate::call::Envelope)s;
//! it never talks to a provider.

mod auth;
mod catalog;
mod error;
mod native;
mod ops;
mod trace;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;

pub use auth::ClientKeys;
pub use error::ApiError;

use crate::call::Gateway;
use crate::config::Config;

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The call pipeline.
    pub gateway: Arc<Gateway>,
    /// The configuration (prompts, policies).
    pub config: Arc<Config>,
    /// The body limit, for error messages.
    pub max_body_bytes: usize,
    /// The admin key (empty = none configured), for the operations routes.
    pub admin_key: ClientKeys,
}

/// The whole HTTP API.
///
/// Layer order (axum's `Router::layer` wraps outward, so the last added runs first): the body
/// limit applies inside authentication, so an unauthenticated client cannot make the gateway
/// read a large body; `/healthz` and `/readyz` sit outside authentication for probes.
pub fn router(state: AppState, keys: ClientKeys) -> Router {
    let api = Router::new()
        .route("/v1/tools", get(catalog::list))
        .route("/v1/tools/{tool}", get(catalog::one))
        .route("/v1/tools/{tool}/call", post(native::call_tool))
        .route("/v1/prompts/agent-guidance", get(catalog::agent_guidance))
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(middleware::from_fn_with_state(
            keys.clone(),
            auth::require_client,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(api)
        .merge(ops::routes(keys))
        .fallback(not_found)
        .layer(trace::layer())
        .with_state(state)
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
