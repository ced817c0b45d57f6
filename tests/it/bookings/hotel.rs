//! `book_hotel` over Duffel Stays, end to end against the simulator with the embedded (demo)
//! configuration: search → availability → book → the ledger shows it; a repeated key books
//! nothing new; a failed quote books nothing (a background booking is requeued and books once);
//! a lost answer to the booking request is unknown, then reconciled both ways.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};

use super::{builder, entry, fresh_rate, hotel_booking, wait_for_state};
use crate::support::Stack;

/// A rate of a hotel found and checked on `s`.
async fn rate(s: &Stack) -> (String, String, String) {
    fresh_rate(|tool, body| async move { s.call(tool, body).await.1 }).await
}

/// Stays booking requests that reached the simulator, and bookings it made under `key`.
fn stays_bookings(s: &Stack, key: &str) -> (u64, u64) {
    let made = s
        .sim
        .stats()
        .stays_bookings_by_idempotency_key
        .get(key)
        .map_or(0, |k| k.orders);
    (s.requests(RouteGroup::DuffelStaysBookings), made)
}

#[tokio::test]
async fn without_a_ledger_a_repeated_key_is_answered_with_the_booking_duffel_holds_under_it() {
    // No store, so no ledger: the repeat reaches Duffel, which refuses it as a duplicate, and
    // the adapter finds the booking made under the key and answers with it.
    let s = builder(62, Duration::from_secs(2)).start().await;
    let (rate, _, _) = rate(&s).await;
    let (_, booked) = s.call("book_hotel", hotel_booking(&rate, "hotel-1")).await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
    let (_, again) = s.call("book_hotel", hotel_booking(&rate, "hotel-1")).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    for field in [
        "booking_id",
        "booking_reference",
        "total_amount",
        "guests",
        "hotel_name",
    ] {
        assert_eq!(
            again["data"][field], booked["data"][field],
            "{field}: {again:#}"
        );
    }
    assert_eq!(
        stays_bookings(&s, "hotel-1"),
        (2, 1),
        "two booking requests, one booking"
    );
}

#[tokio::test]
async fn a_hotel_is_searched_checked_booked_and_listed_and_a_repeat_books_nothing() {
    let s = builder(61, Duration::from_secs(2)).jobs().start().await;
    let (rate, total, currency) = rate(&s).await;
    let (status, booked) = s.call("book_hotel", hotel_booking(&rate, "hotel-1")).await;
    assert_eq!(
        (status, booked["status"].as_str()),
        (200, Some("ok")),
        "{booked:#}"
    );
    let data = &booked["data"];
    let booking_id = data["booking_id"].as_str().unwrap_or_default().to_string();
    assert!(booking_id.starts_with("bok_"), "{booked:#}");
    assert_eq!(
        data["total_amount"],
        total.as_str(),
        "charged the rate's price"
    );
    assert_eq!(data["total_currency"], currency.as_str());
    assert_eq!(data["guests"][0], "Ana Garcia");
    let text = booked["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("Booked: "), "{text}");
    assert!(text.contains(&booking_id), "{text}");
    assert_eq!(stays_bookings(&s, "hotel-1"), (1, 1));

    // The ledger lists it, ids and amounts only.
    let (_, listed) = s.get_json("/v1/bookings").await;
    let entry = &listed["bookings"][0];
    assert_eq!(entry["tool"], "book_hotel", "{listed:#}");
    assert_eq!(entry["state"], "booked");
    assert_eq!(entry["order_id"], booking_id.as_str());
    assert_eq!(entry["amount"], total.as_str());
    assert!(!listed.to_string().contains("Garcia"), "{listed:#}");

    // The same key again: the recorded booking, no quote and no booking request.
    let quotes = s.requests(RouteGroup::DuffelStays);
    let (_, again) = s.call("book_hotel", hotel_booking(&rate, "hotel-1")).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["booking_id"], booking_id.as_str());
    // The guests from the arguments sent again (the ledger keeps no names), not an empty list
    // a model could read as nobody booked.
    assert_eq!(again["data"]["guests"], data["guests"], "{again:#}");
    let text = again["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("Already booked under this idempotency key"),
        "{text}"
    );
    assert_eq!(
        stays_bookings(&s, "hotel-1"),
        (1, 1),
        "no second booking request"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelStays),
        quotes,
        "not even a quote"
    );
}

#[tokio::test]
async fn a_failed_quote_says_nothing_was_booked() {
    let s = builder(62, Duration::from_secs(2)).jobs().start().await;
    let (rate, _, _) = rate(&s).await;
    s.down(RouteGroup::DuffelStays);
    let (status, env) = s
        .call("book_hotel", hotel_booking(&rate, "quote-fails-1"))
        .await;
    assert_eq!(
        (status, env["status"].as_str()),
        (200, Some("unavailable")),
        "{env:#}"
    );
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.contains("nothing was booked"), "{text}");
    assert!(!text.contains("not known whether"), "{text}");
    assert_eq!(
        stays_bookings(&s, "quote-fails-1"),
        (0, 0),
        "no booking request"
    );
    assert!(
        text.contains("nothing was booked under this idempotency key, so send the new attempt (a new rate_id) with a new one"),
        "the advice does not lead into a refusal of the key: {text}"
    );
    let entry = entry(&s, "quote-fails-1").await;
    assert_eq!(entry["state"], "failed", "{entry:#}");

    // Had the model sent the new rate under the same key, the refusal says to take a new one.
    s.sim.clear_faults();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (again, _, _) = self::rate(&s).await;
    let (status, refused) = s
        .call("book_hotel", hotel_booking(&again, "quote-fails-1"))
        .await;
    assert_eq!(status, 422, "{refused:#}");
    assert!(
        refused["content"].as_str().unwrap_or_default().contains(
            "which booked nothing, so nothing was booked now either. A key stays tied to the arguments it was first sent with: send this request again with a new idempotency key."
        ),
        "{refused:#}"
    );
    let (_, booked) = s
        .call("book_hotel", hotel_booking(&again, "quote-fails-2"))
        .await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
}

