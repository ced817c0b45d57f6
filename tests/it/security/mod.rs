//! Security end to end on a real server: who may call what (401 vs 403, open routes), per-client
//! rate and in-flight limits (429 with `Retry-After`), SSRF guards on callbacks, and secrets
//! that never print (`Debug`, `faregate check`, the logs of `faregate serve`).

use std::time::Duration;

use faregate::config::{Config, LimitsConfig, Rate};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{
    self, MapEnv, NoEnv, Stack, TestGateway, in_days, one_provider_per_tool, send,
    wait_until_upstream,
};

const CLIENT: &str = "client-key-1";
const CLIENT2: &str = "client-key-2";
const ADMIN: &str = "admin-key-9";

fn keys() -> MapEnv {
    MapEnv(vec![
        ("FAREGATE_CLIENT_KEYS", "client-key-1, client-key-2"),
        ("FAREGATE_ADMIN_KEY", ADMIN),
    ])
}

/// No provider is ever reached by this config's calls: its providers are at a closed port.
fn config() -> Config {
    one_provider_per_tool(support::config_for("http://127.0.0.1:9"))
}

fn flights(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

#[tokio::test]
async fn every_route_answers_401_403_or_stays_open_as_documented() {
    let gw = TestGateway::start(config(), &keys()).await;
    let http = reqwest::Client::new();
    let call = || {
        http.post(gw.url("/v1/tools/search_flights/call"))
            .json(&json!({"arguments": {}}))
    };
    // Open routes.
    for path in ["/healthz", "/readyz", "/dashboard", "/metrics"] {
        assert_eq!(send(http.get(gw.url(path))).await.0, 200, "{path} is open");
    }
    // Tool-call and client routes: 401 without a key or with an unknown one.
    let client_routes = [
        ("POST", "/v1/tools/search_flights/call"),
        ("POST", "/v1/openai/tool_calls"),
        ("POST", "/v1/anthropic/tool_use"),
        ("POST", "/mcp"),
        ("GET", "/v1/tools"),
        ("GET", "/v1/jobs/nope"),
        ("GET", "/v1/breakers"),
        ("GET", "/v1/alerts"),
    ];
    // The refusal's message: `/mcp` carries it as a JSON-RPC error, the body MCP clients show.
    let message = |body: &Value| {
        body["message"]
            .as_str()
            .or(body["error"]["message"].as_str())
            .unwrap_or("")
            .to_string()
    };
    for (method, path) in client_routes {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let (status, headers, body) = send(http.request(m.clone(), gw.url(path))).await;
        assert_eq!(status, 401, "{method} {path} without a key: {body}");
        assert_eq!(headers["www-authenticate"], "Bearer");
        assert!(message(&body).contains("Authorization: Bearer"), "{body}");
        let (status, _, body) = send(http.request(m, gw.url(path)).bearer_auth("guess")).await;
        assert_eq!(status, 401, "{method} {path} with a wrong key");
        assert!(message(&body).contains("not valid"), "{body}");
    }
    // A client key and the admin key both pass client routes (422: the arguments are empty).
    assert_eq!(send(call().bearer_auth(CLIENT)).await.0, 422);
    assert_eq!(send(call().bearer_auth(CLIENT2)).await.0, 422);
    assert_eq!(send(call().bearer_auth(ADMIN)).await.0, 422);
    // Admin routes: 401 without a valid key, 403 with a client key, through with the admin key.
    let force = |key: Option<&str>| {
        let r = http
            .post(gw.url("/v1/breakers/search_flights.duffel/force"))
            .json(&json!({"state": "auto"}));
        match key {
            Some(k) => r.bearer_auth(k),
            None => r,
        }
    };
    assert_eq!(send(force(None)).await.0, 401);
    assert_eq!(send(force(Some("guess"))).await.0, 401);
    let (status, _, body) = send(force(Some(CLIENT))).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("needs the admin key"),
        "{body}"
    );
    assert_eq!(send(force(Some(ADMIN))).await.0, 200);
    // Listing jobs is a client route (each client sees its own; `tenants.rs` checks whose).
    let list = |key: &str| http.get(gw.url("/v1/jobs")).bearer_auth(key.to_string());
    for key in [CLIENT, ADMIN] {
        assert_eq!(send(list(key)).await.0, 501, "passes (no job store here)");
    }
    assert_eq!(send(http.get(gw.url("/v1/jobs"))).await.0, 401);
}

