//! A graceful shutdown lets the MCP calls in flight finish and answers them, as it does the
//! native ones: a booking in a session and one in a stateless request (2026-07-28) each reach
//! the provider's answer, are booked once and are answered as booked; a read in a session is
//! answered too. Only the session's event stream (`GET /mcp`) ends when shutdown starts, so it
//! does not hold the drain for the whole grace period.
//!
//! The provider is slow (the simulator's latency fault), so every call is surely in flight at
//! the provider when shutdown starts.

use std::time::Duration;

use faregate::ledger::{Ledger, State};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::bookings::{builder, fresh_offer, orders_for, traveller};
use crate::support::{Stack, in_days, wait_until};

const VERSION: &str = "2025-11-25";
/// How long the provider takes to answer an order or a hotel search.
const LATENCY_MS: u64 = 2_500;
/// The drain's bound, far longer than the calls.
const GRACE: Duration = Duration::from_secs(10);

/// Sends `request` (a POST to `/mcp`) in a task of its own; status and body text.
fn in_flight(
    request: reqwest::RequestBuilder,
) -> tokio::task::JoinHandle<Result<(u16, String), reqwest::Error>> {
    tokio::spawn(async move {
        let res = request
            .header("accept", "application/json, text/event-stream")
            .send()
            .await?;
        let status = res.status().as_u16();
        Ok((status, res.text().await?))
    })
}

/// A session's `tools/call` of `name` with `arguments` and `_meta`.
fn session_call(
    s: &Stack,
    session: &str,
    id: u64,
    name: &str,
    args: Value,
    meta: Value,
) -> reqwest::RequestBuilder {
    s.http
        .post(s.url("/mcp"))
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", session)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": meta}}))
}

/// The booking arguments for `offer`.
fn booking(offer: &str) -> Value {
    json!({"offer_id": offer, "travellers": [traveller()]})
}

/// The answer to a call in flight: it came (within the grace period), as a 200 whose result
/// is not an error; its `result`.
async fn answered(
    what: &str,
    call: tokio::task::JoinHandle<Result<(u16, String), reqwest::Error>>,
) -> Value {
    let (status, body) = tokio::time::timeout(GRACE, call)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within the grace period"))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .unwrap_or_else(|e| panic!("{what}: the call in flight lost its answer: {e}"));
    assert_eq!(status, 200, "{what}: {body}");
    let message = super::mcp_message(&body);
    let result = &message["result"];
    assert_eq!(result["isError"], false, "{what}: {message:#}");
    result.clone()
}

/// A booking's answer says booked, names its order, and is the one the ledger recorded.
fn assert_booked(what: &str, result: &Value, ledger: &[faregate::ledger::Entry], key: &str) {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Booked: "), "{what}: {result:#}");
    let order = result["structuredContent"]["order_id"]
        .as_str()
        .unwrap_or_default();
    assert!(order.starts_with("ord_"), "{what}: {result:#}");
    let entry = ledger
        .iter()
        .find(|e| e.idempotency_key == key)
        .unwrap_or_else(|| panic!("{what}: no ledger entry: {ledger:#?}"));
    assert_eq!(entry.state, State::Booked, "{what}: {entry:#?}");
    assert_eq!(entry.order_id.as_deref(), Some(order), "{what}: {entry:#?}");
}

#[tokio::test]
async fn shutdown_answers_the_mcp_calls_in_flight_and_ends_the_event_streams() {
    let mut s = builder(67, Duration::from_secs(5))
        .config(|mut c| {
            c.server.shutdown_grace = GRACE;
            c
        })
        .jobs()
        .start()
        .await;
    let (first, _) = fresh_offer(&s).await;
    let (second, _) = fresh_offer(&s).await;
    let session = super::open_mcp_session(&s, "shutdown-test").await;
    let slow = Fault {
        latency_ms: LATENCY_MS,
        ..Fault::default()
    };
    s.sim.set_fault(RouteGroup::DuffelAirOrders, slow.clone());
    s.sim.set_fault(RouteGroup::DuffelStays, slow);

    // The session's event stream, open before shutdown.
    let events = s
        .http
        .get(s.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.status().as_u16(), 200);
    let events = tokio::spawn(events.text());

    let in_session = in_flight(session_call(
        &s,
        &session,
        5,
        "book_flight",
        booking(&first),
        json!({"faregate/idempotency_key": "mcp-shutdown-session"}),
    ));
    let stateless = in_flight(
        s.http
            .post(s.url("/mcp"))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "book_flight")
            .json(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": "book_flight", "arguments": booking(&second), "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "shutdown-test", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "faregate/idempotency_key": "mcp-shutdown-stateless"}}})),
    );
    let read = in_flight(session_call(
        &s,
        &session,
        7,
        "search_hotels",
        json!({"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23)}),
        json!({}),
    ));
    // Every call at the provider, not a fixed wait.
    wait_until(
        Duration::from_secs(5),
        "both orders and the hotel search to reach the provider",
        || async {
            let (orders, stays) = (
                s.requests(RouteGroup::DuffelAirOrders),
                s.requests(RouteGroup::DuffelStays),
            );
            match (orders, stays) {
                (2, 1..) => Ok(()),
                _ => Err(format!("orders {orders}, hotel searches {stays}")),
            }
        },
    )
    .await;

    let stopping = Instant::now();
    let done = s.gateway.begin_shutdown();
    // The event stream ends at once, long before the calls are answered.
    tokio::time::timeout(Duration::from_millis(LATENCY_MS / 2), events)
        .await
        .unwrap_or_else(|_| panic!("the session's event stream did not end when shutdown started"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("the event stream ended with an error: {e}"));

    let in_session = answered("the booking in a session", in_session).await;
    let stateless = answered("the stateless booking", stateless).await;
    let read = answered("the hotel search in a session", read).await;
    let said = read["content"][0]["text"].as_str().unwrap_or_default();
    assert!(!said.starts_with("STALE"), "the provider's answer: {said}");
    assert!(
        read["structuredContent"]["hotels"].is_array(),
        "the search's real answer: {read:#}"
    );

    tokio::time::timeout(GRACE * 2, done)
        .await
        .unwrap_or_else(|_| panic!("shutdown did not end"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let took = stopping.elapsed();
    assert!(
        took < GRACE / 2,
        "the drain waited for the calls, not for the grace period (an open stream): {took:?}"
    );

    // Each booking made exactly one order, whose answer the gateway waited for.
    for key in ["mcp-shutdown-session", "mcp-shutdown-stateless"] {
        assert_eq!(orders_for(&s, key).1, 1, "{key}: one order");
    }
    let stats = s.sim.stats();
    let orders = &stats.groups[&RouteGroup::DuffelAirOrders];
    assert_eq!(orders.requests, 2, "{orders:?}");
    assert_eq!(orders.dropped, 0, "no order dropped mid-flight: {orders:?}");
    assert_eq!(stats.orders_created, 2, "{stats:?}");
    let ledger = Ledger::new(s.store().db().clone(), Duration::from_secs(60))
        .list(None, 10, faregate::clock::epoch_ms())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ledger.len(), 2, "{ledger:#?}");
    assert_booked(
        "the booking in a session",
        &in_session,
        &ledger,
        "mcp-shutdown-session",
    );
    assert_booked(
        "the stateless booking",
        &stateless,
        &ledger,
        "mcp-shutdown-stateless",
    );
}
