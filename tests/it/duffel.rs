//! The Duffel adapter against wiremock fixtures in Duffel's documented wire format: every
//! endpoint faregate uses, its success shape, each documented error shape, 429 with
//! `Retry-After`/`ratelimit-reset`, a malformed 200, and a slow answer past the timeout.

use std::time::Duration;

use tokio::time::Instant;

use faregate::call::{CallRequest, Gateway, Status};
use faregate::providers::duffel::DuffelClient;
use faregate::providers::{ErrorKind, UpstreamError};
use faregate::secret::Secret;
use faregate::tools::{self, ToolOutput, ToolRequest};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{self, fixture};

fn client(server: &MockServer) -> DuffelClient {
    let http = faregate::providers::http::client(8).unwrap_or_else(|e| panic!("{e}"));
    let url = reqwest::Url::parse(&server.uri()).unwrap_or_else(|e| panic!("{e}"));
    DuffelClient::new(http, url, Secret::new("duffel_test_token"))
}

fn request(tool: &str, args: Value, key: Option<&str>) -> ToolRequest {
    let spec = tools::spec(tool).unwrap_or_else(|| panic!("{tool}"));
    spec.parse(args, Gateway::today(), key)
        .unwrap_or_else(|e| panic!("{e:?}"))
}

/// One Duffel endpoint as faregate uses it.
struct Endpoint {
    method: &'static str,
    path: &'static str,
    tool: &'static str,
    args: fn() -> Value,
    key: Option<&'static str>,
}

fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint {
            method: "POST",
            path: "/air/offer_requests",
            tool: "search_flights",
            args: || json!({"origin": "LHR", "destination": "JFK", "departure_date": support::in_days(30)}),
            key: None,
        },
        Endpoint {
            method: "GET",
            path: "/air/offers/off_0000AEatBgkm1L8gxKGGjG",
            tool: "price_flight_offer",
            args: || json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG"}),
            key: None,
        },
        Endpoint {
            method: "POST",
            path: "/stays/search",
            tool: "search_hotels",
            args: || json!({"city_code": "PAR", "check_in_date": support::in_days(30), "check_out_date": support::in_days(32), "adults": 2}),
            key: None,
        },
        Endpoint {
            method: "POST",
            path: "/stays/search_results/srr_0000ASVBuJVLdmqtZDJ4ca/actions/fetch_all_rates",
            tool: "check_hotel_availability",
            args: || json!({"hotel_result_id": "srr_0000ASVBuJVLdmqtZDJ4ca"}),
            key: None,
        },
        Endpoint {
            method: "POST",
            path: "/air/orders",
            tool: "book_flight",
            args: || {
                json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG", "travellers": [{"given_name": "Ana", "family_name": "Garcia",
                "born_on": "1990-02-15", "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"}]})
            },
            key: Some("bk_123"),
        },
    ]
}

/// Mounts the offer lookup that booking does first.
async fn mount_offer(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/air/offers/off_0000AEatBgkm1L8gxKGGjG"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("duffel", "offer_200.json")))
        .mount(server)
        .await;
}

async fn call_endpoint(
    ep: &Endpoint,
    response: ResponseTemplate,
) -> Result<ToolOutput, UpstreamError> {
    let server = MockServer::start().await;
    if ep.tool == "book_flight" {
        mount_offer(&server).await;
    }
    Mock::given(method(ep.method))
        .and(path(ep.path))
        .and(header("authorization", "Bearer duffel_test_token"))
        .and(header("duffel-version", "v2"))
        .and(header("accept", "application/json"))
        .respond_with(response)
        .expect(1)
        .mount(&server)
        .await;
    let req = request(ep.tool, (ep.args)(), ep.key);
    client(&server).call(&req, Duration::from_secs(5)).await
}

