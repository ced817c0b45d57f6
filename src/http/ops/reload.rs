//! `POST /v1/admin/reload` (admin key): reads the whole configuration again without a restart
//! (`faregate.toml`, `tools/`, `prompts/` and the client keys), as SIGHUP does for
//! `faregate serve`.
//!
//! The new configuration is built whole and swapped in one step: tools added and removed,
//! policies and texts changed, breakers of unchanged keys carried over, calls in flight finishing
//! on the configuration they started with. A configuration with problems changes nothing, and
//! the answer lists every problem (which `AppState::reload` also logs, as for SIGHUP). Settings only a restart applies are named in the answer.
//!
//! In a PostgreSQL fleet a successful reload also asks every other replica to read its own
//! files again (`replicas.rs`), and the answer says how many live replicas were asked
//! (`replicas_asked`); `GET /v1/admin/replicas` shows when they all run the same fingerprint.
//! SIGHUP reloads only the replica it is sent to.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::replicas::ask_others;
use crate::http::edge::{ApiError, Browsers, Role, refuse_cross_site};
use crate::http::state::{ReloadError, SharedState};

/// The handler.
pub(crate) async fn reload(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    if let Err(res) = state.authorize(&headers, Role::Admin, "reloading the configuration") {
        return *res;
    }
    // With keys off (and so no admin key to present) a web page must not reload the gateway
    // through the user's browser; a reload reads no body, so only the mark is checked.
    if state.browsers() == Browsers::Refused
        && let Err(e) = refuse_cross_site(&headers)
    {
        return e.into_response();
    }
    // Reading the configuration is a few small files; off the async workers all the same.
    let reloading = state.clone();
    let done = tokio::task::spawn_blocking(move || reloading.reload()).await;
    match done {
        Ok(Ok(summary)) => {
            let mut answer = json!({
            "fingerprint": summary.fingerprint,
            "clients": summary.clients,
            "client_keys": summary.client_keys,
            "admin_key": summary.admin_key,
            "tools": {
                "added": summary.tools.added,
                "removed": summary.tools.removed,
                "changed": summary.tools.changed,
            },
            "prompts_changed": summary.prompts_changed,
            "maintenance_changed": summary.maintenance_changed,
            "needs_restart": summary.needs_restart,
            });
            // In a PostgreSQL fleet, every other live replica reads its own files again too.
            match ask_others(&state).await {
                Ok(asked) => answer["replicas_asked"] = json!(asked),
                Err(problem) => {
                    answer["replicas_asked"] = Value::Null;
                    answer["fleet_problem"] = json!(problem);
                }
            }
            Json(answer).into_response()
        }
        Ok(Err(ReloadError::NoSource)) => ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "this gateway has no configuration files to read again: reload is for faregate serve, which reads them from its --config; faregate demo (even with --config, whose providers it points at its own simulator) is changed by restarting it",
        )
        .into_response(),
        Ok(Err(ReloadError::Problems(problems))) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the configuration has problems, so nothing was changed and the running configuration keeps serving; fix them and reload again",
        )
        .with("problems", json!(problems))
        .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "the reload task failed");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the reload did not finish; nothing was changed",
            )
            .into_response()
        }
    }
}
