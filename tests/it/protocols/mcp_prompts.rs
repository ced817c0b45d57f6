//! What an MCP client reads in a session besides tool results: the agent guidance and a usage
//! prompt per tool as prompts, the tool availability resource with its update notifications
//! when a breaker opens or closes, and a tool result it missed when its stream broke, replayed
//! after it reconnects with `Last-Event-ID`.
//!
//! The requests are what a 2025-11-25 client sends in a session (initialize, the initialized
//! notification, then requests with the session id, and a GET event stream for the server's
//! notifications), written out so that a test can read the stream while it changes a breaker.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use faregate_sim::{Fault, RouteGroup};

use super::text;
use crate::support::{Stack, in_days, wait_until, wait_until_upstream};

const VERSION: &str = "2025-11-25";

struct Session<'a> {
    s: &'a Stack,
    id: String,
}

impl Session<'_> {
    async fn open(s: &Stack) -> Session<'_> {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "prompts-test", "version": "1"}}});
        let (status, headers, body) = post(s, &initialize, None).await;
        assert_eq!(status, 200, "{body:#}");
        let id = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no session id: {body:#}"));
        let session = Session { s, id };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, body) = post(s, &initialized, Some(&session.id)).await;
        assert_eq!(status, 202, "{body:#}");
        session
    }

    /// Sends request `method` with `params`; the JSON-RPC answer.
    async fn request(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
        let (status, _, answer) = post(self.s, &body, Some(&self.id)).await;
        assert_eq!(status, 200, "{answer:#}");
        answer
    }
}

async fn post(s: &Stack, body: &Value, session: Option<&str>) -> (u16, HeaderMap, Value) {
    let (status, headers, text) =
        super::mcp_post(s.http.post(s.url("/mcp")), body, session, VERSION).await;
    (status, headers, super::mcp_message(&text))
}

