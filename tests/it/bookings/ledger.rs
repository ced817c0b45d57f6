//! The booking ledger end to end: a repeated key is answered from the ledger without a provider
//! request (after a restart too, and on a second gateway sharing PostgreSQL), other arguments
//! under a used key are refused, and an unknown outcome is reconciled both ways.

use std::time::Duration;

use faregate::jobs::{JobStore, Store};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use super::{booking, builder, fresh_offer, orders_for, short, traveller, wait_for_state};
use crate::support::{NoEnv, Stack, TestGateway, config_for, send, start_sim};

/// Calls `tool` on `gateway` with `body`.
async fn call(http: &reqwest::Client, gateway: &TestGateway, tool: &str, body: &Value) -> Value {
    let (_, _, env) = send(
        http.post(gateway.url(&format!("/v1/tools/{tool}/call")))
            .json(body),
    )
    .await;
    env
}

#[tokio::test]
async fn a_repeated_key_is_answered_from_the_ledger_without_a_provider_request() {
    let s = builder(41, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    let (_, first) = s.call("book_flight", booking(&offer, "again-1")).await;
    assert_eq!(first["status"], "ok", "{first:#}");
    let offers_read = s.requests(RouteGroup::DuffelAirOffers);
    let (_, again) = s.call("book_flight", booking(&offer, "again-1")).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["order_id"], first["data"]["order_id"]);
    assert_eq!(
        again["data"]["booking_reference"],
        first["data"]["booking_reference"]
    );
    // The travellers from the arguments sent again (the ledger keeps no names), not an empty
    // list a model could read as nobody booked.
    assert_eq!(
        again["data"]["travellers"],
        json!(["Ana Garcia"]),
        "{again:#}"
    );
    assert_eq!(again["data"]["travellers"], first["data"]["travellers"]);
    let text = again["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("Already booked under this idempotency key"),
        "{text}"
    );
    assert_eq!(orders_for(&s, "again-1"), (1, 1), "one order request");
    assert_eq!(
        s.requests(RouteGroup::DuffelAirOffers),
        offers_read,
        "not even the offer was read again"
    );

    // The same key with other arguments is refused, naming the key.
    let mut other = booking(&offer, "again-1");
    other["arguments"]["travellers"][0]["given_name"] = json!("Eva");
    let (status, refused) = s.call("book_flight", other).await;
    assert_eq!(
        (status, refused["status"].as_str()),
        (422, Some("invalid_arguments"))
    );
    let text = refused["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("already used for a different book_flight request"),
        "{text}"
    );
    assert_eq!(orders_for(&s, "again-1"), (1, 1));

    // The ledger lists it, ids and amounts only.
    let (status, listed) = s.get_json("/v1/bookings").await;
    assert_eq!(status, 200, "{listed:#}");
    let entry = &listed["bookings"][0];
    assert_eq!(entry["state"], "booked", "{listed:#}");
    assert_eq!(entry["idempotency_key"], "again-1");
    assert_eq!(entry["order_id"], first["data"]["order_id"]);
    assert_eq!(entry["amount"], first["data"]["total_amount"]);
    assert!(
        !listed.to_string().contains("Garcia"),
        "no passenger data: {listed:#}"
    );
    let (_, _, metrics) = send(s.http.get(s.url("/metrics"))).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    assert!(
        metrics.contains(r#"faregate_bookings_total{outcome="replayed",tool="book_flight"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_restarted_gateway_answers_from_the_ledger() {
    let sim = start_sim(42).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("faregate.db").display());
    let http = reqwest::Client::new();
    let start = || async {
        let store = Store::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
        let config = short(config_for(&sim.url()), Duration::from_secs(2));
        TestGateway::start_with_jobs(config, &NoEnv, store).await
    };
    let first_gateway = start().await;
    let search = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": crate::support::in_days(21)}});
    let found = call(&http, &first_gateway, "search_flights", &search).await;
    let offer = found["data"]["offers"][0]["offer_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let body = booking(&offer, "restart-1");
    let first = call(&http, &first_gateway, "book_flight", &body).await;
    assert_eq!(first["status"], "ok", "{first:#}");
    let mut stopping = first_gateway;
    let _ = stopping.begin_shutdown().await;
    drop(stopping);

    let second_gateway = start().await;
    let again = call(&http, &second_gateway, "book_flight", &body).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["order_id"], first["data"]["order_id"]);
    assert_eq!(sim.sim.stats().orders_created, 1);
    assert_eq!(
        crate::support::requests(&sim.sim, RouteGroup::DuffelAirOrders),
        1
    );
}

#[tokio::test]
async fn a_second_gateway_sharing_postgres_answers_from_the_ledger() {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: shared-ledger test skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_ledger_{}", uuid::Uuid::now_v7().simple());
    let sim = start_sim(43).await;
    let mut gateways = Vec::new();
    for _ in 0..2 {
        let store = Store::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
        let config = short(config_for(&sim.url()), Duration::from_secs(2));
        gateways.push(TestGateway::start_with_jobs(config, &NoEnv, store).await);
    }
    let http = reqwest::Client::new();
    let search = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": crate::support::in_days(21)}});
    let found = call(&http, &gateways[0], "search_flights", &search).await;
    let offer = found["data"]["offers"][0]["offer_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let body = json!({"arguments": {"offer_id": offer, "travellers": [traveller()]},
                      "idempotency_key": "fleet-1"});
    let first = call(&http, &gateways[0], "book_flight", &body).await;
    assert_eq!(first["status"], "ok", "{first:#}");
    let again = call(&http, &gateways[1], "book_flight", &body).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["order_id"], first["data"]["order_id"]);
    assert_eq!(
        crate::support::requests(&sim.sim, RouteGroup::DuffelAirOrders),
        1
    );
}

