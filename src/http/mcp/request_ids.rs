//! A request in an MCP session may not reuse the JSON-RPC id of a request of that session still
//! in flight: it is refused at once, before rmcp sees it, with HTTP 400 and a JSON-RPC `-32600`
//! "Invalid Request" that names the id and asks for a new one. JSON-RPC 2.0 asks a client to
//! keep the ids of its outstanding requests distinct; this is what happens when one does not.
//!
//! Why here and not left to rmcp: rmcp 3.11.0 keeps a session's requests by their id alone. The
//! session's worker maps each request id to the HTTP request whose stream answers it
//! (`session/local.rs`, `register_request`), and the service loop keeps each request's
//! cancellation token by id (`service.rs`, `local_ct_pool`); a second request with the same id
//! replaces both entries. The first request's stream is then never sent anything: it waits until
//! the session ends. The second request's stream carries whichever of the two answers comes
//! first, and when that is the first request's, the second's own call is cancelled by it and its
//! answer dropped. So one client gets nothing and the other may get an answer to a question it
//! did not ask.
//!
//! An id is taken when its request arrives and is free again once both have let it go: the
//! answer's body (sent or dropped, `edge/holding.rs`) and rmcp's handling of the
//! request (the handler's context carries the HTTP request's extensions, and with them a clone of
//! what holds the id). A client whose stream breaks may resume it, and its call runs on (a broken
//! stream is not a cancellation); rmcp still routes that call's answer by its id, so the id stays
//! taken until the call ends. A booking that runs on after `notifications/cancelled` keeps its id
//! the same way.
//!
//! Only requests (a `method` and an `id`) POSTed with an `Mcp-Session-Id` are counted, and only
//! where sessions are kept (`[mcp] legacy_sessions = true`): notifications have no id, the
//! client's answers to the server's requests (sampling, elicitation) are not requests, and a
//! stateless request is served on its own, with nothing to collide with. rmcp reads one message
//! per body (a JSON-RPC batch, an array, is refused as not a message, `-32600`), so there are no
//! ids within one body to compare.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ErrorData, JsonRpcError, RequestId};
use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::http::edge::ApiError;

/// The ids of the requests in flight in every session.
#[derive(Debug)]
pub(super) struct RequestIds {
    /// (session id, request id) of each request in flight. A std mutex: held only to look up,
    /// insert or remove one entry, never across an await.
    in_flight: Mutex<HashSet<(Box<str>, RequestId)>>,
    /// The body limit, for reading a request to find its id.
    max_body_bytes: usize,
}

/// An id taken in its session. It travels with the answer's body and with the request into rmcp;
/// the id is free again when the last clone is dropped.
#[derive(Debug, Clone)]
pub(super) struct Taken {
    _held: Arc<Held>,
}

#[derive(Debug)]
struct Held {
    ids: Arc<RequestIds>,
    key: (Box<str>, RequestId),
}

impl Drop for Held {
    fn drop(&mut self) {
        self.ids.lock().remove(&self.key);
    }
}

impl RequestIds {
    /// No ids in flight; `max_body_bytes` bounds the read of a request's body.
    pub(super) fn new(max_body_bytes: usize) -> Self {
        RequestIds {
            in_flight: Mutex::new(HashSet::new()),
            max_body_bytes,
        }
    }

