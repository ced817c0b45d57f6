//! A request that reuses the JSON-RPC id of a request still in flight in its MCP session is
//! refused at once (HTTP 400, `-32600`, naming the id), and the request in flight still gets its
//! own answer. rmcp keeps a session's requests by id alone: let through, the second request
//! took the first's place, and the first request's stream waited until the session ended.
//!
//! The provider hangs (the simulator's `hang` fault) until the test clears the fault, so the
//! first call is surely in flight when the second request comes; no step depends on timing.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use faregate_sim::{Fault, RouteGroup};

use crate::support::{Stack, in_days, wait_until, wait_until_upstream};

const VERSION: &str = "2025-11-25";

/// A tools/call of `search_flights` with request id `id`.
fn search_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "search_flights",
        "arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}}})
}

fn tools_list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

async fn post(s: &Stack, body: &Value, session: Option<&str>) -> (u16, HeaderMap, String) {
    super::mcp_post(s.http.post(s.url("/mcp")), body, session, VERSION).await
}

/// A stack whose Duffel flight search does not answer until the fault is cleared.
async fn hanging_search(seed: u64) -> Stack {
    let s = Stack::start(seed).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    s
}

/// `search_call(id)` sent in `session` from a task of its own: what its stream carried, read to
/// its end.
fn spawn_search(s: &Stack, session: &str, id: u64) -> tokio::task::JoinHandle<(u16, String)> {
    let (http, url, session) = (s.http.clone(), s.url("/mcp"), session.to_string());
    tokio::spawn(async move {
        let req = http.post(url);
        let (status, _, body) =
            super::mcp_post(req, &search_call(id), Some(&session), VERSION).await;
        (status, body)
    })
}

/// The refusal of a request whose id `id` is in flight in its session.
fn assert_refused_in_use(status: u16, body: &str, id: u64) {
    let shown: String = body.chars().take(400).collect();
    assert_eq!(status, 400, "{shown}");
    let refused = super::mcp_message(body);
    assert_eq!(refused["id"], id, "the refused request's id: {refused:#}");
    assert_eq!(refused["error"]["code"], -32600, "{refused:#}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("the id {id} is already in use")) && message.contains("new id"),
        "{message}"
    );
}

#[tokio::test]
async fn a_request_reusing_an_id_in_flight_is_refused_and_the_first_gets_its_answer() {
    let s = hanging_search(81).await;
    let session = super::open_mcp_session(&s, "request-ids-test").await;
    let first = spawn_search(&s, &session, 7);
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;

    // Its answer is looked at once the first has its own: a hang of the first is the failure
    // this test exists for.
    let (second_status, _, second) = tokio::time::timeout(
        Duration::from_secs(10),
        post(&s, &tools_list(7), Some(&session)),
    )
    .await
    .unwrap_or_else(|_| panic!("the second request with id 7 got no answer"));

    // A batch is no way around it: rmcp reads one message per body.
    let batch = json!([tools_list(7), tools_list(9)]);
    let (status, _, body) = post(&s, &batch, Some(&session)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(super::mcp_message(&body)["error"]["code"], -32600, "{body}");

    // Another id is served meanwhile, and a notification (no id) is accepted.
    let (status, _, body) = post(&s, &tools_list(8), Some(&session)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(super::mcp_message(&body)["id"], 8, "{body}");
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"});
    let (status, _, body) = post(&s, &notification, Some(&session)).await;
    assert_eq!(status, 202, "{body}");

    s.sim.clear_faults();
    let (status, body) = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .unwrap_or_else(|_| panic!("the first request with id 7 never got its answer"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200, "{body}");
    let answer = super::mcp_message(&body);
    assert_eq!(answer["id"], 7, "{answer:#}");
    assert!(
        answer["result"]["content"].is_array(),
        "the search's own answer: {answer:#}"
    );
    assert_refused_in_use(second_status, &second, 7);

    // Answered, the id is free again.
    let (status, _, body) = post(&s, &tools_list(7), Some(&session)).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        super::mcp_message(&body)["result"]["tools"].is_array(),
        "{body}"
    );
}

/// A client whose stream broke may resume it, and its call runs on; rmcp would still route that
/// call's answer by its id, so the id stays taken until the call ends.
#[tokio::test]
async fn an_id_stays_taken_while_its_call_runs_after_its_stream_broke() {
    let s = hanging_search(82).await;
    let session = super::open_mcp_session(&s, "request-ids-test").await;
    let first = spawn_search(&s, &session, 7);
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;
    // Dropping the request closes its connection.
    first.abort();
    let _ = first.await;

    let (status, _, body) = post(&s, &tools_list(7), Some(&session)).await;
    assert_refused_in_use(status, &body, 7);

    s.sim.clear_faults();
    wait_until(
        Duration::from_secs(30),
        "id 7 to be free once its call ended",
        || async {
            let (status, _, body) = post(&s, &tools_list(7), Some(&session)).await;
            match status {
                200 => Ok(()),
                _ => Err(format!("{status} {body}")),
            }
        },
    )
    .await;
}
