//! The example APIs (flight tracker, hotel content): their answers, their refusals and their
//! faults, as a provider of kind `http` sees them (no Duffel headers, no credential).

use serde_json::Value;

use super::{start, stays_body};
use crate::{Fault, RateLimitFault, RouteGroup};

#[tokio::test]
async fn the_flight_tracker_answers_in_aeroapi_shape_and_refuses_bad_idents() {
    let h = start(7).await;
    let r = h.send(h.client.get(h.url("/aeroapi/flights/BA117"))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let f = &r.body["flights"][0];
    assert_eq!(f["ident"], "BA117");
    assert_eq!(f["origin"]["code_iata"], "LHR");
    assert!(f["destination"]["code_iata"].is_string(), "{f}");
    for key in [
        "status",
        "scheduled_out",
        "estimated_out",
        "scheduled_in",
        "gate_origin",
    ] {
        assert!(f[key].is_string(), "{key} in {f}");
    }
    let bad = h
        .send(h.client.get(h.url("/aeroapi/flights/BA%2F117")))
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["reason"], "INVALID_ARGUMENT");
    let unknown = h.send(h.client.get(h.url("/aeroapi/flights/ZZ1"))).await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("ZZ1"))
    );
}

#[tokio::test]
async fn hotel_content_describes_the_hotels_stays_serves() {
    let h = start(7).await;
    let search = h.post("/stays/search", stays_body(48.8566, 2.3522)).await;
    assert_eq!(search.status, 200, "{}", search.body);
    let id = search.body["data"]["results"][0]["accommodation"]["id"]
        .as_str()
        .map(str::to_string)
        .expect("an accommodation id");
    let r = h
        .send(h.client.get(h.url(&format!("/content/v1/hotels/{id}"))))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["hotel"]["id"], id.as_str());
    assert_eq!(
        r.body["hotel"]["name"],
        search.body["data"]["results"][0]["accommodation"]["name"]
    );
    let amenities = r.body["hotel"]["amenities"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(amenities.len() >= 4, "{amenities:?}");
    assert!(r.body["hotel"]["description"]["long"].is_string());
    let unknown = h
        .send(h.client.get(h.url("/content/v1/hotels/acc_nope")))
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["reason"], "NOT_FOUND");
}

#[tokio::test]
async fn faults_apply_to_the_example_groups_in_their_own_error_shape() {
    let h = start(7).await;
    h.sim.set_fault(
        RouteGroup::FlightTracker,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    let down = h.send(h.client.get(h.url("/aeroapi/flights/BA117"))).await;
    assert_eq!(down.status, 503);
    assert_eq!(down.body["status"], 503);
    assert!(down.body["detail"].is_string());
    let other = h
        .send(h.client.get(h.url("/content/v1/hotels/acc_nope")))
        .await;
    assert_eq!(other.status, 404, "the other example group is untouched");

    h.sim.set_fault(
        RouteGroup::HotelContent,
        Fault {
            rate_limited: Some(RateLimitFault { retry_after_s: 7 }),
            ..Fault::default()
        },
    );
    let limited = h
        .send(h.client.get(h.url("/content/v1/hotels/acc_nope")))
        .await;
    assert_eq!(limited.status, 429);
    assert_eq!(
        limited
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("7")
    );
    assert_eq!(limited.body["reason"], Value::from("TOO_MANY_REQUESTS"));

    h.sim.clear_faults();
    let back = h.send(h.client.get(h.url("/aeroapi/flights/BA117"))).await;
    assert_eq!(back.status, 200);
}