#[tokio::test]
async fn every_endpoint_turns_documented_errors_into_the_right_kind() {
    let cases: Vec<(&str, u16, &str)> = vec![
        ("error_422_validation.json", 422, "rejected"),
        ("error_422_offer_gone.json", 422, "rejected"),
        ("error_404.json", 404, "rejected"),
        ("error_401.json", 401, "misconfigured"),
        ("error_500.json", 500, "upstream_5xx"),
        ("error_500.json", 503, "upstream_5xx"),
    ];
    for ep in endpoints() {
        for (file, status, expected) in &cases {
            let res = call_endpoint(
                &ep,
                ResponseTemplate::new(*status).set_body_json(fixture("duffel", file)),
            )
            .await;
            let err = res
                .err()
                .unwrap_or_else(|| panic!("{} {file} succeeded", ep.tool));
            assert_eq!(
                err.kind.as_str(),
                *expected,
                "{} {file} {status}: {err}",
                ep.tool
            );
            assert!(
                err.request_id.is_some(),
                "{} {file}: request id kept",
                ep.tool
            );
        }
    }
}

#[tokio::test]
async fn every_endpoint_reports_429_with_its_wait() {
    for ep in endpoints() {
        let reset =
            httpdate::fmt_http_date(faregate::clock::system_now() + Duration::from_secs(90));
        let res = call_endpoint(
            &ep,
            ResponseTemplate::new(429)
                .insert_header("ratelimit-limit", "60")
                .insert_header("ratelimit-remaining", "0")
                .insert_header("ratelimit-reset", reset.as_str())
                .set_body_json(fixture("duffel", "error_429.json")),
        )
        .await;
        match res.map_err(|e| e.kind) {
            Err(ErrorKind::RateLimited {
                retry_after: Some(d),
            }) => {
                assert!((88..=90).contains(&d.as_secs()), "{} waited {d:?}", ep.tool)
            }
            other => panic!("{}: {other:?}", ep.tool),
        }
        let res = call_endpoint(
            &ep,
            ResponseTemplate::new(429)
                .insert_header("retry-after", "120")
                .set_body_json(fixture("duffel", "error_429.json")),
        )
        .await;
        assert_eq!(
            res.err().map(|e| e.kind),
            Some(ErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(120))
            }),
            "{}",
            ep.tool
        );
    }
}

#[tokio::test]
async fn every_endpoint_calls_a_200_with_the_wrong_shape_malformed() {
    for ep in endpoints() {
        for body in [
            json!({"data": {"unexpected": true}}),
            json!({"offers": []}),
            json!([1, 2, 3]),
        ] {
            let status = if ep.method == "POST" && ep.path.ends_with("orders") {
                201
            } else {
                200
            };
            let res = call_endpoint(
                &ep,
                ResponseTemplate::new(status).set_body_json(body.clone()),
            )
            .await;
            assert_eq!(
                res.err().map(|e| e.kind),
                Some(ErrorKind::Malformed),
                "{} with {body}",
                ep.tool
            );
        }
        let res = call_endpoint(
            &ep,
            ResponseTemplate::new(200).set_body_string("{\"data\": {\"trunc"),
        )
        .await;
        assert_eq!(
            res.err().map(|e| e.kind),
            Some(ErrorKind::Malformed),
            "{} truncated",
            ep.tool
        );
    }
}

