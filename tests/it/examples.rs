//! The two example tools from configuration that ship in `tools/` (`track_flight`, a flight
//! tracker in FlightAware AeroAPI's format, and `get_hotel_content`), in the shipped
//! configuration against the simulator, as `faregate demo` runs them: each answers through the
//! native endpoint, and with its simulator group down its breaker opens, its fallback text is
//! served, and once the group heals the probes close the breaker and it answers again.

use std::time::Duration;

use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use crate::support::{Stack, wait_until};

/// A hotel the simulator's Stays search returns in Paris (ids encode the hotel, so it is stable).
const PARIS_HOTEL: &str = "acc_00000SCKMVsotDKOZaBLSE";

/// Short breaker timings for the example tools: open after two failures in a row, half-open
/// after 300 ms, probes every 100 ms, no ramp.
fn fast_examples(mut config: faregate::config::Config) -> faregate::config::Config {
    for t in &mut config.tools {
        if t.http.is_none() {
            continue;
        }
        let mut breaker = t.breaker.to_builder();
        breaker
            .consecutive_failures(2)
            .open_for(Duration::from_millis(300))
            .open_for_max(Duration::from_millis(600))
            .probe_interval(Duration::from_millis(100))
            .ramp(Vec::new());
        t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
        t.stale_for = Duration::ZERO;
    }
    config
}

async fn stack() -> Stack {
    Stack::builder(7).config(fast_examples).start().await
}

async fn call(s: &Stack, tool: &str, arguments: Value) -> Value {
    let (status, body) = s.call(tool, json!({ "arguments": arguments })).await;
    assert!(status == 200 || status == 422, "{tool}: {status} {body:#}");
    body
}

/// Takes `group` down until its breaker on `tool` opens, checks the fallback, heals the group
/// and waits for the tool to answer again.
async fn trips_and_recovers(
    s: &Stack,
    tool: &str,
    arguments: Value,
    group: RouteGroup,
    fallback: &str,
) {
    s.down(group);
    for _ in 0..2 {
        let failed = call(s, tool, arguments.clone()).await;
        assert_eq!(failed["status"], "unavailable", "{failed:#}");
    }
    let asked = s.requests(group);
    let open = call(s, tool, arguments.clone()).await;
    assert_eq!(open["status"], "unavailable", "{open:#}");
    assert_eq!(open["breaker"], "open", "{open:#}");
    let text = open["content"].as_str().unwrap_or_default();
    assert!(text.starts_with(fallback), "{text}");
    assert!(!text.contains('{'), "placeholders filled: {text}");
    assert_eq!(s.requests(group), asked, "an open breaker sends nothing");

    s.sim.clear_faults();
    wait_until(
        Duration::from_secs(10),
        "the breaker to close again",
        || async {
            let body = call(s, tool, arguments.clone()).await;
            match body["status"].as_str() {
                Some("ok") => Ok(()),
                _ => Err(body.to_string()),
            }
        },
    )
    .await;
}

#[tokio::test]
async fn the_flight_tracker_example_answers_trips_and_recovers() {
    let s = stack().await;
    let ok = call(&s, "track_flight", json!({"ident": "BA117"})).await;
    assert_eq!(ok["status"], "ok", "{ok:#}");
    assert_eq!(ok["provider"], "flightaware", "{ok:#}");
    assert_eq!(ok["data"]["ident"], "BA117", "{ok:#}");
    assert_eq!(ok["data"]["origin"], "LHR", "{ok:#}");
    let text = ok["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("BA117: "), "{text}");
    assert!(text.contains("LHR to "), "{text}");

    let unknown = call(&s, "track_flight", json!({"ident": "ZZ1"})).await;
    assert_eq!(unknown["status"], "rejected", "{unknown:#}");
    let why = unknown["content"].as_str().unwrap_or_default();
    assert!(
        why.contains("No flights found for ident ZZ1"),
        "{unknown:#}"
    );

    trips_and_recovers(
        &s,
        "track_flight",
        json!({"ident": "BA117"}),
        RouteGroup::FlightTracker,
        "The live status of this flight could not be retrieved",
    )
    .await;
}

#[tokio::test]
async fn a_hotel_search_gives_the_hotel_id_get_hotel_content_takes() {
    let s = stack().await;
    let found = call(
        &s,
        "search_hotels",
        json!({"city_code": "PAR", "check_in_date": crate::support::in_days(30),
               "check_out_date": crate::support::in_days(32), "adults": 2, "max_results": 20}),
    )
    .await;
    assert_eq!(found["status"], "ok", "{found:#}");
    let meridian = found["data"]["hotels"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|h| h["name"] == "The Meridian House Paris")
        .cloned()
        .unwrap_or_else(|| panic!("the Meridian in Paris: {found:#}"));
    assert_eq!(meridian["hotel_id"], PARIS_HOTEL, "{meridian:#}");
    let content = call(&s, "get_hotel_content", json!({"hotel_id": PARIS_HOTEL})).await;
    assert_eq!(content["status"], "ok", "{content:#}");
}

#[tokio::test]
async fn the_hotel_content_example_answers_trips_and_recovers() {
    let s = stack().await;
    let ok = call(&s, "get_hotel_content", json!({"hotel_id": PARIS_HOTEL})).await;
    assert_eq!(ok["status"], "ok", "{ok:#}");
    assert_eq!(ok["provider"], "hotel_content", "{ok:#}");
    assert_eq!(ok["data"]["name"], "The Meridian House Paris", "{ok:#}");
    let amenities = ok["data"]["amenities"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(amenities.contains(&json!("Free WiFi")), "{ok:#}");
    let text = ok["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("The Meridian House Paris (4-star, Paris): "),
        "{text}"
    );
    assert!(text.contains("Amenities: Free WiFi, "), "{text}");

    trips_and_recovers(
        &s,
        "get_hotel_content",
        json!({"hotel_id": PARIS_HOTEL}),
        RouteGroup::HotelContent,
        "This hotel's description and amenities could not be retrieved",
    )
    .await;
}
