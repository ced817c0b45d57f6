//! `/v1/watches`: recurring background calls that tell their client only when something changed
//! (see [`crate::watches`]).
//!
//! `POST /v1/watches` creates one, `GET /v1/watches` lists the caller's own, `GET
//! /v1/watches/{id}` reads one with its last result, next run and notices, `POST
//! /v1/watches/{id}/pause` and `/resume` stop and restart its schedule, `DELETE` removes it.
//! A watch belongs to the client that created it, exactly as a job does: another client's id
//! answers 404 like a missing one, and only the admin key sees every client's.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clients::ClientName;
use crate::http::calls;
use crate::http::edge::{ApiError, Caller, PathParam, read_body};
use crate::http::state::AppState;
use crate::jobs::rfc3339;
use crate::watches::{End, NewWatch, Notice, Watch, WatchError, WatchState, Watches};

/// Notices shown with one watch, newest first.
const NOTICES_SHOWN: u32 = 50;

/// The body of `POST /v1/watches`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    tool: String,
    #[serde(default)]
    arguments: Value,
    every: String,
    #[serde(default)]
    condition: Option<Value>,
    #[serde(default)]
    ends: Option<EndsBody>,
    #[serde(default)]
    callback_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndsBody {
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    after_runs: Option<u32>,
    #[serde(default)]
    at_departure: bool,
}

/// The watch as the API shows it.
fn describe(w: &Watch) -> Value {
    json!({
        "watch_id": w.id,
        "client": w.client.as_str(),
        "tool": w.tool,
        "arguments": w.arguments,
        "condition": w.condition,
        "every": humantime::format_duration(w.schedule.interval).to_string(),
        "ends": {
            "at": w.schedule.end.at_ms.map(rfc3339),
            "after_runs": w.schedule.end.runs,
            "at_departure": w.schedule.end.departure,
        },
        "state": w.state.as_str(),
        "runs": w.runs,
        "next_run_at": (w.state == WatchState::Active && w.job.is_none())
            .then(|| rfc3339(w.next_run_at_ms)),
        "run_under_way": w.job.as_ref().map(|(job, at)| json!({"job_id": job, "instant": rfc3339(*at)})),
        "last_result": w.last_result,
        "last_run_at": w.last_run_at_ms.map(rfc3339),
        "last_error": w.last_error,
        "callback_url": w.callback_url,
        "created_at": rfc3339(w.created_at_ms),
        "updated_at": rfc3339(w.updated_at_ms),
    })
}

fn describe_notice(n: &Notice) -> Value {
    json!({
        "instant": rfc3339(n.instant_ms),
        "news": n.text,
        "result": n.result,
        "callback": n.callback,
        "created_at": rfc3339(n.created_at_ms),
    })
}

fn watches(state: &AppState) -> Result<&Watches, ApiError> {
    state.watches.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "watches are off: this gateway runs without a job store",
        )
    })
}

fn refused(e: WatchError, id: &str) -> ApiError {
    match e {
        WatchError::Invalid(text) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, text),
        WatchError::Full(text) | WatchError::Conflict(text) => {
            ApiError::new(StatusCode::CONFLICT, text)
        }
        WatchError::NotFound => ApiError::not_found(format!("no watch {id}")),
        WatchError::Store(e) => {
            tracing::error!(error = %e, "watch store failed");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the watch store is not answering; try again shortly",
            )
        }
    }
}

/// The client whose watches `caller` sees; `None` for the admin key.
fn visible_client(caller: &Caller) -> Option<ClientName> {
    (!caller.is_admin()).then(|| caller.client())
}

/// `POST /v1/watches`.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let watches = watches(&state)?;
    let bytes = read_body(&headers, body, state.max_body_bytes, state.browsers())?;
    let value = crate::agents::body::read_json(&bytes)?;
    let body: CreateBody = serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{e}; a watch is {{\"tool\": \"search_flights\", \"arguments\": {{…}}, \"every\": \"15m\", \"condition\": {{\"kind\": \"price_below\", \"amount\": 400}}, \"ends\": {{\"at\": \"2026-12-24T00:00:00Z\", \"after_runs\": 100, \"at_departure\": false}}}} (condition and ends optional)"
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
    let every: Duration = humantime::parse_duration(&body.every).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "every = \"{}\" is not a duration ({e}); write e.g. \"15m\" or \"1h\"",
                body.every
            ),
        )
    })?;
    let ends = body.ends.unwrap_or(EndsBody {
        at: None,
        after_runs: None,
        at_departure: false,
    });
    let at_ms = match &ends.at {
        None => None,
        Some(text) => Some(
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|t| t.timestamp_millis())
                .map_err(|e| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!(
                            "ends.at = \"{text}\" is not an RFC 3339 time ({e}); write e.g. \"2026-12-24T18:00:00Z\""
                        ),
                    )
                })?,
        ),
    };
    if ends.after_runs == Some(0) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "ends.after_runs = 0 would never run; use 1 or more, or leave it out",
        ));
    }
    let watch = watches
        .create(NewWatch {
            client: caller.client(),
            tool: body.tool,
            arguments: body.arguments,
            every,
            condition: body.condition,
            end: End {
                at_ms,
                runs: ends.after_runs,
                departure: ends.at_departure,
            },
            callback_url: body.callback_url,
        })
        .await
        .map_err(|e| refused(e, ""))?;
    Ok((StatusCode::CREATED, Json(describe(&watch))))
}

/// `GET /v1/watches`: the caller's own watches (every client's for the admin key).
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state)?;
    let client = visible_client(&caller);
    let list = watches
        .store()
        .list(client.as_ref(), 1000)
        .await
        .map_err(|e| refused(e.into(), ""))?;
    Ok(Json(
        json!({ "watches": list.iter().map(describe).collect::<Vec<_>>() }),
    ))
}

/// `GET /v1/watches/{watch_id}`: one watch with its notices, newest first.
pub(crate) async fn one(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state)?;
    let watch = watches
        .own(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| refused(e, &id))?;
    let notices = watches
        .store()
        .notices(&id, NOTICES_SHOWN)
        .await
        .map_err(|e| refused(e.into(), &id))?;
    let mut described = describe(&watch);
    described["notices"] = json!(notices.iter().map(describe_notice).collect::<Vec<_>>());
    Ok(Json(described))
}

/// `POST /v1/watches/{watch_id}/pause`.
pub(crate) async fn pause(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state)?;
    let watch = watches
        .pause(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| refused(e, &id))?;
    Ok(Json(describe(&watch)))
}

/// `POST /v1/watches/{watch_id}/resume`.
pub(crate) async fn resume(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state)?;
    let watch = watches
        .resume(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| refused(e, &id))?;
    Ok(Json(describe(&watch)))
}

/// `DELETE /v1/watches/{watch_id}`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<StatusCode, ApiError> {
    let watches = watches(&state)?;
    watches
        .delete(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| refused(e, &id))?;
    Ok(StatusCode::NO_CONTENT)
}
