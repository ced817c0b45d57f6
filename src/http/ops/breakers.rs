//! The breaker API: `GET /v1/breakers` (every breaker a caller sees, with the scheduled
//! maintenance windows), `GET /v1/breakers/{key}` and `POST /v1/breakers/{key}/force`, and the
//! JSON each breaker reads as there and in the alerts (see the parent module for keys in URLs
//! and who may see and force what).

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, RawQuery, Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::authorize;
use crate::breaker::{BreakerKey, BreakerScope, BreakerSnapshot, ForceMode, TransitionEvent};
use crate::fleet::StoredTransition;
use crate::http::calls::allowed_tools;
use crate::http::edge::{ApiError, Caller, PathParam, Role, read_body};
use crate::http::state::{AppState, SharedState};
use crate::maintenance::{self, Schedule, When};

/// How many transitions each breaker's JSON lists.
const TRANSITIONS_PER_BREAKER: usize = 10;

/// The tools whose breakers a caller sees: every one for the admin key and with client keys
/// off (`None`), else the served tools its scope allows, so a client reads only the breakers
/// guarding a tool it may call, each naming only such tools, as every tool list it reads.
pub(super) fn visible_tools(state: &AppState, caller: &Caller) -> Option<Vec<&'static str>> {
    match caller {
        Caller::Client { .. } => Some(allowed_tools(state, &caller.scope())),
        Caller::Admin(_) | Caller::Anonymous => None,
    }
}

/// What the operations API's list routes (`route`) ask first: a client or admin key, no query
/// string (they filter nothing), and then the tools whose breakers the caller sees
/// ([`visible_tools`]).
pub(super) fn list_scope(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
    route: &str,
) -> Result<Option<Vec<&'static str>>, Box<Response>> {
    let caller = authorize(state, headers, Role::Client)?;
    ApiError::no_query(query, route).map_err(|e| Box::new(e.into_response()))?;
    Ok(visible_tools(state, &caller))
}

/// The tools `key`'s breaker guards that a caller seeing `visible` sees; for a client, none
/// means it does not see the breaker.
pub(super) fn guarded_tools(
    state: &AppState,
    key: &BreakerKey,
    visible: Option<&[&'static str]>,
) -> Vec<&'static str> {
    let mut tools = state.gateway.tools_guarded_by(key);
    if let Some(visible) = visible {
        tools.retain(|t| visible.contains(t));
    }
    tools
}

/// `search_flights.duffel` (or `search_flights/duffel`) → the key.
fn parse_key(s: &str) -> Option<BreakerKey> {
    let (tool, provider) = s.split_once('/').or_else(|| s.split_once('.'))?;
    (!tool.is_empty() && !provider.is_empty()).then(|| BreakerKey::new(tool, provider))
}

/// The URL form of a key.
pub(super) fn url_key(key: &BreakerKey) -> String {
    format!("{}.{}", key.tool, key.provider)
}

/// The scope a key was made under, read from its shape.
fn scope_of(key: &BreakerKey) -> BreakerScope {
    if !key.is_shared() {
        BreakerScope::ToolProvider
    } else if key.provider.contains('@') {
        BreakerScope::Credential
    } else {
        BreakerScope::Provider
    }
}

