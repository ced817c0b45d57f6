//! The MCP resource `faregate://tools/availability`: every tool the caller may call, whether it
//! answers now, and when it should be back.
//!
//! Why a resource: an agent that plans a trip across several tools can read, before it calls,
//! which of them would answer `unavailable` (the same states as `GET /v1/tools?available=true`),
//! and a client that subscribes is told when that changes instead of polling. Each entry has
//! `state` (`available`: some provider's breaker admits calls; `recovering`: none admits, one is
//! half-open and probing; `unavailable`), `retry_after_s` (whole seconds until a provider's
//! breaker half-opens, 0 while recovering, `null` when available or when an operator forced every
//! provider open, which has no end) and each provider's breaker state.
//!
//! `resources/subscribe` needs a session (2025 revisions with `[mcp] legacy_sessions`): the
//! notification goes to the session's event stream, which a stateless request does not have.
//! Every breaker transition of a tool sends `notifications/resources/updated` to each subscribed
//! session; the watcher task starts with the first subscription and ends with `/mcp`'s
//! cancellation token (shutdown). A session that is gone is dropped on the next send.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::breaker::BreakerState;
use crate::call::ServedTool;
use crate::clients::Scope;
use crate::http::calls::in_scope;
use crate::http::state::AppState;

/// The resource's URI.
pub(super) const URI: &str = "faregate://tools/availability";

/// `resources/list`: the one resource.
pub(super) fn list() -> ListResourcesResult {
    let resource = serde_json::from_value::<Resource>(json!({
        "uri": URI,
        "name": "tool-availability",
        "title": "Tool availability",
        "description": "Every tool you may call: available, recovering or unavailable now, and retry_after_s until it should answer again. Subscribe to hear when it changes.",
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
    let tools: Vec<Value> = state
        .gateway
        .tools()
        .iter()
        .filter(|t| in_scope(scope, t))
        .map(|t| of_tool(t, now))
        .collect();
    let text = json!({ "tools": tools }).to_string();
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

/// One tool's entry.
fn of_tool(tool: &ServedTool, now: Instant) -> Value {
    let breakers = tool.breakers();
    let states: Vec<BreakerState> = breakers.iter().map(|b| b.state(now)).collect();
    let available = tool.is_available(now);
    let recovering = !available && states.contains(&BreakerState::HalfOpen);
    let retry_after_s = if available {
        None
    } else if recovering {
        Some(0)
    } else {
        breakers
            .iter()
            .filter_map(|b| b.snapshot(now).open_until)
            .map(|until| {
                until
                    .saturating_duration_since(now)
                    .as_millis()
                    .div_ceil(1000) as u64
            })
            .min()
    };
    // The provider's configured name: a breaker the provider's tools share has a key of
    // its own (`*/duffel`), which is not the provider's name.
    let providers: Vec<Value> = tool
        .provider_names()
        .into_iter()
        .zip(&states)
        .map(|(name, s)| json!({ "name": name, "breaker": s.as_str() }))
        .collect();
    json!({
        "name": tool.spec.name,
        "state": if available { "available" } else if recovering { "recovering" } else { "unavailable" },
        "retry_after_s": retry_after_s,
        "providers": providers,
    })
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
        self.lock().insert(session, peer);
        self.watcher.get_or_init(|| {
            let events = state.gateway.breakers().subscribe();
            tokio::spawn(watch(Arc::clone(self), events, cancel.clone()));
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

/// Tells the subscribers of every breaker transition until `cancel`.
async fn watch(
    subscribers: Arc<Subscribers>,
    mut events: tokio::sync::broadcast::Receiver<crate::breaker::TransitionEvent>,
    cancel: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            // Lagging behind still means something changed.
            Ok(_) | Err(RecvError::Lagged(_)) => subscribers.notify_all().await,
            Err(RecvError::Closed) => return,
        }
    }
}
