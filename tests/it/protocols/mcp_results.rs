//! What a model reads from MCP `tools/call`: one stale mark, and every provider of a chain that
//! failed.
//!
//! The requests are what a 2026-07-28 client sends (no handshake: the revision in a header and
//! in each request's `_meta`), written out so that a test can set `_meta` and headers freely.

use std::time::Duration;

use faregate_sim::RouteGroup;
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
        text.contains("the flight provider (duffel and amadeus)"),
        "both providers of the chain, in order: {text}"
    );
}
