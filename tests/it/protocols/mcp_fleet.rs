//! MCP behind a load balancer without sticky sessions: a 2025-revision client initializes on
//! one replica and calls a tool on another. Served statelessly (the fleet default), the second
//! replica answers; with sessions kept in each process it cannot know the first one's session.
//!
//! The requests are the ones a 2025-11-25 client sends (initialize, the initialized
//! notification, then `tools/call` carrying the negotiated version and any session id), written
//! out here because no MCP client lets a test pick the replica for each request.

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::support::{Stack, in_days};

const VERSION: &str = "2025-11-25";

/// Two replicas with `legacy_sessions` as given.
async fn two_replicas(legacy_sessions: bool) -> (Stack, Stack) {
    let start = |seed| {
        Stack::builder(seed)
            .config(move |mut c| {
                c.mcp.legacy_sessions = legacy_sessions;
                c
            })
            .start()
    };
    (start(1).await, start(1).await)
}

async fn post(s: &Stack, body: &Value, session: Option<&str>) -> (u16, HeaderMap, Value) {
    let (status, headers, text) =
        super::mcp_post(s.http.post(s.url("/mcp")), body, session, VERSION).await;
    (status, headers, super::mcp_message(&text))
}

/// Initializes on `first`, then calls `get_flight_status` on `second`; the call's answer.
async fn initialize_here_call_there(first: &Stack, second: &Stack) -> (u16, Value) {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "balanced-client", "version": "1"}}});
    let (status, headers, body) = post(first, &initialize, None).await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["result"]["protocolVersion"], VERSION, "{body:#}");
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(first, &initialized, session.as_deref()).await;
    assert_eq!(status, 202, "{body:#}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "get_flight_status",
        "arguments": {"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(3)}}});
    let (status, _, body) = post(second, &call, session.as_deref()).await;
    (status, body)
}

#[tokio::test]
async fn a_2025_client_behind_a_balancer_is_served_by_any_replica_when_stateless() {
    let (a, b) = two_replicas(false).await;
    let (status, body) = initialize_here_call_there(&a, &b).await;
    assert_eq!(status, 200, "{body:#}");
    let result = &body["result"];
    assert_eq!(result["isError"], false, "{body:#}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("BA"),
        "the flight status as a model reads it: {body:#}"
    );
}

#[tokio::test]
async fn sessions_kept_in_one_process_do_not_survive_a_balancer() {
    let (a, b) = two_replicas(true).await;
    let (status, body) = initialize_here_call_there(&a, &b).await;
    assert_eq!(
        status, 404,
        "the other replica does not know the session: {body:#}"
    );
}
