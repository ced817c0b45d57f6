//! Fault injection and the admin API, over real HTTP with millisecond-scale delays.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{first_error, search_body, start, stays_body};
use crate::{Fault, RateLimitFault, RouteGroup};

const SEARCH: &str = "/air/offer_requests";

#[tokio::test]
async fn latency_delays_only_its_group() {
    let h = start(1).await;
    h.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 250,
            ..Fault::default()
        },
    );
    let t = Instant::now();
    let r = h.post(SEARCH, search_body("LHR", "CDG", 5)).await;
    assert_eq!(r.status, 201);
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    let t = Instant::now();
    assert_eq!(
        h.post("/stays/search", stays_body(51.5, -0.12))
            .await
            .status,
        200
    );
    assert!(
        t.elapsed() < Duration::from_millis(250),
        "other groups stay fast"
    );
}

#[tokio::test]
async fn error_rate_is_a_deterministic_fraction() {
    let h = start(1).await;
    h.sim.set_fault(
        RouteGroup::DuffelStays,
        Fault {
            error_rate: 0.5,
            ..Fault::default()
        },
    );
    let mut failed = Vec::new();
    for i in 1..=10 {
        let r = h.post("/stays/search", stays_body(51.5, -0.12)).await;
        if r.status != 200 {
            assert_eq!(r.status, 503);
            assert_eq!(first_error(&r)["type"], "api_error");
            assert_eq!(first_error(&r)["code"], "internal_server_error");
            failed.push(i);
        }
    }
    assert_eq!(failed, [2, 4, 6, 8, 10]);
    h.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            error_rate: 1.0,
            error_status: 502,
            ..Fault::default()
        },
    );
    let r = h.post("/air/orders", json!({})).await;
    assert_eq!(r.status, 502);
    assert_eq!(first_error(&r)["code"], "order_not_created");
    assert_eq!(
        h.sim.stats().groups[&RouteGroup::DuffelStays].statuses[&503],
        5
    );
}

fn reset_in(r: &super::Reply) -> Duration {
    let reset = httpdate::parse_http_date(r.headers["ratelimit-reset"].to_str().expect("ascii"))
        .expect("HTTP-date");
    reset.duration_since(SystemTime::now()).unwrap_or_default()
}

#[tokio::test]
async fn rate_limited_fault_sends_429_with_headers() {
    let h = start(1).await;
    h.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            rate_limited: Some(RateLimitFault { retry_after_s: 7 }),
            ..Fault::default()
        },
    );
    let r = h.post(SEARCH, search_body("LHR", "CDG", 5)).await;
    assert_eq!(r.status, 429);
    assert_eq!(first_error(&r)["type"], "rate_limit_error");
    assert_eq!(first_error(&r)["code"], "rate_limit_exceeded");
    assert_eq!(r.headers["retry-after"], "7");
    assert_eq!(r.headers["ratelimit-remaining"], "0");
    let wait = reset_in(&r);
    assert!(
        wait > Duration::from_secs(5) && wait <= Duration::from_secs(7),
        "{wait:?}"
    );
}

