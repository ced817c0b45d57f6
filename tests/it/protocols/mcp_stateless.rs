//! A stateless `/mcp` (`[mcp] legacy_sessions = false`, a fleet's default) behind a balancer,
//! as a 2025-11-25 client meets it: `initialize` on one replica, every later request on
//! another.
//!
//! - Its `initialize` advertises only what such a second request gets: no
//!   `resources.subscribe` and no `tools.listChanged` (their notifications need a kept
//!   session's event stream), and every capability it does advertise is used on the other
//!   replica; 2026-07-28's `server/discover` (always stateless) likewise, while a kept session
//!   still advertises both.
//! - A client that declared the Tasks extension at `initialize` gets a task for a background
//!   call on the other replica, and polls it there: the declaration travels in the session id
//!   the first replica handed out, which neither replica keeps. A client that declared nothing
//!   gets no session id, and its background call is told to declare the extension.
//!
//! The requests are written out, as in `mcp_fleet.rs`: no MCP client lets a test pick the
//! replica of each request. The replicas have a job store each (SQLite): what crosses between them here is the client's
//! declaration, not the task (a task polled on another replica of one PostgreSQL store:
//! `mcp_tasks.rs`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Stack, in_days, wait_until};

const VERSION: &str = "2025-11-25";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A stateless replica with a job store, against a simulator of its own seeded with `seed`.
async fn stateless_replica(seed: u64) -> Stack {
    Stack::builder(seed)
        .config(|mut c| {
            c.mcp.legacy_sessions = false;
            c
        })
        .jobs()
        .start()
        .await
}

/// POSTs the JSON-RPC `body` to `s`'s `/mcp` with `session` (if any); status, the session id
/// the answer hands out (if any), and the JSON-RPC answer.
async fn post(s: &Stack, body: &Value, session: Option<&str>) -> (u16, Option<String>, Value) {
    let (status, headers, text) =
        super::mcp_post(s.http.post(s.url("/mcp")), body, session, VERSION).await;
    let id = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, id, super::mcp_message(&text))
}

/// One request of `method` to `s` in `session`; the JSON-RPC answer, which must be a result.
async fn request(s: &Stack, session: Option<&str>, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let (status, _, answer) = post(s, &body, session).await;
    assert_eq!(status, 200, "{method}: {answer:#}");
    assert!(answer.get("error").is_none(), "{method}: {answer:#}");
    answer["result"].clone()
}

/// `initialize` on `s` declaring `capabilities`, then the initialized notification on `then`
/// (another replica); the result and the session id the answer handed out.
async fn initialize(s: &Stack, then: &Stack, capabilities: Value) -> (Value, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": capabilities,
        "clientInfo": {"name": "balanced-client", "version": "1"}}});
    let (status, session, answer) = post(s, &body, None).await;
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(answer["result"]["protocolVersion"], VERSION, "{answer:#}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(then, &initialized, session.as_deref()).await;
    assert_eq!(status, 202, "{body:#}");
    (answer["result"].clone(), session)
}

fn flight_status() -> Value {
    json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(3)})
}

/// A background `get_flight_status` on `s` in `session`, declaring nothing in `_meta` but the
/// mode; the result.
async fn call_in_background(s: &Stack, session: Option<&str>) -> Value {
    let params = json!({"name": "get_flight_status", "arguments": flight_status(),
        "_meta": {"faregate/mode": "background"}});
    request(s, session, "tools/call", params).await
}

/// Uses the advertised `capability` on `s`, as a client that read it would (the session id
/// from `initialize` and nothing else); `false` for a capability with no use here.
async fn use_capability(s: &Stack, session: Option<&str>, capability: &str) -> bool {
    match capability {
        "prompts" => {
            let listed = request(s, session, "prompts/list", json!({})).await;
            assert!(listed["prompts"].as_array().is_some_and(|p| !p.is_empty()));
            let got = request(s, session, "prompts/get", json!({"name": "agent-guidance"})).await;
            assert!(got["messages"].as_array().is_some_and(|m| !m.is_empty()));
        }
        "resources" => {
            let listed = request(s, session, "resources/list", json!({})).await;
            let uri = listed["resources"][0]["uri"].as_str().unwrap_or_default();
            let read = request(s, session, "resources/read", json!({"uri": uri})).await;
            assert!(read["contents"][0]["text"].is_string(), "{read:#}");
        }
        "tools" => {
            let listed = request(s, session, "tools/list", json!({})).await;
            assert!(listed["tools"].as_array().is_some_and(|t| !t.is_empty()));
            let params = json!({"name": "get_flight_status", "arguments": flight_status()});
            let called = request(s, session, "tools/call", params).await;
            assert_eq!(called["isError"], false, "{called:#}");
        }
        TASKS => {
            let created = call_in_background(s, session).await;
            assert_eq!(created["resultType"], "task", "{created:#}");
            let task_id = created["taskId"].as_str().unwrap_or_default().to_string();
            let done = wait_until(Duration::from_secs(20), "the task to complete", || async {
                let task = request(s, session, "tasks/get", json!({"taskId": task_id})).await;
                match task["status"].as_str() {
                    Some("completed") => Ok(task),
                    Some("working") => Err(format!("{task:#}")),
                    _ => panic!("the task ended otherwise: {task:#}"),
                }
            })
            .await;
            assert_eq!(done["result"]["isError"], false, "{done:#}");
        }
        _ => return false,
    }
    true
}