#[tokio::test]
async fn the_guidance_and_each_tool_are_prompts() {
    let s = Stack::start(11).await;
    let session = Session::open(&s).await;
    let init_caps = session.request("prompts/list", json!({})).await;
    let names: Vec<&str> = init_caps["result"]["prompts"]
        .as_array()
        .map(|p| p.iter().map(|p| text(&p["name"])).collect())
        .unwrap_or_default();
    assert_eq!(names.first(), Some(&"agent-guidance"), "{init_caps:#}");
    for tool in [
        "search_flights",
        "book_flight",
        "search_hotels",
        "book_hotel",
    ] {
        assert!(
            names.contains(&tool),
            "a usage prompt for {tool}: {names:?}"
        );
    }

    let guidance = session
        .request("prompts/get", json!({"name": "agent-guidance"}))
        .await;
    let said = text(&guidance["result"]["messages"][0]["content"]["text"]);
    let native = s.get_json("/v1/prompts/agent-guidance").await.1;
    assert_eq!(
        said,
        text(&native["guidance"]).trim(),
        "the same text as the native route"
    );
    assert_eq!(guidance["result"]["messages"][0]["role"], "user");

    let usage = session
        .request("prompts/get", json!({"name": "book_flight"}))
        .await;
    let said = text(&usage["result"]["messages"][0]["content"]["text"]);
    assert!(said.starts_with("Use the tool book_flight"), "{said}");
    assert!(
        said.contains("Required arguments: ") && said.contains("offer_id"),
        "{said}"
    );
    assert!(said.contains("This tool books"), "{said}");
    let read = session
        .request("prompts/get", json!({"name": "search_flights"}))
        .await;
    assert!(
        text(&read["result"]["messages"][0]["content"]["text"]).contains("only reads"),
        "{read:#}"
    );

    let unknown = session
        .request("prompts/get", json!({"name": "book_a_car"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown:#}");
    let message = text(&unknown["error"]["message"]);
    assert!(
        message.contains("\"book_a_car\"") && message.contains("agent-guidance, "),
        "names the prompts there are: {message}"
    );
}

/// The availability entry of `tool` in one `resources/read` answer.
fn entry(read: &Value, tool: &str) -> Value {
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], "faregate://tools/availability", "{read:#}");
    assert_eq!(contents["mimeType"], "application/json", "{read:#}");
    let parsed: Value = serde_json::from_str(text(&contents["text"])).unwrap_or(Value::Null);
    parsed["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|e| e["name"] == tool))
        .cloned()
        .unwrap_or_else(|| panic!("no entry for {tool}: {parsed:#}"))
}

/// Forces breaker `key` (`tool.provider`) to `state` through the breaker API (no keys here).
async fn force(s: &Stack, key: &str, state: &str) {
    let res = s
        .http
        .post(s.url(&format!("/v1/breakers/{key}/force")))
        .json(&json!({ "state": state }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200, "{:?}", res.text().await);
}

/// Reads the session's event stream until a `notifications/resources/updated` arrives; its
/// params.
async fn next_update(events: &mut reqwest::Response, seen: &mut String) -> Value {
    let wait = async {
        loop {
            for line in seen.lines() {
                if let Some(data) = line.strip_prefix("data:")
                    && let Ok(m) = serde_json::from_str::<Value>(data.trim())
                    && m["method"] == "notifications/resources/updated"
                {
                    let params = m["params"].clone();
                    // Consume everything read so far, so the next wait needs a new event.
                    seen.clear();
                    return params;
                }
            }
            match events.chunk().await {
                Ok(Some(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                other => panic!("the event stream ended: {other:?}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap_or_else(|_| panic!("no resources/updated within 10 s; read so far: {seen}"))
}

/// A stateless request has no session whatever `Mcp-Session-Id` it carries (rmcp does not check
/// one outside sessions): its subscription is refused, not remembered under a made-up id.
#[tokio::test]
async fn a_stateless_subscription_with_a_made_up_session_id_is_refused() {
    let s = Stack::builder(13)
        .config(|mut c| {
            c.mcp.legacy_sessions = false;
            c
        })
        .start()
        .await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
        "params": {"uri": "faregate://tools/availability"}});
    let (status, _, answer) = post(&s, &subscribe, Some("made-up")).await;
    assert_eq!(status, 200, "{answer:#}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("needs an MCP session"), "{answer:#}");
}

#[tokio::test]
async fn the_availability_resource_follows_the_breakers_and_tells_subscribers() {
    let s = Stack::start(12).await;
    let session = Session::open(&s).await;
    let listed = session.request("resources/list", json!({})).await;
    assert_eq!(
        listed["result"]["resources"][0]["uri"], "faregate://tools/availability",
        "{listed:#}"
    );

    let before = session
        .request(
            "resources/read",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;
    let hotels = entry(&before, "search_hotels");
    assert_eq!(hotels["state"], "available", "{hotels:#}");
    assert_eq!(hotels["retry_after_s"], Value::Null, "{hotels:#}");

    let subscribed = session
        .request(
            "resources/subscribe",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed:#}");
    let mut events = s
        .http
        .get(s.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session.id)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.status().as_u16(), 200);
    let mut seen = String::new();

    // Every provider of search_hotels forced open: unavailable, with no end to wait for.
    let providers: Vec<String> = hotels["providers"]
        .as_array()
        .map(|p| p.iter().map(|p| text(&p["name"]).to_string()).collect())
        .unwrap_or_default();
    assert!(!providers.is_empty(), "{hotels:#}");
    for provider in &providers {
        force(&s, &format!("search_hotels.{provider}"), "open").await;
        let update = next_update(&mut events, &mut seen).await;
        assert_eq!(update["uri"], "faregate://tools/availability", "{update:#}");
    }
    let down = session
        .request(
            "resources/read",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;
    let hotels = entry(&down, "search_hotels");
    assert_eq!(hotels["state"], "unavailable", "{hotels:#}");
    assert_eq!(
        hotels["providers"][0]["breaker"], "forced_open",
        "{hotels:#}"
    );
    assert_eq!(entry(&down, "search_flights")["state"], "available");

    // Closing one again is news too, and the tool is back.
    force(&s, &format!("search_hotels.{}", providers[0]), "closed").await;
    next_update(&mut events, &mut seen).await;
    let back = session
        .request(
            "resources/read",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;
    assert_eq!(entry(&back, "search_hotels")["state"], "available");

    let unknown = session
        .request("resources/read", json!({"uri": "test://static-text"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown:#}");
    assert!(
        text(&unknown["error"]["message"]).contains("faregate://tools/availability"),
        "{unknown:#}"
    );
    let unsubscribed = session
        .request(
            "resources/unsubscribe",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed:#}");
}

/// The JSON-RPC messages of the events in `text` with their ids.
fn events(text: &str) -> Vec<(Option<String>, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let id = block
            .lines()
            .find_map(|l| l.strip_prefix("id:"))
            .map(|i| i.trim().to_string());
        let data = block
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .unwrap_or(Value::Null);
        if id.is_some() || !data.is_null() {
            out.push((id, data));
        }
    }
    out
}

/// A client whose connection drops while a call is in flight reconnects with the last event id
/// it saw and gets the call's answer, which it would otherwise never see.
#[tokio::test]
async fn a_tool_result_missed_on_a_broken_stream_is_replayed_after_last_event_id() {
    let s = Stack::start(13).await;
    let session = Session::open(&s).await;
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
        "name": "get_flight_status",
        "arguments": {"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(3)}}});
    let mut stream = s
        .http
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session.id)
        .json(&call)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stream.status().as_u16(), 200);
    // The first event is the priming event: an id and no message.
    let mut seen = String::new();
    while !seen.contains("\n\n") {
        match stream.chunk().await {
            Ok(Some(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("the stream ended before its first event: {other:?}; read: {seen}"),
        }
    }
    let first = events(&seen);
    let last_id = first
        .first()
        .and_then(|(id, _)| id.clone())
        .unwrap_or_else(|| panic!("the first event has no id: {seen}"));
    wait_until_upstream(&s.sim, RouteGroup::AmadeusStatus).await;
    // The connection drops; then the provider answers.
    drop(stream);
    s.sim.set_fault(RouteGroup::AmadeusStatus, Fault::default());

    let answer = wait_until(Duration::from_secs(10), "the replayed answer", || {
        let s = &s;
        let session = &session;
        let last_id = last_id.clone();
        async move {
            let res = s
                .http
                .get(s.url("/mcp"))
                .header("accept", "text/event-stream")
                .header("mcp-protocol-version", VERSION)
                .header("mcp-session-id", &session.id)
                .header("last-event-id", &last_id)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let text = res.text().await.map_err(|e| e.to_string())?;
            events(&text)
                .into_iter()
                .find(|(_, m)| m["id"] == 41)
                .ok_or(text)
        }
    })
    .await;
    let (id, message) = answer;
    assert!(
        id.is_some_and(|id| id != last_id),
        "the answer has an id of its own"
    );
    assert_eq!(message["result"]["isError"], false, "{message:#}");
    assert!(
        text(&message["result"]["content"][0]["text"]).contains("BA"),
        "the flight's status: {message:#}"
    );
}

/// Hotel search held at both providers by `window` (from `start` to `end`, for "the providers'
/// announced upgrade"), and a weekly window of `search_flights` on duffel to come.
async fn held_hotels(
    start: chrono::DateTime<chrono::Utc>,
    end: chrono::DateTime<chrono::Utc>,
) -> Stack {
    use faregate::maintenance::{When, Window};
    let window = |tool: &str, provider: &str, when: When| Window {
        tool: tool.into(),
        provider: provider.into(),
        when,
        reason: "the providers' announced upgrade".into(),
    };
    let later = faregate::clock::utc_now() + chrono::TimeDelta::days(3);
    let weekly = When::Weekly {
        day: chrono::Datelike::weekday(&later),
        at: chrono::NaiveTime::from_hms_opt(3, 0, 0).unwrap_or_default(),
        lasts: Duration::from_secs(3600),
    };
    Stack::builder(14)
        .config(move |mut config| {
            config.maintenance = vec![
                window("search_hotels", "duffel", When::Once { start, end }),
                window("search_hotels", "amadeus", When::Once { start, end }),
                window("search_flights", "duffel", weekly),
            ];
            config
        })
        .start()
        .await
}

/// The whole resource of one `resources/read` answer.
fn resource(read: &Value) -> Value {
    serde_json::from_str(text(&read["result"]["contents"][0]["text"])).unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_availability_resource_says_when_a_tool_is_in_maintenance_and_lists_the_windows() {
    let now = faregate::clock::utc_now();
    let end = now + chrono::TimeDelta::hours(1);
    let s = held_hotels(now - chrono::TimeDelta::minutes(1), end).await;
    let session = Session::open(&s).await;
    let read = session
        .request(
            "resources/read",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;

    let hotels = entry(&read, "search_hotels");
    assert_eq!(hotels["state"], "maintenance", "{hotels:#}");
    let until = end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(hotels["maintenance"]["until"], until.as_str(), "{hotels:#}");
    assert_eq!(
        hotels["maintenance"]["reason"], "the providers' announced upgrade",
        "{hotels:#}"
    );
    let retry = hotels["retry_after_s"].as_u64().unwrap_or_default();
    assert!(
        (3500..=3600).contains(&retry),
        "until the window ends: {hotels:#}"
    );
    assert_eq!(
        hotels["providers"][0]["maintenance"]["until"],
        until.as_str(),
        "{hotels:#}"
    );
    assert_eq!(hotels["providers"][0]["breaker"], "closed", "{hotels:#}");

    // Flight search keeps amadeus outside any window, and its duffel window is still to come.
    let flights = entry(&read, "search_flights");
    assert_eq!(flights["state"], "available", "{flights:#}");
    assert_eq!(flights["maintenance"], Value::Null, "{flights:#}");
    assert_eq!(flights["providers"][0]["maintenance"], Value::Null);

    let windows = resource(&read)["maintenance_windows"].clone();
    let listed: Vec<(String, String, bool)> = windows
        .as_array()
        .map(|w| {
            w.iter()
                .map(|w| {
                    (
                        text(&w["tool"]).to_string(),
                        text(&w["provider"]).to_string(),
                        w["active"].as_bool().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        listed,
        [
            ("search_hotels".to_string(), "amadeus".to_string(), true),
            ("search_hotels".to_string(), "duffel".to_string(), true),
            ("search_flights".to_string(), "duffel".to_string(), false),
        ],
        "{windows:#}"
    );
    assert_eq!(windows[2]["reason"], "the providers' announced upgrade");
}

/// A window that opens and closes with no breaker moving: each is news to a subscriber.
#[tokio::test]
async fn subscribers_hear_when_a_maintenance_window_starts_and_ends() {
    let now = faregate::clock::utc_now();
    let start = now + chrono::TimeDelta::seconds(3);
    let s = held_hotels(start, start + chrono::TimeDelta::seconds(2)).await;
    let session = Session::open(&s).await;
    let read = || {
        session.request(
            "resources/read",
            json!({"uri": "faregate://tools/availability"}),
        )
    };
    assert_eq!(entry(&read().await, "search_hotels")["state"], "available");
    let subscribed = session
        .request(
            "resources/subscribe",
            json!({"uri": "faregate://tools/availability"}),
        )
        .await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed:#}");
    let mut events = s
        .http
        .get(s.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session.id)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.status().as_u16(), 200);
    let mut seen = String::new();

    next_update(&mut events, &mut seen).await;
    assert_eq!(
        entry(&read().await, "search_hotels")["state"],
        "maintenance"
    );
    next_update(&mut events, &mut seen).await;
    let after = entry(&read().await, "search_hotels");
    assert_eq!(after["state"], "available", "{after:#}");
    assert_eq!(after["maintenance"], Value::Null, "{after:#}");
}
