//! What a booking says when something fails before, at or after its order request: "nothing
//! was booked" only when the order request cannot have been carried out, "outcome unknown" only
//! when it may have been.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};

use serde_json::json;

use super::{booking, builder, fresh_offer, orders_for, wait_for_state};

#[tokio::test]
async fn a_failing_offer_read_says_nothing_was_booked() {
    let s = builder(31, Duration::from_secs(2)).start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.down(RouteGroup::DuffelAirOffers);
    let (status, env) = s.call("book_flight", booking(&offer, "read-fails-1")).await;
    assert_eq!(
        (status, env["status"].as_str()),
        (200, Some("unavailable")),
        "{env:#}"
    );
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.contains("nothing was booked"), "{text}");
    assert!(!text.contains("not known whether"), "{text}");
    assert_eq!(
        orders_for(&s, "read-fails-1"),
        (0, 0),
        "no order request was sent"
    );
}

#[tokio::test]
async fn a_slow_offer_read_says_nothing_was_booked() {
    let s = builder(32, Duration::from_millis(800)).start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirOffers,
        Fault {
            latency_ms: 5_000,
            ..Fault::default()
        },
    );
    let (_, env) = s.call("book_flight", booking(&offer, "read-slow-1")).await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.contains("nothing was booked"), "{text}");
    assert_eq!(orders_for(&s, "read-slow-1"), (0, 0));
}

#[tokio::test]
async fn order_not_created_says_not_booked() {
    let s = builder(33, Duration::from_secs(2)).start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            error_rate: 1.0,
            error_status: 502,
            ..Fault::default()
        },
    );
    let (_, env) = s
        .call("book_flight", booking(&offer, "not-created-1"))
        .await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.contains("was not carried out"), "{text}");
    assert!(text.contains("nothing was booked"), "{text}");
    assert_eq!(
        orders_for(&s, "not-created-1"),
        (1, 0),
        "asked once, not retried"
    );
}

#[tokio::test]
async fn a_timeout_after_the_order_request_says_the_outcome_is_unknown() {
    let s = builder(34, Duration::from_millis(800)).start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            latency_ms: 5_000,
            ..Fault::default()
        },
    );
    let (_, env) = s.call("book_flight", booking(&offer, "order-slow-1")).await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.contains("not known whether it went through"), "{text}");
    assert_eq!(s.requests(RouteGroup::DuffelAirOrders), 1);
}

#[tokio::test]
async fn a_callers_short_deadline_ends_its_wait_not_the_booking() {
    let s = builder(36, Duration::from_secs(3)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            latency_ms: 1_500,
            ..Fault::default()
        },
    );
    let mut body = booking(&offer, "hurried-1");
    body["deadline_ms"] = json!(400);
    let (status, env) = s.call("book_flight", body.clone()).await;
    assert_eq!(
        (status, env["status"].as_str()),
        (200, Some("unavailable")),
        "{env:#}"
    );
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("The book_flight request is still under way at the provider"),
        "{text}"
    );
    assert!(env["retry_after_s"].as_u64() >= Some(1), "{env:#}");
    // The order request was not cut at the caller's 400 ms: it ends, and the ledger says so.
    wait_for_state(&s, "hurried-1", "booked").await;
    assert_eq!(orders_for(&s, "hurried-1"), (1, 1), "one order, made");
    let (_, again) = s.call("book_flight", body).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert!(
        again["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Already booked under this idempotency key"),
        "{again:#}"
    );
}

#[tokio::test]
async fn a_background_booking_whose_offer_read_fails_is_requeued_and_booked_once() {
    let s = builder(35, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.down(RouteGroup::DuffelAirOffers);
    let (status, queued) = s.submit("book_flight", booking(&offer, "bg-book-1")).await;
    assert_eq!(status, 202, "{queued:#}");
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();
    let waiting = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["status"] == "retry_scheduled" && j["attempts"].as_u64() >= Some(1)
        })
        .await;
    assert!(
        waiting["last_error"]
            .as_str()
            .is_some_and(|e| !e.contains("not known whether")),
        "{waiting:#}"
    );
    assert_eq!(orders_for(&s, "bg-book-1"), (0, 0));
    s.sim.clear_faults();
    let done = s
        .wait_for_job(&id, Duration::from_secs(20), |j| j["status"] == "succeeded")
        .await;
    assert_eq!(done["result"]["status"], "ok", "{done:#}");
    assert_eq!(orders_for(&s, "bg-book-1"), (1, 1), "booked exactly once");
}

#[tokio::test]
async fn a_background_booking_of_unknown_outcome_learns_it_by_its_key_once_reconciled() {
    let s = builder(36, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    // A 503 to the order request: it may have been carried out, so the job ends without
    // trying again, and says to ask again with the same key.
    s.down(RouteGroup::DuffelAirOrders);
    let body = booking(&offer, "bg-unknown-1");
    let (_, queued) = s.submit("book_flight", body.clone()).await;
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();
    let dead = s
        .wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "dead")
        .await;
    let said = dead["last_error"].as_str().unwrap_or_default();
    assert!(said.contains("with the same idempotency key"), "{dead:#}");
    // Asked again with the same key, in background mode as before: not "queued" (nothing
    // is pending), but what the ledger knows now.
    let (status, asked) = s.submit("book_flight", body.clone()).await;
    assert_eq!(
        (status, &asked["status"]),
        (200, &json!("unavailable")),
        "{asked:#}"
    );
    assert_eq!(asked["job_id"], id.as_str());
    let text = asked["content"].as_str().unwrap_or_default();
    assert!(text.contains("outcome is not known yet"), "{asked:#}");
    assert_eq!(
        dead["booking"]["state"], "unknown",
        "the job shows what the ledger knows: {dead:#}"
    );
    s.sim.clear_faults();
    wait_for_state(&s, "bg-unknown-1", "failed").await;
    let (_, job) = s.get_json(&format!("/v1/jobs/{id}")).await;
    assert_eq!(
        (&job["status"], &job["booking"]["state"]),
        (&json!("dead"), &json!("failed")),
        "the job ended unknown; its booking is settled since: {job:#}"
    );
    let (status, settled) = s.submit("book_flight", body).await;
    assert_eq!(status, 200, "{settled:#}");
    let text = settled["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("booked nothing and charged nothing") && text.contains("new idempotency key"),
        "{settled:#}"
    );
    assert_eq!(
        orders_for(&s, "bg-unknown-1"),
        (1, 0),
        "never booked, never sent again"
    );
}

/// A booking whose outcome stays unknown because looking it up at the provider fails is said
/// to the operator (a warning, at most once a minute), not left unexplained.
#[tokio::test]
async fn a_reconciliation_that_cannot_look_a_booking_up_says_so() {
    let (captured, _default) = crate::support::Captured::install();
    let s = builder(37, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.down(RouteGroup::DuffelAirOrders);
    s.down(RouteGroup::DuffelAirOrderList);
    let (_, answer) = s
        .call("book_flight", booking(&offer, "lookup-down-1"))
        .await;
    assert_eq!(answer["status"], "unavailable", "{answer:#}");
    crate::support::wait_until(Duration::from_secs(10), "the warning", || async {
        let text = captured.text();
        let warned = text
            .lines()
            .filter(|l| l.contains("a booking's outcome stays unknown"))
            .count();
        if warned > 0 {
            Ok(warned)
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
    // Several rounds later, still once: reconciliation asks every 200 ms here.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let text = captured.text();
    let warned: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("a booking's outcome stays unknown"))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert!(
        warned[0].contains("idempotency_key=lookup-down-1") && warned[0].contains("WARN"),
        "{}",
        warned[0]
    );
}
