//! A client's MCP sessions and event stream are its own: another client's key naming its session
//! or replaying its event ids reads nothing of it, and the event stream carries only the
//! breakers of the tools the client sees.

use serde_json::{Value, json};

use super::scopes::{flights, stack, with_clients};
use crate::support::{MapEnv, Stack, send};

/// An MCP session belongs to the client that opened it: another client's key that names it is
/// answered as for an unknown session (404), whatever it asks, and cannot end it.
#[tokio::test]
async fn another_clients_mcp_session_is_not_found() {
    let s = stack().await;
    let reader = Mcp::start(&s, "reader-key").await;
    assert!(
        !reader.session.is_empty(),
        "a 2025 revision opens a session"
    );
    let as_pricer = |request: reqwest::RequestBuilder| {
        request
            .bearer_auth("pricer-key")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &reader.session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}});
    for request in [
        as_pricer(s.http.post(s.url("/mcp")).json(&list)),
        as_pricer(s.http.get(s.url("/mcp"))).header("last-event-id", "0"),
        as_pricer(s.http.delete(s.url("/mcp"))),
    ] {
        let (status, _, body) = send(request).await;
        assert_eq!(status, 404, "{body:#}");
        assert!(!body.to_string().contains("search_flights"), "{body:#}");
    }
    // The owner's session is untouched.
    let own = reader.rpc("tools/list", json!({})).await;
    assert!(
        own["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{own:#}"
    );
}

/// An event id names one client's answer: rmcp replays a `Last-Event-ID` to whichever session
/// names it, so another client's session that names it is sent nothing, while the owner's
/// replay still carries the answer.
#[tokio::test]
async fn another_clients_event_id_replays_nothing() {
    let s = stack().await;
    let reader = Mcp::start(&s, "reader-key").await;
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "search_flights", "arguments": flights()}});
    let text = s
        .http
        .post(s.url("/mcp"))
        .bearer_auth("reader-key")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &reader.session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&call)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .text()
        .await
        .unwrap_or_default();
    // The first event (the priming one) has an id and no message; the answer follows it.
    let first_id = text
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_string())
        .unwrap_or_else(|| panic!("an event id: {text}"));
    assert!(text.contains("\"id\":41"), "{text}");
    let replay = |mcp: &Mcp<'_>| {
        s.http
            .get(s.url("/mcp"))
            .bearer_auth(mcp.key)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &mcp.session)
            .header("mcp-protocol-version", "2025-11-25")
            .header("last-event-id", &first_id)
            .send()
    };
    let pricer = Mcp::start(&s, "pricer-key").await;
    let theirs = replay(&pricer).await.unwrap_or_else(|e| panic!("{e}"));
    let theirs = theirs.text().await.unwrap_or_default();
    assert!(
        !theirs.contains("\"id\":41") && !theirs.contains("JFK"),
        "another client's session replays none of it: {theirs}"
    );
    let own = replay(&reader).await.unwrap_or_else(|e| panic!("{e}"));
    let own = own.text().await.unwrap_or_default();
    assert!(own.contains("\"id\":41"), "the owner's replay: {own}");
}

/// The event stream sends a client the transitions of the breakers it sees only: a breaker of
/// a tool outside its scope changes unseen.
#[tokio::test]
async fn the_event_stream_sends_a_client_only_its_breakers() {
    let s = Stack::builder(53)
        .env(MapEnv(vec![("FAREGATE_ADMIN_KEY", "admin-key")]))
        .config(with_clients)
        .start()
        .await;
    let mut stream = s
        .http
        .get(s.url("/v1/events"))
        .bearer_auth("reader-key")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut seen = String::new();
    while !seen.contains("event: ready") {
        match stream.chunk().await {
            Ok(Some(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("the stream ended: {other:?}; read: {seen}"),
        }
    }
    for key in ["price_flight_offer.amadeus", "search_flights.amadeus"] {
        let forced = s
            .http
            .post(s.url(&format!("/v1/breakers/{key}/force")))
            .bearer_auth("admin-key")
            .json(&json!({"state": "open"}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(forced.status().as_u16(), 200, "{key}");
    }
    while !seen.contains("\"key\":\"search_flights.amadeus\"") {
        match tokio::time::timeout(std::time::Duration::from_secs(10), stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("no transition of search_flights.amadeus: {other:?}; read: {seen}"),
        }
    }
    assert!(
        !seen.contains("price_flight_offer"),
        "the pricing breaker's transition came first, and is not sent: {seen}"
    );
}

/// A 2025-11-25 MCP session over raw JSON-RPC (the protocol itself is driven by the official
/// SDK in `.ci/run`; here only what a scope changes is read).
pub(super) struct Mcp<'a> {
    s: &'a Stack,
    key: &'static str,
    session: String,
    pub(super) instructions: String,
}

impl<'a> Mcp<'a> {
    pub(super) async fn start(s: &'a Stack, key: &'static str) -> Mcp<'a> {
        let res = s
            .http
            .post(s.url("/mcp"))
            .bearer_auth(key)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "scope-test", "version": "1"}}}),
            )
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let session = res
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = answer(res).await;
        let instructions = body["result"]["instructions"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mcp = Mcp {
            s,
            key,
            session,
            instructions,
        };
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        mcp
    }

    async fn send(&self, message: Value) -> Value {
        let res = self
            .s
            .http
            .post(self.s.url("/mcp"))
            .bearer_auth(self.key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        answer(res).await
    }

    pub(super) async fn rpc(&self, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}))
            .await
    }
}

/// An MCP answer's JSON: the body, or the data line of a server-sent event stream (a session's
/// answers may come as one).
async fn answer(res: reqwest::Response) -> Value {
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    let from_stream = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find_map(|d| serde_json::from_str::<Value>(d).ok());
    serde_json::from_str(&text)
        .ok()
        .or(from_stream)
        .unwrap_or_else(|| json!({"status": status, "text": text}))
}
