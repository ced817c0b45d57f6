//! End to end: the gateway on `127.0.0.1:0` against the built-in simulator on another port,
//! both real HTTP servers, driven by a real HTTP client as an agent's backend would.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{self, MapEnv, Stack, in_days, send};

/// Calls `tool` and checks that it answered HTTP 200 with `"status": "ok"`.
async fn ok(s: &Stack, tool: &str, body: Value) -> Value {
    let (status, env) = s.call(tool, body).await;
    assert_eq!(status, 200, "{tool}: {env:#}");
    assert_eq!(env["status"], "ok", "{tool}: {env:#}");
    env
}

fn traveller() -> Value {
    json!({"given_name": "Ana", "family_name": "Garcia", "born_on": "1990-02-15", "gender": "f",
           "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"})
}

#[tokio::test]
async fn every_duffel_tool_answers_ok_with_data_end_to_end() {
    let s = Stack::start(7).await;
    let search = ok(
        &s,
        "search_flights",
        json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)},
                   "call_id": "call_abc"}),
    )
    .await;
    assert_eq!(search["call_id"], "call_abc");
    assert_eq!(search["tool"], "search_flights");
    assert_eq!(search["provider"], "duffel");
    assert_eq!(search["breaker"], "closed");
    let offers = search["data"]["offers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!offers.is_empty(), "{search:#}");
    let content = search["content"].as_str().unwrap_or_default();
    assert!(content.contains("offers JFK→LHR"), "{content}");
    assert!(content.contains("cheapest"), "{content}");

    let offer_id = offers[0]["offer_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let priced = ok(
        &s,
        "price_flight_offer",
        json!({"arguments": {"offer_id": offer_id}}),
    )
    .await;
    assert_eq!(priced["data"]["offer"]["offer_id"], offer_id.as_str());
    let total = priced["data"]["offer"]["total_amount"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // The offer, priced, for the traveller, under `key`.
    let booking = |key: &str| {
        json!({"arguments": {"offer_id": offer_id, "travellers": [traveller()],
                             "confirmed_total_amount": total},
               "idempotency_key": key})
    };
    let booked = ok(&s, "book_flight", booking("e2e-booking-1")).await;
    assert_eq!(booked["data"]["total_amount"], total.as_str());
    assert!(
        booked["data"]["booking_reference"]
            .as_str()
            .is_some_and(|r| r.len() == 6)
    );
    let stats = s.sim.stats();
    assert_eq!(
        stats
            .orders_by_idempotency_key
            .get("e2e-booking-1")
            .map(|s| s.orders),
        Some(1),
        "the key reached the provider"
    );
    // The same key again reaches the provider here (no booking ledger without a store):
    // Duffel refuses it as a duplicate, and the gateway finds the order it made under that key
    // and answers it as the booking, as the key promises.
    let repeat = ok(&s, "book_flight", booking("e2e-booking-1")).await;
    for field in [
        "order_id",
        "booking_reference",
        "total_amount",
        "travellers",
    ] {
        assert_eq!(
            repeat["data"][field], booked["data"][field],
            "{field}: {repeat:#}"
        );
    }
    // The same offer under a new key: booked, but not under this key. Nothing was booked by
    // this call, the model is not told "the earlier booking stands" (it may be another
    // client's), and it is told not to book another offer before asking the traveller.
    let (_, again) = s.call("book_flight", booking("e2e-booking-2")).await;
    assert_eq!(again["status"], "rejected", "{again:#}");
    let text = again["content"].as_str().unwrap_or_default();
    for says in [
        "already booked under another key",
        "this call booked nothing and charged nothing",
        "If this traveller booked it before under another idempotency key, that booking stands",
        "Do not book another offer before asking the traveller.",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(!text.contains("Correct the arguments"), "{text}");
    assert!(
        !text.contains(
            booked["data"]["booking_reference"]
                .as_str()
                .unwrap_or("(none)")
        ),
        "{text}"
    );
    assert_eq!(s.sim.stats().orders_created, 1);

    let hotels = ok(
        &s,
        "search_hotels",
        json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(21),
                                 "check_out_date": in_days(23), "adults": 2}}),
    )
    .await;
    let list = hotels["data"]["hotels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!list.is_empty(), "{hotels:#}");
    let id = list[0]["hotel_result_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let avail = ok(
        &s,
        "check_hotel_availability",
        json!({"arguments": {"hotel_result_id": id}}),
    )
    .await;
    assert_eq!(avail["data"]["hotel_result_id"], id.as_str());
    assert!(avail["data"]["available"].is_boolean());
}

#[tokio::test]
async fn invalid_arguments_get_422_naming_each_field() {
    let s = Stack::start(7).await;
    let (status, env) = s
        .call(
            "search_flights",
            json!({"arguments": {"origin": "jfk", "departure_date": "2020-01-01", "adults": 0}}),
        )
        .await;
    assert_eq!(status, 422, "{env:#}");
    assert_eq!(env["status"], "invalid_arguments");
    assert_eq!(
        env["breaker"], "",
        "no breaker decided it, as for a background call's (the OpenAPI document): {env:#}"
    );
    let content = env["content"].as_str().unwrap_or_default();
    for field in ["origin:", "destination: is required", "adults:"] {
        assert!(content.contains(field), "{field} missing: {content}");
    }
    assert_eq!(
        s.sim
            .stats()
            .groups
            .values()
            .map(|g| g.requests)
            .sum::<u64>(),
        0,
        "nothing reached the provider"
    );

    let (status, env) = s
        .call(
            "search_flights",
            json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": "2020-01-01"}}),
        )
        .await;
    assert_eq!(status, 422);
    assert!(
        env["content"]
            .as_str()
            .unwrap_or_default()
            .contains("departure_date: 2020-01-01 is in the past")
    );
}

#[tokio::test]
async fn provider_refusals_the_model_can_fix_are_rejected() {
    let s = Stack::start(7).await;
    let (status, env) = s
        .call(
            "price_flight_offer",
            json!({"arguments": {"offer_id": "off_doesnotexist"}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(env["status"], "rejected", "{env:#}");
    assert!(
        env["content"]
            .as_str()
            .unwrap_or_default()
            .contains("refused")
    );
}

#[tokio::test]
async fn unknown_tools_get_404_listing_the_known_ones() {
    let s = Stack::start(7).await;
    let (status, body) = s.call("search_trains", json!({"arguments": {}})).await;
    assert_eq!(status, 404);
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("There is no tool \"search_trains\"")
    );
    let known = body["known_tools"].as_array().cloned().unwrap_or_default();
    assert!(known.contains(&json!("search_flights")), "{body:#}");
    assert!(
        known.contains(&json!("get_flight_status")),
        "served by Amadeus: {body:#}"
    );
}

#[tokio::test]
async fn transport_errors_are_json_with_a_message() {
    let s = Stack::start(7).await;
    let url = s.url("/v1/tools/search_flights/call");
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (
            s.http
                .post(&url)
                .header("content-type", "application/json")
                .body("{\"arguments\": {"),
            400,
            "malformed JSON",
        ),
        (
            s.http
                .post(&url)
                .header("content-type", "application/json")
                .body(""),
            400,
            "empty",
        ),
        (
            s.http.post(&url).body("{}"),
            415,
            "send it with `Content-Type: application/json`",
        ),
        (
            s.http.post(&url).json(&json!({"args": {}})),
            400,
            "unknown field `args`",
        ),
        (
            s.http
                .post(&url)
                .json(&json!({"arguments": {}, "mode": "later"})),
            400,
            "mode \"later\" is not valid",
        ),
        (
            s.http.post(&url).body(vec![b' '; 300_000]),
            413,
            "larger than the 262144-byte limit",
        ),
        (
            s.http.get(s.url("/v1/nothing")),
            404,
            "no route /v1/nothing",
        ),
    ];
    for (req, status, text) in cases {
        let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(res.status().as_u16(), status, "{text}");
        let body: Value = res.json().await.unwrap_or_else(|e| panic!("{text}: {e}"));
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(text), "{message:?} lacks {text:?}");
    }
}

#[tokio::test]
async fn an_outage_turns_into_the_fallback_text_not_an_error() {
    let s = Stack::start(7).await;
    // Both flight providers of the chain are down.
    s.flights_down();
    let (status, env) = s
        .call(
            "search_flights",
            json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}}),
        )
        .await;
    assert_eq!(status, 200, "a tool result, not a transport error");
    assert_eq!(env["status"], "unavailable", "{env:#}");
    let content = env["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with("Flight search is temporarily unavailable"),
        "{content}"
    );
    assert!(
        content.contains("search_hotels"),
        "offers the tools that work: {content}"
    );
    assert!(env["retry_after_s"].as_u64().is_some());
    assert!(env["data"].is_null(), "nothing invented");
    // Hotels are unaffected.
    ok(&s,
        "search_hotels",
        json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23)}}),
    )
    .await;
}

