//! MCP sessions are capped per client (`[limits] client_max_mcp_sessions`): a client at its cap
//! is refused `initialize` with a JSON-RPC error saying how to end sessions, while another
//! client still opens one; a session ended with `DELETE /mcp` frees its place.

use serde_json::{Value, json};

use crate::support::{MapEnv, TestGateway, config_for, one_provider_per_tool};

const VERSION: &str = "2025-11-25";
const KEY: &str = "sessions-key-1";
const OTHER: &str = "sessions-key-2";

fn keys() -> MapEnv {
    MapEnv(vec![(
        "FAREGATE_CLIENT_KEYS",
        "sessions-key-1, sessions-key-2",
    )])
}

/// `initialize` with `key` and request id `id`: status, the session id, the JSON-RPC message.
async fn initialize(
    http: &reqwest::Client,
    gw: &TestGateway,
    key: &str,
    id: u64,
) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "sessions-test", "version": "1"}}});
    let req = http.post(gw.url("/mcp")).bearer_auth(key.to_string());
    let (status, headers, text) = super::mcp_post(req, &body, None, VERSION).await;
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, session, super::mcp_message(&text))
}

#[tokio::test]
async fn a_client_at_its_session_cap_is_refused_initialize_until_it_ends_one() {
    let mut config = one_provider_per_tool(config_for("http://127.0.0.1:9"));
    config.limits.client_max_mcp_sessions = Some(2);
    let gw = TestGateway::start(config, &keys()).await;
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for id in 1..=2 {
        let (status, session, message) = initialize(&http, &gw, KEY, id).await;
        assert_eq!(status, 200, "{message:#}");
        sessions.push(session.unwrap_or_else(|| panic!("no session id: {message:#}")));
    }

    let (status, session, refused) = initialize(&http, &gw, KEY, 3).await;
    assert_eq!(status, 429, "{refused:#}");
    assert_eq!(session, None, "no session was opened");
    assert_eq!(refused["id"], 3, "the refused request's id: {refused:#}");
    assert_eq!(refused["error"]["code"], -31429, "{refused:#}");
    assert_eq!(refused["error"]["data"]["limit"], "client_max_mcp_sessions");
    assert_eq!(refused["error"]["data"]["open"], 2);
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("already has 2 MCP sessions open") && message.contains("DELETE /mcp"),
        "{message}"
    );

    // Another client opens its own.
    let (status, _, message) = initialize(&http, &gw, OTHER, 1).await;
    assert_eq!(status, 200, "{message:#}");

    // Ending a session frees its place.
    let ended = http
        .delete(gw.url("/mcp"))
        .bearer_auth(KEY)
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &sessions[0])
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ended.status(), 200);
    let (status, _, message) = initialize(&http, &gw, KEY, 4).await;
    assert_eq!(status, 200, "{message:#}");
    let (status, _, _) = initialize(&http, &gw, KEY, 5).await;
    assert_eq!(status, 429, "at the cap again");
}
