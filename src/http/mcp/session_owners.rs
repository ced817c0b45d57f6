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
//! **Sessions per client are capped** (`[limits] client_max_mcp_sessions`, 64 by default; a
//! client is its key, or its peer address when auth is off, as for the other limits). A session
//! costs its worker task, channels and event buffers (about 56 KB) for as long as it lives, up
//! to rmcp's idle timeout, so without a cap one key could `initialize` hundreds a second and
//! hold gigabytes. The cap is counted here, from this map: an `initialize` (a POST without
//! `Mcp-Session-Id` whose body is one) takes a slot before rmcp sees it and keeps it as the
//! session's entry once rmcp answers with one; beyond the cap it is answered 429 with a JSON-RPC
//! error saying how many are open and how to end them (`DELETE /mcp`). The count comes down when
//! a session ends: a `DELETE` forgets its entry at once, and a client at its cap has the entries
//! of sessions rmcp no longer keeps (idle, closed by the shutdown) forgotten before it is
//! refused. Stateless (`[mcp] legacy_sessions = false`) keeps no session, and counts none.
//!
//! Events are held to their owner the same way: rmcp replays a `Last-Event-ID` to whichever
//! session names it, so the first event id of every event stream going out records its
//! client as the stream's owner in the event store, and a `Last-Event-ID` of another client's
//! stream is answered as one never issued (an empty replay: nothing says it exists).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::event_store::{BoundedEventStore, Owner};
use super::request_ids::{self, RequestIds};
use crate::clients::ClientName;
use crate::http::edge::{ApiError, Caller, ClientId, client_id, holding};
use crate::telemetry::Telemetry;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const LAST_EVENT_HEADER: HeaderName = HeaderName::from_static("last-event-id");
/// What a refused `Last-Event-ID` becomes: an id never issued (ids are UUIDs), which rmcp
/// answers with an empty replay.
const NO_EVENT: HeaderValue = HeaderValue::from_static("none");
/// How much of an event stream is read for its first event id before giving up.
const FIRST_ID_WITHIN: usize = 8192;

/// How many entries the map holds before it is first pruned.
const PRUNE_FROM: usize = 256;

/// Who opened each session rmcp keeps, and how many each client keeps.
#[derive(Debug)]
pub(super) struct SessionOwners {
    owners: Mutex<Owners>,
    sessions: Arc<LocalSessionManager>,
    /// The store rmcp keeps the sessions' events in: each stream's owner is recorded there.
    events: Arc<BoundedEventStore>,
    /// What caps sessions: `None` when nothing does (no cap configured, or no sessions kept).
    cap: Option<SessionCap>,
    /// The JSON-RPC ids of each session's requests in flight ([`request_ids`]): `None` when no
    /// sessions are kept.
    ids: Option<Arc<RequestIds>>,
}

/// The cap on one client's sessions and what it needs to refuse one.
#[derive(Debug)]
pub(super) struct SessionCap {
    /// Sessions one client may keep (`[limits] client_max_mcp_sessions`).
    pub(super) max: u32,
    /// How long an idle session lives (rmcp's keep-alive), for the refusal's text.
    pub(super) idle: Duration,
    /// The body limit, for reading a request to see whether it is an `initialize`.
    pub(super) max_body_bytes: usize,
    /// Where refusals are counted.
    pub(super) telemetry: Arc<Telemetry>,
}

#[derive(Debug, Default)]
struct Owners {
    by_session: HashMap<String, Owned>,
    /// Sessions admitted but not answered yet (an `initialize` rmcp is handling), per client:
    /// counted with the open ones, so concurrent `initialize`s cannot pass the cap together.
    opening: HashMap<ClientId, u32>,
    /// The size at which the map is pruned next.
    prune_at: usize,
}

/// A session's owner: the client it belongs to, and whom it counts against.
#[derive(Debug, Clone)]
struct Owned {
    client: ClientName,
    counted: ClientId,
}

/// A session being opened; dropping it gives back its place among the client's sessions (by
/// then the session, when rmcp opened one, is counted by its entry).
#[derive(Debug)]
struct Opening {
    owners: Arc<SessionOwners>,
    counted: ClientId,
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut owners = self.owners.lock();
        if let Some(n) = owners.opening.get_mut(&self.counted) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                owners.opening.remove(&self.counted);
            }
        }
    }
}