#[tokio::test]
async fn a_hanging_provider_answers_at_the_tool_timeout() {
    let s = Stack::builder(7)
        .config(|c| {
            support::with_timeouts(c, Duration::from_millis(300), Duration::from_millis(600))
        })
        .start()
        .await;
    for group in [RouteGroup::DuffelAirSearch, RouteGroup::AmadeusFlights] {
        s.sim.set_fault(
            group,
            Fault {
                hang: true,
                ..Fault::default()
            },
        );
    }
    let (_, env) = s
        .call(
            "search_flights",
            json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}}),
        )
        .await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    s.sim.clear_faults();
}

#[tokio::test]
async fn the_catalog_lists_served_tools_with_schemas_and_health_is_open() {
    let s = Stack::start(7).await;
    let (_, body) = s.get_json("/v1/tools").await;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "search_flights",
            "price_flight_offer",
            "search_hotels",
            "check_hotel_availability",
            "get_flight_status",
            "book_flight",
            "book_hotel",
            "get_hotel_content",
            "track_flight"
        ]
    );
    let flights = &body["tools"][0];
    assert_eq!(
        flights["input_schema"]["properties"]["origin"]["pattern"],
        "^[A-Z]{3}$"
    );
    assert_eq!(flights["policy"]["timeout_ms"], 8000);
    let book = &body["tools"][5];
    assert_eq!(book["kind"], "write");
    assert_eq!(book["policy"]["retry_attempts"], 1);

    for path in ["/healthz", "/readyz"] {
        assert_eq!(s.get_json(path).await.0, 200, "{path}");
    }
    let (_, guidance) = s.get_json("/v1/prompts/agent-guidance").await;
    let guidance = guidance["guidance"].as_str().unwrap_or_default();
    assert!(guidance.contains("unavailable"), "{guidance}");
    // A model may offer to tell the traveller when a down tool is back, and knows the
    // application sets that up (there is no tool of its own for it).
    assert!(
        guidance.contains("told when it is back") && guidance.contains("back-in-service notice"),
        "{guidance}"
    );
}