#[tokio::test]
async fn metrics_can_require_a_key() {
    let mut c = config();
    c.telemetry.metrics_public = false;
    let gw = TestGateway::start(c, &keys()).await;
    let http = reqwest::Client::new();
    assert_eq!(send(http.get(gw.url("/metrics"))).await.0, 401);
    assert_eq!(
        send(http.get(gw.url("/metrics")).bearer_auth(CLIENT))
            .await
            .0,
        200
    );
    assert_eq!(
        send(http.get(gw.url("/healthz"))).await.0,
        200,
        "probes stay open"
    );
}

#[tokio::test]
async fn auth_is_off_only_without_client_keys_and_says_so() {
    let app = faregate::app::build(config(), &NoEnv).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        app.warnings.iter().any(|w| w.starts_with("AUTH IS OFF")),
        "{:?}",
        app.warnings
    );
    let gw = TestGateway::serve(app).await;
    let http = reqwest::Client::new();
    let (status, _, _) = send(
        http.post(gw.url("/v1/tools/search_flights/call"))
            .json(&json!({"arguments": {}})),
    )
    .await;
    assert_eq!(status, 422, "no key needed");
    let keyed = faregate::app::build(config(), &keys()).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(!keyed.warnings.iter().any(|w| w.contains("AUTH IS OFF")));
}

/// `c` with per-client limits: `rate` as (requests a minute, burst), and calls in flight.
fn limited(mut c: Config, rate: Option<(u32, u32)>, in_flight: Option<u32>) -> Config {
    c.limits = LimitsConfig {
        client_rate: rate.map(|(count, _)| Rate {
            count,
            per: Duration::from_secs(60),
        }),
        client_burst: rate.map_or(1, |(_, burst)| burst),
        client_max_concurrent_calls: in_flight,
        ..c.limits
    };
    c
}