impl SessionOwners {
    /// Owners of the sessions `sessions` keeps, and of the event streams in `events`; `cap`
    /// caps each client's sessions; `ids` keeps each session's request ids in flight.
    pub(super) fn new(
        sessions: Arc<LocalSessionManager>,
        events: Arc<BoundedEventStore>,
        cap: Option<SessionCap>,
        ids: Option<Arc<RequestIds>>,
    ) -> Self {
        SessionOwners {
            owners: Mutex::new(Owners {
                by_session: HashMap::new(),
                opening: HashMap::new(),
                prune_at: PRUNE_FROM,
            }),
            sessions,
            events,
            cap,
            ids,
        }
    }

    fn owner(&self, session: &str) -> Option<ClientName> {
        self.lock()
            .by_session
            .get(session)
            .map(|owned| owned.client.clone())
    }

    async fn record(&self, session: String, owned: Owned) {
        let prune = {
            let mut owners = self.lock();
            owners.by_session.insert(session, owned);
            owners.by_session.len() >= owners.prune_at
        };
        if prune {
            self.forget_ended().await;
            let mut owners = self.lock();
            owners.prune_at = (owners.by_session.len() * 2).max(PRUNE_FROM);
        }
    }

    /// Forgets the sessions rmcp no longer keeps (closed, idle past its keep-alive, ended by
    /// the shutdown).
    async fn forget_ended(&self) {
        let live = self.sessions.sessions.read().await;
        self.lock()
            .by_session
            .retain(|id, _| live.contains_key(id.as_str()));
    }

    /// Forgets a session its client ended (`DELETE`).
    fn forget(&self, session: &str) {
        self.lock().by_session.remove(session);
    }

    /// A place for one more session of `counted`, or how many it has open (its cap). Sessions
    /// that ended are forgotten before a client at its cap is refused.
    async fn admit(self: &Arc<Self>, counted: ClientId, max: u32) -> Result<Opening, u32> {
        if let Some(opening) = self.try_open(counted, max) {
            return Ok(opening);
        }
        self.forget_ended().await;
        self.try_open(counted, max).ok_or(max)
    }