#[tokio::test]
async fn client_keys_are_required_when_configured() {
    let s = Stack::builder(1)
        .env(MapEnv(vec![("FAREGATE_CLIENT_KEYS", "key-a,key-b")]))
        .start()
        .await;
    let tools = || s.http.get(s.url("/v1/tools"));
    let (status, headers, _) = send(tools()).await;
    assert_eq!(status, 401);
    assert!(headers.contains_key("www-authenticate"));
    assert_eq!(send(tools().bearer_auth("key-c")).await.0, 401);
    assert_eq!(send(tools().bearer_auth("key-b")).await.0, 200);
    assert_eq!(s.get_json("/healthz").await.0, 200, "probes stay open");
}

#[tokio::test]
async fn an_open_breaker_answers_at_once_without_calling_the_provider() {
    let s = Stack::start(7).await;
    s.flights_down();
    let body = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)}});
    // Five consecutive failures open the breaker (the shipped default).
    for i in 0..5 {
        let (_, env) = s.call("search_flights", body.clone()).await;
        assert_eq!(env["status"], "unavailable", "call {i}: {env:#}");
    }
    let reached = |s: &Stack| s.requests(RouteGroup::DuffelAirSearch);
    assert_eq!(reached(&s), 5);
    let (status, env) = s.call("search_flights", body.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(env["status"], "unavailable", "{env:#}");
    assert_eq!(env["breaker"], "open");
    let retry = env["retry_after_s"].as_u64().unwrap_or_default();
    assert!(
        (29..=30).contains(&retry),
        "the breaker's remaining open time, got {retry}"
    );
    assert_eq!(
        reached(&s),
        5,
        "the open breaker kept the call off the provider"
    );
    let content = env["content"].as_str().unwrap_or_default();
    assert!(
        content.contains(&format!("about {retry} seconds")),
        "{content}"
    );
    assert!(
        !content.contains("search_flights,"),
        "an open tool is not offered: {content}"
    );
    assert!(content.contains("search_hotels"), "{content}");
    // Other tools keep their own, closed breakers.
    s.sim.clear_faults();
    let hotels = ok(&s,
            "search_hotels",
            json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23)}}),
        )
        .await;
    assert_eq!(hotels["breaker"], "closed");
}