#[tokio::test]
async fn an_unknown_outcome_the_provider_booked_is_reconciled_as_booked() {
    let s = builder(44, Duration::from_millis(800)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    // The order is made, and its answer comes after the gateway stopped waiting.
    s.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            latency_after_ms: 3_000,
            ..Fault::default()
        },
    );
    let (_, env) = s
        .call("book_flight", booking(&offer, "lost-answer-1"))
        .await;
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("not known whether it went through"),
        "{env:#}"
    );
    assert_eq!(
        orders_for(&s, "lost-answer-1"),
        (1, 1),
        "the provider booked it"
    );
    s.sim.clear_faults();
    let entry = wait_for_state(&s, "lost-answer-1", "booked").await;
    assert!(
        entry["order_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("ord_")),
        "{entry:#}"
    );
    let (_, again) = s
        .call("book_flight", booking(&offer, "lost-answer-1"))
        .await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(again["data"]["order_id"], entry["order_id"]);
    assert_eq!(
        orders_for(&s, "lost-answer-1"),
        (1, 1),
        "no second order request"
    );
}

#[tokio::test]
async fn an_unknown_outcome_the_provider_did_not_book_is_reconciled_as_not_booked() {
    let s = builder(45, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    // A 503 to the order request: it may have been carried out, as far as the gateway knows.
    s.down(RouteGroup::DuffelAirOrders);
    let (_, env) = s.call("book_flight", booking(&offer, "no-order-1")).await;
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("not known whether it went through"),
        "{env:#}"
    );
    let (_, pending) = s.call("book_flight", booking(&offer, "no-order-1")).await;
    let text = pending["content"].as_str().unwrap_or_default();
    assert!(text.contains("outcome is not known yet"), "{pending:#}");
    // Nothing asks the provider before the entry settles: the text does not say it does.
    assert!(
        text.contains("if it never answers, the gateway looks the booking up"),
        "{pending:#}"
    );
    s.sim.clear_faults();
    let entry = wait_for_state(&s, "no-order-1", "failed").await;
    assert!(entry["order_id"].is_null(), "{entry:#}");
    assert_eq!(orders_for(&s, "no-order-1"), (1, 0));
    // Nothing was booked, so the same key may book now, once.
    let (_, booked) = s.call("book_flight", booking(&offer, "no-order-1")).await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
    assert_eq!(orders_for(&s, "no-order-1"), (2, 1));
}

