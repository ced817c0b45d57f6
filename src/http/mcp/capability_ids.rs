//! Stateless `/mcp` (`[mcp] legacy_sessions = false`, a fleet's default) and a 2025-revision
//! client that declared the Tasks extension at `initialize`: the declaration is carried in the
//! `Mcp-Session-Id` the answer to `initialize` hands out, which the client sends back on every
//! request, so any replica knows it without storing anything.
//!
//! Why: in a 2025 revision a client declares its capabilities once, at `initialize`, and they
//! hold for the session (2025-11-25, lifecycle: "Client and server capabilities establish
//! which optional protocol features will be available during the session"). A process that
//! keeps sessions remembers them (rmcp reads a session's capabilities for each of its
//! requests); a stateless one answers every request alone, and rmcp gives it empty
//! capabilities, so a background call was refused as from a client without the extension. The
//! Streamable HTTP transport lets a server hand out a session id at `initialize` ("a securely
//! generated UUID, a JWT, or a cryptographic hash", visible ASCII) which the client MUST send on
//! all its later requests: the one thing a 2025 client sends back whatever replica it reaches.
//!
//! The id is `fgs1.<UUIDv7>.tasks`: a version, a random part (ids are unique), and the
//! declarations faregate acts on (only the Tasks extension, the one client capability it
//! reads). It is handed out only when there is something to carry (the client declared the
//! extension, and the gateway serves it: it has a job store), so other clients stay as they
//! were, without a session id. Nothing is signed: the id only repeats what the client itself
//! said, which it may as well say in each request's `_meta` (MCP's per-request capabilities,
//! which always win); it grants nothing, and every request is still authenticated by its key.
//!
//! On a request carrying such an id, the declaration is restated where rmcp and the handler
//! read a request's capabilities, `_meta["io.modelcontextprotocol/clientCapabilities"]`, for
//! `tools/call` and the `tasks/` methods, unless the request has capabilities of its own
//! there, or is a 2026-07-28 request (`_meta` protocolVersion; those declare per request). The
//! Tasks extension asks that a task be returned only to a client whose request declares it;
//! for a 2025 revision that is the session's declaration, as rmcp reads it in a kept session.
//!
//! What the id is not: a session. Nothing is kept under it, a `GET /mcp` for an event stream
//! or a `DELETE /mcp` with it is answered 405 as the transport allows, and anything that needs
//! a kept session (subscriptions, `notifications/cancelled`) is refused as for any stateless
//! request. Mounted only on a stateless `/mcp` with a job store.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::TASKS_EXTENSION_ID;
use serde_json::{Map, Value, json};

use crate::http::edge::ApiError;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// The first part of every id this module hands out (its format's version).
const PREFIX: &str = "fgs1";

/// The part of an id saying the client declared the Tasks extension.
const TASKS: &str = "tasks";

/// Where a request carries its own capabilities (the 2026-07-28 name, which rmcp reads for
/// every revision).
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// Where a 2026-07-28 request names its revision.
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// How much of the answer to `initialize` is read to see that it is one: the result and its
/// instructions (the agent guidance) are a few KB.
const INITIALIZE_ANSWER_MAX: usize = 1 << 20;

/// What a client declared at `initialize` that faregate acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Declared {
    /// The Tasks extension (`io.modelcontextprotocol/tasks`).
    tasks: bool,
}

impl Declared {
    /// What the `initialize` request `body` declares; `None` when it is not one.
    fn of_initialize(body: &[u8]) -> Option<Declared> {
        let message: Value = serde_json::from_slice(body).ok()?;
        if message.get("method").and_then(Value::as_str) != Some("initialize") {
            return None;
        }
        let extensions = message.pointer("/params/capabilities/extensions");
        Some(Declared {
            tasks: extensions.is_some_and(|e| e.get(TASKS_EXTENSION_ID).is_some()),
        })
    }

    /// Whether there is anything to carry.
    fn any(self) -> bool {
        self.tasks
    }

    /// A new id carrying this declaration.
    fn id(self) -> String {
        let mut id = format!("{PREFIX}.{}", uuid::Uuid::now_v7().simple());
        if self.tasks {
            id.push('.');
            id.push_str(TASKS);
        }
        id
    }

    /// The declaration an id this module handed out carries; `None` for any other id.
    fn of_id(id: &str) -> Option<Declared> {
        let mut parts = id.split('.');
        if parts.next()? != PREFIX || parts.next().is_none_or(str::is_empty) {
            return None;
        }
        Some(Declared {
            tasks: parts.any(|p| p == TASKS),
        })
    }

    /// The declaration as MCP's per-request capabilities.
    fn capabilities(self) -> Value {
        let mut extensions = Map::new();
        if self.tasks {
            extensions.insert(TASKS_EXTENSION_ID.to_string(), json!({}));
        }
        json!({ "extensions": extensions })
    }
}