/// Agents asking the same search at once cost the provider one search: while the provider holds
/// the first, the others join it (whatever their key order); with `fresh_for`, any that come
/// after its answer are answered from memory, marked with `cached_age_s`. Counted at the
/// simulator, so no timing decides the count.
#[tokio::test]
async fn identical_searches_at_once_reach_the_provider_once() {
    let s = Stack::builder(5)
        .config(|mut c| {
            for t in &mut c.tools {
                if t.name == "search_flights" {
                    t.fresh_for = Duration::from_secs(60);
                }
            }
            c
        })
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    let date = in_days(21);
    let bodies: Vec<Value> = (0..10)
        .map(|i| match i % 2 {
            0 => json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": date}}),
            _ => json!({"arguments": {"departure_date": date, "destination": "LHR", "origin": "JFK"}}),
        })
        .collect();
    let calls = futures::future::join_all(bodies.into_iter().map(|b| s.call("search_flights", b)));
    let release = async {
        support::wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;
        s.sim.clear_faults();
    };
    let (answers, ()) = tokio::join!(calls, release);
    assert_eq!(
        s.requests(RouteGroup::DuffelAirSearch),
        1,
        "one provider search"
    );
    let first_offer = |env: &Value| env["data"]["offers"][0]["offer_id"].clone();
    for (status, env) in &answers {
        assert_eq!(
            (*status, env["status"].as_str()),
            (200, Some("ok")),
            "{env:#}"
        );
        assert_eq!(
            first_offer(env),
            first_offer(&answers[0].1),
            "the same answer"
        );
    }

    let (_, repeat) = s
        .call(
            "search_flights",
            json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": date}}),
        )
        .await;
    assert_eq!(repeat["status"], "ok");
    assert!(
        repeat["cached_age_s"].as_u64().is_some_and(|age| age <= 60),
        "{repeat:#}"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelAirSearch),
        1,
        "answered from memory"
    );
}

#[tokio::test]
async fn an_availability_outage_answers_availability_unknown_never_a_stale_result() {
    let s = Stack::start(23).await;
    let hotels = ok(
        &s,
        "search_hotels",
        json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32)}}),
    )
    .await;
    let id = hotels["data"]["hotels"][0]["hotel_result_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(id.starts_with("srr_"), "a Duffel Stays result: {hotels:#}");
    let args = json!({"arguments": {"hotel_result_id": id}});
    ok(&s, "check_hotel_availability", args.clone()).await;

    // The same hotel again while Duffel Stays is down (Amadeus never takes a Duffel id): the
    // rooms answered a moment ago are not offered again as if they were still there.
    s.down(RouteGroup::DuffelStays);
    let (status, during) = s.call("check_hotel_availability", args).await;
    assert_eq!(status, 200, "{during:#}");
    assert_eq!(during["status"], "unavailable", "{during:#}");
    assert!(during["data"].is_null(), "{during:#}");
    assert!(during["cached_age_s"].is_null(), "{during:#}");
    let content = during["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with(
            "Availability unknown: room availability at this hotel could not be checked"
        ),
        "{content}"
    );
    assert!(
        content.contains("Do not promise a room, a rate or a price"),
        "{content}"
    );
}
