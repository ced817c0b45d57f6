//! A client's share of a tool: with two clients, one that fires more concurrent calls of a
//! tool than its share (half of `get_flight_status`'s 16 slots, while its in-flight cap is 32)
//! holds 8 of them; its other calls are refused as its own doing (429 naming the limit, a
//! `[rejected]` tool result to a model), never reach the provider nor its breaker, and the
//! other client's calls still go through. Its background job waits in the queue untouched (not
//! claimed while it holds its share) while the other client's job runs, and runs once its calls
//! end. The provider hangs until the test lets it answer: nothing is timed.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::{
    MapEnv, Stack, in_days, one_provider_per_tool, send, wait_until, with_timeouts,
};

const NOISY: &str = "noisy-team-key";
const QUIET: &str = "quiet-team-key";

/// Two anonymous clients, each its own key.
fn two_clients() -> MapEnv {
    MapEnv(vec![(
        "FAREGATE_CLIENT_KEYS",
        "noisy-team-key, quiet-team-key",
    )])
}

/// `get_flight_status` (16 slots, shipped) by Amadeus alone, whose flight-status route hangs:
/// a call holds its slot until the test clears the fault. Timeouts long enough that no call
/// ends by itself while the test looks.
async fn two_clients_and_a_hanging_status(seed: u64, jobs: bool) -> Stack {
    let builder = Stack::builder(seed)
        .env(two_clients())
        .config(one_provider_per_tool)
        .config(|c| with_timeouts(c, Duration::from_secs(60), Duration::from_secs(60)));
    let s = if jobs { builder.jobs() } else { builder }.start().await;
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    s
}

/// The status of BA `flight` (one flight per call, so no two calls are shared).
fn status_of(flight: u32) -> Value {
    json!({"carrier_code": "BA", "flight_number": flight.to_string(), "departure_date": in_days(3)})
}

/// A native call of `get_flight_status` by the holder of `key`, on a task of its own.
fn call(
    s: &Stack,
    key: &'static str,
    flight: u32,
) -> JoinHandle<(u16, reqwest::header::HeaderMap, Value)> {
    let request = s
        .http
        .post(s.url("/v1/tools/get_flight_status/call"))
        .bearer_auth(key)
        .json(&json!({"arguments": status_of(flight)}));
    tokio::spawn(send(request))
}

/// Waits until `n` flight-status requests reached the simulator.
async fn at_provider(s: &Stack, n: u64) {
    wait_until(
        Duration::from_secs(10),
        "flight-status requests at the provider",
        || async {
            match s.requests(RouteGroup::AmadeusStatus) {
                seen if seen == n => Ok(()),
                seen => Err(format!("{seen} of {n}")),
            }
        },
    )
    .await;
}

/// The noisy client fires 16 calls at once: 8 (its share) wait at the provider, and the other
/// 8 are answered at once. Returns those two halves.
async fn noisy_fills_its_share(
    s: &Stack,
) -> Vec<JoinHandle<(u16, reqwest::header::HeaderMap, Value)>> {
    let calls: Vec<_> = (0..16).map(|n| call(s, NOISY, 100 + n)).collect();
    at_provider(s, 8).await;
    wait_until(
        Duration::from_secs(10),
        "the calls beyond the share answered",
        || async {
            match calls.iter().filter(|c| c.is_finished()).count() {
                8 => Ok(()),
                n => Err(format!("{n} answered")),
            }
        },
    )
    .await;
    let (answered, held): (Vec<_>, Vec<_>) = calls.into_iter().partition(|c| c.is_finished());
    for refused in answered {
        let (status, headers, body) = refused.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, 429, "{body}");
        assert_eq!(headers["retry-after"], "1");
        assert_eq!(body["status"], "rejected", "{body}");
        assert_eq!(body["limit"], "client_share_of_tool", "{body}");
        assert_eq!(body["retry_after_s"], 1);
        assert_eq!(body["provider"], Value::Null);
        let content = body["content"].as_str().unwrap_or_default();
        for says in [
            "this client already has 8 get_flight_status calls in flight",
            "its share of the tool's 16 concurrent calls ([limits] client_share_of_tool = 0.5)",
            "the tool itself is not failing",
            "Make fewer get_flight_status calls at once",
        ] {
            assert!(content.contains(says), "{says:?} in {content}");
        }
    }
    assert_eq!(
        s.requests(RouteGroup::AmadeusStatus),
        8,
        "the refused were not sent"
    );
    held
}

