//! The MCP resource `faregate://tools/availability`: every tool the caller may call, whether it
//! answers now, and when it should be back.
//!
//! Why a resource: an agent that plans a trip across several tools can read, before it calls,
//! which of them would answer `unavailable` (the same states as `GET /v1/tools?available=true`),
//! and a client that subscribes is told when that changes instead of polling. Each entry has
//! `state` (`available`: some provider's breaker admits calls and no maintenance window holds it;
//! `recovering`: none does, one is half-open and probing; `maintenance`: none does, and a
//! scheduled maintenance window holds a provider; `unavailable`), `retry_after_s` (whole seconds
//! until a provider should answer again: its breaker half-opens and its window ends, 0 while
//! recovering, `null` when available or when an operator forced every provider open, which has
//! no end), `maintenance` (while in that state: until when and why) and each provider's breaker
//! state and the window holding it. `maintenance_windows` lists the windows of the caller's
//! tools in force now or to come, soonest first, as `GET /v1/breakers` does for operators, so an
//! agent can plan around an announced maintenance before it starts.
//!
//! `resources/subscribe` needs a session (2025 revisions with `[mcp] legacy_sessions`): the
//! notification goes to the session's event stream, which a stateless request does not have.
//! Every breaker transition, and every maintenance window's start and end (a time, not an event,
//! so the watcher sleeps until the next one), sends `notifications/resources/updated` to each
//! subscribed session; the watcher task starts with the first subscription and ends with
//! `/mcp`'s cancellation token (shutdown). A session that is gone is dropped on the next send.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::breaker::BreakerState;
use crate::call::{Gateway, ServedTool};
use crate::clients::Scope;
use crate::http::calls::in_scope;
use crate::http::state::AppState;
use crate::maintenance::{self, Schedule};

/// The resource's URI.
pub(super) const URI: &str = "faregate://tools/availability";

/// `resources/list`: the one resource.
pub(super) fn list() -> ListResourcesResult {
    let resource = serde_json::from_value::<Resource>(json!({
        "uri": URI,
        "name": "tool-availability",
        "title": "Tool availability",
        "description": "Every tool you may call: available, recovering, in scheduled maintenance (until when, and why) or unavailable now, retry_after_s until it should answer again, and the maintenance windows to come. Subscribe to hear when it changes.",
        "mimeType": "application/json",
    }));
    match resource {
        Ok(resource) => ListResourcesResult::with_all_items(vec![resource]),
        Err(e) => {
            // The shape is pinned by the tests; a failure here is a bug.
            tracing::error!(error = %e, "MCP resource object rejected by rmcp");
            ListResourcesResult::default()
        }
    }
}

/// `resources/read`: the availability of the caller's tools now, or `-32002` (resource not
/// found, as the specification asks) naming the one URI there is.
pub(super) fn read(
    state: &AppState,
    scope: &Scope,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    known(uri)?;
    let now = Instant::now();
    let wall = crate::clock::utc_now();
    let served: Vec<Arc<ServedTool>> = state
        .gateway
        .tools()
        .into_iter()
        .filter(|t| in_scope(scope, t))
        .collect();
    let tools: Vec<Value> = served
        .iter()
        .map(|t| of_tool(&state.gateway, t, now, wall))
        .collect();
    let names: Vec<&str> = served.iter().map(|t| t.spec.name).collect();
    let windows = windows(&state.gateway.maintenance(), &names, wall);
    let text = json!({ "tools": tools, "maintenance_windows": windows }).to_string();
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: URI.to_string(),
            mime_type: Some("application/json".to_string()),
            text,
            meta: None,
        },
    ]))
}

