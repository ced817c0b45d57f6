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
//!
//! Events are held to their owner the same way: rmcp replays a `Last-Event-ID` to whichever
//! session names it, so the first event id of every event stream going out records its
//! client as the stream's owner in the event store, and a `Last-Event-ID` of another client's
//! stream is answered as one never issued (an empty replay: nothing says it exists).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::event_store::{BoundedEventStore, Owner};
use crate::clients::ClientName;
use crate::http::edge::Caller;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const LAST_EVENT_HEADER: HeaderName = HeaderName::from_static("last-event-id");
/// What a refused `Last-Event-ID` becomes: an id never issued (ids are UUIDs), which rmcp
/// answers with an empty replay.
const NO_EVENT: HeaderValue = HeaderValue::from_static("none");
/// How much of an event stream is read for its first event id before giving up.
const FIRST_ID_WITHIN: usize = 8192;

/// How many entries the map holds before it is first pruned.
const PRUNE_FROM: usize = 256;

/// Who opened each session rmcp keeps.
#[derive(Debug)]
pub(super) struct SessionOwners {
    owners: Mutex<Owners>,
    sessions: Arc<LocalSessionManager>,
    /// The store rmcp keeps the sessions' events in: each stream's owner is recorded there.
    events: Arc<BoundedEventStore>,
}

#[derive(Debug, Default)]
struct Owners {
    by_session: HashMap<String, ClientName>,
    /// The size at which the map is pruned next.
    prune_at: usize,
}

impl SessionOwners {
    /// Owners of the sessions `sessions` keeps, and of the event streams in `events`.
    pub(super) fn new(sessions: Arc<LocalSessionManager>, events: Arc<BoundedEventStore>) -> Self {
        SessionOwners {
            owners: Mutex::new(Owners {
                by_session: HashMap::new(),
                prune_at: PRUNE_FROM,
            }),
            sessions,
            events,
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
    mut request: Request,
    next: Next,
) -> Response {
    let client = request.extensions().get::<Caller>().map(Caller::client);
    if let Some(client) = &client
        && let Some(last) = request
            .headers()
            .get(&LAST_EVENT_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        let foreign = match owners.events.owner(last) {
            Owner::Unknown => false,
            Owner::Unclaimed => true,
            Owner::Client(owner) => owner != *client,
        };
        if foreign {
            request.headers_mut().insert(LAST_EVENT_HEADER, NO_EVENT);
        }
    }
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
    // rmcp accepts a DELETE of any id, also of a session it no longer keeps (ended, or never
    // opened); an ended session is unknown to every other request, so to this one too. (Its
    // other answers to a DELETE, 405 without sessions and 400 without an id, stand.)
    let ending_unknown = match &named {
        Some(session) if request.method() == Method::DELETE => !owners
            .sessions
            .sessions
            .read()
            .await
            .contains_key(session.as_str()),
        _ => false,
    };
    let response = next.run(request).await;
    if ending_unknown && response.status() == StatusCode::ACCEPTED {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    if named.is_none()
        && let Some(client) = &client
        && let Some(opened) = response
            .headers()
            .get(&SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        owners.record(opened.to_owned(), client.clone()).await;
    }
    match client {
        Some(client) if is_event_stream(&response) => {
            claim_first_event(response, Arc::clone(&owners.events), client)
        }
        _ => response,
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"))
}

/// `response`'s event stream, unchanged, recording `client` as the owner of the stream its
/// first event id belongs to as it goes out.
fn claim_first_event(
    response: Response,
    events: Arc<BoundedEventStore>,
    client: ClientName,
) -> Response {
    let (parts, body) = response.into_parts();
    let mut seen = Some(String::new());
    let stream = body.into_data_stream().map(move |chunk| {
        if let (Ok(bytes), Some(text)) = (&chunk, &mut seen) {
            text.push_str(&String::from_utf8_lossy(bytes));
            if let Some(id) = first_event_id(text) {
                events.claim(id, &client);
                seen = None;
            } else if text.len() > FIRST_ID_WITHIN {
                seen = None;
            }
        }
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// The first complete `id:` field of an event stream's text.
fn first_event_id(text: &str) -> Option<&str> {
    let complete = &text[..text.rfind('\n')?];
    complete
        .lines()
        .find_map(|line| line.strip_prefix("id:"))
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_complete_id_of_a_stream_is_read() {
        assert_eq!(
            first_event_id("retry: 3000\nid: 01a2-x\ndata:\n\n"),
            Some("01a2-x")
        );
        assert_eq!(first_event_id("data: {}\nid:01a2-y\n"), Some("01a2-y"));
        assert_eq!(
            first_event_id("id: 01a2-"),
            None,
            "cut mid-line: wait for more"
        );
        assert_eq!(first_event_id(": keep-alive\n\n"), None);
    }

    /// Owners of sessions rmcp no longer keeps are dropped once the map reaches its pruning
    /// size, so ended sessions do not pile up.
    #[tokio::test]
    async fn owners_of_ended_sessions_are_dropped() {
        let owners = SessionOwners::new(
            Arc::new(LocalSessionManager::default()),
            Arc::new(BoundedEventStore::default()),
        );
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