#[tokio::test]
async fn requests_per_minute_limits_with_a_window() {
    let h = start(1).await;
    h.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            requests_per_minute: Some(3),
            ..Fault::default()
        },
    );
    for remaining in ["2", "1", "0"] {
        let r = h.post(SEARCH, search_body("LHR", "CDG", 5)).await;
        assert_eq!(r.status, 201);
        assert_eq!(r.headers["ratelimit-limit"], "3");
        assert_eq!(r.headers["ratelimit-remaining"], remaining);
    }
    let r = h.post(SEARCH, search_body("LHR", "CDG", 5)).await;
    assert_eq!(r.status, 429);
    let retry: u64 = r.headers["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((55..=60).contains(&retry), "retry after {retry}");
    assert!(reset_in(&r) > Duration::from_secs(54));
    // Another group has its own window.
    assert_eq!(
        h.post("/stays/search", stays_body(51.5, -0.12))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn outage_answers_503_before_anything_else() {
    let h = start(1).await;
    h.sim.set_fault(
        RouteGroup::DuffelAirOffers,
        Fault {
            outage: true,
            latency_ms: 5_000,
            ..Fault::default()
        },
    );
    let t = Instant::now();
    let r = h.send(h.client.get(h.url("/air/offers/off_x"))).await;
    assert_eq!(r.status, 503, "even without credentials");
    assert_eq!(first_error(&r)["type"], "api_error");
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn hang_never_answers_while_other_groups_do() {
    let mut h = start(1).await;
    h.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    let hung = h
        .duffel(reqwest::Method::POST, SEARCH)
        .json(&search_body("LHR", "CDG", 5))
        .timeout(Duration::from_millis(300))
        .send();
    let other = h.post("/stays/search", stays_body(51.5, -0.12));
    let (hung, other) = tokio::join!(hung, other);
    assert!(hung.expect_err("no answer").is_timeout());
    assert_eq!(other.status, 200);

    // A hung request is released when the fault is cleared...
    let pending = tokio::spawn(
        h.duffel(reqwest::Method::POST, SEARCH)
            .json(&search_body("LHR", "CDG", 5))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!pending.is_finished());
    h.sim.clear_faults();
    let res = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("released")
        .expect("join");
    assert_eq!(res.expect("answer").status(), 201);

    // ...and shutdown does not wait for hung requests.
    h.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    let pending = tokio::spawn(
        h.duffel(reqwest::Method::POST, SEARCH)
            .json(&search_body("LHR", "CDG", 5))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let server = h.server.take().expect("server");
    drop(h);
    let served = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("shut down")
        .expect("join");
    assert!(served.is_ok());
    let res = pending.await.expect("join").expect("answered at shutdown");
    assert_eq!(res.status(), 503);
}

#[tokio::test]
async fn malformed_replaces_success_bodies_only() {
    let h = start(1).await;
    let offers = h.search("LHR", "CDG").await;
    h.sim.set_fault(
        RouteGroup::DuffelAirOffers,
        Fault {
            malformed: true,
            ..Fault::default()
        },
    );
    let r = h
        .get(&format!(
            "/air/offers/{}",
            offers[0]["id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({ "data": { "unexpected": true } }));
    assert!(r.headers.contains_key("x-request-id"));
    let r = h.get("/air/offers/off_0000unknown").await;
    assert_eq!(r.status, 404);
    assert_eq!(first_error(&r)["code"], "not_found");
}

#[tokio::test]
async fn admin_api_reads_sets_and_clears_faults() {
    let h = start(1).await;
    let r = h.send(h.client.get(h.url("/_sim/faults"))).await;
    assert_eq!(r.status, 200);
    let groups: Vec<&String> = r.body.as_object().expect("map").keys().collect();
    assert_eq!(
        groups,
        [
            "amadeus_auth",
            "amadeus_flights",
            "amadeus_hotels",
            "amadeus_status",
            "duffel_air_offers",
            "duffel_air_order_list",
            "duffel_air_orders",
            "duffel_air_search",
            "duffel_stays",
            "duffel_stays_booking_list",
            "duffel_stays_bookings",
            "flight_tracker",
            "hotel_content"
        ]
    );

    let put = |group: &str, body: &str| {
        h.client
            .put(h.url(&format!("/_sim/faults/{group}")))
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    let r = h
        .send(put(
            "duffel_air_search",
            r#"{"latency_ms":15000,"error_rate":0.25}"#,
        ))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["latency_ms"], 15000);
    assert_eq!(r.body["error_status"], 503, "defaulted");
    assert_eq!(h.sim.fault(RouteGroup::DuffelAirSearch).latency_ms, 15000);
    let r = h.send(h.client.get(h.url("/_sim/faults"))).await;
    assert_eq!(r.body["duffel_air_search"]["error_rate"], 0.25);

    let r = h.send(put("duffel_air_search", r#"{"latency":5}"#)).await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["message"]
            .as_str()
            .expect("message")
            .contains("unknown field `latency`"),
        "{}",
        r.body
    );
    let r = h
        .send(put("duffel_air_search", r#"{"error_rate":2}"#))
        .await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["message"]
            .as_str()
            .expect("message")
            .contains("error_rate")
    );
    let r = h.send(put("sabre_everything", "{}")).await;
    assert_eq!(r.status, 404);
    assert!(
        r.body["message"]
            .as_str()
            .expect("message")
            .contains("duffel_stays")
    );
    assert_eq!(r.body["valid_groups"].as_array().map(Vec::len), Some(13));

    h.send(put("duffel_stays", r#"{"outage":true}"#)).await;
    let r = h
        .send(h.client.delete(h.url("/_sim/faults/duffel_air_search")))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        serde_json::from_value::<Fault>(r.body).expect("fault"),
        Fault::default()
    );
    assert!(h.sim.fault(RouteGroup::DuffelStays).outage);
    let r = h.send(h.client.delete(h.url("/_sim/faults"))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["duffel_stays"]["outage"], false);
    assert!(!h.sim.fault(RouteGroup::DuffelStays).outage);
}

#[tokio::test]
async fn stats_count_requests_and_statuses_per_group() {
    let h = start(1).await;
    h.post(SEARCH, search_body("LHR", "CDG", 5)).await;
    h.send(
        h.client
            .post(h.url(SEARCH))
            .json(&search_body("LHR", "CDG", 5)),
    )
    .await;
    h.post("/stays/search", stays_body(51.5, -0.12)).await;
    let r = h.send(h.client.get(h.url("/_sim/stats"))).await;
    assert_eq!(r.status, 200);
    let search = &r.body["groups"]["duffel_air_search"];
    assert_eq!(search["requests"], 2);
    assert_eq!(search["statuses"], json!({ "201": 1, "401": 1 }));
    assert_eq!(r.body["groups"]["duffel_stays"]["statuses"]["200"], 1);
    assert_eq!(r.body["groups"]["duffel_air_orders"]["requests"], 0);
    assert_eq!(r.body["orders_created"], 0);
    let parsed: crate::SimStats = serde_json::from_value(r.body).expect("SimStats round-trips");
    assert_eq!(parsed, h.sim.stats());
    assert_eq!(Value::from(parsed.groups.len()), 13);
}

#[tokio::test]
async fn stats_count_arrivals_per_second() {
    let h = start(1).await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    for _ in 0..3 {
        h.post(SEARCH, search_body("LHR", "CDG", 5)).await;
    }
    let r = h.send(h.client.get(h.url("/_sim/stats"))).await;
    let arrivals = r.body["groups"]["duffel_air_search"]["arrivals"]
        .as_object()
        .expect("arrivals is an object of seconds");
    let total: u64 = arrivals.values().filter_map(Value::as_u64).sum();
    assert_eq!(
        total, 3,
        "every request counted in its second: {arrivals:?}"
    );
    for second in arrivals.keys() {
        let s: u64 = second.parse().expect("Unix seconds as keys");
        assert!(
            s >= before && s <= before + 60,
            "{s} is not around {before}"
        );
    }
    assert!(
        r.body["groups"]["duffel_stays"]["arrivals"]
            .as_object()
            .is_some_and(|m| m.is_empty())
    );
}

#[test]
fn arrival_counts_keep_the_last_hour_of_seconds() {
    let mut stats = crate::GroupStats::default();
    let seconds = crate::ARRIVAL_SECONDS as u64 + 10;
    for s in 0..seconds {
        stats.arrive(1_000 + s);
    }
    stats.arrive(1_000 + seconds - 1);
    assert_eq!(stats.requests, seconds + 1);
    assert_eq!(stats.arrivals.len(), crate::ARRIVAL_SECONDS);
    assert_eq!(stats.arrivals.keys().next(), Some(&1_010));
    assert_eq!(stats.arrivals[&(1_000 + seconds - 1)], 2);
}

#[tokio::test]
async fn a_script_changes_prices_and_refuses_steps_that_change_nothing() {
    let h = start(7).await;
    let before = h.search("JFK", "LHR").await;
    let script = |body: Value| {
        h.client
            .post(h.url("/_sim/script"))
            .header("content-type", "application/json")
            .body(body.to_string())
    };
    for (body, fix) in [
        (
            json!({"steps": [{"after_ms": 0, "flight": "BA117"}]}),
            "delay_minutes or gate",
        ),
        (
            json!({"steps": [{"after_ms": 0, "gate": "B1"}]}),
            "need \"flight\"",
        ),
        (
            json!({"steps": [{"after_ms": 0, "price_factor": 0}]}),
            "above 0",
        ),
        (
            json!({"steps": [{"after_ms": 0, "price": 1}]}),
            "unknown field",
        ),
    ] {
        let r = h.send(script(body.clone())).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let message = r.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(fix), "{body}: {message}");
    }
    let r = h
        .send(script(
            json!({"steps": [{"after_ms": 0, "price_factor": 0.5}]}),
        ))
        .await;
    assert_eq!(
        (r.status, r.body["price_factor"].as_f64()),
        (200, Some(0.5)),
        "{}",
        r.body
    );
    let after = h.search("JFK", "LHR").await;
    let total = |offers: &[Value]| -> i64 {
        offers
            .iter()
            .map(|o| super::minor(&o["total_amount"]))
            .sum()
    };
    let (was, now) = (total(&before), total(&after));
    assert!(
        was > 0 && now * 10 < was * 6 && now * 10 > was * 4,
        "halved: {was} → {now}"
    );

    let r = h.send(h.client.delete(h.url("/_sim/script"))).await;
    assert_eq!(r.body["price_factor"].as_f64(), Some(1.0));
    assert_eq!(
        total(&h.search("JFK", "LHR").await),
        was,
        "as generated again"
    );
}