    /// `id` taken in `session`, or `None` when a request of that session in flight has it.
    fn take(self: &Arc<Self>, session: &str, id: RequestId) -> Option<Taken> {
        let key = (Box::from(session), id);
        if !self.lock().insert(key.clone()) {
            return None;
        }
        Some(Taken {
            _held: Arc::new(Held {
                ids: Arc::clone(self),
                key,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(Box<str>, RequestId)>> {
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `request` of `session` (its body read and put back), with its id taken when it is a request:
/// the [`Taken`] is in its extensions, for as long as rmcp handles it, and returned for the
/// answer to hold. The refusal when the id is in flight in the session already (400 with a
/// JSON-RPC error), or when the body is over the limit (413).
pub(super) async fn take(
    ids: &Arc<RequestIds>,
    session: &str,
    request: Request,
) -> Result<(Request, Option<Taken>), Box<Response>> {
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, ids.max_body_bytes)
        .await
        .map_err(|_| Box::new(ApiError::too_large(ids.max_body_bytes).into_response()))?;
    let taken = match request_id(&bytes) {
        None => None,
        Some(id) => match ids.take(session, id.clone()) {
            Some(taken) => {
                parts.extensions.insert(taken.clone());
                Some(taken)
            }
            None => {
                tracing::info!(%id, "MCP request refused: its id is in flight in its session");
                return Err(Box::new(in_use(id)));
            }
        },
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), taken))
}

/// The id of a request (a message with a `method` and an `id`), as rmcp reads it (`7` and `7.0`
/// are one id, `"7"` another); `None` for a notification, a response, a batch or anything rmcp
/// will refuse.
fn request_id(body: &[u8]) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct Message {
        id: Option<RequestId>,
        method: Option<IgnoredAny>,
    }
    let message: Message = serde_json::from_slice(body).ok()?;
    message.method?;
    message.id
}

/// 400 for a request whose id is in flight in its session, as the JSON-RPC error MCP clients
/// show, with the request's id.
fn in_use(id: RequestId) -> Response {
    let shown = id.clone().into_json_value();
    let message = format!(
        "Invalid Request: the id {shown} is already in use by a request of this session that has not been answered; send this request again with a new id (JSON-RPC 2.0: the requests a client has in flight have distinct ids)"
    );
    let error = JsonRpcError::new(Some(id), ErrorData::invalid_request(message, None));
    let body = serde_json::to_vec(&error).unwrap_or_default();
    let mut res = (StatusCode::BAD_REQUEST, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn an_id_is_taken_once_per_session_until_every_holder_lets_go() {
        let ids = Arc::new(RequestIds::new(1024));
        let seven = || RequestId::Number(7);
        let first = ids.take("s1", seven());
        assert!(first.is_some());
        assert!(ids.take("s1", seven()).is_none(), "in flight in s1");
        assert!(
            ids.take("s2", seven()).is_some(),
            "another session has its own ids"
        );
        assert!(
            ids.take("s1", RequestId::String("7".into())).is_some(),
            "\"7\" is not 7"
        );
        let answer = first.clone();
        drop(first);
        assert!(
            ids.take("s1", seven()).is_none(),
            "the answer still holds it"
        );
        drop(answer);
        assert!(ids.take("s1", seven()).is_some(), "free once all let go");
        assert!(ids.lock().is_empty(), "nothing is left behind");
    }

    #[test]
    fn only_a_request_has_an_id_to_take() {
        let id = |body: Value| request_id(body.to_string().as_bytes());
        assert_eq!(
            id(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}})),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            id(json!({"jsonrpc": "2.0", "id": 7.0, "method": "ping"})),
            Some(RequestId::Number(7)),
            "rmcp reads 7.0 as 7"
        );
        assert_eq!(
            id(json!({"jsonrpc": "2.0", "id": "a", "method": "ping"})),
            Some(RequestId::String("a".into()))
        );
        for not_a_request in [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}}),
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}),
            json!([{"jsonrpc": "2.0", "id": 7, "method": "ping"}]),
        ] {
            assert_eq!(id(not_a_request.clone()), None, "{not_a_request}");
        }
        assert_eq!(request_id(b"not json"), None);
    }

    #[tokio::test]
    async fn a_reused_id_is_refused_naming_it_and_the_refusal_holds_nothing() {
        let ids = Arc::new(RequestIds::new(1024));
        let call = |id: u64| {
            Request::post("/mcp")
                .body(Body::from(
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string(),
                ))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let (request, taken) = take(&ids, "s1", call(7))
            .await
            .unwrap_or_else(|_| panic!("the first is admitted"));
        assert!(taken.is_some());
        assert!(
            request.extensions().get::<Taken>().is_some(),
            "rmcp's handling holds it too"
        );
        let refused = match take(&ids, "s1", call(7)).await {
            Err(refused) => *refused,
            Ok(_) => panic!("the second 7 is admitted"),
        };
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        assert_eq!(refused.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(refused.into_body(), 4096)
            .await
            .unwrap_or_default();
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(body["id"], 7, "{body}");
        assert_eq!(body["error"]["code"], -32600, "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("the id 7 is already in use") && message.contains("new id"),
            "{message}"
        );
        assert_eq!(ids.lock().len(), 1, "the refusal took nothing");
        drop((request, taken));
        assert!(ids.lock().is_empty());
    }
}
