//! `/v1/watches`: recurring background calls that tell their client only when something changed
//! (see [`crate::watches`]).
//!
//! `POST /v1/watches` creates one, `GET /v1/watches` lists the caller's own, `GET
//! /v1/watches/{id}` reads one with its last result, next run and notices, `POST
//! /v1/watches/{id}/pause` and `/resume` stop and restart its schedule, `DELETE` removes it.
//! A watch belongs to the client that created it, exactly as a job does: another client's id
//! answers 404 like a missing one, and only the admin key sees every client's.
//!
//! [`create_for`] is the one create path: the agents' `watch_create` tool (see
//! `watch_tools.rs`) goes through it too, so a watch a model makes is checked, limited and
//! refused with the same texts ([`Refused`] is answered as an HTTP error here and as a model
//! text there).

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agents::watch_tools::{Ends, WatchSpec};
use crate::clients::{ClientName, Scope};
use crate::http::calls;
use crate::http::edge::{ApiError, Caller, PathParam, read_json_body};
use crate::http::state::{AppState, SharedState};
use crate::jobs::rfc3339;
use crate::texts::{agents as agent_texts, watches as texts};
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
    ends: Option<Ends>,
    #[serde(default)]
    callback_url: Option<String>,
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
        "callback_error": n.callback_error,
        "created_at": rfc3339(n.created_at_ms),
    })
}

/// The watch system, or why there is none.
pub(crate) fn watches(state: &AppState) -> Result<&Watches, Refused> {
    state.watches.as_ref().ok_or(Refused::Off)
}

/// Why a watch was not created, changed or found, before it is answered in the caller's
/// protocol: an HTTP error ([`Refused::api_error`]) or a text a model reads ([`Refused::text`]).
#[derive(Debug)]
pub(crate) enum Refused {
    /// The tool is served, but not to this client.
    OutOfScope(String),
    /// The request does not describe a watch that can run (the text names the fix).
    Invalid(String),
    /// A limit or the watch's state stands in the way (the text names the fix).
    Conflict(String),
    /// No watch by that id belongs to the caller.
    NotFound(String),
    /// The gateway keeps no watches (no job store).
    Off,
    /// The store did not answer.
    StoreDown,
}

impl Refused {
    /// `e` about watch `id` (empty when there is none yet).
    pub(crate) fn of(e: WatchError, id: &str) -> Self {
        match e {
            WatchError::Invalid(text) => Refused::Invalid(text),
            WatchError::Full(text) | WatchError::Conflict(text) => Refused::Conflict(text),
            WatchError::NotFound => Refused::NotFound(id.to_string()),
            WatchError::Store(e) => {
                tracing::error!(error = %e, "watch store failed");
                Refused::StoreDown
            }
        }
    }

    /// As the native API answers it.
    pub(crate) fn api_error(self, state: &AppState, scope: &Scope) -> ApiError {
        match self {
            Refused::OutOfScope(name) => calls::out_of_scope(state, scope, &name),
            Refused::Invalid(text) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, text),
            Refused::Conflict(text) => ApiError::new(StatusCode::CONFLICT, text),
            Refused::NotFound(id) => ApiError::not_found(format!("no watch {id}")),
            Refused::Off => ApiError::new(StatusCode::NOT_IMPLEMENTED, texts::WATCHES_OFF),
            Refused::StoreDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, texts::WATCH_STORE_DOWN)
            }
        }
    }

    /// As the agent protocols answer it: a text the model reads, with its status first.
    pub(crate) fn text(self, state: &AppState, scope: &Scope) -> String {
        match self {
            Refused::OutOfScope(name) => {
                agent_texts::rejected(&calls::out_of_scope_text(state, scope, &name))
            }
            Refused::Invalid(text) => agent_texts::invalid_arguments(&text),
            Refused::Conflict(text) => agent_texts::rejected(&text),
            Refused::NotFound(id) => agent_texts::invalid_arguments(&texts::no_watch(&id)),
            Refused::Off => agent_texts::unavailable(None, texts::WATCHES_OFF),
            Refused::StoreDown => agent_texts::unavailable(None, texts::WATCH_STORE_DOWN),
        }
    }
}

impl From<crate::jobs::StoreError> for Refused {
    fn from(e: crate::jobs::StoreError) -> Self {
        Refused::of(e.into(), "")
    }
}

