//! Idempotency keys are each client's own, at the provider too: two clients that pick the same
//! key book separately, and neither is ever told of, nor lists, the other's booking.

use std::time::Duration;

use serde_json::{Value, json};

use super::{booking, builder, orders_for};
use crate::support::{MapEnv, Stack, in_days, send};

const ALPHA: &str = "k-alpha";
const BETA: &str = "k-beta";

async fn post_as(s: &Stack, key: &str, path: &str, body: &Value) -> Value {
    send(s.http.post(s.url(path)).bearer_auth(key).json(body))
        .await
        .2
}

async fn get_as(s: &Stack, key: &str, path: &str) -> Value {
    send(s.http.get(s.url(path)).bearer_auth(key)).await.2
}

#[tokio::test]
async fn two_clients_with_the_same_key_each_book_their_own_and_see_only_it() {
    let s = builder(51, Duration::from_secs(2))
        .env(MapEnv(vec![("FAREGATE_CLIENT_KEYS", "k-alpha,k-beta")]))
        .client_key(ALPHA)
        .jobs()
        .start()
        .await;
    let found = post_as(
        &s,
        ALPHA,
        "/v1/tools/search_flights/call",
        &json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}}),
    )
    .await;
    let offers: Vec<String> = found["data"]["offers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["offer_id"].as_str().map(str::to_string))
        .filter(|id| id.starts_with("off_"))
        .collect();
    assert!(offers.len() >= 2, "two Duffel offers: {found:#}");

    let path = "/v1/tools/book_flight/call";
    let alpha = post_as(&s, ALPHA, path, &booking(&offers[0], "trip-1")).await;
    let beta = post_as(&s, BETA, path, &booking(&offers[1], "trip-1")).await;
    for (who, env) in [("alpha", &alpha), ("beta", &beta)] {
        assert_eq!(env["status"], "ok", "{who}: {env:#}");
    }
    assert_ne!(
        alpha["data"]["booking_reference"], beta["data"]["booking_reference"],
        "two bookings"
    );
    assert_eq!(orders_for(&s, "trip-1"), (2, 2), "both orders were made");

    // Each lists its own booking only.
    for (key, own, other) in [(ALPHA, &alpha, &beta), (BETA, &beta, &alpha)] {
        let listed = get_as(&s, key, "/v1/bookings").await;
        let order_ids: Vec<&Value> = listed["bookings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| &b["order_id"])
            .collect();
        assert_eq!(order_ids, [&own["data"]["order_id"]], "{key}: {listed:#}");
        assert!(
            !listed.to_string().contains(
                other["data"]["booking_reference"]
                    .as_str()
                    .unwrap_or("(none)")
            ),
            "{key}: {listed:#}"
        );
    }

    // Beta books the offer alpha booked, under a key of its own: Duffel refuses it as a
    // duplicate. Beta holds no booking of it, so it is told nothing was booked, never that
    // "the earlier booking stands" nor alpha's reference, and its ledger says failed.
    let taken = post_as(&s, BETA, path, &booking(&offers[0], "trip-2")).await;
    assert_eq!(taken["status"], "rejected", "{taken:#}");
    let text = taken["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("already booked under another key")
            && text.contains("this call booked nothing"),
        "{text}"
    );
    for leak in ["booking_reference", "order_id"] {
        let alphas = alpha["data"][leak].as_str().unwrap_or("(none)");
        assert!(!taken.to_string().contains(alphas), "{leak}: {taken:#}");
    }
    let listed = get_as(&s, BETA, "/v1/bookings").await;
    let trip_2: Vec<&Value> = listed["bookings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["idempotency_key"] == "trip-2")
        .map(|b| &b["state"])
        .collect();
    assert_eq!(trip_2, [&json!("failed")], "{listed:#}");

    // A repeat of beta's call is beta's booking, never alpha's.
    let again = post_as(&s, BETA, path, &booking(&offers[1], "trip-1")).await;
    assert_eq!(
        again["data"]["booking_reference"], beta["data"]["booking_reference"],
        "{again:#}"
    );
}
