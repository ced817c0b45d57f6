//! `/v1/back-in-service`: notices to a client when a tool answers again (see
//! [`crate::back_in_service`]).
//!
//! `POST /v1/back-in-service` asks for one (`{"tool": …, "callback_url": …, "expires_in": "24h"}`),
//! `GET /v1/back-in-service` lists the caller's own, `GET /v1/back-in-service/{notice_id}` reads
//! one, and `DELETE` withdraws it. A notice belongs to the client that asked for it, exactly as a
//! job or a watch does: another client's id answers 404 like a missing one, and only the admin
//! key sees every client's.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::back_in_service::{BackInService, NewNotice, Notice, NoticeError};
use crate::clients::ClientName;
use crate::http::calls;
use crate::http::edge::{self, ApiError, Caller, PathParam, read_json_body};
use crate::http::state::{AppState, SharedState};
use crate::jobs::rfc3339;
use crate::texts::back_in_service as texts;

/// Notices listed at most.
const LISTED: u32 = 1000;

/// The body of `POST /v1/back-in-service`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    tool: String,
    #[serde(default)]
    callback_url: Option<String>,
    #[serde(default)]
    expires_in: Option<String>,
}

/// The notice as the API shows it.
fn describe(n: &Notice) -> Value {
    json!({
        "notice_id": n.id,
        "client": n.client.as_str(),
        "tool": n.tool,
        "callback_url": n.callback_url,
        "state": n.state.as_str(),
        "created_at": rfc3339(n.created_at_ms),
        "expires_at": rfc3339(n.expires_at_ms),
        "fired_at": n.fired_at_ms.map(rfc3339),
        "callback": n.callback,
        "callback_attempts": n.callback_attempts,
        "callback_error": n.callback_error,
    })
}

/// The notices, or the 501 of a gateway without a job store.
fn system(state: &AppState) -> Result<&BackInService, ApiError> {
    state
        .back_in_service
        .as_ref()
        .ok_or_else(|| ApiError::new(StatusCode::NOT_IMPLEMENTED, texts::OFF))
}

/// `e` about notice `id` as the API answers it.
fn refused(e: NoticeError, id: &str) -> ApiError {
    match e {
        NoticeError::Invalid(text) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, text),
        NoticeError::Full(text) => ApiError::new(StatusCode::CONFLICT, text),
        NoticeError::NotFound => ApiError::not_found(texts::no_notice(id)),
        NoticeError::Store(e) => {
            tracing::error!(error = %e, "back-in-service store failed");
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, texts::STORE_DOWN)
        }
    }
}

/// The client whose notices `caller` sees; `None` for the admin key.
fn visible_client(caller: &Caller) -> Option<ClientName> {
    (!caller.is_admin()).then(|| caller.client())
}

/// `POST /v1/back-in-service`: the tool served and in the caller's scope, then the notice's own
/// checks; 201 with the notice and whether the tool answers already (then it fires at once).
pub(crate) async fn create(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let notices = system(&state)?;
    let value = read_json_body(&headers, body, state.max_body_bytes, state.browsers())?;
    let body: CreateBody = serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{e}; a back-in-service notice is {{\"tool\": \"search_flights\", \"callback_url\": \"https://agent.example/hooks/faregate\", \"expires_in\": \"24h\"}} (expires_in optional)"
        ))
    })?;
    let scope = caller.scope();
    match state.gateway.tool(&body.tool) {
        None => return Err(calls::unknown_tool(&state, &scope, &body.tool)),
        Some(served) if !calls::in_scope(&scope, &served) => {
            return Err(calls::out_of_scope(&state, &scope, &body.tool));
        }
        Some(_) => {}
    }
    let Some(callback_url) = body.callback_url else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            texts::NO_CALLBACK,
        ));
    };
    let expires_in: Option<Duration> = match &body.expires_in {
        None => None,
        Some(text) => Some(humantime::parse_duration(text).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                texts::expires_in_not_a_duration(text, &e.to_string()),
            )
        })?),
    };
    let notice = notices
        .create(NewNotice {
            client: caller.client(),
            tool: body.tool,
            callback_url,
            expires_in,
        })
        .await
        .map_err(|e| refused(e, ""))?;
    let mut described = describe(&notice);
    described["available_now"] = json!(notices.available_now(&notice.tool));
    Ok((StatusCode::CREATED, Json(described)))
}