/// Middleware in front of rmcp's service (inside [`super::parse_errors`], outside
/// [`super::session_owners`], which never sees these ids handed out): hands an id to an
/// `initialize` with something to carry, and restates the declaration of a request carrying one.
/// `max` is the body limit.
pub(super) async fn carried(State(max): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let named = request
        .headers()
        .get(&SESSION_HEADER)
        .map(|v| v.to_str().ok().and_then(Declared::of_id));
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max).await else {
        return ApiError::too_large(max).into_response();
    };
    match named {
        // Another id: rmcp ignores it in stateless mode, and so does this.
        Some(None) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Some(Some(declared)) => {
            let restate = declared.any().then(|| restated(&bytes, declared)).flatten();
            let bytes = restate.map_or(bytes, Bytes::from);
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        None => {
            let declared = Declared::of_initialize(&bytes).filter(|d| d.any());
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            match declared {
                Some(declared) => with_id(response, declared).await,
                None => response,
            }
        }
    }
}

/// `response` with an id carrying `declared` when it is the answer to `initialize` (a JSON-RPC
/// result; an error opens nothing).
async fn with_id(response: Response, declared: Declared) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() != StatusCode::OK || !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, INITIALIZE_ANSWER_MAX).await else {
        tracing::warn!("the answer to a stateless initialize could not be read");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let answered = serde_json::from_slice::<Value>(&bytes)
        .is_ok_and(|m| m.pointer("/result/protocolVersion").is_some());
    if answered && let Ok(id) = HeaderValue::from_str(&declared.id()) {
        parts.headers.insert(SESSION_HEADER, id);
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The request `body` with `declared` as its capabilities, for a `tools/call` or `tasks/`
/// request of a 2025 revision without capabilities of its own; `None` to send it as it is.
fn restated(body: &[u8], declared: Declared) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(body).ok()?;
    let method = message.get("method")?.as_str()?;
    if !(method == "tools/call" || method.starts_with("tasks/")) || message.get("id").is_none() {
        return None;
    }
    let params = message
        .as_object_mut()?
        .entry("params")
        .or_insert_with(|| json!({}));
    let meta = params
        .as_object_mut()?
        .entry("_meta")
        .or_insert_with(|| json!({}))
        .as_object_mut()?;
    if meta.contains_key(CAPABILITIES_KEY) || meta.contains_key(VERSION_KEY) {
        return None;
    }
    meta.insert(CAPABILITIES_KEY.to_string(), declared.capabilities());
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS_ON: Declared = Declared { tasks: true };

    fn initialize(capabilities: Value) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn an_initialize_declaring_the_extension_is_carried_and_read_back() {
        let declared = Declared::of_initialize(&initialize(
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        ));
        assert_eq!(declared, Some(TASKS_ON));
        let id = TASKS_ON.id();
        assert!(id.starts_with("fgs1.") && id.ends_with(".tasks"), "{id}");
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        assert_ne!(id, TASKS_ON.id(), "ids are unique");
        assert_eq!(Declared::of_id(&id), Some(TASKS_ON));
    }

    #[test]
    fn nothing_to_carry_and_other_ids_are_told_apart() {
        let declared = Declared::of_initialize(&initialize(json!({"sampling": {}})));
        assert_eq!(declared.map(Declared::any), Some(false));
        let not_initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert_eq!(
            Declared::of_initialize(not_initialize.to_string().as_bytes()),
            None
        );
        for id in ["made-up", "fgs1", "fgs1.", "fgs2.0190.tasks", ""] {
            assert_eq!(Declared::of_id(id), None, "{id}");
        }
        assert_eq!(Declared::of_id("fgs1.0190"), Some(Declared::default()));
    }

    #[test]
    fn the_declaration_is_restated_only_where_the_request_has_none() {
        let restate = |message: Value| {
            restated(message.to_string().as_bytes(), TASKS_ON)
                .map(|b| serde_json::from_slice::<Value>(&b).unwrap_or_default())
        };
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_flights", "arguments": {"origin": "JFK"},
            "_meta": {"faregate/mode": "background"}}});
        let out = restate(call.clone()).unwrap_or_default();
        assert_eq!(
            out["params"]["_meta"][CAPABILITIES_KEY],
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        assert_eq!(out["params"]["_meta"]["faregate/mode"], "background");
        assert_eq!(out["params"]["arguments"], call["params"]["arguments"]);
        // A task method without params gets them.
        let list = restate(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/list"}));
        assert!(list.is_some_and(|l| l["params"]["_meta"][CAPABILITIES_KEY].is_object()));
        // The request's own capabilities win; a 2026-07-28 request declares per request;
        // other methods and notifications are left alone.
        let mut own = call.clone();
        own["params"]["_meta"][CAPABILITIES_KEY] = json!({});
        assert_eq!(restate(own), None);
        let mut modern = call.clone();
        modern["params"]["_meta"][VERSION_KEY] = json!("2026-07-28");
        assert_eq!(restate(modern), None);
        assert_eq!(
            restate(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})),
            None
        );
        assert_eq!(
            restate(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            None
        );
    }
}