    fn try_open(self: &Arc<Self>, counted: ClientId, max: u32) -> Option<Opening> {
        let mut owners = self.lock();
        let open = owners
            .by_session
            .values()
            .filter(|owned| owned.counted == counted)
            .count();
        let opening = owners.opening.get(&counted).copied().unwrap_or(0);
        if open + opening as usize >= max as usize {
            return None;
        }
        owners.opening.insert(counted, opening + 1);
        Some(Opening {
            owners: Arc::clone(self),
            counted,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Middleware in front of rmcp's service: refuses another client's session, records who
/// opened a new one, and refuses a request whose id is in flight in its session
/// ([`request_ids`]).
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
    // A request in a session takes its JSON-RPC id among the session's requests in flight, once
    // the session is known to be the caller's.
    let (request, taken) = match (&owners.ids, &named) {
        (Some(ids), Some(session)) if request.method() == Method::POST => {
            match request_ids::take(ids, session, request).await {
                Ok(taken) => taken,
                Err(refused) => return *refused,
            }
        }
        _ => (request, None),
    };
    let counted = client_id(request.extensions().get::<Caller>(), request.extensions());
    // A POST without a session may be an `initialize`, which opens one: it takes a place among
    // the client's sessions before rmcp sees it.
    let (request, opening) = match &owners.cap {
        Some(cap) if named.is_none() && request.method() == Method::POST => {
            match admit_initialize(&owners, cap, counted, request).await {
                Ok(admitted) => admitted,
                Err(refused) => return *refused,
            }
        }
        _ => (request, None),
    };
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
    let ending = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if ending_unknown && response.status() == StatusCode::ACCEPTED {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    if ending
        && response.status() == StatusCode::ACCEPTED
        && let Some(session) = &named
    {
        owners.forget(session);
    }
    if named.is_none()
        && let Some(client) = &client
        && let Some(opened) = response
            .headers()
            .get(&SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
    {
        let owned = Owned {
            client: client.clone(),
            counted,
        };
        owners.record(opened.to_owned(), owned).await;
    }
    // Only now: the session rmcp opened is counted by its entry.
    drop(opening);
    let response = match client {
        Some(client) if is_event_stream(&response) => {
            claim_first_event(response, Arc::clone(&owners.events), client)
        }
        _ => response,
    };
    match taken {
        // Until the answer is sent or dropped (rmcp's handling of the request holds it too).
        Some(taken) => holding(response, taken),
        None => response,
    }
}

/// `request` (its body read and put back) with a place among `counted`'s sessions when it is
/// an `initialize`, or the refusal when the client has `cap.max` open: 429 with a JSON-RPC
/// error carrying the request's id, which says how to end sessions.
async fn admit_initialize(
    owners: &Arc<SessionOwners>,
    cap: &SessionCap,
    counted: ClientId,
    request: Request,
) -> Result<(Request, Option<Opening>), Box<Response>> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, cap.max_body_bytes)
        .await
        .map_err(|_| Box::new(ApiError::too_large(cap.max_body_bytes).into_response()))?;
    let opening = match initialize_id(&bytes) {
        None => None,
        Some(id) => match owners.admit(counted, cap.max).await {
            Ok(opening) => Some(opening),
            Err(open) => {
                tracing::info!(client = %counted, open, "MCP session refused: client at its cap");
                cap.telemetry
                    .metrics()
                    .record_client_limited("client_max_mcp_sessions");
                return Err(Box::new(too_many_sessions(id, open, cap)));
            }
        },
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), opening))
}

/// The id of an `initialize` request, when `body` is one.
fn initialize_id(body: &Bytes) -> Option<Value> {
    let message = serde_json::from_slice::<Value>(body).ok()?;
    (message.get("method").and_then(Value::as_str) == Some("initialize"))
        .then(|| message.get("id").cloned().unwrap_or(Value::Null))
}

/// 429 for an `initialize` beyond the client's cap, as the JSON-RPC error MCP clients show.
fn too_many_sessions(id: Value, open: u32, cap: &SessionCap) -> Response {
    let message = format!(
        "this client already has {open} MCP sessions open, its limit ([limits] client_max_mcp_sessions is {}); end the sessions it no longer uses with DELETE /mcp and their Mcp-Session-Id header (an idle session also ends by itself after {}), then send initialize again",
        cap.max,
        humantime::format_duration(cap.idle),
    );
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -31429,
        "message": message,
        "data": {"limit": "client_max_mcp_sessions", "open": open, "max": cap.max},
    }});
    let mut res = (StatusCode::TOO_MANY_REQUESTS, body.to_string()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
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
            None,
            None,
        );
        let local = || Owned {
            client: ClientName::local(),
            counted: A,
        };
        for i in 0..PRUNE_FROM - 1 {
            owners.record(format!("s{i}"), local()).await;
        }
        assert_eq!(owners.owner("s0"), Some(ClientName::local()));
        owners.record("last".to_string(), local()).await;
        assert_eq!(owners.owner("s0"), None, "no session is live: all dropped");
        assert_eq!(owners.lock().by_session.len(), 0);
        assert_eq!(owners.lock().prune_at, PRUNE_FROM);
    }

    const A: ClientId = ClientId::Key([1; 32]);
    const B: ClientId = ClientId::Key([2; 32]);

    /// A client's sessions, open and opening, are held to its cap; ended ones are forgotten
    /// before it is refused.
    #[tokio::test]
    async fn sessions_are_capped_per_client_and_ended_ones_are_forgotten() {
        use rmcp::transport::streamable_http_server::session::local::{
            SessionConfig, create_local_session,
        };
        let sessions = Arc::new(LocalSessionManager::default());
        let owners = Arc::new(SessionOwners::new(
            Arc::clone(&sessions),
            Arc::new(BoundedEventStore::default()),
            None,
            None,
        ));
        let open = |id: &'static str| {
            let owners = Arc::clone(&owners);
            let sessions = Arc::clone(&sessions);
            async move {
                let (handle, _worker) = create_local_session(id, SessionConfig::default());
                sessions.sessions.write().await.insert(id.into(), handle);
                let owned = Owned {
                    client: ClientName::local(),
                    counted: A,
                };
                owners.record(id.to_string(), owned).await;
            }
        };
        let opening = owners.admit(A, 2).await;
        assert!(opening.is_ok());
        open("s1").await;
        drop(opening);
        let second = owners.admit(A, 2).await;
        assert!(second.is_ok(), "one open, one opening: at the cap");
        assert_eq!(
            owners.admit(A, 2).await.err(),
            Some(2),
            "the opening one counts"
        );
        assert!(
            owners.admit(B, 2).await.is_ok(),
            "another client has its own"
        );
        drop(second);
        open("s2").await;
        assert_eq!(owners.admit(A, 2).await.err(), Some(2), "two open");
        sessions.sessions.write().await.remove("s1");
        assert!(
            owners.admit(A, 2).await.is_ok(),
            "a session rmcp no longer keeps is forgotten"
        );
        assert_eq!(owners.lock().by_session.len(), 1);
        owners.forget("s2");
        assert_eq!(
            owners.lock().by_session.len(),
            0,
            "an ended session is forgotten"
        );
    }

    #[test]
    fn only_an_initialize_opens_a_session() {
        let id = |body: &str| initialize_id(&Bytes::from(body.to_string()));
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#),
            Some(json!(7))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            None
        );
        assert_eq!(id("not json"), None);
    }
}
