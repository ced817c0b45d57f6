//! A read in flight over MCP ends when its client cancels it (`notifications/cancelled`) or, on a
//! stateless request, goes away (closes the connection): the provider sees its request dropped,
//! the breaker records nothing, no other provider is asked and no job is made. A booking runs
//! to completion.
//!
//! The provider is slow (the simulator's latency fault), so the call is surely in flight at the
//! provider when the client cancels; the simulator counts a request whose caller went away as
//! `dropped`.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use faregate_sim::{Fault, RouteGroup};

use crate::support::{Stack, in_days, wait_until, wait_until_upstream};

const VERSION: &str = "2025-11-25";

fn search_args() -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)})
}

/// A tools/call of `search_flights` with request id `id`.
fn search_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "search_flights", "arguments": search_args()}})
}

/// POSTs `body` to `/mcp` in `session` (if any) at revision `version`; status, headers, body
/// text (read to its end).
async fn post(
    s: &Stack,
    body: &Value,
    session: Option<&str>,
    version: &str,
) -> (u16, HeaderMap, String) {
    super::mcp_post(s.http.post(s.url("/mcp")), body, session, version).await
}

/// A stack whose Duffel flight search answers after a minute (sooner only if its caller goes
/// away).
async fn slow_duffel(seed: u64) -> Stack {
    let s = Stack::builder(seed).jobs().start().await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 60_000,
            ..Fault::default()
        },
    );
    s
}

/// The provider saw the search dropped; no breaker of search_flights counted it; Amadeus (the
/// next provider) was never asked; no job exists.
async fn assert_cancelled_cleanly(s: &Stack) {
    wait_until(
        Duration::from_secs(10),
        "the provider to see the request dropped",
        || async {
            let stats = s.sim.stats();
            let group = &stats.groups[&RouteGroup::DuffelAirSearch];
            match group.dropped {
                1 => Ok(()),
                _ => Err(format!("{group:?}")),
            }
        },
    )
    .await;
    let stats = s.sim.stats();
    let duffel = &stats.groups[&RouteGroup::DuffelAirSearch];
    assert_eq!(duffel.requests, 1, "{duffel:?}");
    assert!(duffel.statuses.is_empty(), "never answered: {duffel:?}");
    assert_eq!(s.requests(RouteGroup::AmadeusFlights), 0, "no fallback");
    let (status, breakers) = s.get_json("/v1/breakers").await;
    assert_eq!(status, 200, "{breakers:#}");
    for b in breakers["breakers"].as_array().into_iter().flatten() {
        if b["tool"] == "search_flights" {
            assert_eq!(b["state"], "closed", "{b:#}");
            assert_eq!(
                b["calls_in_window"], 0,
                "the breaker recorded nothing: {b:#}"
            );
        }
    }
    let (status, jobs) = s.get_json("/v1/jobs").await;
    assert_eq!(status, 200, "{jobs:#}");
    assert_eq!(jobs["jobs"], json!([]), "no job: {jobs:#}");
}

#[tokio::test]
async fn notifications_cancelled_ends_a_read_in_flight() {
    let s = slow_duffel(61).await;
    let session = super::open_mcp_session(&s, "cancel-test").await;
    let call = {
        let (http, url, session) = (s.http.clone(), s.url("/mcp"), session.clone());
        tokio::spawn(async move {
            let res = http
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", VERSION)
                .header("mcp-session-id", session)
                .json(&search_call(5))
                .send()
                .await?;
            res.text().await
        })
    };
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "the user pressed stop"}});
    let (status, _, body) = post(&s, &cancel, Some(&session), VERSION).await;
    assert_eq!(status, 202, "{body}");
    let stream = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap_or_else(|_| panic!("the call's event stream did not end after the cancel"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !stream.contains("\"result\""),
        "a cancelled request gets no result: {stream}"
    );
    assert_cancelled_cleanly(&s).await;

    // The session goes on: the next call (with the provider fast again) is answered.
    s.sim.clear_faults();
    let (status, _, answer) = post(&s, &search_call(6), Some(&session), VERSION).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"isError\":false"), "{answer}");
}

/// A client that gives up closes its connection; a stateless request (2026-07-28, answered as
/// JSON, so there is no stream to resume) ends with it. (In a session a broken stream is not a
/// cancellation: the client may resume it, see `mcp_prompts`.)
#[tokio::test]
async fn a_stateless_client_that_goes_away_ends_its_read_in_flight() {
    let s = slow_duffel(62).await;
    let request = s
        .http
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "search_flights")
        .json(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "search_flights", "arguments": search_args(), "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "cancel-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}));
    let call = tokio::spawn(async move {
        let res = request.send().await?;
        res.text().await
    });
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;
    // Dropping the request closes its connection.
    call.abort();
    let _ = call.await;
    assert_cancelled_cleanly(&s).await;
}

/// A booking is never cancelled halfway: after `notifications/cancelled` it still reaches the
/// provider's answer, and the order is made once.
#[tokio::test]
async fn a_booking_runs_to_completion_after_notifications_cancelled() {
    let s = Stack::start(64).await;
    let (offer, _) = crate::bookings::fresh_offer(&s).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            latency_ms: 1500,
            ..Fault::default()
        },
    );
    let session = super::open_mcp_session(&s, "cancel-test").await;
    let book = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "book_flight",
        "arguments": {"offer_id": offer, "travellers": [crate::bookings::traveller()]},
        "_meta": {"faregate/idempotency_key": "mcp-cancel-booking"}}});
    let call = {
        let (http, url, session) = (s.http.clone(), s.url("/mcp"), session.clone());
        tokio::spawn(async move {
            let res = http
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", VERSION)
                .header("mcp-session-id", session)
                .json(&book)
                .send()
                .await?;
            res.text().await
        })
    };
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirOrders).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "the user pressed stop"}});
    let (status, _, body) = post(&s, &cancel, Some(&session), VERSION).await;
    assert_eq!(status, 202, "{body}");
    wait_until(Duration::from_secs(10), "the order to be made", || async {
        let stats = s.sim.stats();
        match stats.orders_created {
            1 => Ok(()),
            _ => Err(format!("{stats:?}")),
        }
    })
    .await;
    let stats = s.sim.stats();
    let orders = &stats.groups[&RouteGroup::DuffelAirOrders];
    assert_eq!(
        orders.dropped, 0,
        "the provider's answer was awaited: {orders:?}"
    );
    assert_eq!(orders.requests, 1, "{orders:?}");
    call.abort();
}
