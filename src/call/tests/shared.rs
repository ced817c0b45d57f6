//! Reads shared and remembered: identical concurrent reads make one provider call (and one
//! breaker outcome), other arguments and writes do not share, a caller in a hurry or one that
//! goes away neither holds the others back nor cuts their call short, and `fresh_for` answers
//! repeats from memory.

use futures::future::join_all;

use super::*;
use crate::call::envelope::{Envelope, Status};
use crate::call::gateway::CallRequest;

fn request(tool: &str, arguments: Value) -> CallRequest {
    CallRequest {
        tool: tool.into(),
        arguments,
        call_id: None,
        idempotency_key: None,
        deadline: None,
        client: crate::clients::ClientName::local(),
        trace: None,
    }
}

/// The usual search, from a caller that will wait 1 s at most.
fn in_a_hurry() -> CallRequest {
    CallRequest {
        deadline: Some(secs(1)),
        ..request("search_flights", search_args())
    }
}

/// Search arguments for another route (`n` days out).
fn search_on(days: i64) -> Value {
    let date = Gateway::today() + chrono::Duration::days(days);
    json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()})
}

/// A gateway over the shipped configuration with `search_flights` answering repeats from memory
/// for `fresh_for`.
fn gateway_fresh_for(fresh_for: Duration, providers: &[(&str, &Arc<Scripted>)]) -> Arc<Gateway> {
    let mut config = config();
    for tool in &mut config.tools {
        if tool.name == "search_flights" {
            tool.fresh_for = fresh_for;
        }
    }
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway =
        Gateway::new(&config, &upstreams(providers), telemetry).unwrap_or_else(|e| panic!("{e:?}"));
    Arc::new(gateway)
}

/// The outcomes the breaker of `tool`'s first provider has counted.
fn breaker_calls(gateway: &Gateway, tool: &str) -> u32 {
    let tool = gateway.tool(tool).expect("served");
    tool.breakers()[0].snapshot(Instant::now()).calls_in_window
}

