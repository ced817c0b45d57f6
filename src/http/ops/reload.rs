//! `POST /v1/admin/reload` (admin key): reads the clients and keys again without a restart, as
//! SIGHUP does for `faregate serve`.
//!
//! The new set is built whole and swapped in one step: a removed key is refused from the next
//! request on, a call already admitted finishes, and a configuration with problems changes
//! nothing (the answer lists every problem).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::http::edge::{ApiError, Role};
use crate::http::state::{AppState, ReloadError};

/// The handler.
pub(crate) async fn reload_clients(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(res) = state.authorize(&headers, Role::Admin, "reloading clients") {
        return *res;
    }
    // Reading the configuration is a few small files; off the async workers all the same.
    let reloading = state.clone();
    let done = tokio::task::spawn_blocking(move || reloading.reload_clients()).await;
    match done {
        Ok(Ok(summary)) => Json(json!({
            "clients": summary.clients,
            "client_keys": summary.client_keys,
            "admin_key": summary.admin_key,
        }))
        .into_response(),
        Ok(Err(ReloadError::NoSource)) => ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "this gateway was not started from a configuration file (faregate serve), so there is nothing to read again",
        )
        .into_response(),
        Ok(Err(ReloadError::Problems(problems))) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the configuration has problems, so the clients were not changed; fix them and reload again",
        )
        .with("problems", json!(problems))
        .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "the client reload task failed");
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "the reload did not finish; the clients were not changed").into_response()
        }
    }
}
