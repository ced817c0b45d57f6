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

/// What Amadeus prices while Duffel is down is for comparison: this gateway books only through
/// Duffel. Its offers and rates say `bookable: false`, their texts never call them bookable,
/// and booking one is the gateway's own refusal saying to search again, sent to no provider.
#[tokio::test]
async fn amadeus_offers_and_rates_are_for_comparison_and_booking_one_says_search_again() {
    let s = Stack::start(21).await;
    s.down(RouteGroup::DuffelAirSearch);
    let found = call(
        &s,
        "search_flights",
        json!({"origin": "MAD", "destination": "LON", "departure_date": in_days(21)}),
    )
    .await;
    assert_eq!(found["provider"], "amadeus", "{found:#}");
    assert_eq!(found["data"]["offers"][0]["bookable"], false, "{found:#}");
    let text = found["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("for comparison only: book_flight cannot book them"),
        "{text}"
    );
    let id = found["data"]["offers"][0]["offer_id"].clone();

    let priced = call(&s, "price_flight_offer", json!({"offer_id": id})).await;
    assert_eq!(priced["status"], "ok", "{priced:#}");
    assert_eq!(priced["data"]["offer"]["bookable"], false, "{priced:#}");
    let text = priced["content"].as_str().unwrap_or_default();
    assert!(text.contains(" is priced at "), "{text}");
    assert!(
        !text.contains("bookable now") && !text.contains("Quote this price"),
        "{text}"
    );
    assert!(text.contains("book_flight cannot book it"), "{text}");

    let (status, refused) = s
        .call(
            "book_flight",
            json!({"arguments": {"offer_id": id, "travellers": [crate::bookings::traveller()]},
                   "idempotency_key": "amadeus-offer-1"}),
        )
        .await;
    assert_eq!(
        (status, refused["status"].as_str()),
        (200, Some("rejected")),
        "{refused:#}"
    );
    let text = refused["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with(&format!(
            "Nothing was booked: {} was priced by Amadeus for comparison only, and this gateway books only through Duffel, so book_flight cannot book it.",
            id.as_str().unwrap_or_default()
        )),
        "{text}"
    );
    assert!(text.contains("call search_flights again (once Duffel answers it) and book an offer whose bookable is true, with a new idempotency key"), "{text}");
    assert!(!text.contains("Correct the arguments"), "{text}");
    assert_eq!(s.requests(RouteGroup::DuffelAirOrders), 0, "nothing sent");

    s.down(RouteGroup::DuffelStays);
    let hotels = call(&s,
            "search_hotels",
            json!({"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23), "adults": 2}),
        )
        .await;
    assert_eq!(hotels["provider"], "amadeus", "{hotels:#}");
    assert_eq!(hotels["data"]["hotels"][0]["bookable"], false, "{hotels:#}");
    // The simulator gives about one hotel in six no rooms for a stay, decided by the hotel and
    // the dates (which move with today's date): the first hotel with rooms is the one to check.
    let mut avail = Value::Null;
    for hotel in hotels["data"]["hotels"].as_array().into_iter().flatten() {
        let id = hotel["hotel_result_id"].clone();
        avail = call(
            &s,
            "check_hotel_availability",
            json!({"hotel_result_id": id}),
        )
        .await;
        if avail["data"]["available"] == true {
            break;
        }
    }
    assert_eq!(
        avail["data"]["available"], true,
        "no hotel with rooms: {avail:#}"
    );
    let rate = &avail["data"]["rooms"][0]["rates"][0];
    assert_eq!(rate["bookable"], false, "{avail:#}");
    let text = avail["content"].as_str().unwrap_or_default();
    assert!(text.contains("book_hotel cannot book them"), "{text}");
    assert!(!text.contains("book soon"), "{text}");

    let (status, refused) = s
        .call(
            "book_hotel",
            json!({"arguments": {"rate_id": rate["rate_id"],
                    "guests": [{"given_name": "Ana", "family_name": "Garcia"}],
                    "email": "ana@example.com", "phone_number": "+34600000000"},
                   "idempotency_key": "amadeus-rate-1"}),
        )
        .await;
    assert_eq!(
        (status, refused["status"].as_str()),
        (200, Some("rejected")),
        "{refused:#}"
    );
    let text = refused["content"].as_str().unwrap_or_default();
    assert!(text.contains("so book_hotel cannot book it"), "{text}");
    assert!(text.contains("call search_hotels again (once Duffel answers it), check_hotel_availability on a hotel whose bookable is true, and book one of its rates"), "{text}");
    assert_eq!(
        s.requests(RouteGroup::DuffelStaysBookings),
        0,
        "nothing sent"
    );
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