#[tokio::test]
async fn over_its_rate_a_client_gets_429_with_retry_after_and_others_do_not() {
    // One request a minute with a burst of two: the third is refused for about 30 s.
    let gw = TestGateway::start(limited(config(), Some((2, 2)), None), &keys()).await;
    let http = reqwest::Client::new();
    let call = |key: &str| {
        http.post(gw.url("/v1/tools/search_flights/call"))
            .bearer_auth(key.to_string())
            .json(&json!({"arguments": {}}))
    };
    assert_eq!(send(call(CLIENT)).await.0, 422);
    assert_eq!(send(call(CLIENT)).await.0, 422);
    let (status, headers, body) = send(call(CLIENT)).await;
    assert_eq!(status, 429, "{body}");
    let retry: u64 = headers["retry-after"]
        .to_str()
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((25..=30).contains(&retry), "Retry-After {retry}");
    assert_eq!(body["limit"], "client_rate");
    assert_eq!(body["retry_after_s"], retry);
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.contains("over its request rate")
            && message.contains(&format!("retry after {retry} s")),
        "{message}"
    );
    // The other protocols share the limit; another key has its own; probes are never limited.
    let (status, _, _) = send(
        http.post(gw.url("/v1/openai/tool_calls"))
            .bearer_auth(CLIENT)
            .json(&json!({"tool_calls": []})),
    )
    .await;
    assert_eq!(status, 429);
    let mcp = |method: &str| {
        http.post(gw.url("/mcp"))
            .bearer_auth(CLIENT)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": "search_flights", "arguments": {}}}))
    };
    assert_eq!(
        send(mcp("tools/call")).await.0,
        429,
        "an MCP tool call counts"
    );
    assert_ne!(
        send(mcp("tools/list")).await.0,
        429,
        "listing tools does not"
    );
    assert_eq!(send(call(CLIENT2)).await.0, 422);
    let metrics = http
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .text()
        .await
        .unwrap_or_default();
    assert!(
        metrics.contains("faregate_client_limited_total{limit=\"client_rate\"} 3"),
        "three refusals counted: {}",
        metrics
            .lines()
            .filter(|l| l.contains("limited"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for path in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(send(http.get(gw.url(path))).await.0, 200, "{path}");
    }
    assert_eq!(
        send(http.get(gw.url("/v1/tools")).bearer_auth(CLIENT))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn without_auth_the_peer_address_is_the_client() {
    let gw = TestGateway::start(limited(config(), Some((1, 1)), None), &NoEnv).await;
    let http = reqwest::Client::new();
    let call = || {
        http.post(gw.url("/v1/anthropic/tool_use"))
            .json(&json!({"content": []}))
    };
    assert_ne!(send(call()).await.0, 429);
    assert_eq!(send(call()).await.0, 429);
}

/// A keyed stack whose clients may have one call in flight, and whose Duffel flight search
/// takes 800 ms (so a first call is still in flight when a second comes).
async fn one_call_at_a_time_against_a_slow_search(seed: u64) -> Stack {
    let s = Stack::builder(seed)
        .env(keys())
        .config(one_provider_per_tool)
        .config(|c| limited(c, None, Some(1)))
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 800,
            ..Fault::default()
        },
    );
    s
}

#[tokio::test]
async fn calls_in_flight_are_capped_per_client() {
    let s = one_call_at_a_time_against_a_slow_search(3).await;
    let http = &s.http;
    let url = s.url("/v1/tools/search_flights/call");
    let slow = tokio::spawn(
        http.post(&url)
            .bearer_auth(CLIENT)
            .json(&flights(30))
            .send(),
    );
    // Wait until the first call is at the provider (in flight), not for a fixed time.
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;
    let (status, headers, body) =
        send(http.post(&url).bearer_auth(CLIENT).json(&flights(31))).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["limit"], "client_max_concurrent_calls");
    assert!(headers.contains_key("retry-after"));
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("1 tool calls in flight"),
        "{body}"
    );
    let other = send(
        http.post(&url)
            .bearer_auth(CLIENT2)
            .json(&json!({"arguments": {}})),
    )
    .await;
    assert_eq!(other.0, 422, "another client is not held up");
    let first = slow
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(
        send(
            http.post(&url)
                .bearer_auth(CLIENT)
                .json(&json!({"arguments": {}}))
        )
        .await
        .0,
        422,
        "the slot is free again"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelAirSearch),
        1,
        "the refused call never reached the provider"
    );
}

/// An MCP call in a session is answered as an event stream whose head comes before the call
/// has run: its in-flight slot lasts until the stream ends, as a native call's does.
#[tokio::test]
async fn mcp_calls_in_a_session_are_capped_per_client_too() {
    const VERSION: &str = "2025-11-25";
    let s = one_call_at_a_time_against_a_slow_search(4).await;
    let post = |body: Value, session: Option<String>| {
        let mut request = s
            .http
            .post(s.url("/mcp"))
            .bearer_auth(CLIENT)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .json(&body);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "cap-test", "version": "1"}}});
    let opened = post(initialize, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(initialized, Some(session.clone()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let call = |id: u64, days: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "search_flights", "arguments": flights(days)["arguments"]}})
    };
    let first = post(call(2, 30), Some(session.clone()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.status().as_u16(), 200);
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;
    let second = post(call(3, 31), Some(session.clone()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        second.status().as_u16(),
        429,
        "the first call is still running"
    );
    let first = first.text().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.contains("\"result\""), "{first}");
    let third = post(call(4, 32), Some(session))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        third.status().as_u16(),
        200,
        "the slot is free once the stream ended"
    );
    let third = third.text().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(third.contains("\"result\""), "{third}");
    assert_eq!(
        s.requests(RouteGroup::DuffelAirSearch),
        2,
        "the refused call never reached the provider"
    );
}

mod callbacks;
mod cross_site;
mod echoes;
mod secrets;
mod streams;