#[tokio::test]
async fn a_background_hotel_booking_whose_quote_fails_is_requeued_and_booked_once() {
    let s = builder(65, Duration::from_secs(2)).jobs().start().await;
    let (rate, _, _) = rate(&s).await;
    s.down(RouteGroup::DuffelStays);
    let (status, queued) = s
        .submit("book_hotel", hotel_booking(&rate, "bg-hotel-1"))
        .await;
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
    assert_eq!(stays_bookings(&s, "bg-hotel-1"), (0, 0));
    s.sim.clear_faults();
    let done = s
        .wait_for_job(&id, Duration::from_secs(20), |j| j["status"] == "succeeded")
        .await;
    assert_eq!(done["result"]["status"], "ok", "{done:#}");
    assert_eq!(
        stays_bookings(&s, "bg-hotel-1"),
        (1, 1),
        "booked exactly once"
    );
}

#[tokio::test]
async fn a_lost_answer_to_the_booking_request_is_unknown_then_reconciled_as_booked() {
    let s = builder(63, Duration::from_millis(800)).jobs().start().await;
    let (rate, total, _) = rate(&s).await;
    // The booking is made, and its answer comes after the gateway stopped waiting.
    s.sim.set_fault(
        RouteGroup::DuffelStaysBookings,
        Fault {
            latency_after_ms: 3_000,
            ..Fault::default()
        },
    );
    let (_, env) = s
        .call("book_hotel", hotel_booking(&rate, "hotel-lost-1"))
        .await;
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("not known whether it went through"),
        "{env:#}"
    );
    assert_eq!(
        stays_bookings(&s, "hotel-lost-1"),
        (1, 1),
        "the provider booked it"
    );
    s.sim.clear_faults();
    let entry = wait_for_state(&s, "hotel-lost-1", "booked").await;
    assert!(
        entry["order_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("bok_")),
        "{entry:#}"
    );
    assert_eq!(entry["amount"], total.as_str(), "{entry:#}");
    let (_, again) = s
        .call("book_hotel", hotel_booking(&rate, "hotel-lost-1"))
        .await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["booking_id"], entry["order_id"]);
    assert_eq!(
        stays_bookings(&s, "hotel-lost-1"),
        (1, 1),
        "no second booking request"
    );
}

#[tokio::test]
async fn an_unknown_hotel_booking_the_provider_did_not_make_is_reconciled_as_not_booked() {
    let s = builder(64, Duration::from_secs(2)).jobs().start().await;
    let (rate, _, _) = rate(&s).await;
    // A 503 to the booking request: it may have been carried out, as far as the gateway knows.
    s.sim.set_fault(
        RouteGroup::DuffelStaysBookings,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    let (_, env) = s
        .call("book_hotel", hotel_booking(&rate, "hotel-none-1"))
        .await;
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("not known whether it went through"),
        "{env:#}"
    );
    let (_, pending) = s
        .call("book_hotel", hotel_booking(&rate, "hotel-none-1"))
        .await;
    let text = pending["content"].as_str().unwrap_or_default();
    assert!(text.contains("outcome is not known yet"), "{pending:#}");
    s.sim.clear_faults();
    let entry = wait_for_state(&s, "hotel-none-1", "failed").await;
    assert!(entry["order_id"].is_null(), "{entry:#}");
    assert_eq!(stays_bookings(&s, "hotel-none-1"), (1, 0));
    // Nothing was booked, so the same key may book now, once.
    let (_, booked) = s
        .call("book_hotel", hotel_booking(&rate, "hotel-none-1"))
        .await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
    assert_eq!(stays_bookings(&s, "hotel-none-1"), (2, 1));
}

#[tokio::test]
async fn a_confirmed_total_that_is_not_the_quote_books_nothing_and_says_the_current_total() {
    let s = builder(63, Duration::from_secs(2)).jobs().start().await;
    let (rate, total, currency) = rate(&s).await;
    let mut body = hotel_booking(&rate, "confirmed-1");
    body["arguments"]["confirmed_total_amount"] = serde_json::json!("1.00");
    let (status, env) = s.call("book_hotel", body).await;
    assert_eq!(
        (status, env["status"].as_str()),
        (200, Some("rejected")),
        "{env:#}"
    );
    assert_eq!(
        env["content"].as_str().unwrap_or_default(),
        format!(
            "Nothing was booked: confirmed_total_amount 1.00 is not the total the provider quotes for this rate now, {total} {currency} (the price changed since it was shown, or the amount was copied wrong). Tell the traveller the current total and ask before booking; to book at it, call book_hotel again with confirmed_total_amount \"{total}\" and a new idempotency key."
        ),
        "the gateway's own refusal, not 'the provider refused … the price changed'"
    );
    assert_eq!(
        stays_bookings(&s, "confirmed-1"),
        (0, 0),
        "no booking request"
    );
}