/// `Err` unless `uri` is the availability resource.
pub(super) fn known(uri: &str) -> Result<(), ErrorData> {
    if uri == URI {
        return Ok(());
    }
    Err(ErrorData::resource_not_found(
        format!("there is no resource {uri:?}; the one resource is {URI}"),
        Some(json!({ "uri": uri })),
    ))
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Whole seconds, rounded up.
fn whole_seconds(d: std::time::Duration) -> u64 {
    d.as_millis().div_ceil(1000) as u64
}

/// One tool's entry.
fn of_tool(gateway: &Gateway, tool: &ServedTool, now: Instant, wall: DateTime<Utc>) -> Value {
    let breakers = tool.breakers();
    let available = gateway.is_available(tool, now);
    let mut recovering = false;
    let mut held = Vec::new();
    // Seconds until each provider answers again: its breaker admits calls (or probes) and no
    // window holds it; `None` for a breaker an operator forced open, which has no end.
    let mut back_in: Vec<Option<u64>> = Vec::new();
    // The provider's configured name: a breaker the provider's tools share has a key of
    // its own (`*/duffel`), which is not the provider's name.
    let providers: Vec<Value> = tool
        .provider_names()
        .into_iter()
        .zip(&breakers)
        .map(|(name, b)| {
            let state = b.state(now);
            let window = gateway.maintenance().active(tool.spec.name, name, wall);
            let breaker_in = match state {
                BreakerState::Closed
                | BreakerState::Ramp
                | BreakerState::ForcedClosed
                | BreakerState::HalfOpen => Some(0),
                BreakerState::Open => b
                    .snapshot(now)
                    .open_until
                    .map(|until| whole_seconds(until.saturating_duration_since(now))),
                BreakerState::ForcedOpen => None,
            };
            let window_in = window
                .as_ref()
                .map(|w| whole_seconds(maintenance::left(wall, w.until)));
            back_in.push(breaker_in.map(|b| b.max(window_in.unwrap_or(0))));
            recovering |= state == BreakerState::HalfOpen && window.is_none();
            let shown = window
                .as_ref()
                .map(|w| json!({ "until": time(w.until), "reason": w.reason }));
            if let Some(w) = window {
                held.push(w);
            }
            json!({ "name": name, "breaker": state.as_str(), "maintenance": shown })
        })
        .collect();
    let state = if available {
        "available"
    } else if recovering {
        "recovering"
    } else if !held.is_empty() {
        "maintenance"
    } else {
        "unavailable"
    };
    let retry_after_s = if available {
        None
    } else {
        back_in.into_iter().flatten().min()
    };
    // The window that ends first, as the tool's: the soonest a held provider is back.
    let maintenance = (state == "maintenance")
        .then(|| held.iter().min_by_key(|w| w.until))
        .flatten()
        .map(|w| json!({ "until": time(w.until), "reason": w.reason }));
    json!({
        "name": tool.spec.name,
        "state": state,
        "retry_after_s": retry_after_s,
        "maintenance": maintenance,
        "providers": providers,
    })
}

/// The maintenance windows of `tools` in force at `now` or next, soonest first.
fn windows(schedule: &Schedule, tools: &[&str], now: DateTime<Utc>) -> Vec<Value> {
    schedule
        .upcoming(now)
        .into_iter()
        .filter(|(w, _)| tools.contains(&w.tool.as_str()))
        .map(|(w, o)| {
            json!({
                "tool": w.tool,
                "provider": w.provider,
                "reason": w.reason,
                "start": time(o.start),
                "end": time(o.end),
                "active": o.start <= now,
            })
        })
        .collect()
}

/// How long until the next maintenance window starts or ends, when one is to come.
fn next_window_change(schedule: &Schedule, now: DateTime<Utc>) -> Option<std::time::Duration> {
    schedule
        .upcoming(now)
        .into_iter()
        .map(|(_, o)| if o.start > now { o.start } else { o.end })
        .min()
        .map(|at| maintenance::left(now, at))
}

/// The sessions subscribed to the resource, by session id, and the task that tells them.
#[derive(Debug, Default)]
pub(super) struct Subscribers {
    sessions: Mutex<HashMap<String, Peer<RoleServer>>>,
    watcher: OnceLock<()>,
}

impl Subscribers {
    /// Adds `session` (whose peer is `peer`), and starts the watcher with the first one.
    pub(super) fn subscribe(
        self: &Arc<Self>,
        state: &AppState,
        cancel: &CancellationToken,
        session: String,
        peer: Peer<RoleServer>,
    ) {
        let mut sessions = self.lock();
        // Sessions that ended go as new ones come, not only when an update fails to reach them.
        sessions.retain(|_, p| !p.is_transport_closed());
        sessions.insert(session, peer);
        drop(sessions);
        self.watcher.get_or_init(|| {
            let events = state.gateway.breakers().subscribe();
            let gateway = Arc::clone(&state.gateway);
            tokio::spawn(watch(Arc::clone(self), gateway, events, cancel.clone()));
        });
    }

    /// Removes `session`; unknown sessions are no error (unsubscribing twice is harmless).
    pub(super) fn unsubscribe(&self, session: &str) {
        self.lock().remove(session);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Peer<RoleServer>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `notifications/resources/updated` to every subscribed session, dropping those
    /// that are gone.
    async fn notify_all(&self) {
        let peers: Vec<(String, Peer<RoleServer>)> = self
            .lock()
            .iter()
            .map(|(id, p)| (id.clone(), p.clone()))
            .collect();
        for (session, peer) in peers {
            let sent = peer
                .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(URI))
                .await;
            if sent.is_err() {
                self.unsubscribe(&session);
            }
        }
    }
}

/// A moment after a window's start or end, so a read after the notification sees it changed.
const PAST_THE_CHANGE: std::time::Duration = std::time::Duration::from_millis(20);

/// Tells the subscribers of every breaker transition and every maintenance window's start and
/// end until `cancel`.
async fn watch(
    subscribers: Arc<Subscribers>,
    gateway: Arc<Gateway>,
    mut events: tokio::sync::broadcast::Receiver<crate::breaker::TransitionEvent>,
    cancel: CancellationToken,
) {
    loop {
        let window_change = next_window_change(&gateway.maintenance(), crate::clock::utc_now());
        let changed = tokio::select! {
            () = cancel.cancelled() => return,
            event = events.recv() => match event {
                // Lagging behind still means something changed.
                Ok(_) | Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => false,
            },
            () = async {
                match window_change {
                    Some(wait) => tokio::time::sleep(wait + PAST_THE_CHANGE).await,
                    None => std::future::pending().await,
                }
            } => true,
        };
        if !changed {
            return;
        }
        subscribers.notify_all().await;
    }
}
