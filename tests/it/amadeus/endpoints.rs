//! The Amadeus adapter against wiremock fixtures in Amadeus's documented wire format
//! (`tests/fixtures/amadeus/`): every endpoint faregate uses, its success shape, each documented
//! error shape with integer and string codes, the token's cache, single flight and refresh on
//! 401, 429 38194 vs 38195, malformed bodies, and the Hotel Search `data` array/object variants.

use std::time::Duration;

use faregate::providers::{ErrorKind, UpstreamError};
use faregate::tools::ToolOutput;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use super::*;
use crate::support::{fixture, in_days};

/// One endpoint as faregate uses it, with whatever must be mounted before it.
#[derive(Clone, Copy, Debug)]
enum Endpoint {
    SearchGet,
    SearchPost,
    Pricing,
    HotelList,
    HotelOffers,
    HotelOffer,
    Status,
}

const ENDPOINTS: [Endpoint; 7] = [
    Endpoint::SearchGet,
    Endpoint::SearchPost,
    Endpoint::Pricing,
    Endpoint::HotelList,
    Endpoint::HotelOffers,
    Endpoint::HotelOffer,
    Endpoint::Status,
];

/// Runs `ep` against a fresh server whose endpoint answers `response` once.
async fn run(ep: Endpoint, response: ResponseTemplate) -> Result<ToolOutput, UpstreamError> {
    let server = MockServer::start().await;
    token_ok(&server, 1).await;
    let c = client(&server);
    let hotels = || json!({"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32), "adults": 2});
    let (m, p, req) = match ep {
        Endpoint::SearchGet => ("GET", OFFERS, request("search_flights", flights_args())),
        Endpoint::SearchPost => {
            let mut a = flights_args();
            a["child_ages"] = json!([7]);
            ("POST", OFFERS, request("search_flights", a))
        }
        Endpoint::Pricing => {
            Mock::given(method("GET"))
                .and(path(OFFERS))
                .respond_with(vnd(200, &fixture("amadeus", "flight_offers_200.json")))
                .mount(&server)
                .await;
            let found = call(&c, &request("search_flights", flights_args())).await;
            let Ok(ToolOutput::SearchFlights(out)) = found else {
                panic!("{found:?}")
            };
            let id = out.offers[0].offer_id.clone();
            (
                "POST",
                PRICING,
                request("price_flight_offer", json!({"offer_id": id})),
            )
        }
        Endpoint::HotelList => ("GET", BY_CITY, request("search_hotels", hotels())),
        Endpoint::HotelOffers => {
            Mock::given(method("GET"))
                .and(path(BY_CITY))
                .respond_with(vnd(200, &fixture("amadeus", "hotel_list_200.json")))
                .mount(&server)
                .await;
            ("GET", HOTEL_OFFERS, request("search_hotels", hotels()))
        }
        Endpoint::HotelOffer => (
            "GET",
            "/v3/shopping/hotel-offers/ZBC0IYFMFV",
            request(
                "check_hotel_availability",
                json!({"hotel_result_id": "amh_ZBC0IYFMFV"}),
            ),
        ),
        Endpoint::Status => (
            "GET",
            STATUS,
            request(
                "get_flight_status",
                json!({"carrier_code": "IB", "flight_number": "3166", "departure_date": in_days(2)}),
            ),
        ),
    };
    Mock::given(method(m))
        .and(path(p))
        .and(bearer())
        .and(AcceptsAmadeus)
        .respond_with(response)
        .expect(1)
        .mount(&server)
        .await;
    call(&c, &req).await
}

/// What an error kind must look like.
type KindCheck = fn(&ErrorKind) -> bool;

#[tokio::test]
async fn every_documented_error_shape_is_classified_on_every_endpoint() {
    let hour = Duration::from_secs(3600);
    for ep in ENDPOINTS {
        let cases: Vec<(u16, &str, KindCheck)> = vec![
            (
                400,
                "error_400_int.json",
                |k| matches!(k, ErrorKind::Rejected { message } if message.contains("departureDate must be YYYY-MM-DD (parameter departureDate")),
            ),
            (
                400,
                "error_400_string.json",
                |k| matches!(k, ErrorKind::Rejected { message } if message.contains("INVALID DATA RECEIVED")),
            ),
            (404, "error_404.json", |k| {
                matches!(k, ErrorKind::Rejected { .. })
            }),
            (401, "error_401_header_string.json", |k| {
                *k == ErrorKind::Misconfigured { status: 401 }
            }),
            (403, "error_403.json", |k| {
                *k == ErrorKind::Misconfigured { status: 403 }
            }),
            (429, "error_429_rate.json", |k| {
                *k == ErrorKind::RateLimited { retry_after: None }
            }),
            (
                429,
                "error_429_quota.json",
                |k| matches!(k, ErrorKind::RateLimited { retry_after: Some(d) } if *d >= Duration::from_secs(3600)),
            ),
            (500, "error_500.json", |k| {
                *k == ErrorKind::Server {
                    status: 500,
                    retry_after: None,
                }
            }),
        ];
        for (status, file, check) in cases {
            let res = run(ep, vnd(status, &fixture("amadeus", file))).await;
            match res {
                Err(e) => assert!(check(&e.kind), "{ep:?} {file}: {e:?}"),
                Ok(out) => panic!("{ep:?} {file}: unexpected success {out:?}"),
            }
        }
        let quota = run(ep, vnd(429, &fixture("amadeus", "error_429_quota.json"))).await;
        assert!(
            quota
                .as_ref()
                .is_err_and(|e| e.detail.starts_with("quota exhausted")),
            "{ep:?}: {quota:?}"
        );
        let rate = run(
            ep,
            vnd(429, &fixture("amadeus", "error_429_rate.json")).insert_header("retry-after", "2"),
        )
        .await;
        assert_eq!(
            rate.map_err(|e| e.kind.retry_after()).err(),
            Some(Some(Duration::from_secs(2))),
            "{ep:?}: 38194 waits what the header says, 38195 at least {hour:?}"
        );
        for bad in [
            vnd(200, &json!({"data": {"unexpected": true}})),
            ResponseTemplate::new(200).set_body_string("<html>"),
        ] {
            let res = run(ep, bad).await;
            assert!(
                res.as_ref().is_err_and(|e| e.kind == ErrorKind::Malformed),
                "{ep:?}: {res:?}"
            );
        }
    }
}

#[tokio::test]
async fn flight_search_by_get_normalizes_offers_and_parses_plain_json_too() {
    let server = MockServer::start().await;
    token_ok(&server, 1).await;
    Mock::given(method("GET"))
        .and(path(OFFERS))
        .and(query_param("originLocationCode", "MAD"))
        .and(query_param("destinationLocationCode", "LON"))
        .and(query_param("adults", "2"))
        .and(query_param("travelClass", "BUSINESS"))
        .and(query_param("nonStop", "true"))
        .and(query_param("max", "50"))
        // Some answers say application/json: parsed the same.
        .respond_with(
            ResponseTemplate::new(200).set_body_json(fixture("amadeus", "flight_offers_200.json")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let mut args = flights_args();
    args["adults"] = json!(2);
    args["cabin_class"] = json!("business");
    args["max_connections"] = json!(0);
    let out = call(&client(&server), &request("search_flights", args)).await;
    let Ok(ToolOutput::SearchFlights(out)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(out.total_offers, 2);
    let cheapest = &out.offers[0];
    assert!(
        cheapest.offer_id.starts_with("amx_") && cheapest.offer_id.len() == 20,
        "{}",
        cheapest.offer_id
    );
    assert_eq!(cheapest.total_amount, "121.10", "sorted by price");
    assert_eq!(cheapest.airline.name, "Air France");
    let s = &cheapest.slices[0];
    assert_eq!((s.origin.as_str(), s.destination.as_str()), ("MAD", "LHR"));
    assert_eq!((s.stops, s.duration_minutes), (1, 290));
    assert_eq!(s.flights, ["AF1301", "AF1080"]);
    assert_eq!(out.offers[1].airline.name, "Iberia");
    assert_ne!(out.offers[0].offer_id, out.offers[1].offer_id);
}

#[tokio::test]
async fn children_and_connection_limits_search_by_post_with_the_method_override() {
    let server = MockServer::start().await;
    token_ok(&server, 1).await;
    Mock::given(method("POST"))
        .and(path(OFFERS))
        .and(header("x-http-method-override", "GET"))
        .and(header("content-type", "application/vnd.amadeus+json"))
        .and(body_partial_json(json!({
            "originDestinations": [{"id": "1", "originLocationCode": "MAD", "destinationLocationCode": "LON"},
                                   {"id": "2", "originLocationCode": "LON", "destinationLocationCode": "MAD"}],
            "travelers": [{"id": "1", "travelerType": "ADULT"}, {"id": "2", "travelerType": "CHILD"},
                          {"id": "3", "travelerType": "HELD_INFANT", "associatedAdultId": "1"}],
            "sources": ["GDS"],
            "searchCriteria": {"flightFilters": {"connectionRestriction": {"maxNumberOfConnections": 1}}},
        })))
        .respond_with(vnd(200, &fixture("amadeus", "flight_offers_200.json")))
        .expect(1)
        .mount(&server)
        .await;
    let mut args = flights_args();
    args["return_date"] = json!(in_days(37));
    args["child_ages"] = json!([7, 1]);
    args["max_connections"] = json!(1);
    let out = call(&client(&server), &request("search_flights", args)).await;
    assert!(
        matches!(out, Ok(ToolOutput::SearchFlights(ref o)) if o.offers.len() == 2),
        "{out:?}"
    );
}

#[tokio::test]
async fn pricing_sends_the_whole_searched_offer_and_refuses_ids_it_does_not_hold() {
    let server = MockServer::start().await;
    token_ok(&server, 1).await;
    Mock::given(method("GET"))
        .and(path(OFFERS))
        .respond_with(vnd(200, &fixture("amadeus", "flight_offers_200.json")))
        .mount(&server)
        .await;
    let c = client(&server);
    let found = call(&c, &request("search_flights", flights_args())).await;
    let Ok(ToolOutput::SearchFlights(found)) = found else {
        panic!("{found:?}")
    };
    let iberia = found
        .offers
        .iter()
        .find(|o| o.airline.iata_code == "IB")
        .map(|o| o.offer_id.clone())
        .unwrap_or_default();
    let searched = fixture("amadeus", "flight_offers_200.json")["data"][0].clone();
    Mock::given(method("POST"))
        .and(path(PRICING))
        .and(bearer())
        .and(header("x-http-method-override", "GET"))
        .and(body_partial_json(
            json!({"data": {"type": "flight-offers-pricing", "flightOffers": [searched]}}),
        ))
        .respond_with(vnd(
            200,
            &fixture("amadeus", "flight_offers_price_200.json"),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let priced = call(
        &c,
        &request("price_flight_offer", json!({"offer_id": iberia})),
    )
    .await;
    let Ok(ToolOutput::PriceFlightOffer(p)) = priced else {
        panic!("{priced:?}")
    };
    assert_eq!(p.offer.offer_id, iberia, "the id stays faregate's");
    assert_eq!(
        p.offer.total_amount, "149.02",
        "the priced amount, not the searched one"
    );
    assert_eq!(p.base_amount.as_deref(), Some("58.00"));
    assert_eq!(p.tax_amount.as_deref(), Some("91.02"));
    assert_eq!(p.passengers[0].passenger_type, "adult");

    for (id, text) in [
        ("amx_00000000deadbeef", "unknown or has expired"),
        ("off_0000AEatBgkm1L8gxKGGjG", "not issued by Amadeus"),
    ] {
        let res = call(&c, &request("price_flight_offer", json!({"offer_id": id}))).await;
        assert!(
            res.as_ref().is_err_and(
                |e| matches!(&e.kind, ErrorKind::Rejected { message } if message.contains(text))
            ),
            "{id}: {res:?}"
        );
    }
}

/// Matches requests that accept both JSON media types (wiremock's `header` matcher splits
/// values on commas, so the whole value is compared here).
struct AcceptsAmadeus;

impl wiremock::Match for AcceptsAmadeus {
    fn matches(&self, request: &Request) -> bool {
        request
            .headers
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == "application/json, application/vnd.amadeus+json")
    }
}

/// Matches hotel offer requests with 1 to 20 ids.
struct AtMost20Ids;

impl wiremock::Match for AtMost20Ids {
    fn matches(&self, request: &Request) -> bool {
        request
            .url
            .query_pairs()
            .find(|(k, _)| k == "hotelIds")
            .is_some_and(|(_, v)| (1..=20).contains(&v.split(',').count()))
    }
}

#[tokio::test]
async fn hotel_search_lists_then_prices_in_batches_of_at_most_20() {
    let server = MockServer::start().await;
    token_ok(&server, 1).await;
    let mut list = fixture("amadeus", "hotel_list_200.json");
    let template = list["data"][0].clone();
    let many: Vec<Value> = (0..45)
        .map(|i| {
            let mut h = template.clone();
            if i > 0 {
                h["hotelId"] = json!(format!("HLPAR{i:03}"));
            }
            h["distance"]["value"] = json!(f64::from(i) / 10.0);
            h
        })
        .collect();
    list["data"] = json!(many);
    Mock::given(method("GET"))
        .and(path(BY_CITY))
        .and(query_param("cityCode", "PAR"))
        .and(query_param("radius", "5"))
        .and(query_param("radiusUnit", "KM"))
        .respond_with(vnd(200, &list))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(HOTEL_OFFERS))
        .and(AtMost20Ids)
        .and(query_param("adults", "1"))
        .and(query_param("roomQuantity", "2"))
        .respond_with(vnd(200, &fixture("amadeus", "hotel_offers_200.json")))
        .expect(3)
        .mount(&server)
        .await;
    let args = json!({"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32), "rooms": 2, "adults": 2});
    let out = call(&client(&server), &request("search_hotels", args)).await;
    let Ok(ToolOutput::SearchHotels(out)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(out.searched_near, "PAR");
    assert_eq!(
        out.total_hotels, 3,
        "one available hotel per batch; unavailable ones left out"
    );
    let h = &out.hotels[0];
    assert_eq!(h.hotel_result_id, "amh_ZBC0IYFMFV");
    assert_eq!(h.cheapest_total_amount, "723.78");
    assert_eq!(h.name, "Hilton Paris Opera");
    assert_eq!(h.address, "FR");
}

#[tokio::test]
async fn hotel_search_data_may_be_one_object_and_no_rooms_is_an_empty_result() {
    for (answer, expected) in [
        (
            vnd(
                200,
                &json!({"data": fixture("amadeus", "hotel_offers_200.json")["data"][0]}),
            ),
            1,
        ),
        (vnd(400, &fixture("amadeus", "error_400_no_rooms.json")), 0),
        (vnd(200, &json!({"data": []})), 0),
    ] {
        let out = run(Endpoint::HotelOffers, answer).await;
        assert!(
            matches!(out, Ok(ToolOutput::SearchHotels(ref o)) if o.hotels.len() == expected),
            "{out:?}"
        );
    }
    let nothing = run(Endpoint::HotelList, vnd(400, &json!({"errors": [{"status": 400, "code": 895, "title": "NOTHING FOUND FOR REQUESTED CITY"}]}))).await;
    assert!(
        matches!(nothing, Ok(ToolOutput::SearchHotels(ref o)) if o.hotels.is_empty()),
        "{nothing:?}"
    );
}

#[tokio::test]
async fn availability_reads_one_offer_and_treats_no_rooms_as_unavailable() {
    let out = run(
        Endpoint::HotelOffer,
        vnd(200, &fixture("amadeus", "hotel_offer_200.json")),
    )
    .await;
    let Ok(ToolOutput::CheckHotelAvailability(a)) = out else {
        panic!("{out:?}")
    };
    assert!(a.available);
    assert_eq!(a.hotel_name, "Hilton Paris Opera");
    assert_eq!(
        (a.check_in_date.as_str(), a.check_out_date.as_str()),
        ("2026-11-02", "2026-11-04")
    );
    let rate = &a.rooms[0].rates[0];
    assert_eq!(a.rooms[0].name, "SUPERIOR ROOM, FREE WIFI");
    assert_eq!(
        (rate.total_amount.as_str(), rate.currency.as_str()),
        ("723.78", "EUR")
    );
    assert_eq!(
        rate.payment_type.as_deref(),
        Some("deposit"),
        "case-insensitive enum"
    );
    assert_eq!(
        rate.free_cancellation_until.as_deref(),
        Some("2026-10-31T23:59:00+01:00")
    );

    // The array variant of the same answer.
    let array = json!({"data": [fixture("amadeus", "hotel_offer_200.json")["data"]]});
    let out = run(Endpoint::HotelOffer, vnd(200, &array)).await;
    assert!(
        matches!(out, Ok(ToolOutput::CheckHotelAvailability(ref a)) if a.available),
        "{out:?}"
    );

    for empty in [
        vnd(400, &fixture("amadeus", "error_400_no_rooms.json")),
        ResponseTemplate::new(200),
        vnd(200, &json!({})),
        vnd(200, &json!({"data": []})),
    ] {
        let out = run(Endpoint::HotelOffer, empty).await;
        assert!(
            matches!(out, Ok(ToolOutput::CheckHotelAvailability(ref a)) if !a.available && a.rooms.is_empty()),
            "{out:?}"
        );
    }
}

#[tokio::test]
async fn flight_status_keeps_times_delays_gates_and_terminals() {
    let out = run(
        Endpoint::Status,
        vnd(200, &fixture("amadeus", "flight_status_200.json")),
    )
    .await;
    let Ok(ToolOutput::GetFlightStatus(s)) = out else {
        panic!("{out:?}")
    };
    let f = &s.flights[0];
    assert_eq!(
        (f.carrier_code.as_str(), f.flight_number.as_str()),
        ("IB", "3166")
    );
    let dep = f.points[0]
        .departure
        .as_ref()
        .unwrap_or_else(|| panic!("{f:?}"));
    assert_eq!(dep.scheduled.as_deref(), Some("2026-11-02T08:15+01:00"));
    assert_eq!(dep.delay_minutes, Some(25));
    assert_eq!(
        (dep.terminal.as_deref(), dep.gate.as_deref()),
        (Some("4"), Some("J52"))
    );
    assert!(f.points[1].arrival.is_some());
    let empty = run(
        Endpoint::Status,
        vnd(200, &json!({"meta": {"count": 0}, "data": []})),
    )
    .await;
    assert!(
        matches!(empty, Ok(ToolOutput::GetFlightStatus(ref s)) if s.flights.is_empty()),
        "{empty:?}"
    );
}