#[tokio::test]
async fn search_flights_sends_the_documented_request_and_normalizes_offers() {
    let server = MockServer::start().await;
    let date = support::in_days(30);
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .and(query_param("return_offers", "true"))
        .and(query_param("supplier_timeout", "7000"))
        .and(header("content-type", "application/json"))
        .and(body_partial_json(json!({"data": {
            "slices": [{"origin": "LHR", "destination": "JFK", "departure_date": date}],
            "passengers": [{"type": "adult"}, {"type": "adult"}, {"age": 9}],
            "cabin_class": "business",
            "max_connections": 0
        }})))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(fixture("duffel", "offer_request_201.json")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let req = request(
        "search_flights",
        json!({"origin": "LHR", "destination": "JFK", "departure_date": date, "adults": 2,
               "child_ages": [9], "cabin_class": "business", "max_connections": 0}),
        None,
    );
    let out = client(&server)
        .call(&req, Duration::from_secs(8))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::SearchFlights(out) = out else {
        panic!("{out:?}")
    };
    assert_eq!(out.total_offers, 2);
    let cheapest = &out.offers[0];
    assert_eq!(cheapest.total_amount, "540.10", "cheapest first");
    assert_eq!(cheapest.slices[0].stops, 1);
    assert_eq!(cheapest.slices[0].flights, ["IB3167", "IB6251"]);
    assert_eq!(cheapest.slices[0].duration_minutes, 700);
    assert_eq!(out.offers[1].airline.name, "British Airways");
    let text = ToolOutput::SearchFlights(out).content();
    assert!(text.starts_with("2 offers LHR→JFK on"), "{text}");
    assert!(
        text.contains("cheapest 540.10 GBP (Iberia; IB3167+IB6251, 1 stop, 11h40m"),
        "{text}"
    );
    assert!(
        text.contains("fastest 812.40 GBP (British Airways; BA117, nonstop, 8h05m"),
        "{text}"
    );
}

#[tokio::test]
async fn pricing_returns_the_current_price_and_passenger_ids() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/air/offers/off_0000AEatBgkm1L8gxKGGjG"))
        .and(query_param("return_available_services", "false"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("duffel", "offer_200.json")))
        .expect(1)
        .mount(&server)
        .await;
    let req = request(
        "price_flight_offer",
        json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG"}),
        None,
    );
    let out = client(&server)
        .call(&req, Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::PriceFlightOffer(p) = &out else {
        panic!("{out:?}")
    };
    assert_eq!(p.offer.total_amount, "812.40");
    assert_eq!(p.tax_amount.as_deref(), Some("202.40"));
    assert_eq!(p.passengers[0].passenger_id, "pas_0000AEatBgILqTHcCDhDmr");
    assert_eq!(
        p.price_guarantee_expires_at.as_deref(),
        Some("2030-10-21T09:00:00Z")
    );
    assert!(
        out.content().contains("bookable now at 812.40 GBP"),
        "{}",
        out.content()
    );
}

#[tokio::test]
async fn booking_pays_the_offer_total_and_records_the_idempotency_key() {
    let server = MockServer::start().await;
    mount_offer(&server).await;
    Mock::given(method("POST"))
        .and(path("/air/orders"))
        .and(body_partial_json(json!({"data": {
            "type": "instant",
            "selected_offers": ["off_0000AEatBgkm1L8gxKGGjG"],
            "passengers": [{"id": "pas_0000AEatBgILqTHcCDhDmr", "given_name": "Ana", "family_name": "Garcia",
                            "gender": "f", "title": "ms", "born_on": "1990-02-15"}],
            "payments": [{"type": "balance", "amount": "812.40", "currency": "GBP"}],
            "metadata": {"faregate_idempotency_key": "bk_123"}
        }})))
        .respond_with(ResponseTemplate::new(201).set_body_json(fixture("duffel", "order_201.json")))
        .expect(1)
        .mount(&server)
        .await;
    let ep = &endpoints()[4];
    let req = request(ep.tool, (ep.args)(), ep.key);
    let out = client(&server)
        .call(&req, Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::BookFlight(b) = &out else {
        panic!("{out:?}")
    };
    assert_eq!(b.booking_reference, "RZPNX8");
    assert_eq!(b.idempotency_key, "bk_123");
    assert_eq!(b.travellers, ["Ana Garcia"]);
}

#[tokio::test]
async fn booking_refuses_a_changed_price_without_ordering() {
    let server = MockServer::start().await;
    mount_offer(&server).await;
    Mock::given(method("POST"))
        .and(path("/air/orders"))
        .respond_with(ResponseTemplate::new(201).set_body_json(fixture("duffel", "order_201.json")))
        .expect(0)
        .mount(&server)
        .await;
    let mut args = (endpoints()[4].args)();
    args["confirmed_total_amount"] = json!("700.00");
    let req = request("book_flight", args, Some("bk_1"));
    let err = client(&server)
        .call(&req, Duration::from_secs(5))
        .await
        .err();
    match err.map(|e| e.kind) {
        Some(ErrorKind::Rejected { message }) => {
            assert!(
                message.starts_with("Nothing was booked: confirmed_total_amount 700.00 is not the total the provider quotes for this offer now, 812.40 GBP")
                    && message.ends_with("call book_flight again with confirmed_total_amount \"812.40\" and a new idempotency key."),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn hotel_search_uses_the_city_centre_and_sorts_by_price() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/stays/search"))
        .and(body_partial_json(json!({"data": {"rooms": 1, "guests": [{"type": "adult"}, {"type": "adult"}],
            "location": {"radius": 5.0, "geographic_coordinates": {"latitude": 48.8566, "longitude": 2.3522}}}})))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("duffel", "stays_search_200.json")))
        .expect(1)
        .mount(&server)
        .await;
    let ep = &endpoints()[2];
    let out = client(&server)
        .call(&request(ep.tool, (ep.args)(), None), Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::SearchHotels(h) = &out else {
        panic!("{out:?}")
    };
    assert_eq!(h.hotels[0].name, "Petit Hôtel Marais");
    assert_eq!(h.hotels[1].address, "1 Rue Example, 75009, Paris, FR");
    let text = out.content();
    assert!(text.contains("2 hotels near Paris (PAR)"), "{text}");
    assert!(
        text.contains("cheapest 289.50 EUR for the stay (Petit Hôtel Marais, 3★"),
        "{text}"
    );
}

#[tokio::test]
async fn unknown_cities_without_coordinates_are_rejected_before_any_request() {
    let server = MockServer::start().await;
    let req = request(
        "search_hotels",
        json!({"city_code": "QQQ", "check_in_date": support::in_days(3), "check_out_date": support::in_days(4)}),
        None,
    );
    let err = client(&server)
        .call(&req, Duration::from_secs(5))
        .await
        .err();
    assert!(
        matches!(err.map(|e| e.kind), Some(ErrorKind::Rejected { message }) if message.contains("latitude and longitude"))
    );
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn availability_lists_bookable_rates_only() {
    let ep = &endpoints()[3];
    let out = call_endpoint(
        ep,
        ResponseTemplate::new(200).set_body_json(fixture("duffel", "fetch_all_rates_200.json")),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::CheckHotelAvailability(a) = &out else {
        panic!("{out:?}")
    };
    assert!(a.available);
    let rates: Vec<&str> = a
        .rooms
        .iter()
        .flat_map(|r| r.rates.iter().map(|x| x.rate_id.as_str()))
        .collect();
    assert_eq!(
        rates,
        ["rat_0000ASVBuJVLdmqtZDJ4cc", "rat_0000ASVBuJVLdmqtZDJ4ce"],
        "sold-out rate dropped"
    );
    assert_eq!(
        a.rooms[0].rates[0].free_cancellation_until.as_deref(),
        Some("2030-10-30T23:59:00Z")
    );
    let text = out.content();
    assert!(
        text.contains("Hotel Example Opera has 2 available rates"),
        "{text}"
    );
    assert!(text.contains("from 412.00 EUR (Superior Double Room, room only, free cancellation until 2030-10-30T23:59:00Z)"), "{text}");
}

/// Every endpoint, answered slower than the tool's timeout, becomes `unavailable` at the
/// timeout rather than waiting for the provider (real sockets, so real but short durations).
#[tokio::test]
async fn a_slow_answer_past_the_timeout_gets_the_fallback_at_the_timeout() {
    for ep in endpoints() {
        let server = MockServer::start().await;
        if ep.tool == "book_flight" {
            mount_offer(&server).await;
        }
        Mock::given(method(ep.method))
            .and(path(ep.path))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
            .mount(&server)
            .await;
        let config = support::with_timeouts(
            support::config_for(&server.uri()),
            Duration::from_millis(300),
            Duration::from_millis(500),
        );
        let app = faregate::app::build(config, &support::NoEnv).unwrap_or_else(|e| panic!("{e:?}"));
        let started = Instant::now();
        let env = app
            .state
            .gateway
            .call(CallRequest {
                tool: ep.tool.into(),
                arguments: (ep.args)(),
                call_id: Some("c1".into()),
                idempotency_key: ep.key.map(str::to_string),
                deadline: None,
                client: faregate::clients::ClientName::local(),
                trace: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let took = started.elapsed();
        assert_eq!(env.status, Status::Unavailable, "{}: {env:?}", ep.tool);
        assert!(
            took < Duration::from_millis(2500),
            "{} waited {took:?}",
            ep.tool
        );
        assert_eq!(
            env.retry_after_s,
            Some(10),
            "a single timeout: a short estimate"
        );
        if ep.tool == "book_flight" {
            assert!(
                env.content.contains("not known whether it went through"),
                "{}",
                env.content
            );
        } else {
            assert!(
                env.content.contains("temporarily unavailable") || env.content.contains("unknown"),
                "{}",
                env.content
            );
        }
    }
}
