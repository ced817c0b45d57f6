//! `notifications/tools/list_changed`: a session whose tools change on a reload (its client's
//! scope, or tools added or removed) is told to list them again, and `initialize` says the list
//! may change.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use faregate::clients::Scope;
use faregate::config::{ClientConfig, Config};
use faregate::http::ConfigSource;
use serde_json::{Value, json};

use crate::support::{MapEnv, TestGateway, config_for, start_sim};

const ADMIN: &str = "admin-key";
const KEY: &str = "agent-key";
const VERSION: &str = "2025-11-25";

fn client(scope: Scope) -> ClientConfig {
    crate::support::client("travel-agent", KEY, scope)
}

fn env() -> MapEnv {
    MapEnv(vec![("FAREGATE_ADMIN_KEY", ADMIN)])
}

/// POSTs `body` to `/mcp` with the client key, in `session` if any; status, session header and
/// the JSON-RPC message of the answer.
async fn post(
    http: &reqwest::Client,
    gw: &TestGateway,
    body: &Value,
    session: Option<&str>,
) -> (u16, Option<String>, Value) {
    let req = http.post(gw.url("/mcp")).bearer_auth(KEY);
    let (status, headers, text) = super::mcp_post(req, body, session, VERSION).await;
    let id = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, id, super::mcp_message(&text))
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// A 2025-11-25 session of the client: initialized, its tools listed once, and its event stream
/// (where server notifications come) open. The session id, the tools it listed, the stream.
async fn listing_session(
    http: &reqwest::Client,
    gw: &TestGateway,
) -> (String, Vec<String>, reqwest::Response) {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "list-changed-test", "version": "1"}}});
    let (status, session, init) = post(http, gw, &initialize, None).await;
    assert_eq!(status, 200, "{init:#}");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init:#}"
    );
    let session = session.unwrap_or_else(|| panic!("no session id: {init:#}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(http, gw, &initialized, Some(&session)).await.0, 202);
    let (_, _, listed) = post(http, gw, &list(), Some(&session)).await;
    let events = http
        .get(gw.url("/mcp"))
        .bearer_auth(KEY)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.status().as_u16(), 200);
    (session, tool_names(&listed), events)
}

/// `tools/list`.
fn list() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
}

/// The notifications the server sends next on `events` (at least one, within 10 s).
async fn notifications(events: &mut reqwest::Response) -> Vec<Value> {
    let mut seen = String::new();
    let notified = async {
        loop {
            let sent: Vec<Value> = seen
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .filter(|m| m.get("method").is_some())
                .collect();
            if !sent.is_empty() {
                return sent;
            }
            match events.chunk().await {
                Ok(Some(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                other => panic!("the event stream ended: {other:?}"),
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), notified).await {
        Ok(sent) => sent,
        Err(_) => panic!("no notification within 10 s"),
    }
}

/// Reloads the configuration with the admin key.
async fn reload(http: &reqwest::Client, gw: &TestGateway) -> Value {
    let res = http
        .post(gw.url("/v1/admin/reload"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or_default();
    assert_eq!(status, 200, "{body:#}");
    body
}

#[tokio::test]
async fn a_reload_that_changes_a_clients_tools_tells_its_sessions() {
    let sim = start_sim(81).await;
    let mut config: Config = config_for(&sim.url());
    let reads_only = Scope::new(vec!["search_*".into()], false).unwrap_or_else(|e| panic!("{e}"));
    config.clients = vec![client(reads_only)];
    let on_disk = Arc::new(Mutex::new(config.clone()));
    let mut app = faregate::app::build(config, &env()).unwrap_or_else(|e| panic!("{e:?}"));
    let source = Arc::clone(&on_disk);
    app.state.config_source = Some(ConfigSource::new(
        move || Ok(source.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        env(),
    ));
    let gw = TestGateway::serve(app).await;
    let http = reqwest::Client::new();
    let (session, before, mut events) = listing_session(&http, &gw).await;
    assert!(
        before.contains(&"search_flights".to_string())
            && !before.contains(&"get_flight_status".to_string()),
        "{before:?}"
    );

    // A reload that changes nothing for this client sends nothing; one that widens its scope
    // sends list_changed.
    reload(&http, &gw).await;
    on_disk.lock().unwrap_or_else(|e| e.into_inner()).clients = vec![client(Scope::everything())];
    reload(&http, &gw).await;
    assert_eq!(
        notifications(&mut events).await,
        vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})],
        "exactly one list_changed, for the reload that changed the tools"
    );
    let (_, _, listed) = post(&http, &gw, &list(), Some(&session)).await;
    let after = tool_names(&listed);
    assert!(
        after.contains(&"get_flight_status".to_string()),
        "{after:?}"
    );
}

#[tokio::test]
async fn a_reload_that_removes_or_adds_a_tool_tells_every_session() {
    let sim = start_sim(82).await;
    let mut config: Config = config_for(&sim.url());
    config.clients = vec![client(Scope::everything())];
    let on_disk = Arc::new(Mutex::new(config.clone()));
    let mut app = faregate::app::build(config, &env()).unwrap_or_else(|e| panic!("{e:?}"));
    let source = Arc::clone(&on_disk);
    app.state.config_source = Some(ConfigSource::new(
        move || Ok(source.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        env(),
    ));
    let gw = TestGateway::serve(app).await;
    let http = reqwest::Client::new();
    let (session, before, mut events) = listing_session(&http, &gw).await;
    assert!(before.contains(&"search_hotels".to_string()), "{before:?}");
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});

    on_disk
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .tools
        .retain(|t| t.name != "search_hotels");
    let summary = reload(&http, &gw).await;
    assert_eq!(
        summary["tools"]["removed"],
        json!(["search_hotels"]),
        "{summary:#}"
    );
    assert_eq!(notifications(&mut events).await, vec![changed.clone()]);
    let (_, _, listed) = post(&http, &gw, &list(), Some(&session)).await;
    let after = tool_names(&listed);
    assert!(!after.contains(&"search_hotels".to_string()), "{after:?}");
    assert_eq!(after.len(), before.len() - 1, "{after:?}");

    // Back, with new words for the model: listed again, as described now.
    *on_disk.lock().unwrap_or_else(|e| e.into_inner()) = {
        let mut config = config_for(&sim.url());
        config.clients = vec![client(Scope::everything())];
        for tool in config
            .tools
            .iter_mut()
            .filter(|t| t.name == "search_hotels")
        {
            tool.description = "Hotels, reloaded.".into();
        }
        config
    };
    let summary = reload(&http, &gw).await;
    assert_eq!(
        summary["tools"]["added"],
        json!(["search_hotels"]),
        "{summary:#}"
    );
    assert_eq!(notifications(&mut events).await, vec![changed]);
    let (_, _, listed) = post(&http, &gw, &list(), Some(&session)).await;
    let hotels = listed["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == "search_hotels");
    assert_eq!(
        hotels.map(|t| t["description"].clone()),
        Some(json!("Hotels, reloaded.")),
        "{listed:#}"
    );
}
