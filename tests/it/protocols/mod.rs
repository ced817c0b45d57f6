//! The agent protocol endpoints (OpenAI, Anthropic, MCP, manifests, OpenAPI) end to end
//! ([`endpoints`]), background mode through them ([`background`]), what an MCP client
//! reads from `tools/call` ([`mcp_results`]), the MCP calls a graceful shutdown still answers
//! ([`mcp_shutdown`]), MCP Tasks over the job queue ([`mcp_tasks`]), and what a stateless `/mcp`
//! advertises and carries between replicas ([`mcp_stateless`]). This file holds their
//! helpers: the bodies a chat backend sends and the text a model reads.

mod background;
mod endpoints;
mod mcp_cancel;
mod mcp_fleet;
mod mcp_list_changed;
mod mcp_progress;
mod mcp_prompts;
mod mcp_request_ids;
mod mcp_results;
mod mcp_sessions;
mod mcp_shutdown;
mod mcp_stateless;
mod mcp_tasks;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::support::in_days;

/// A valid `search_hotels` argument object (three weeks ahead).
pub(crate) fn hotels_args() -> Value {
    json!({"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23)})
}

pub(crate) fn chat_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

pub(crate) fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// POSTs `body` to `/mcp` through `req` (a POST to the gateway's `/mcp`, with any auth already
/// set) in `session` (if any) at protocol revision `version`; status, headers and the body text
/// read to its end.
pub(crate) async fn mcp_post(
    req: reqwest::RequestBuilder,
    body: &Value,
    session: Option<&str>,
    version: &str,
) -> (u16, HeaderMap, String) {
    let mut req = req
        .header("accept", "application/json, text/event-stream")
        .json(body);
    if body["method"] != "initialize" {
        req = req.header("mcp-protocol-version", version);
    }
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap_or_default())
}

/// A 2025-11-25 MCP session on `s` for a client named `client`: initialize, then the
/// initialized notification; its id.
pub(crate) async fn open_mcp_session(s: &crate::support::Stack, client: &str) -> String {
    const VERSION: &str = "2025-11-25";
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": client, "version": "1"}}});
    let (status, headers, body) =
        mcp_post(s.http.post(s.url("/mcp")), &initialize, None, VERSION).await;
    assert_eq!(status, 200, "{body}");
    let id = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id: {body}"));
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) =
        mcp_post(s.http.post(s.url("/mcp")), &initialized, Some(&id), VERSION).await;
    assert_eq!(status, 202, "{body}");
    id
}

/// The JSON-RPC message of an answer: the body itself, or the event of an event stream that
/// carries one (rmcp answers a session's requests as a stream).
pub(crate) fn mcp_message(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|v| v.get("jsonrpc").is_some())
            .unwrap_or_else(|| Value::String(text.to_string()))
    })
}
