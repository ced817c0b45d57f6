//! A client's daily booking budget: a booking it cannot pay is refused before the order
//! request (a flight's or a hotel's), a spent budget refuses before any provider request, and
//! bookings racing each other reach the provider only as far as the budget goes.

use std::sync::Arc;
use std::time::Duration;

use faregate::call::Gateway;
use faregate::clients::ClientName;
use faregate::jobs::Store;
use faregate::tools::spend::{Amount, Budget};
use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use super::{booking, fresh_rate, hotel_booking, short};
use crate::support::{NoEnv, TestGateway, TestSim, config_for, in_days, requests, send, start_sim};

/// A gateway with a ledger in SQLite against a fresh simulator, and its `Gateway` to set
/// budgets on (auth is off, so every call is the `local` client's).
async fn start(seed: u64) -> (TestSim, TestGateway, Arc<Gateway>, tempfile::TempDir) {
    let sim = start_sim(seed).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("faregate.db").display());
    let store = Store::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
    let config = short(config_for(&sim.url()), Duration::from_secs(2));
    let mut app = faregate::app::build(config, &NoEnv).unwrap_or_else(|e| panic!("{e:?}"));
    faregate::app::attach_jobs(&mut app, store, &NoEnv);
    let gateway = app.state.gateway.clone();
    (sim, TestGateway::serve(app).await, gateway, dir)
}

async fn call(gateway: &TestGateway, tool: &str, body: &Value) -> Value {
    let http = reqwest::Client::new();
    let url = gateway.url(&format!("/v1/tools/{tool}/call"));
    send(http.post(url).json(body)).await.2
}

/// Two offers of one search: (id, total, currency) each.
async fn two_offers(gateway: &TestGateway) -> [(String, String, String); 2] {
    let mut offers = offers(gateway).await;
    assert!(offers.len() >= 2, "{offers:?}");
    offers.truncate(2);
    let second = offers.pop().unwrap_or_default();
    let first = offers.pop().unwrap_or_default();
    [first, second]
}

/// The offers of one search: (id, total, currency) each.
async fn offers(gateway: &TestGateway) -> Vec<(String, String, String)> {
    let found = call(
        gateway,
        "search_flights",
        &json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}}),
    )
    .await;
    let listed = found["data"]["offers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    listed
        .iter()
        .map(|o| {
            let text = |k: &str| o[k].as_str().unwrap_or_default().to_string();
            (
                text("offer_id"),
                text("total_amount"),
                text("total_currency"),
            )
        })
        .collect()
}

fn amount(text: &str) -> Amount {
    Amount::parse(text).unwrap_or_else(|| panic!("{text}"))
}

fn budget(amount: &str, currency: &str) -> Option<Budget> {
    Some(Budget {
        per_day: Amount::parse(amount).unwrap_or_else(|| panic!("{amount}")),
        currency: currency.into(),
    })
}

#[tokio::test]
async fn a_booking_over_the_budget_is_refused_before_the_order_request() {
    let (sim, gateway, core, _dir) = start(51).await;
    let [(offer, _, currency), _] = two_offers(&gateway).await;
    core.set_budget(&ClientName::local(), budget("1.00", &currency));
    let env = call(&gateway, "book_flight", &booking(&offer, "budget-1")).await;
    assert_eq!(env["status"], "rejected", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("Not booked: this booking costs"), "{text}");
    assert!(text.contains("Nothing was booked"), "{text}");
    assert_eq!(requests(&sim.sim, RouteGroup::DuffelAirOrders), 0);
}

#[tokio::test]
async fn a_booking_in_another_currency_than_the_budget_is_refused() {
    let (sim, gateway, core, _dir) = start(52).await;
    let [(offer, _, currency), _] = two_offers(&gateway).await;
    let other = if currency == "JPY" { "EUR" } else { "JPY" };
    core.set_budget(&ClientName::local(), budget("1000000", other));
    let env = call(&gateway, "book_flight", &booking(&offer, "budget-2")).await;
    assert_eq!(env["status"], "rejected", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("bookings in another currency are refused"),
        "{text}"
    );
    assert_eq!(requests(&sim.sim, RouteGroup::DuffelAirOrders), 0);
}