async fn call_all(gateway: &Arc<Gateway>, requests: Vec<CallRequest>) -> Vec<Envelope> {
    join_all(requests.into_iter().map(|r| gateway.call(r)))
        .await
        .into_iter()
        .map(|answered| answered.expect("served"))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn identical_concurrent_reads_share_one_provider_call_and_one_breaker_outcome() {
    let duffel = Scripted::new([ok(secs(1), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    // The same search, one written with its keys in another order.
    let mut requests: Vec<CallRequest> = (0..20)
        .map(|_| request("search_flights", search_args()))
        .collect();
    let date = search_args()["departure_date"].clone();
    requests.push(request(
        "search_flights",
        json!({"departure_date": date, "destination": "JFK", "origin": "LHR"}),
    ));
    let answers = call_all(&gateway, requests).await;
    assert_eq!(duffel.calls(), 1, "one provider request for 21 callers");
    assert_eq!(breaker_calls(&gateway, "search_flights"), 1, "one outcome");
    assert!(
        answers.iter().all(|a| a.status == Status::Ok),
        "{answers:?}"
    );
    let call_ids: std::collections::BTreeSet<&str> =
        answers.iter().map(|a| a.call_id.as_str()).collect();
    assert_eq!(call_ids.len(), 21, "each caller keeps its own call id");
    assert!(answers.iter().all(|a| a.data == answers[0].data));
    assert!(answers.iter().all(|a| a.cached_age_s.is_none()));

    call_all(&gateway, vec![request("search_flights", search_args())]).await;
    assert_eq!(duffel.calls(), 2, "a call after the answer asks again");
}

#[tokio::test(start_paused = true)]
async fn reads_with_other_arguments_make_calls_of_their_own() {
    let duffel = Scripted::new([ok(secs(1), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let requests = (30..35)
        .flat_map(|days| {
            [
                request("search_flights", search_on(days)),
                request("search_flights", search_on(days)),
            ]
        })
        .collect();
    let answers = call_all(&gateway, requests).await;
    assert!(answers.iter().all(|a| a.status == Status::Ok));
    assert_eq!(
        duffel.calls(),
        5,
        "five searches, each asked by two callers"
    );
    assert_eq!(breaker_calls(&gateway, "search_flights"), 5);
}

#[tokio::test(start_paused = true)]
async fn a_write_is_never_shared() {
    let duffel = Scripted::new([ok(secs(1), booked())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let requests = (0..3)
        .map(|i| CallRequest {
            idempotency_key: Some(format!("key-{i}")),
            ..request("book_flight", booking_args())
        })
        .collect();
    let answers = call_all(&gateway, requests).await;
    assert!(
        answers.iter().all(|a| a.status == Status::Ok),
        "{answers:?}"
    );
    assert_eq!(duffel.calls(), 3, "three bookings are three bookings");
}

#[tokio::test(start_paused = true)]
async fn a_failed_shared_call_gives_every_caller_the_fallback() {
    let duffel = Scripted::new([fail(secs(1), ErrorKind::Malformed)]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let requests = (0..10)
        .map(|_| request("search_flights", search_args()))
        .collect();
    let answers = call_all(&gateway, requests).await;
    assert_eq!(duffel.calls(), 1, "not retried (malformed), and shared");
    assert_eq!(
        breaker_calls(&gateway, "search_flights"),
        1,
        "one failure counted"
    );
    for answer in &answers {
        assert_eq!(answer.status, Status::Unavailable);
        assert_eq!(answer.content, answers[0].content);
        assert_eq!(answer.data, None);
    }
}

#[tokio::test(start_paused = true)]
async fn a_caller_in_a_hurry_gets_its_fallback_at_its_own_deadline() {
    let duffel = Scripted::new([ok(secs(5), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let start = Instant::now();
    let leader = gateway.call(request("search_flights", search_args()));
    let hurried = async {
        // Joins once the leader's call is upstream.
        tokio::time::sleep(ms(100)).await;
        let answer = gateway.call(in_a_hurry()).await;
        (answer, Instant::now())
    };
    let (leader, (hurried, hurried_at)) = tokio::join!(leader, hurried);
    let hurried = hurried.expect("served");
    assert_eq!(hurried.status, Status::Unavailable, "{hurried:?}");
    assert_eq!(hurried_at - start, ms(1100), "answered at its own deadline");
    assert_eq!(leader.expect("served").status, Status::Ok);
    assert_eq!(duffel.calls(), 1, "the hurried caller asked nothing");
    assert_eq!(breaker_calls(&gateway, "search_flights"), 1);
}

/// The failure rate the breaker of `tool`'s first provider has counted.
fn breaker_failure_rate(gateway: &Gateway, tool: &str) -> f64 {
    let tool = gateway.tool(tool).expect("served");
    tool.breakers()[0].snapshot(Instant::now()).failure_rate
}

#[tokio::test(start_paused = true)]
async fn a_leader_in_a_hurry_does_not_cut_the_call_short_for_the_others() {
    // Within the tool's 8 s timeout, beyond the leader's 1 s deadline.
    let duffel = Scripted::new([ok(secs(2), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let start = Instant::now();
    let hurried = async {
        let answer = gateway.call(in_a_hurry()).await;
        (answer, Instant::now())
    };
    let patient = async {
        tokio::time::sleep(ms(100)).await;
        let answer = gateway.call(request("search_flights", search_args())).await;
        (answer, Instant::now())
    };
    let ((hurried, hurried_at), (patient, patient_at)) = tokio::join!(hurried, patient);
    assert_eq!(hurried.expect("served").status, Status::Unavailable);
    assert_eq!(hurried_at - start, secs(1), "at its own deadline");
    let patient = patient.expect("served");
    assert_eq!(patient.status, Status::Ok, "{patient:?}");
    assert_eq!(patient_at - start, secs(2), "when the provider answered");
    assert_eq!(duffel.calls(), 1, "one provider call for both");
    assert_eq!(breaker_calls(&gateway, "search_flights"), 1);
    assert_eq!(
        breaker_failure_rate(&gateway, "search_flights"),
        0.0,
        "the provider answered in time: no timeout counted"
    );
}

#[tokio::test(start_paused = true)]
async fn a_caller_in_a_hurry_alone_cancels_its_call_and_counts_no_timeout() {
    let duffel = Scripted::new([ok(secs(2), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let hurried = gateway.call(in_a_hurry()).await.expect("served");
    assert_eq!(hurried.status, Status::Unavailable, "{hurried:?}");
    tokio::time::sleep(secs(2)).await;
    assert_eq!(
        (duffel.calls(), duffel.answered()),
        (1, 0),
        "cancelled when its only caller stopped waiting"
    );
    assert_eq!(
        breaker_calls(&gateway, "search_flights"),
        0,
        "the caller's hurry is not the provider's timeout"
    );
    let tool = gateway.tool("search_flights").expect("served");
    assert_eq!(tool.in_flight(), 0, "its bulkhead slot is free");
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_caller_goes_away_does_not_cancel_the_others() {
    let duffel = Scripted::new([ok(secs(5), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let leader = tokio::time::timeout(
        secs(1),
        gateway.call(request("search_flights", search_args())),
    );
    let follower = async {
        tokio::time::sleep(ms(100)).await;
        gateway.call(request("search_flights", search_args())).await
    };
    let (leader, follower) = tokio::join!(leader, follower);
    assert!(leader.is_err(), "the leader's caller left after 1 s");
    assert_eq!(follower.expect("served").status, Status::Ok);
    assert_eq!((duffel.calls(), duffel.answered()), (1, 1));
    assert_eq!(
        breaker_calls(&gateway, "search_flights"),
        1,
        "its success counted"
    );
}

#[tokio::test(start_paused = true)]
async fn fresh_for_answers_repeats_from_memory_within_it_and_not_after() {
    let duffel = Scripted::new([ok(ms(500), flights())]);
    let gateway = gateway_fresh_for(secs(60), &[("duffel", &duffel)]);
    let first = call_all(&gateway, vec![request("search_flights", search_args())]).await;
    assert_eq!((first[0].status, first[0].cached_age_s), (Status::Ok, None));
    let other = call_all(&gateway, vec![request("search_flights", search_on(40))]).await;
    assert_eq!(
        (duffel.calls(), other[0].cached_age_s),
        (2, None),
        "other arguments ask"
    );

    // The first answer came at 0.5 s; it is 60 s old at 60.5 s.
    tokio::time::sleep(ms(59_500)).await;
    let repeat = call_all(&gateway, vec![request("search_flights", search_args())]).await;
    assert_eq!(duffel.calls(), 2, "answered from memory");
    assert_eq!(
        (repeat[0].status, repeat[0].cached_age_s),
        (Status::Ok, Some(60)),
        "marked, with its age"
    );
    assert_eq!(repeat[0].data, first[0].data);
    assert_eq!(repeat[0].provider.as_deref(), Some("duffel"));

    tokio::time::sleep(ms(1)).await;
    let after = call_all(&gateway, vec![request("search_flights", search_args())]).await;
    assert_eq!(duffel.calls(), 3, "older than fresh_for: asked again");
    assert_eq!((after[0].status, after[0].cached_age_s), (Status::Ok, None));
}

#[tokio::test(start_paused = true)]
async fn without_fresh_for_every_repeat_asks_the_provider() {
    let duffel = Scripted::new([ok(ms(0), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    for _ in 0..3 {
        let answer = call_all(&gateway, vec![request("search_flights", search_args())]).await;
        assert_eq!(answer[0].cached_age_s, None);
    }
    assert_eq!(duffel.calls(), 3, "stale_for alone never answers a repeat");
}

#[tokio::test(start_paused = true)]
async fn a_listening_caller_hears_the_steps_of_a_call_that_ran_before_it_was_polled() {
    let duffel = Scripted::new([fail(ms(0), server_error())]);
    let amadeus = Scripted::new([ok(ms(10), flights())]);
    let gateway = gateway(&[("duffel", &duffel), ("amadeus", &amadeus)]);
    let (to, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let call = gateway.call_reporting(request("search_flights", search_args()), Some(to));
    // The shared call runs in its own task: here it fails over and answers before its caller
    // is first polled (a busy machine can do the same to a caller).
    tokio::time::sleep(secs(1)).await;
    assert_eq!(amadeus.calls(), 1, "the call has run");

    let answered = call.await.expect("served");

    assert_eq!(answered.status, Status::Ok);
    let step = heard.try_recv().map(|step| step.text());
    assert_eq!(
        step.as_deref(),
        Ok("search_flights: duffel failed (upstream_5xx), trying amadeus")
    );
}