/// Bookings of unknown outcome that opened `book_flight`'s breaker are reconciled while it is
/// half-open: only a booking probes a write tool's breaker, so with none coming it stays
/// half-open, and reconciliation that waited for it left the keys unknown for as long.
#[tokio::test]
async fn unknown_bookings_are_reconciled_while_their_breaker_is_half_open() {
    let s = builder(47, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    s.down(RouteGroup::DuffelAirOrders);
    // Five failures in a row open the breaker (the standard tuning).
    for i in 0..5 {
        let key = format!("half-open-{i}");
        let (_, env) = s.call("book_flight", booking(&offer, &key)).await;
        let text = env["content"].as_str().unwrap_or_default();
        assert!(
            text.contains("not known whether it went through"),
            "{key}: {env:#}"
        );
    }
    s.sim.clear_faults();
    let state = || async {
        let (_, body) = s.get_json("/v1/breakers").await;
        let breakers = body["breakers"].as_array().cloned().unwrap_or_default();
        let state = breakers
            .iter()
            .find(|b| b["tool"] == "book_flight")
            .map(|b| b["state"].as_str().unwrap_or_default().to_string());
        state.unwrap_or_default()
    };
    crate::support::wait_until(Duration::from_secs(5), "book_flight half-open", || async {
        match state().await.as_str() {
            "half_open" => Ok(()),
            other => Err(other.to_string()),
        }
    })
    .await;
    for i in 0..5 {
        let entry = wait_for_state(&s, &format!("half-open-{i}"), "failed").await;
        assert!(entry["order_id"].is_null(), "{entry:#}");
    }
    assert_eq!(state().await, "half_open", "no booking probed it meanwhile");
}

/// A booking whose ledger entry the store does not take within 2 s (its table locked by another
/// session, as a stalled store or a long migration holds it) is refused at once as not sent,
/// instead of waiting for as long as the lock lasts, in words that do not say an earlier request
/// under the same key booked nothing (one did here); the entry the store writes once the lock
/// is gone is marked failed (nothing was sent), so the same key then books, once.
#[tokio::test]
async fn a_booking_is_refused_unsent_when_its_ledger_does_not_answer() {
    use sqlx::Connection as _;
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: ledger-lock test skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_ledger_{}", uuid::Uuid::now_v7().simple());
    let store = Store::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    // Reconciliation would settle the late entry too, after the settle time: a long one here
    // shows that the booking marks it itself, without asking the provider.
    let s = Stack::builder(44)
        .config(|config| {
            let mut config = short(config, Duration::from_secs(2));
            config.bookings.settle = Duration::from_secs(120);
            config
        })
        .jobs_in(store)
        .start()
        .await;
    let (earlier, _) = fresh_offer(&s).await;
    let done = booking(&earlier, "done-1");
    let (_, booked) = s.call("book_flight", done.clone()).await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
    let (offer, _) = fresh_offer(&s).await;

    let mut locker = sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut held = locker.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let lock = format!("LOCK TABLE {schema}.faregate_bookings IN ACCESS EXCLUSIVE MODE");
    sqlx::query(sqlx::AssertSqlSafe(lock))
        .execute(&mut *held)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body = booking(&offer, "locked-1");
    let (_, refused) =
        tokio::time::timeout(Duration::from_secs(20), s.call("book_flight", body.clone()))
            .await
            .unwrap_or_else(|_| panic!("the booking waited for the lock on its ledger"));
    assert_eq!(refused["status"], "unavailable", "{refused:#}");
    let text = refused["content"].as_str().unwrap_or_default();
    assert!(text.contains("was not sent"), "{text}");
    assert_eq!(orders_for(&s, "locked-1").1, 0, "nothing was sent");
    // The key that booked earlier, sent again while the ledger cannot be read: the gateway
    // cannot tell that it booked, and must not say that nothing was booked.
    let (_, replayed) = s.call("book_flight", done).await;
    assert_eq!(replayed["status"], "unavailable", "{replayed:#}");
    let text = replayed["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("whether that earlier request booked cannot be read right now")
            && !text.contains("nothing was booked"),
        "{text}"
    );
    assert_eq!(orders_for(&s, "done-1").1, 1);
    // A read of the ledger says it is not answering, within its second, not the request
    // timeout's 9 s later.
    let (status, listed) = s.get_json("/v1/bookings").await;
    assert_eq!(status, 503, "{listed:#}");
    let message = listed["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the booking ledger is not answering"),
        "{message}"
    );

    held.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    let late = wait_for_state(&s, "locked-1", "failed").await;
    assert_eq!(
        late["reason"], "not sent: the ledger answered too late",
        "{late:#}"
    );
    let (_, booked) = s.call("book_flight", body).await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
    assert_eq!(
        orders_for(&s, "locked-1"),
        (2, 1),
        "one order request per key"
    );
    drop(locker);
    crate::fleet::drop_schema(&url, &schema).await;
}
