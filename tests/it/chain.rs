//! Provider chains end to end: the gateway on `127.0.0.1:0` against the simulator serving both
//! Duffel and Amadeus. When Duffel is down, Amadeus answers and the envelope says so; ids go
//! back to the provider that issued them; flight status is served by Amadeus; an exhausted
//! Amadeus quota keeps the breaker open for a long time.

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{Stack, in_days, status_by_amadeus_alone};

/// Calls `tool` with `arguments`; a tool result is always HTTP 200, whatever its status.
async fn call(s: &Stack, tool: &str, arguments: Value) -> Value {
    let (status, env) = s.call(tool, json!({ "arguments": arguments })).await;
    assert_eq!(status, 200, "{tool}: {env:#}");
    env
}

#[tokio::test]
async fn a_duffel_flights_outage_is_answered_by_amadeus_and_its_offer_priced_there() {
    let s = Stack::start(21).await;
    s.down(RouteGroup::DuffelAirSearch);
    let env = call(
        &s,
        "search_flights",
        json!({"origin": "MAD", "destination": "LON", "departure_date": in_days(21)}),
    )
    .await;
    assert_eq!(env["status"], "ok", "{env:#}");
    assert_eq!(env["provider"], "amadeus");
    let offers = env["data"]["offers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!offers.is_empty(), "{env:#}");
    let id = offers[0]["offer_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(id.starts_with("amx_"), "{id}");
    assert_eq!(
        s.requests(RouteGroup::DuffelAirSearch),
        1,
        "Duffel was tried first"
    );

    let priced = call(&s, "price_flight_offer", json!({"offer_id": id})).await;
    assert_eq!(priced["status"], "ok", "{priced:#}");
    assert_eq!(priced["provider"], "amadeus");
    assert_eq!(priced["data"]["offer"]["offer_id"], id.as_str());
    assert_eq!(
        s.requests(RouteGroup::DuffelAirOffers),
        0,
        "an Amadeus id is never sent to Duffel"
    );
    assert_eq!(
        s.sim.stats().amadeus_tokens_issued,
        1,
        "one token for both calls"
    );

    // A Duffel id goes to Duffel, never to Amadeus.
    s.sim.clear_faults();
    let duffel = call(
        &s,
        "search_flights",
        json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}),
    )
    .await;
    assert_eq!(duffel["provider"], "duffel", "{duffel:#}");
    let pricing_before = s.requests(RouteGroup::AmadeusFlights);
    let off = duffel["data"]["offers"][0]["offer_id"].clone();
    let priced = call(&s, "price_flight_offer", json!({"offer_id": off})).await;
    assert_eq!(priced["provider"], "duffel", "{priced:#}");
    assert_eq!(s.requests(RouteGroup::AmadeusFlights), pricing_before);
}

#[tokio::test]
async fn hotels_fall_over_to_amadeus_and_availability_follows_the_id() {
    let s = Stack::start(21).await;
    s.down(RouteGroup::DuffelStays);
    let env = call(&s,
            "search_hotels",
            json!({"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23), "adults": 2}),
        )
        .await;
    assert_eq!(env["status"], "ok", "{env:#}");
    assert_eq!(env["provider"], "amadeus");
    let id = env["data"]["hotels"][0]["hotel_result_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(id.starts_with("amh_"), "{env:#}");
    let avail = call(
        &s,
        "check_hotel_availability",
        json!({"hotel_result_id": id}),
    )
    .await;
    assert_eq!(avail["status"], "ok", "{avail:#}");
    assert_eq!(avail["provider"], "amadeus");
    assert!(avail["data"]["available"].is_boolean());
}

#[tokio::test]
async fn flight_status_is_served_by_amadeus_through_the_simulator() {
    let s = Stack::start(21).await;
    let env = call(
        &s,
        "get_flight_status",
        json!({"carrier_code": "IB", "flight_number": "3167", "departure_date": in_days(1)}),
    )
    .await;
    assert_eq!(env["status"], "ok", "{env:#}");
    assert_eq!(env["provider"], "amadeus");
    let flight = &env["data"]["flights"][0];
    assert_eq!(flight["carrier_code"], "IB");
    assert_eq!(flight["points"][0]["airport"], "MAD");
    let content = env["content"].as_str().unwrap_or_default();
    assert!(content.starts_with("IB 3167 on"), "{content}");
}

#[tokio::test]
async fn an_exhausted_amadeus_quota_keeps_the_breaker_open_for_a_long_time() {
    let s = Stack::builder(21)
        .config(status_by_amadeus_alone)
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            quota_exhausted: true,
            ..Fault::default()
        },
    );
    let args = json!({"carrier_code": "IB", "flight_number": "3167", "departure_date": in_days(1)});
    let env = call(&s, "get_flight_status", args.clone()).await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    assert!(
        env["retry_after_s"].as_u64().unwrap_or_default() >= 3600,
        "until the quota resets: {env:#}"
    );
    assert_eq!(env["breaker"], "open", "one 38195 opens it: {env:#}");
    let content = env["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("request quota is used up"),
        "the fallback says why: {content}"
    );
    let before = s.requests(RouteGroup::AmadeusStatus);
    let again = call(&s, "get_flight_status", args).await;
    assert_eq!(again["status"], "unavailable");
    assert!(
        again["content"]
            .as_str()
            .unwrap_or_default()
            .contains("request quota is used up"),
        "still said while the breaker holds the calls off: {again:#}"
    );
    assert_eq!(
        s.requests(RouteGroup::AmadeusStatus),
        before,
        "no retry reaches the provider"
    );
}
