//! The Amadeus adapter's OAuth token (client credentials) against wiremock: refresh once on an
//! expired token, misconfiguration on a second 401, the token endpoint's own failures, one token
//! request for a hundred cold calls, refresh before expiry; and what the adapter refuses to send.

use std::sync::Arc;
use std::time::Duration;

use faregate::call::Gateway;
use faregate::providers::ErrorKind;
use faregate::tools::{self, ToolOutput};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

#[tokio::test]
async fn an_expired_token_is_refreshed_once_and_the_call_retried_once() {
    let server = MockServer::start().await;
    token_ok(&server, 2).await;
    Mock::given(method("GET"))
        .and(path(STATUS))
        .respond_with(vnd(401, &fixture("amadeus", "error_401_expired.json")))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(STATUS))
        .respond_with(vnd(200, &fixture("amadeus", "flight_status_200.json")))
        .expect(1)
        .mount(&server)
        .await;
    let out = call(&client(&server), &status_request()).await;
    assert!(matches!(out, Ok(ToolOutput::GetFlightStatus(_))), "{out:?}");
}

#[tokio::test]
async fn a_second_401_is_misconfiguration_and_a_bad_header_is_not_refreshed() {
    let server = MockServer::start().await;
    token_ok(&server, 2).await;
    Mock::given(method("GET"))
        .and(path(STATUS))
        .respond_with(vnd(401, &fixture("amadeus", "error_401_expired.json")))
        .expect(2)
        .mount(&server)
        .await;
    let out = call(&client(&server), &status_request()).await;
    assert_eq!(
        out.map_err(|e| e.kind).err(),
        Some(ErrorKind::Misconfigured { status: 401 })
    );

    let server = MockServer::start().await;
    token_ok(&server, 1).await;
    Mock::given(method("GET"))
        .and(path(STATUS))
        .respond_with(vnd(
            401,
            &fixture("amadeus", "error_401_header_string.json"),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let out = call(&client(&server), &status_request()).await;
    assert_eq!(
        out.map_err(|e| e.kind).err(),
        Some(ErrorKind::Misconfigured { status: 401 })
    );
}

#[tokio::test]
async fn token_endpoint_failures_are_the_calls_upstream_errors() {
    let cases: Vec<(ResponseTemplate, ErrorKind)> = vec![
        (
            ResponseTemplate::new(401)
                .set_body_json(fixture("amadeus", "token_401_invalid_client.json")),
            ErrorKind::Misconfigured { status: 401 },
        ),
        (
            ResponseTemplate::new(404).set_body_string("no such path"),
            ErrorKind::Misconfigured { status: 404 },
        ),
        (
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": "unsupported_grant_type", "code": 38187})),
            ErrorKind::Misconfigured { status: 400 },
        ),
        (
            ResponseTemplate::new(500).set_body_string("oops"),
            ErrorKind::Server {
                status: 500,
                retry_after: None,
            },
        ),
        (
            ResponseTemplate::new(429).set_body_json(fixture("amadeus", "error_429_rate.json")),
            ErrorKind::RateLimited { retry_after: None },
        ),
        (
            ResponseTemplate::new(200).set_body_json(json!({"token_type": "Bearer"})),
            ErrorKind::Malformed,
        ),
    ];
    for (answer, kind) in cases {
        let server = MockServer::start().await;
        mount_token(&server, answer, 1).await;
        Mock::given(path(STATUS))
            .respond_with(vnd(200, &fixture("amadeus", "flight_status_200.json")))
            .expect(0)
            .mount(&server)
            .await;
        let out = call(&client(&server), &status_request()).await;
        let err = out.err().unwrap_or_else(|| panic!("{kind:?}: succeeded"));
        assert_eq!(err.kind, kind);
        assert!(err.detail.starts_with("token endpoint"), "{}", err.detail);
    }
}

#[tokio::test]
async fn one_hundred_concurrent_cold_calls_make_one_token_request() {
    let server = MockServer::start().await;
    mount_token(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(fixture("amadeus", "token_200.json"))
            .set_delay(Duration::from_millis(200)),
        1,
    )
    .await;
    Mock::given(method("GET"))
        .and(path(STATUS))
        .and(bearer())
        .respond_with(vnd(200, &fixture("amadeus", "flight_status_200.json")))
        .expect(101)
        .mount(&server)
        .await;
    let c = Arc::new(client(&server));
    let req = Arc::new(status_request());
    let calls = (0..100).map(|_| {
        let (c, req) = (c.clone(), req.clone());
        tokio::spawn(async move { call(&c, &req).await })
    });
    for res in futures::future::join_all(calls).await {
        let out = res.unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(out, Ok(ToolOutput::GetFlightStatus(_))), "{out:?}");
    }
    // A warm cache serves later calls without another token request (`expect(1)` above).
    let out = call(&c, &req).await;
    assert!(out.is_ok(), "{out:?}");
}

#[tokio::test]
async fn a_token_is_refreshed_before_it_expires() {
    let server = MockServer::start().await;
    let mut short = fixture("amadeus", "token_200.json");
    short["expires_in"] = json!(1);
    mount_token(&server, ResponseTemplate::new(200).set_body_json(short), 2).await;
    Mock::given(method("GET"))
        .and(path(STATUS))
        .respond_with(vnd(200, &fixture("amadeus", "flight_status_200.json")))
        .expect(3)
        .mount(&server)
        .await;
    let c = client(&server);
    assert!(call(&c, &status_request()).await.is_ok());
    assert!(
        call(&c, &status_request()).await.is_ok(),
        "still fresh: no new token"
    );
    // 10 % of a 1 s lifetime is refreshed early: after 0.95 s a new token is fetched.
    tokio::time::sleep(Duration::from_millis(950)).await;
    assert!(call(&c, &status_request()).await.is_ok());
}

#[tokio::test]
async fn ids_from_another_provider_and_bookings_are_refused_without_a_request() {
    let server = MockServer::start().await;
    token_ok(&server, 0).await;
    let c = client(&server);
    let book = tools::spec("book_flight")
        .unwrap_or_else(|| panic!("book_flight"))
        .parse(
            json!({"offer_id": "amx_00000000deadbeef", "travellers": [{"given_name": "Ana", "family_name": "Garcia",
                   "born_on": "1990-02-15", "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"}]}),
            Gateway::today(),
            Some("key-1"),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
    for req in [
        request(
            "check_hotel_availability",
            json!({"hotel_result_id": "srr_0000ASVBuJVLdmqtZDJ4ca"}),
        ),
        request(
            "price_flight_offer",
            json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG"}),
        ),
        book,
    ] {
        let out = call(&c, &req).await;
        assert!(
            out.as_ref()
                .is_err_and(|e| matches!(e.kind, ErrorKind::Rejected { .. })),
            "{out:?}"
        );
    }
}