/// The one create path, for the native API and the agents' `watch_create`: the tool served and
/// in `caller`'s scope, the interval and end read, then [`crate::watches::WatchSystem::create`]
/// with its checks and limits.
pub(crate) async fn create_for(
    state: &AppState,
    caller: &Caller,
    spec: WatchSpec,
    callback_url: Option<String>,
) -> Result<Watch, Refused> {
    let watches = watches(state)?;
    let scope = caller.scope();
    // Refused here, not by the watch system, so the tools named instead are the ones this
    // caller may watch.
    let watchable = || -> Vec<&str> {
        calls::allowed_tools(state, &scope)
            .into_iter()
            .filter(|name| state.gateway.tool(name).is_some_and(|t| !t.is_write()))
            .collect()
    };
    match state.gateway.tool(&spec.tool) {
        None => {
            return Err(Refused::Invalid(texts::not_served(
                &spec.tool,
                &watchable(),
            )));
        }
        Some(served) if !calls::in_scope(&scope, &served) => {
            return Err(Refused::OutOfScope(spec.tool));
        }
        Some(served) if served.is_write() => {
            return Err(Refused::Invalid(texts::write_tool(
                &spec.tool,
                &watchable(),
            )));
        }
        Some(_) => {}
    }
    let every: Duration = humantime::parse_duration(&spec.every)
        .map_err(|e| Refused::Invalid(texts::every_not_a_duration(&spec.every, &e.to_string())))?;
    let at_ms = match &spec.ends.at {
        None => None,
        Some(text) => Some(
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|t| t.timestamp_millis())
                .map_err(|e| Refused::Invalid(texts::ends_at_not_a_time(text, &e.to_string())))?,
        ),
    };
    // A watch whose end has passed would run once (a provider call) and end.
    if let (Some(at), Some(text)) = (at_ms, &spec.ends.at)
        && at <= crate::clock::epoch_ms()
    {
        return Err(Refused::Invalid(texts::ends_at_passed(text)));
    }
    if spec.ends.after_runs == Some(0) {
        return Err(Refused::Invalid(texts::NO_RUNS.to_string()));
    }
    watches
        .create(NewWatch {
            client: caller.client(),
            tool: spec.tool,
            arguments: spec.arguments,
            every,
            condition: spec.condition,
            end: End {
                at_ms,
                runs: spec.ends.after_runs,
                departure: spec.ends.at_departure,
            },
            callback_url,
        })
        .await
        .map_err(|e| Refused::of(e, ""))
}

/// The client whose watches `caller` sees; `None` for the admin key.
pub(crate) fn visible_client(caller: &Caller) -> Option<ClientName> {
    (!caller.is_admin()).then(|| caller.client())
}

/// `POST /v1/watches`.
pub(crate) async fn create(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    watches(&state).map_err(|r| r.api_error(&state, &caller.scope()))?;
    let value = read_json_body(&headers, body, state.max_body_bytes, state.browsers())?;
    let body: CreateBody = crate::tools::read_as(value).map_err(|e| {
        let e = e.said();
        ApiError::bad_request(format!(
            "{e}; a watch is {{\"tool\": \"search_flights\", \"arguments\": {{…}}, \"every\": \"15m\", \"condition\": {{\"kind\": \"price_below\", \"amount\": 400}}, \"ends\": {{\"at\": \"2026-12-24T00:00:00Z\", \"after_runs\": 100, \"at_departure\": false}}}} (condition and ends optional)"
        ))
    })?;
    let spec = WatchSpec {
        tool: body.tool,
        arguments: body.arguments,
        every: body.every,
        condition: body.condition,
        ends: body.ends.unwrap_or_default(),
    };
    let watch = create_for(&state, &caller, spec, body.callback_url)
        .await
        .map_err(|r| r.api_error(&state, &caller.scope()))?;
    Ok((StatusCode::CREATED, Json(describe(&watch))))
}

/// `GET /v1/watches`: the caller's own watches (every client's for the admin key).
pub(crate) async fn list(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    ApiError::no_query(query.as_deref(), "GET /v1/watches")?;
    let watches = watches(&state).map_err(|r| r.api_error(&state, &caller.scope()))?;
    let client = visible_client(&caller);
    let list = watches
        .store()
        .list(client.as_ref(), 1000)
        .await
        .map_err(|e| Refused::from(e).api_error(&state, &caller.scope()))?;
    Ok(Json(
        json!({ "watches": list.iter().map(describe).collect::<Vec<_>>() }),
    ))
}

/// `GET /v1/watches/{watch_id}`: one watch with its notices, newest first.
pub(crate) async fn one(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state).map_err(|r| r.api_error(&state, &caller.scope()))?;
    let watch = watches
        .own(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| Refused::of(e, &id).api_error(&state, &caller.scope()))?;
    let notices = watches
        .store()
        .notices(&id, NOTICES_SHOWN)
        .await
        .map_err(|e| Refused::from(e).api_error(&state, &caller.scope()))?;
    let mut described = describe(&watch);
    described["notices"] = json!(notices.iter().map(describe_notice).collect::<Vec<_>>());
    Ok(Json(described))
}

/// `POST /v1/watches/{watch_id}/pause`.
pub(crate) async fn pause(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state).map_err(|r| r.api_error(&state, &caller.scope()))?;
    let watch = watches
        .pause(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| Refused::of(e, &id).api_error(&state, &caller.scope()))?;
    Ok(Json(describe(&watch)))
}

/// `POST /v1/watches/{watch_id}/resume`.
pub(crate) async fn resume(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let watches = watches(&state).map_err(|r| r.api_error(&state, &caller.scope()))?;
    let watch = watches
        .resume(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| Refused::of(e, &id).api_error(&state, &caller.scope()))?;
    Ok(Json(describe(&watch)))
}

/// `DELETE /v1/watches/{watch_id}`.
pub(crate) async fn delete(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<StatusCode, ApiError> {
    let watches = watches(&state).map_err(|r| r.api_error(&state, &caller.scope()))?;
    watches
        .delete(&id, visible_client(&caller).as_ref())
        .await
        .map_err(|e| Refused::of(e, &id).api_error(&state, &caller.scope()))?;
    Ok(StatusCode::NO_CONTENT)
}