#[tokio::test]
async fn one_client_holds_at_most_its_share_of_a_tool_and_the_other_still_gets_through() {
    let s = two_clients_and_a_hanging_status(61, false).await;
    let held = noisy_fills_its_share(&s).await;

    // The quiet client's calls go through to the provider while the noisy one holds its share
    // (before the share, the noisy client took all 16 slots, and these were `unavailable`).
    let quiet: Vec<_> = (0..3).map(|n| call(&s, QUIET, 200 + n)).collect();
    at_provider(&s, 11).await;

    // A model of the noisy client reads the refusal as a tool result, flagged.
    let message = json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_flight_status", "arguments": status_of(300).to_string()}}]});
    let (status, _, body) = send(
        s.http
            .post(s.url("/v1/openai/tool_calls"))
            .bearer_auth(NOISY)
            .json(&message),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let text = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("[rejected] get_flight_status was not called: this client already has 8"),
        "{text}"
    );

    // Counted as a client's limit, not as the tool's bulkhead or its provider's failure.
    let (_, _, metrics) = send(s.http.get(s.url("/metrics"))).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    for series in [
        "faregate_client_limited_total{limit=\"client_share_of_tool\"} 9",
        "faregate_bulkhead_rejected_calls_total{tool=\"get_flight_status\"} 0",
        "faregate_tool_calls_total{provider=\"none\",status=\"rejected\",tool=\"get_flight_status\"} 9",
    ] {
        assert!(metrics.lines().any(|l| l == series), "{series} in /metrics");
    }
    let (_, _, breakers) = send(s.http.get(s.url("/v1/breakers")).bearer_auth(QUIET)).await;
    let breaker = breakers["breakers"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|b| b["tool"] == "get_flight_status" && b["provider"] == "amadeus")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&breaker["state"], &breaker["calls_in_window"]),
        (&json!("closed"), &json!(0)),
        "the refusals told the breaker nothing: {breaker}"
    );

    // The provider answers: every call that was let through is answered.
    s.sim.set_fault(RouteGroup::AmadeusStatus, Fault::default());
    for task in quiet.into_iter().chain(held) {
        let (status, _, body) = task.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((status, &body["status"]), (200, &json!("ok")), "{body}");
    }
}

#[tokio::test]
async fn a_job_of_a_client_at_its_share_waits_untouched_until_the_client_lets_go() {
    let s = two_clients_and_a_hanging_status(62, true).await;
    let held = noisy_fills_its_share(&s).await;
    let submit = |key: &'static str, flight: u32| {
        let request = s
            .http
            .post(s.url("/v1/tools/get_flight_status/call"))
            .bearer_auth(key)
            .json(&json!({"mode": "background", "arguments": status_of(flight)}));
        async move {
            let (status, _, queued) = send(request).await;
            assert_eq!(status, 202, "{queued}");
            queued["job_id"].as_str().unwrap_or_default().to_string()
        }
    };
    let job = |key: &'static str, id: &str| {
        let request = s
            .http
            .get(s.url(&format!("/v1/jobs/{id}")))
            .bearer_auth(key);
        async move { send(request).await.2 }
    };
    let id = submit(NOISY, 400).await;
    let quiet = submit(QUIET, 401).await;
    // The quiet client's job, submitted after it, is claimed and runs (waiting on the
    // provider); the noisy client's was passed over as it holds its share: never claimed,
    // refused or written back, nothing sent.
    wait_until(
        Duration::from_secs(10),
        "the quiet client's job running",
        || async {
            match job(QUIET, &quiet).await {
                seen if seen["status"] == "running" => Ok(()),
                seen => Err(seen.to_string()),
            }
        },
    )
    .await;
    // Running is claimed; its request reaches the provider a moment later (on a busy machine,
    // after the job's status was read).
    wait_until(
        Duration::from_secs(10),
        "the quiet job's request at the provider",
        || async {
            match s.requests(RouteGroup::AmadeusStatus) {
                9 => Ok(()),
                n => Err(format!("{n} requests: 8 held and the quiet job make 9")),
            }
        },
    )
    .await;
    let waiting = job(NOISY, &id).await;
    assert_eq!(waiting["status"], "queued", "{waiting}");
    assert_eq!(waiting["attempts"], 0, "{waiting}");
    assert_eq!(waiting["last_error"], Value::Null, "{waiting}");
    assert_eq!(
        waiting["next_attempt_at"], waiting["created_at"],
        "{waiting}"
    );

    // Once the client's calls are answered, the job runs, on its first attempt.
    s.sim.set_fault(RouteGroup::AmadeusStatus, Fault::default());
    for task in held {
        let (status, _, body) = task.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, 200, "{body}");
    }
    for (key, id) in [(NOISY, &id), (QUIET, &quiet)] {
        let done = wait_until(Duration::from_secs(20), "the job to succeed", || async {
            let seen = job(key, id).await;
            if seen["status"] == "succeeded" {
                Ok(seen)
            } else {
                Err(seen.to_string())
            }
        })
        .await;
        assert_eq!(done["attempts"], 1, "{done}");
        assert_eq!(done["result"]["status"], "ok", "{done}");
    }
}
