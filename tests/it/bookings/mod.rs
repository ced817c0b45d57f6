//! Bookings end to end against the simulator, which counts every order request it receives:
//! what a booking's answer says when something fails before, at or after the order request
//! ([`outcomes`]), and the booking ledger: a key books once on any gateway sharing the store,
//! and an unknown outcome is reconciled with the provider ([`ledger`]).
//! This file holds their helpers: a stack with short timings and one provider per tool, a fresh
//! offer, and a booking body.

mod budget;
mod ledger;
mod outcomes;

use std::time::Duration;

use faregate::config::Config;
use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use crate::support::{Stack, StackBuilder, in_days, one_provider_per_tool};

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