/// `GET /v1/back-in-service`: the caller's own notices, newest first (every client's for the
/// admin key).
pub(crate) async fn list(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    ApiError::no_query(query.as_deref(), "GET /v1/back-in-service")?;
    let notices = system(&state)?;
    let list = notices
        .store()
        .list(visible_client(&caller).as_ref(), LISTED)
        .await
        .map_err(|e| refused(e.into(), ""))?;
    Ok(Json(
        json!({ "notices": list.iter().map(describe).collect::<Vec<_>>() }),
    ))
}

/// `GET /v1/back-in-service/{notice_id}`.
pub(crate) async fn one(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let notice = system(&state)?
        .own(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| refused(e, &id))?;
    Ok(Json(describe(&notice)))
}

/// `DELETE /v1/back-in-service/{notice_id}`.
pub(crate) async fn delete(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<StatusCode, ApiError> {
    system(&state)?
        .delete(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| refused(e, &id))?;
    Ok(StatusCode::NO_CONTENT)
}

/// How often the availability stream looks, besides on every breaker transition: a maintenance
/// window's start or end is a time passing, not an event.
const STREAM_LOOK: Duration = Duration::from_millis(500);

/// The caller's tools and whether each answers now, in catalog order.
fn availability(state: &AppState, scope: &crate::clients::Scope) -> Vec<(&'static str, bool)> {
    let now = tokio::time::Instant::now();
    state
        .gateway
        .tools()
        .iter()
        .filter(|t| calls::in_scope(scope, t))
        .map(|t| (t.spec.name, state.gateway.is_available(t, now)))
        .collect()
}

/// `GET /v1/availability/events`: server-sent events for the caller's tools only: `ready` with
/// each tool's availability now, then `availability` (`{"tool", "available", "at"}`) whenever one
/// of them stops or starts answering, as this replica sees it (its breakers follow the fleet's).
/// The stream for an application that keeps a connection instead of a callback URL; it ends
/// when the gateway shuts down, and holds one of the client's stream slots until it ends
/// (`[limits] client_max_streams`).
pub(crate) async fn events(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    extensions: axum::http::Extensions,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use axum::response::sse::{Event, KeepAlive, Sse};
    use futures::StreamExt as _;
    use std::convert::Infallible;
    use tokio::sync::broadcast::error::RecvError;

    let client = edge::client_id(Some(&caller), &extensions);
    let slot = match edge::open_stream(&state.streams, &state.telemetry, client) {
        Ok(slot) => slot,
        Err(refused) => return *refused,
    };
    let keys = state.keys.clone();
    let scope = caller.scope();
    let seen = availability(&state, &scope);
    let ready = json!({
        "tools": seen.iter().map(|(tool, available)| json!({"tool": tool, "available": available})).collect::<Vec<_>>(),
    });
    let first = futures::stream::once(async move {
        Ok::<Event, Infallible>(Event::default().event("ready").data(ready.to_string()))
    });
    let transitions = state.gateway.breakers().subscribe();
    let token = state.telemetry.streams_token();
    let changes = futures::stream::unfold(
        (state, scope, seen, transitions, token, Vec::<Event>::new()),
        |(state, scope, mut seen, mut transitions, token, mut pending)| async move {
            while pending.is_empty() {
                tokio::select! {
                    _ = token.cancelled() => return None,
                    t = transitions.recv() => if matches!(t, Err(RecvError::Closed)) { return None },
                    _ = tokio::time::sleep(STREAM_LOOK) => {},
                }
                let now = availability(&state, &scope);
                let at = rfc3339(crate::clock::epoch_ms());
                for (tool, available) in &now {
                    let before = seen.iter().find(|(t, _)| t == tool).map(|(_, a)| *a);
                    if before != Some(*available) {
                        let data = json!({"tool": tool, "available": available, "at": at});
                        pending.push(
                            Event::default()
                                .event("availability")
                                .data(data.to_string()),
                        );
                    }
                }
                seen = now;
            }
            let event = pending.remove(0);
            Some((
                Ok::<Event, Infallible>(event),
                (state, scope, seen, transitions, token, pending),
            ))
        },
    );
    // A key a reload takes away (or whose client's scope it changes) ends the stream: it makes
    // no next request that could be refused.
    let revoked = keys.revoked(&caller);
    slot.around(
        Sse::new(first.chain(changes).take_until(revoked))
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
            .into_response(),
    )
}
