//! Each MCP session belongs to the client that opened it: a request that names another
//! client's session (`Mcp-Session-Id`) is answered as for an unknown session (404), so no key
//! but the opener's can read a session's stream, replay its events (`Last-Event-ID`), send in
//! it, or end it.
//!
//! rmcp keeps sessions by id alone. The id is random, so this is a second lock, not the only
//! one: an id leaks more easily than a key (a proxy's log, a browser's devtools), and the rule
//! everywhere else is that a client sees only its own work.
//!
//! The owner is recorded when rmcp's answer to a request without a session names a new one
//! (`initialize`). Entries of sessions rmcp no longer keeps (closed, or ended with the
//! process's cancellation) are dropped when the map has doubled since it was last pruned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::clients::ClientName;
use crate::http::edge::Caller;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// How many entries the map holds before it is first pruned.
const PRUNE_FROM: usize = 256;

/// Who opened each session rmcp keeps.
#[derive(Debug)]
pub(super) struct SessionOwners {
    owners: Mutex<Owners>,
    sessions: Arc<LocalSessionManager>,
}

#[derive(Debug, Default)]
struct Owners {
    by_session: HashMap<String, ClientName>,
    /// The size at which the map is pruned next.
    prune_at: usize,
}

impl SessionOwners {
    /// Owners of the sessions `sessions` keeps.
    pub(super) fn new(sessions: Arc<LocalSessionManager>) -> Self {
        SessionOwners {
            owners: Mutex::new(Owners {
                by_session: HashMap::new(),
                prune_at: PRUNE_FROM,
            }),
            sessions,
        }
    }

    fn owner(&self, session: &str) -> Option<ClientName> {
        self.lock().by_session.get(session).cloned()
    }

    async fn record(&self, session: String, client: ClientName) {
        let prune = {
            let mut owners = self.lock();
            owners.by_session.insert(session, client);
            owners.by_session.len() >= owners.prune_at
        };
        if prune {
            let live = self.sessions.sessions.read().await;
            let mut owners = self.lock();
            owners
                .by_session
                .retain(|id, _| live.contains_key(id.as_str()));
            owners.prune_at = (owners.by_session.len() * 2).max(PRUNE_FROM);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Middleware in front of rmcp's service: refuses another client's session, and records who
/// opened a new one.
pub(super) async fn owned_sessions(
    State(owners): State<Arc<SessionOwners>>,
    request: Request,
    next: Next,
) -> Response {
    let client = request.extensions().get::<Caller>().map(Caller::client);
    let named = request
        .headers()
        .get(&SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let (Some(session), Some(client)) = (&named, &client)
        && owners.owner(session).is_some_and(|owner| owner != *client)
    {
        // As rmcp answers an unknown session: nothing says the session exists.
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let response = next.run(request).await;
    if named.is_none()
        && let Some(client) = client
        && let Some(opened) = response
            .headers()
            .get(&SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        owners.record(opened.to_owned(), client).await;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owners of sessions rmcp no longer keeps are dropped once the map reaches its pruning
    /// size, so ended sessions do not pile up.
    #[tokio::test]
    async fn owners_of_ended_sessions_are_dropped() {
        let owners = SessionOwners::new(Arc::new(LocalSessionManager::default()));
        for i in 0..PRUNE_FROM - 1 {
            owners.record(format!("s{i}"), ClientName::local()).await;
        }
        assert_eq!(owners.owner("s0"), Some(ClientName::local()));
        owners.record("last".to_string(), ClientName::local()).await;
        assert_eq!(owners.owner("s0"), None, "no session is live: all dropped");
        assert_eq!(owners.lock().by_session.len(), 0);
        assert_eq!(owners.lock().prune_at, PRUNE_FROM);
    }
}
