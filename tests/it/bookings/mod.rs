//! Bookings end to end against the simulator, which counts every order request it receives:
//! what a booking's answer says when something fails before, at or after the order request
//! ([`outcomes`]), and the booking ledger: a key books once on any gateway sharing the store,
//! and an unknown outcome is reconciled with the provider ([`ledger`]); a client's daily budget
//! ([`budget`]); and `book_hotel` over Duffel Stays with the same guarantees ([`hotel`]).
//! This file holds their helpers: a stack with short timings and one provider per tool, a fresh
//! offer, and a booking body.

mod audit;
mod budget;
mod hotel;
mod keys;
mod ledger;
mod outcomes;
mod tenants;

use std::time::Duration;

use faregate::config::Config;
use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use crate::support::{Stack, StackBuilder, in_days, one_provider_per_tool, wait_until};

/// A stack whose tools answer within `timeout` (deadline: twice that), with one provider per
/// tool and breakers that reopen quickly (real sockets, so real time).
pub(crate) fn builder(seed: u64, timeout: Duration) -> StackBuilder {
    Stack::builder(seed).config(move |config| short(config, timeout))
}

/// `config` with one provider per tool, quickly reopening breakers, `timeout` per attempt
/// within twice that, and a booking ledger that settles within a second and reconciles every
/// 200 ms.
pub(crate) fn short(config: Config, timeout: Duration) -> Config {
    {
        let mut config = one_provider_per_tool(config);
        config.bookings.settle = Duration::from_secs(1);
        config.bookings.reconcile_every = Duration::from_millis(200);
        for t in &mut config.tools {
            let mut breaker = t.breaker.to_builder();
            breaker
                .open_for(Duration::from_millis(300))
                .open_for_max(Duration::from_millis(600))
                .probe_interval(Duration::from_millis(50))
                .ramp(vec![faregate::breaker::RampStage {
                    share: 0.5,
                    duration: Duration::from_millis(100),
                }]);
            t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
            t.timeout = timeout;
            t.deadline = timeout * 2;
        }
        config
    }
}

/// Searches flights and returns a Duffel offer id and its total.
pub(crate) async fn fresh_offer(s: &Stack) -> (String, String) {
    let (status, env) = s
        .call(
            "search_flights",
            json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}}),
        )
        .await;
    assert_eq!(
        (status, env["status"].as_str()),
        (200, Some("ok")),
        "{env:#}"
    );
    let offer = &env["data"]["offers"][0];
    let id = offer["offer_id"].as_str().unwrap_or_default().to_string();
    let total = offer["total_amount"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(id.starts_with("off_"), "{env:#}");
    (id, total)
}

/// One traveller, as on the passport.
pub(crate) fn traveller() -> Value {
    json!({"given_name": "Ana", "family_name": "Garcia", "born_on": "1990-02-15", "gender": "f",
           "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"})
}

/// The body of a `book_flight` call of `offer` under `key`.
pub(crate) fn booking(offer: &str, key: &str) -> Value {
    json!({"arguments": {"offer_id": offer, "travellers": [traveller()]}, "idempotency_key": key})
}

/// How many order requests carrying `key` reached the simulator, and how many orders it made
/// under it.
pub(crate) fn orders_for(s: &Stack, key: &str) -> (u64, u64) {
    let stats = s.sim.stats();
    let made = stats
        .orders_by_idempotency_key
        .get(key)
        .map_or(0, |k| k.orders);
    (s.requests(RouteGroup::DuffelAirOrders), made)
}

/// Searches hotels and checks their availability until one has a rate: (rate id, total,
/// currency). `call` runs one tool call and returns its envelope.
pub(crate) async fn fresh_rate<F, Fut>(call: F) -> (String, String, String)
where
    F: Fn(&'static str, Value) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let found = call(
        "search_hotels",
        json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(21),
                             "check_out_date": in_days(23), "adults": 1}}),
    )
    .await;
    let hotels = found["data"]["hotels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for hotel in &hotels {
        let id = hotel["hotel_result_id"].as_str().unwrap_or_default();
        let avail = call(
            "check_hotel_availability",
            json!({"arguments": {"hotel_result_id": id}}),
        )
        .await;
        let rate = &avail["data"]["rooms"][0]["rates"][0];
        if let Some(rate_id) = rate["rate_id"].as_str() {
            let text = |k: &str| rate[k].as_str().unwrap_or_default().to_string();
            return (rate_id.to_string(), text("total_amount"), text("currency"));
        }
    }
    panic!("no hotel with a rate: {found:#}");
}

/// The body of a `book_hotel` call of `rate` under `key`.
pub(crate) fn hotel_booking(rate: &str, key: &str) -> Value {
    json!({"arguments": {"rate_id": rate,
                         "guests": [{"given_name": "Ana", "family_name": "Garcia"}],
                         "email": "ana@example.com", "phone_number": "+34600000000"},
           "idempotency_key": key})
}

/// The ledger entry of `key`, as `GET /v1/bookings` lists it.
pub(crate) async fn entry(s: &Stack, key: &str) -> Value {
    let (_, listed) = s.get_json("/v1/bookings").await;
    listed["bookings"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["idempotency_key"] == key).cloned())
        .unwrap_or_else(|| panic!("no entry for {key}: {listed:#}"))
}

/// Polls `GET /v1/bookings` until the entry of `key` is there and in `state` (an entry written
/// late may not be listed yet, and a ledger just freed may not answer the first read).
pub(crate) async fn wait_for_state(s: &Stack, key: &str, state: &str) -> Value {
    wait_until(
        Duration::from_secs(15),
        "the booking to be reconciled",
        || async {
            let (_, listed) = s.get_json("/v1/bookings").await;
            let found = listed["bookings"]
                .as_array()
                .and_then(|l| l.iter().find(|e| e["idempotency_key"] == key).cloned());
            match found {
                Some(e) if e["state"] == state => Ok(e),
                Some(e) => Err(format!("{e}")),
                None => Err(format!("no entry for {key}: {listed}")),
            }
        },
    )
    .await
}
