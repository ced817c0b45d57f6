//! The alerts and the event stream of the operations API: `GET /v1/alerts` (what fires now) and
//! `GET /v1/events` (breaker transitions and alert changes as they happen, server-sent).
//!
//! Both follow the breaker API's rule for a client key: it is sent the transitions of the
//! breakers guarding one of its tools only, and an alert only when it is about one of them,
//! naming only those; the admin key (and auth off) sees everything.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{Extensions, HeaderMap};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use super::authorize;
use super::breakers::{guarded_tools, list_scope, transition_json, url_key, visible_tools, wall};
use crate::http::edge::{self, Role};
use crate::http::state::{AppState, SharedState};
use crate::telemetry::{Alert, AlertChange};

/// `a` as a caller seeing the breakers of `visible` tools reads it (`None`: every breaker): an
/// alert about none of its breakers is not shown; one about some of them names only those, and
/// its summary, which names them all, is replaced by one that does not.
fn visible_alert(
    state: &AppState,
    a: &Alert,
    visible: Option<&[&'static str]>,
    now: Instant,
) -> Option<Value> {
    let mut v = alert_json(a, now);
    // An alert about no breaker (the store) is about every tool a client may call.
    if visible.is_none() || a.breakers.is_empty() {
        return Some(v);
    }
    let seen: Vec<String> = a
        .breakers
        .iter()
        .filter(|key| !guarded_tools(state, key, visible).is_empty())
        .map(url_key)
        .collect();
    if seen.is_empty() {
        return None;
    }
    if seen.len() < a.breakers.len() {
        v["summary"] = json!(format!(
            "{}: {} of the {} breakers it is about guard tools this client may call: {}",
            a.kind.as_str(),
            seen.len(),
            a.breakers.len(),
            seen.join(", ")
        ));
        v["breakers"] = json!(seen);
    }
    Some(v)
}

fn alert_json(a: &Alert, now: Instant) -> Value {
    json!({
        "id": a.id,
        "alert": a.kind.as_str(),
        "severity": a.kind.severity(),
        "breakers": a.breakers.iter().map(url_key).collect::<Vec<_>>(),
        "summary": a.summary,
        "fired_at": wall(a.fired_at, now),
    })
}

pub(crate) async fn list_alerts(
    State(state): State<SharedState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let visible = match list_scope(&state, &headers, query.as_deref(), "GET /v1/alerts") {
        Ok(visible) => visible,
        Err(res) => return *res,
    };
    let now = Instant::now();
    let alerts: Vec<Value> = state
        .telemetry
        .active_alerts()
        .iter()
        .filter_map(|a| visible_alert(&state, a, visible.as_deref(), now))
        .collect();
    Json(json!({ "alerts": alerts })).into_response()
}

/// `GET /v1/events`: `event: ready` once, then `transition` and `alert` events (JSON `data`),
/// a comment every 15 s to keep proxies from closing the stream, and `lagged` (with the number
/// of events missed) if this client fell more than the channel's capacity behind. The stream
/// holds one of the client's stream slots until it ends (`[limits] client_max_streams`).
pub(crate) async fn events(
    State(state): State<SharedState>,
    headers: HeaderMap,
    extensions: Extensions,
) -> Response {
    let caller = match authorize(&state, &headers, Role::Client) {
        Ok(caller) => caller,
        Err(res) => return *res,
    };
    let keys = state.keys.clone();
    let client = edge::client_id(Some(&caller), &extensions);
    let slot = match edge::open_stream(&state.streams, &state.telemetry, client) {
        Ok(slot) => slot,
        Err(refused) => return *refused,
    };
    // A client is sent the transitions and alerts of the breakers it sees (`/v1/breakers`).
    let visible = visible_tools(&state, &caller);
    let telemetry = &state.telemetry;
    let transitions = state.gateway.breakers().subscribe();
    let alerts = telemetry.subscribe_alerts();
    let token = telemetry.streams_token();
    let ready = futures::stream::once(async {
        Ok::<Event, Infallible>(Event::default().event("ready").data("{}"))
    });
    let rest = futures::stream::unfold(
        (transitions, alerts, token, state, visible),
        |(mut transitions, mut alerts, token, state, visible)| async move {
            let event = loop {
                tokio::select! {
                    _ = token.cancelled() => return None,
                    t = transitions.recv() => match t {
                        Ok(e) if guarded_tools(&state, &e.key, visible.as_deref()).is_empty()
                            && visible.is_some() => {}
                        Ok(e) => break Event::default()
                            .event("transition")
                            .data(transition_json(&e, Instant::now()).to_string()),
                        Err(RecvError::Lagged(n)) => break Event::default().event("lagged").data(n.to_string()),
                        Err(RecvError::Closed) => return None,
                    },
                    a = alerts.recv() => match a {
                        Ok(change) => {
                            if let Some(event) = alert_event(&state, &change, visible.as_deref()) {
                                break event;
                            }
                        }
                        Err(RecvError::Lagged(n)) => break Event::default().event("lagged").data(n.to_string()),
                        Err(RecvError::Closed) => return None,
                    },
                }
            };
            Some((
                Ok::<Event, Infallible>(event),
                (transitions, alerts, token, state, visible),
            ))
        },
    );
    use futures::StreamExt as _;
    // A key a reload takes away (or whose client's scope it changes) ends the stream: it makes
    // no next request that could be refused.
    let revoked = keys.revoked(&caller);
    slot.around(
        Sse::new(ready.chain(rest).take_until(revoked))
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
            .into_response(),
    )
}

/// The event of an alert change, as a caller seeing `visible` tools' breakers reads it; `None`
/// when the alert is about none of them.
fn alert_event(
    state: &AppState,
    change: &AlertChange,
    visible: Option<&[&'static str]>,
) -> Option<Event> {
    let now = Instant::now();
    let data = match change {
        AlertChange::Fired(a) => {
            let mut v = visible_alert(state, a, visible, now)?;
            v["status"] = json!("firing");
            v
        }
        AlertChange::Resolved(a, at) => {
            let mut v = visible_alert(state, a, visible, now)?;
            v["status"] = json!("resolved");
            v["resolved_at"] = json!(wall(*at, now));
            v
        }
    };
    Some(Event::default().event("alert").data(data.to_string()))
}
