//! `notifications/progress` while a `tools/call` waits, for a client that gave a progress token:
//! a provider that failed and the next one asked, a retry waiting. The answer then comes as an
//! event stream: the notifications, then the result. Without a token nothing is sent and the
//! answer is one JSON body.

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{Stack, in_days, status_by_amadeus_alone};

const REVISION: &str = "2026-07-28";

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, and `_meta.progressToken` when
/// `token` is given; the JSON-RPC messages of the answer, in order.
async fn call(s: &Stack, tool: &str, arguments: Value, token: Option<&str>) -> Vec<Value> {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": REVISION,
        "io.modelcontextprotocol/clientInfo": {"name": "progress-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}});
    if let Some(token) = token {
        meta["progressToken"] = json!(token);
    }
    let res = s
        .http
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.unwrap_or_default();
    match serde_json::from_str::<Value>(&text) {
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .collect(),
    }
}

/// The progress notifications among `messages`: (progress, message).
fn progress(messages: &[Value], token: &str) -> Vec<(f64, String)> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], token, "{m:#}");
            (
                m["params"]["progress"].as_f64().unwrap_or(-1.0),
                m["params"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_call_that_fails_over_tells_a_client_with_a_progress_token() {
    let s = Stack::start(71).await;
    s.down(RouteGroup::DuffelAirSearch);
    let args = json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)});
    let messages = call(&s, "search_flights", args.clone(), Some("p-1")).await;
    assert_eq!(
        progress(&messages, "p-1"),
        vec![(
            1.0,
            "search_flights: duffel failed (upstream_5xx), trying amadeus".to_string()
        )],
        "{messages:#?}"
    );
    let result = messages.last().cloned().unwrap_or_default();
    assert_eq!(result["id"], 3, "the result comes last: {messages:#?}");
    assert_eq!(result["result"]["isError"], false, "{result:#}");

    // Without a token: no notification, one JSON body.
    let other = json!({"origin": "JFK", "destination": "CDG", "departure_date": in_days(21)});
    let messages = call(&s, "search_flights", other, None).await;
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert_eq!(messages[0]["result"]["isError"], false, "{messages:#?}");
}

#[tokio::test]
async fn a_call_that_retries_says_so_before_each_wait() {
    let s = Stack::builder(72)
        .config(status_by_amadeus_alone)
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            error_rate: 1.0,
            error_status: 502,
            ..Fault::default()
        },
    );
    let args = json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(3)});
    let messages = call(&s, "get_flight_status", args, Some("p-2")).await;
    let steps = progress(&messages, "p-2");
    assert!(!steps.is_empty(), "{messages:#?}");
    for (i, (count, message)) in steps.iter().enumerate() {
        assert_eq!(*count, (i + 1) as f64, "counted up: {steps:?}");
        assert!(
            message.starts_with(
                "get_flight_status: amadeus failed (upstream_5xx), trying it again in "
            ),
            "{message}"
        );
    }
    let attempts = s.requests(RouteGroup::AmadeusStatus);
    assert_eq!(
        steps.len() as u64,
        attempts - 1,
        "one step before each retry: {steps:?}"
    );
    let result = messages.last().cloned().unwrap_or_default();
    assert_eq!(
        result["result"]["isError"], true,
        "the fallback text: {result:#}"
    );
}