#[tokio::test]
async fn a_spent_budget_refuses_before_any_provider_request() {
    let (sim, gateway, core, _dir) = start(53).await;
    let [(first, total, currency), (second, _, _)] = two_offers(&gateway).await;
    core.set_budget(&ClientName::local(), budget(&total, &currency));
    let booked = call(&gateway, "book_flight", &booking(&first, "budget-3")).await;
    assert_eq!(booked["status"], "ok", "{booked:#}");
    let offers_read = requests(&sim.sim, RouteGroup::DuffelAirOffers);
    let env = call(&gateway, "book_flight", &booking(&second, "budget-4")).await;
    assert_eq!(env["status"], "rejected", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.contains("is spent for today"), "{text}");
    assert_eq!(requests(&sim.sim, RouteGroup::DuffelAirOrders), 1);
    assert_eq!(
        requests(&sim.sim, RouteGroup::DuffelAirOffers),
        offers_read,
        "not even the offer was read"
    );
    // The refusal is in the ledger: nothing was booked under that key.
    let http = reqwest::Client::new();
    let (_, _, listed) = send(http.get(gateway.url("/v1/bookings"))).await;
    let refused = listed["bookings"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|e| e["idempotency_key"] == "budget-4")
                .cloned()
        })
        .unwrap_or_default();
    assert_eq!(refused["state"], "failed", "{listed:#}");
    assert_eq!(refused["reason"], "over_budget");
}

#[tokio::test]
async fn concurrent_bookings_reach_the_provider_only_as_far_as_the_budget_goes() {
    let (sim, gateway, core, _dir) = start(54).await;
    let mut offers = offers(&gateway).await;
    offers.truncate(6);
    assert!(offers.len() >= 3, "{offers:?}");
    // The two dearest together: every offer fits alone, and all of them together do not.
    let mut totals: Vec<Amount> = offers.iter().map(|(_, t, _)| amount(t)).collect();
    totals.sort();
    let per_day = totals
        .iter()
        .rev()
        .take(2)
        .fold(Amount::default(), |sum, t| {
            sum.checked_add(*t).unwrap_or_else(|| panic!("{totals:?}"))
        });
    let currency = offers[0].2.clone();
    core.set_budget(
        &ClientName::local(),
        budget(&per_day.to_string(), &currency),
    );
    let calls = offers.iter().enumerate().map(|(i, (offer, _, _))| {
        let body = booking(offer, &format!("budget-race-{i}"));
        let gateway = &gateway;
        async move { call(gateway, "book_flight", &body).await }
    });
    let answers = futures::future::join_all(calls).await;
    let mut spent = Amount::default();
    let mut booked = 0u64;
    for env in &answers {
        match env["status"].as_str() {
            Some("ok") => {
                booked += 1;
                let charged = amount(env["data"]["total_amount"].as_str().unwrap_or_default());
                spent = spent
                    .checked_add(charged)
                    .unwrap_or_else(|| panic!("{answers:?}"));
            }
            Some("rejected") => {
                let text = env["content"].as_str().unwrap_or_default();
                assert!(text.starts_with("Not booked"), "{text}");
            }
            _ => panic!("neither booked nor refused: {env:#}"),
        }
    }
    assert!(booked >= 1, "{answers:#?}");
    assert!(
        spent <= per_day,
        "booked {spent} of a budget of {per_day}: {answers:#?}"
    );
    assert_eq!(
        requests(&sim.sim, RouteGroup::DuffelAirOrders),
        booked,
        "only the bookings that fit reached the provider"
    );
}

#[tokio::test]
async fn a_hotel_over_the_budget_is_refused_before_the_booking_request() {
    let (sim, gateway, core, _dir) = start(55).await;
    let gateway = &gateway;
    let (rate, _, currency) =
        fresh_rate(|tool, body| async move { call(gateway, tool, &body).await }).await;
    core.set_budget(&ClientName::local(), budget("1.00", &currency));
    let env = call(
        gateway,
        "book_hotel",
        &hotel_booking(&rate, "budget-hotel-1"),
    )
    .await;
    assert_eq!(env["status"], "rejected", "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("Not booked: this booking costs"), "{text}");
    assert_eq!(requests(&sim.sim, RouteGroup::DuffelStaysBookings), 0);
}
