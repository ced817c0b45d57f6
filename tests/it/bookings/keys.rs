//! One idempotency key, one booking, whatever the mode or the tool it is sent with: an
//! interactive booking under the key of a background job still going on is that job's (nothing
//! is sent beside it), a background booking under the key of the same booking at the provider
//! waits for its outcome, and a key the ledger holds for another request is refused at once, in
//! background mode too, naming the tool it was used for.

use std::time::Duration;

use faregate_sim::RouteGroup;
use serde_json::json;

use super::{booking, builder, fresh_offer, fresh_rate, hotel_booking, orders_for};

#[tokio::test]
async fn an_interactive_booking_under_a_live_jobs_key_is_that_jobs_booking() {
    let s = builder(61, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    // The job's offer read fails: nothing booked by that attempt, and it tries again later.
    s.down(RouteGroup::DuffelAirOffers);
    let body = booking(&offer, "bg-live-1");
    let (_, queued) = s.submit("book_flight", body.clone()).await;
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();
    let waiting = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["status"] == "retry_scheduled"
        })
        .await;
    assert_eq!(
        (
            &waiting["booking"]["state"],
            &waiting["booking"]["order_id"]
        ),
        (&json!("pending"), &json!(null)),
        "an attempt that booked nothing is not the job's outcome while it goes on: {waiting:#}"
    );
    let said = waiting["booking"]["reason"].as_str().unwrap_or_default();
    assert!(said.contains("the job tries again"), "{waiting:#}");

    // The provider is back; the same key sent interactively sends nothing beside the job.
    s.sim.clear_faults();
    let (status, answer) = s.call("book_flight", body.clone()).await;
    assert_eq!(
        (status, &answer["status"], &answer["job_id"]),
        (202, &json!("queued"), &json!(id)),
        "{answer:#}"
    );
    let text = answer["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("Nothing was sent by this call")
            && text.contains(&format!("book_flight job {id}"))
            && text.contains("booking is in progress"),
        "{answer:#}"
    );
    assert_eq!(orders_for(&s, "bg-live-1"), (0, 0), "no order request yet");

    // The job books it, once; the key then answers with that booking.
    let done = s
        .wait_for_job(&id, Duration::from_secs(30), |j| j["status"] == "succeeded")
        .await;
    assert_eq!(done["booking"]["state"], "booked", "{done:#}");
    let (_, again) = s.call("book_flight", body).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["order_id"], done["booking"]["order_id"]);
    assert_eq!(orders_for(&s, "bg-live-1"), (1, 1), "booked exactly once");
}

#[tokio::test]
async fn a_key_the_ledger_holds_for_another_request_is_refused_at_submission() {
    let s = builder(62, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    let (_, booked) = s.call("book_flight", booking(&offer, "taken-1")).await;
    assert_eq!(booked["status"], "ok", "{booked:#}");

    // The same key and tool, other arguments, in background mode: refused now, not a job
    // that could only end dead with the same words.
    let mut other = booking(&offer, "taken-1");
    other["arguments"]["travellers"][0]["given_name"] = json!("Eva");
    let (status, refused) = s.submit("book_flight", other).await;
    assert_eq!(
        (status, &refused["status"], &refused["job_id"]),
        (422, &json!("invalid_arguments"), &json!(null)),
        "{refused:#}"
    );
    let text = refused["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("already used for a different book_flight request"),
        "{refused:#}"
    );

    // Another write tool under the key: the text names the tool the key was used for, in
    // either mode.
    let stack = &s;
    let (rate, _, _) = fresh_rate(|tool, body| async move { stack.call(tool, body).await.1 }).await;
    for (mode, (status, refused)) in [
        (
            "interactive",
            s.call("book_hotel", hotel_booking(&rate, "taken-1")).await,
        ),
        (
            "background",
            s.submit("book_hotel", hotel_booking(&rate, "taken-1"))
                .await,
        ),
    ] {
        assert_eq!(
            (status, &refused["status"]),
            (422, &json!("invalid_arguments")),
            "{mode}: {refused:#}"
        );
        let text = refused["content"].as_str().unwrap_or_default();
        assert!(
            text.contains("already used for a book_flight request")
                && text.contains("nothing was sent for this book_hotel call")
                && text.contains("call book_flight again with its arguments exactly"),
            "{mode}: {refused:#}"
        );
    }
    assert_eq!(
        s.requests(RouteGroup::DuffelStaysBookings),
        0,
        "no hotel booking request"
    );
    assert_eq!(orders_for(&s, "taken-1"), (1, 1));
}

/// A background booking sent while the same booking under its key is at the provider (an
/// interactive request of the same client) waits for that request's outcome and answers with
/// it: it is never ended "outcome not known" a moment before the booking is answered.
#[tokio::test]
async fn a_background_booking_under_a_key_at_the_provider_waits_for_its_outcome() {
    let s = builder(62, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        faregate_sim::Fault {
            latency_ms: 800,
            ..faregate_sim::Fault::default()
        },
    );
    let body = booking(&offer, "bg-behind-1");
    let interactive = tokio::spawn(crate::support::send(
        s.keyed(s.http.post(s.url("/v1/tools/book_flight/call")))
            .json(&body),
    ));
    crate::support::wait_until(
        Duration::from_secs(5),
        "the order at the provider",
        || async {
            if s.requests(RouteGroup::DuffelAirOrders) > 0 {
                Ok(())
            } else {
                Err("not yet".to_string())
            }
        },
    )
    .await;
    let (status, queued) = s.submit("book_flight", body.clone()).await;
    assert_eq!(status, 202, "{queued:#}");
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();

    let (_, _, answered) = interactive.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answered["status"], "ok", "{answered:#}");
    let done = s
        .wait_for_job(&id, Duration::from_secs(20), |j| {
            j["status"] == "succeeded" || j["status"] == "dead"
        })
        .await;
    assert_eq!(done["status"], "succeeded", "{done:#}");
    assert_eq!(
        done["result"]["data"]["order_id"], answered["data"]["order_id"],
        "{done:#}"
    );
    assert_eq!(
        orders_for(&s, "bg-behind-1"),
        (1, 1),
        "one order request, one order"
    );
}
