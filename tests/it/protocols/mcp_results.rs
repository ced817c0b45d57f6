//! What a model reads from MCP `tools/call`, and what a 2026-07-28 client reads around it: one
//! stale mark, every provider of a chain that failed, the client's deadline (from `_meta` or
//! the `Faregate-Deadline-Ms` header) bounding a slow provider, and the server info every
//! 2026-07-28 result carries in `_meta`.
//!
//! The requests are what a 2026-07-28 client sends (no handshake: the revision in a header and
//! in each request's `_meta`), written out so that a test can set `_meta` and headers freely.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Map, Value, json};

use super::{hotels_args, text};
use crate::support::{Stack, in_days};

const REVISION: &str = "2026-07-28";

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, faregate's `_meta` entries `meta` and
/// the extra `headers`, given up after `timeout` (as a client's request timeout does).
async fn call(
    s: &Stack,
    tool: &str,
    arguments: Value,
    meta: Value,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> reqwest::Result<Value> {
    let mut all_meta = Map::new();
    all_meta.insert(
        "io.modelcontextprotocol/protocolVersion".into(),
        json!(REVISION),
    );
    all_meta.insert(
        "io.modelcontextprotocol/clientInfo".into(),
        json!({"name": "results-test", "version": "1"}),
    );
    all_meta.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        json!({}),
    );
    if let Value::Object(extra) = meta {
        all_meta.extend(extra);
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": all_meta}});
    let mut req = s
        .http
        .post(s.url("/mcp"))
        .timeout(timeout)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let res = req.send().await?;
    let text = res.text().await?;
    Ok(serde_json::from_str(&text).unwrap_or_else(|_| json!({"not_json": text})))
}

/// The text a model reads from a `tools/call` answer.
fn model_text(answer: &Value) -> &str {
    text(&answer["result"]["content"][0]["text"])
}

const PATIENT: Duration = Duration::from_secs(30);

fn flight_status_args() -> Value {
    json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(3)})
}

#[tokio::test]
async fn a_stale_result_is_marked_once() {
    let s = Stack::start(3).await;
    let fresh = call(&s, "search_hotels", hotels_args(), json!({}), &[], PATIENT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fresh["result"]["isError"], false, "{fresh:#}");
    s.down(RouteGroup::DuffelStays);
    s.down(RouteGroup::AmadeusHotels);
    let stale = call(&s, "search_hotels", hotels_args(), json!({}), &[], PATIENT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = model_text(&stale);
    assert!(
        text.starts_with("STALE RESULT, ")
            && text.contains(" old: search_hotels is not answering right now"),
        "the one mark, first: {text}"
    );
    assert!(!text.contains("(stale:"), "no second mark: {text}");
    assert_eq!(stale["result"]["isError"], false, "{stale:#}");
    assert_eq!(
        stale["result"]["structuredContent"], fresh["result"]["structuredContent"],
        "the last good result"
    );
}

#[tokio::test]
async fn when_every_provider_is_down_the_fallback_names_them_all() {
    let s = Stack::start(4).await;
    s.flights_down();
    let args = json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)});
    let answer = call(&s, "search_flights", args, json!({}), &[], PATIENT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = model_text(&answer);
    assert_eq!(answer["result"]["isError"], true, "{answer:#}");
    assert!(
        text.contains("no reliable answer is coming from duffel and amadeus"),
        "both providers of the chain, in order: {text}"
    );
}

/// A client that gives up after 5 s (openai-agents' default) gets an answer the model can relay
/// in time when it sends its deadline, from `_meta` or as a header; without one the gateway waits for
/// the hung provider longer than the client does.
#[tokio::test]
async fn a_deadline_from_the_client_bounds_a_slow_provider() {
    let s = Stack::start(5).await;
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    let client_timeout = Duration::from_secs(5);
    let without = call(
        &s,
        "get_flight_status",
        flight_status_args(),
        json!({}),
        &[],
        client_timeout,
    )
    .await;
    assert!(
        without.as_ref().is_err_and(reqwest::Error::is_timeout),
        "without a deadline the client gives up first: {without:?}"
    );
    for (meta, headers) in [
        (json!({"faregate/deadline_ms": 1000}), vec![]),
        (json!({}), vec![("faregate-deadline-ms", "1000")]),
    ] {
        let answer = call(
            &s,
            "get_flight_status",
            flight_status_args(),
            meta.clone(),
            &headers,
            client_timeout,
        )
        .await
        .unwrap_or_else(|e| panic!("{meta} {headers:?}: the client gave up: {e}"));
        let text = model_text(&answer);
        // Its provider hangs but has not failed yet (breaker closed): the call took longer than
        // allowed, and nothing says the tool is down or when it is back.
        assert!(
            text.starts_with("[unavailable] get_flight_status took longer than this call allowed"),
            "{meta} {headers:?}: the answer at the deadline: {answer:#}"
        );
        assert_eq!(answer["result"]["isError"], true);
    }
    let refused = call(
        &s,
        "get_flight_status",
        flight_status_args(),
        json!({"faregate/deadline_ms": "soon"}),
        &[],
        client_timeout,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        model_text(&refused),
        "[invalid_arguments] _meta faregate/deadline_ms: must be a whole number of milliseconds, at least 1; got \"soon\""
    );
}

/// 2026-07-28 has no `initialize`: every result says which server answered, in `_meta`.
#[tokio::test]
async fn results_of_2026_07_28_carry_the_server_info() {
    let s = Stack::start(6).await;
    let answer = call(
        &s,
        "get_flight_status",
        flight_status_args(),
        json!({}),
        &[],
        PATIENT,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let info = &answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "faregate", "{answer:#}");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"), "{answer:#}");
    let listed = s
        .http
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", "tools/list")
        .json(
            &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientInfo": {"name": "results-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let listed: Value = listed.json().await.unwrap_or(Value::Null);
    assert_eq!(
        listed["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "faregate",
        "{listed:#}"
    );
}