/// Every capability `capabilities` advertises is used on `s`, and carries no flag: a flag
/// (`subscribe`, `listChanged`) promises notifications no stateless request can get.
async fn every_capability_works(s: &Stack, session: Option<&str>, capabilities: &Value) {
    let mut used = Vec::new();
    for (name, flags) in capabilities.as_object().into_iter().flatten() {
        if name == "extensions" {
            for (extension, _) in flags.as_object().into_iter().flatten() {
                assert!(
                    use_capability(s, session, extension).await,
                    "the extension {extension} is advertised, and nothing here uses it"
                );
                used.push(extension.clone());
            }
            continue;
        }
        assert_eq!(flags, &json!({}), "{name} advertises {flags}");
        assert!(
            use_capability(s, session, name).await,
            "{name} is advertised, and nothing here uses it"
        );
        used.push(name.clone());
    }
    used.sort();
    assert_eq!(
        used,
        [TASKS, "prompts", "resources", "tools"],
        "{capabilities:#}"
    );
}

#[tokio::test]
async fn a_stateless_initialize_advertises_only_what_another_replica_serves() {
    let (a, b) = (stateless_replica(41).await, stateless_replica(41).await);
    let declared = json!({"extensions": {TASKS: {}}});
    let (result, session) = initialize(&a, &b, declared).await;
    let capabilities = &result["capabilities"];
    assert_eq!(
        capabilities["resources"].get("subscribe"),
        None,
        "{result:#}"
    );
    assert_eq!(capabilities["tools"].get("listChanged"), None, "{result:#}");
    every_capability_works(&b, session.as_deref(), capabilities).await;
}

#[tokio::test]
async fn discover_advertises_no_notifications_and_a_kept_session_still_does() {
    // A gateway that keeps sessions (one node): its initialize advertises both…
    let s = Stack::start(42).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "session-client", "version": "1"}}});
    let (status, session, answer) = post(&s, &body, None).await;
    assert_eq!(status, 200, "{answer:#}");
    assert!(session.is_some(), "a kept session: {answer:#}");
    let capabilities = &answer["result"]["capabilities"];
    assert_eq!(capabilities["resources"]["subscribe"], true, "{answer:#}");
    assert_eq!(capabilities["tools"]["listChanged"], true, "{answer:#}");

    // …and its 2026-07-28 server/discover, stateless, neither.
    let discover = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let res = s
        .http
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .json(&discover)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let answer = super::mcp_message(&res.text().await.unwrap_or_default());
    let capabilities = &answer["result"]["capabilities"];
    assert_eq!(capabilities["resources"], json!({}), "{answer:#}");
    assert_eq!(capabilities["tools"], json!({}), "{answer:#}");
    assert_eq!(capabilities["prompts"], json!({}), "{answer:#}");
}

#[tokio::test]
async fn tasks_declared_at_initialize_hold_on_another_replica() {
    let (a, b) = (stateless_replica(43).await, stateless_replica(43).await);
    let (_, session) = initialize(&a, &b, json!({"extensions": {TASKS: {}}})).await;
    let session = session.unwrap_or_else(|| panic!("no session id carries the declaration"));
    // The other replica has never seen the client: the declaration comes with the request.
    assert!(use_capability(&b, Some(&session), TASKS).await);
    // And again on the first one, with the task made on the second unknown to it.
    let created = call_in_background(&a, Some(&session)).await;
    assert_eq!(created["resultType"], "task", "{created:#}");
    // The id is no kept session: no event stream to open, nothing to end (405, as the
    // transport allows a server that offers neither).
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let res = b
            .http
            .request(method.clone(), b.url("/mcp"))
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(res.status().as_u16(), 405, "{method}");
        // Both say when a GET is answered (rmcp's Allow names GET on the DELETE's, not on the
        // GET's own).
        let body: Value = res.json().await.unwrap_or_default();
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("a GET only resumes an event stream: it needs the Last-Event-ID"),
            "{method}: {body}"
        );
    }

    // A client that declared nothing has nothing carried for it, and is told to declare.
    let (_, none) = initialize(&a, &b, json!({})).await;
    assert_eq!(
        none, None,
        "no session id for a client with nothing to carry"
    );
    let refused = call_in_background(&b, None).await;
    assert_eq!(refused["isError"], true, "{refused:#}");
    let text = refused["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Declare the extension"), "{refused:#}");
}