/// An instant as wall-clock RFC 3339 (tokio instants have no calendar).
pub(super) fn wall(at: Instant, now: Instant) -> String {
    let wall_now = crate::clock::utc_now();
    let t = if at <= now {
        wall_now - chrono::Duration::from_std(now - at).unwrap_or_default()
    } else {
        wall_now + chrono::Duration::from_std(at - now).unwrap_or_default()
    };
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub(super) fn transition_json(e: &TransitionEvent, now: Instant) -> Value {
    json!({
        "key": url_key(&e.key),
        "breaker": e.key.to_string(),
        "tool": e.key.tool,
        "provider": e.key.provider,
        "from": e.from.detail_str(),
        "to": e.to.detail_str(),
        "reason": e.reason.as_str(),
        "at": wall(e.at, now),
        "failure_rate": e.failure_rate,
        "slow_rate": e.slow_rate,
        "calls": e.calls,
    })
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

fn stored_transition_json(t: &StoredTransition) -> Value {
    json!({
        "key": url_key(&t.key),
        "breaker": t.key.to_string(),
        "tool": t.key.tool,
        "provider": t.key.provider,
        "from": t.from,
        "to": t.to,
        "reason": t.reason,
        "at": crate::jobs::rfc3339(t.at_ms),
        "failure_rate": t.failure_rate,
        "slow_rate": t.slow_rate,
        "calls": t.calls,
        "replica": t.replica,
    })
}

/// A breaker as its caller reads it; `tools` are the tools it guards that the caller sees.
fn breaker_json(
    state: &AppState,
    s: &BreakerSnapshot,
    now: Instant,
    tools: Vec<&'static str>,
) -> Value {
    // With a fleet, the history is the fleet's (every replica's, across restarts); without
    // one, this process's.
    let transitions: Vec<Value> = match &state.fleet {
        Some(fleet) => fleet
            .recent_transitions(Some(&s.key), TRANSITIONS_PER_BREAKER)
            .iter()
            .map(stored_transition_json)
            .collect(),
        None => state
            .telemetry
            .recent_transitions(Some(&s.key), TRANSITIONS_PER_BREAKER)
            .iter()
            .map(|e| transition_json(e, now))
            .collect(),
    };
    // A window holds a tool on a provider: a shared breaker shows the first one holding any
    // of its tools.
    let wall_now = crate::clock::utc_now();
    let maintenance = tools.iter().find_map(|tool| {
        state
            .gateway
            .maintenance()
            .active(tool, s.key.provider_name(), wall_now)
    });
    // In a PostgreSQL fleet, the fleet's count of opens (the same on every replica); on one
    // node, or before the fleet's row counts, this replica's.
    let fleet_opens = state.fleet.as_ref().and_then(|f| f.times_opened(&s.key));
    json!({
        "key": url_key(&s.key),
        "breaker": s.key.to_string(),
        "tool": s.key.tool,
        "provider": s.key.provider,
        "scope": scope_of(&s.key).as_str(),
        "tools": tools,
        "state": s.state.as_str(),
        "detail": s.state.detail_str(),
        "maintenance": maintenance.map(|m| json!({
            "until": m.until.to_rfc3339_opts(SecondsFormat::Secs, true),
            "reason": m.reason,
        })),
        "forced": matches!(s.state, crate::breaker::BreakerState::ForcedOpen | crate::breaker::BreakerState::ForcedClosed),
        "since": wall(s.since, now),
        "for_s": secs(now.saturating_duration_since(s.since)),
        "failure_rate": s.failure_rate,
        "slow_rate": s.slow_rate,
        "calls_in_window": s.calls_in_window,
        "open_until": s.open_until.map(|t| wall(t, now)),
        "open_remaining_s": s.open_until.map(|t| secs(t.saturating_duration_since(now))),
        "ramp": s.ramp.map(|r| json!({
            "stage": r.index + 1,
            "share": r.share,
            "until": wall(r.until, now),
            "remaining_s": secs(r.until.saturating_duration_since(now)),
        })),
        "probes": s.probes.map(|p| json!({
            "allowed": p.allowed,
            "admitted": p.admitted,
            "in_flight": p.in_flight,
            "fast_successes": p.fast_successes,
        })),
        "slow_call_threshold_ms": s.slow_call_threshold.as_millis() as u64,
        "history": {
            "times_opened": fleet_opens.unwrap_or(s.history.times_opened),
            "times_opened_by": if fleet_opens.is_some() { "fleet" } else { "replica" },
            "time_open_s": secs(s.history.total_open_time),
            "calls_rejected": s.history.calls_rejected,
            "failure_rate_at_last_open": s.history.failure_rate_at_last_open,
            "slow_rate_at_last_open": s.history.slow_rate_at_last_open,
            "calls_at_last_open": s.history.calls_at_last_open,
        },
        "transitions": transitions,
    })
}

pub(crate) async fn list_breakers(
    State(state): State<SharedState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let visible = match list_scope(&state, &headers, query.as_deref(), "GET /v1/breakers") {
        Ok(visible) => visible,
        Err(res) => return *res,
    };
    let now = Instant::now();
    let sees = |tool: &str| visible.as_ref().is_none_or(|v| v.contains(&tool));
    let breakers: Vec<Value> = state
        .gateway
        .breakers()
        .all()
        .iter()
        .filter_map(|b| {
            let tools = guarded_tools(&state, b.key(), visible.as_deref());
            (visible.is_none() || !tools.is_empty())
                .then(|| breaker_json(&state, &b.snapshot(now), now, tools))
        })
        .collect();
    let tools: Vec<Value> = state
        .gateway
        .tools()
        .iter()
        .filter(|t| sees(t.spec.name))
        .map(|t| {
            json!({
                "tool": t.spec.name,
                "in_flight": t.in_flight(),
                "max_concurrent": t.config.max_concurrent,
                "available": state.gateway.is_available(t, now),
            })
        })
        .collect();
    let maintenance: Vec<Value> =
        maintenance_json(&state.gateway.maintenance(), crate::clock::utc_now())
            .into_iter()
            .filter(|w| w["tool"].as_str().is_some_and(sees))
            .collect();
    Json(json!({ "breakers": breakers, "tools": tools, "maintenance": maintenance }))
        .into_response()
}

/// Every maintenance window's occurrence in force now or next, soonest first, and whether it is
/// in force (`active`).
fn maintenance_json(schedule: &Schedule, now: DateTime<Utc>) -> Vec<Value> {
    schedule
        .upcoming(now)
        .into_iter()
        .map(|(w, o)| {
            let repeat = match &w.when {
                When::Once { .. } => Value::Null,
                When::Weekly { day, at, lasts } => json!({
                    "weekly": maintenance::weekday_name(*day),
                    "at": at.format("%H:%M").to_string(),
                    "lasts_s": lasts.as_secs(),
                }),
            };
            json!({
                "breaker": format!("{}/{}", w.tool, w.provider),
                "tool": w.tool,
                "provider": w.provider,
                "reason": w.reason,
                "start": o.start.to_rfc3339_opts(SecondsFormat::Secs, true),
                "end": o.end.to_rfc3339_opts(SecondsFormat::Secs, true),
                "active": o.start <= now,
                "repeat": repeat,
            })
        })
        .collect()
}

/// Whether a tool's own key may stand for the shared breaker that guards the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// Reading: a tool's key answers the breaker that guards the tool, whichever it is.
    ToolKey,
    /// Forcing: only the breaker's own key, so a force that holds every tool on a provider is
    /// never given by naming one of them.
    OwnKey,
}

/// The breaker `raw` names, as a caller seeing `visible` may read it: a client is answered
/// as for a missing key when the breaker guards no tool it may call, or the key names a tool it
/// may not call.
fn find(
    state: &AppState,
    raw: &str,
    via: Via,
    visible: Option<&[&'static str]>,
) -> Result<std::sync::Arc<crate::breaker::Breaker>, Box<Response>> {
    let seen =
        |key: &BreakerKey| visible.is_none() || !guarded_tools(state, key, visible).is_empty();
    let known = || {
        state
            .gateway
            .breakers()
            .all()
            .iter()
            .filter(|b| seen(b.key()))
            .map(|b| json!(url_key(b.key())))
            .collect::<Vec<_>>()
    };
    let not_found = || -> Box<Response> {
        ApiError::not_found(format!(
            "no breaker \"{raw}\"; keys are tool.provider, e.g. search_flights.duffel, or *.provider for a breaker every tool of the provider shares"
        ))
        .with("known_breakers", Value::Array(known()))
        .into_response()
        .into()
    };
    let key = parse_key(raw).ok_or_else(not_found)?;
    if !key.is_shared() && visible.is_some_and(|v| !v.contains(&key.tool.as_str())) {
        return Err(not_found());
    }
    if let Some(breaker) = state.gateway.breakers().get(&key) {
        return if seen(breaker.key()) {
            Ok(breaker)
        } else {
            Err(not_found())
        };
    }
    // A tool on a provider whose tools share one breaker.
    let shared = state
        .gateway
        .tool(&key.tool)
        .and_then(|t| t.breaker_on(&key.provider).cloned())
        .ok_or_else(not_found)?;
    match via {
        Via::ToolKey => Ok(shared),
        Via::OwnKey => {
            let tools = state.gateway.tools_guarded_by(shared.key()).join(", ");
            Err(ApiError::bad_request(format!(
                "{} on {} has no breaker of its own: every tool on {} shares the breaker \"{}\" (breaker scope \"{}\"); force that one, knowing it holds {tools}",
                key.tool,
                key.provider,
                key.provider,
                url_key(shared.key()),
                scope_of(shared.key()).as_str(),
            ))
            .with("breaker", json!(url_key(shared.key())))
            .into_response()
            .into())
        }
    }
}

pub(crate) async fn one_breaker(
    State(state): State<SharedState>,
    headers: HeaderMap,
    PathParam(key): PathParam,
) -> Response {
    let caller = match authorize(&state, &headers, Role::Client) {
        Ok(caller) => caller,
        Err(res) => return *res,
    };
    let visible = visible_tools(&state, &caller);
    match find(&state, &key, Via::ToolKey, visible.as_deref()) {
        Ok(b) => {
            let now = Instant::now();
            let tools = guarded_tools(&state, b.key(), visible.as_deref());
            Json(breaker_json(&state, &b.snapshot(now), now, tools)).into_response()
        }
        Err(res) => *res,
    }
}

/// What `POST /v1/breakers/{key}/force` takes, said with every refusal of its body.
const SEND_STATE: &str = "send {\"state\": \"open\"} (reject every call), {\"state\": \"closed\"} (admit every call) or {\"state\": \"auto\"} (back to the automatic policy)";

/// `POST /v1/breakers/{key}/force`. The body is read only once the caller is known to be the
/// admin (an unauthenticated client cannot make the gateway read it), up to the body limit, and,
/// while client keys are off, only as JSON from a request no browser marks cross-site (a web
/// page must not force breakers through the user's browser).
pub(crate) async fn force_breaker(
    State(state): State<SharedState>,
    PathParam(key): PathParam,
    request: Request,
) -> Response {
    if let Err(res) = authorize(&state, request.headers(), Role::Admin) {
        return *res;
    }
    let headers = request.headers().clone();
    let body = Bytes::from_request(request, &state).await;
    let body = match read_body(&headers, body, state.max_body_bytes, state.browsers()) {
        Ok(body) => body,
        Err(e) => return e.into_response(),
    };
    // Only the admin key (or nobody, with keys off) gets here: it sees every breaker.
    let breaker = match find(&state, &key, Via::OwnKey, None) {
        Ok(b) => b,
        Err(res) => return *res,
    };
    let sent = match serde_json::from_slice::<Value>(&body) {
        Ok(sent) => sent,
        Err(_) if body.iter().all(u8::is_ascii_whitespace) => {
            return ApiError::bad_request(format!("the body is empty: {SEND_STATE}"))
                .into_response();
        }
        Err(e) => {
            return ApiError::bad_request(format!(
                "the body is not valid JSON ({e}): {SEND_STATE}"
            ))
            .into_response();
        }
    };
    // A key this route does not read (`"for": "10m"`, `"reason"`) would be ignored silently,
    // and an operator who meant a timed force would leave the tool down.
    if let Some(unknown) = sent
        .as_object()
        .and_then(|o| o.keys().find(|k| *k != "state"))
    {
        return ApiError::bad_request(format!(
            "unknown field \"{unknown}\": the body takes only \"state\"; a forced state lasts until {{\"state\": \"auto\"}} is sent"
        ))
        .into_response();
    }
    let mode = match sent.get("state").and_then(Value::as_str) {
        Some("open") => ForceMode::Open,
        Some("closed") => ForceMode::Closed,
        Some("auto") => ForceMode::Auto,
        Some(other) => {
            return ApiError::bad_request(format!(
                "\"state\": {other:?} is not a state to force: {SEND_STATE}"
            ))
            .into_response();
        }
        None => return ApiError::bad_request(SEND_STATE).into_response(),
    };
    let now = Instant::now();
    let changed = breaker.force(mode, now);
    if !changed && let Some(fleet) = &state.fleet {
        // Unchanged here, so no transition carries it to the store, which may hold otherwise.
        let breakers = state.gateway.breakers();
        if let Err(e) = fleet.record_force(breaker.key(), mode, breakers).await {
            tracing::warn!(error = %e, breaker = %breaker.key(), "fleet: the store did not take the force; it is held and written when the store answers");
        }
    }
    tracing::warn!(breaker = %breaker.key(), mode = ?mode, "breaker forced by an operator");
    let tools = state.gateway.tools_guarded_by(breaker.key());
    Json(breaker_json(&state, &breaker.snapshot(now), now, tools)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_in_both_forms() {
        let k = BreakerKey::new("search_flights", "duffel");
        assert_eq!(parse_key("search_flights.duffel"), Some(k.clone()));
        assert_eq!(parse_key("search_flights/duffel"), Some(k.clone()));
        assert_eq!(url_key(&k), "search_flights.duffel");
        assert_eq!(
            parse_key("search_flights.duffel:key2"),
            Some(BreakerKey::new("search_flights", "duffel:key2"))
        );
        let shared = BreakerKey::shared_account("duffel", "3f9a0c1d2e4b5a6c");
        assert_eq!(parse_key("*.duffel@3f9a0c1d2e4b5a6c"), Some(shared.clone()));
        assert_eq!(parse_key(&url_key(&shared)), Some(shared.clone()));
        assert_eq!(scope_of(&shared), BreakerScope::Credential);
        assert_eq!(parse_key("*/duffel"), Some(BreakerKey::shared("duffel")));
        assert_eq!(
            scope_of(&BreakerKey::shared("duffel")),
            BreakerScope::Provider
        );
        assert_eq!(scope_of(&k), BreakerScope::ToolProvider);
        assert_eq!(parse_key("search_flights"), None);
        assert_eq!(parse_key(".duffel"), None);
    }
}
