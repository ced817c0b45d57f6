//! A credential a built-in provider echoes in its answer (`sent Bearer …`) never reaches the
//! envelope the model reads nor the log: Amadeus's access token, API key and secret, and
//! Duffel's access token, are `[redacted]` as the answer is read (a probe saw an Amadeus 400
//! whose `detail` echoed the token reach the model and the log as it was).
//!
//! The subscriber is this test's thread-local default; the default `#[tokio::test]` runtime runs
//! the gateway's server tasks on this thread too (as in `bookings/audit.rs`).

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    self, Captured, MapEnv, TestGateway, in_days, one_provider_per_tool, send,
    status_by_amadeus_alone,
};

const ACCESS_TOKEN: &str = "IMqWhAnjU9j2Q7bR7Vq8ZB";
const API_KEY: &str = "amKey7Hq2Lx9Pw4Zt";
const API_SECRET: &str = "amSecret3Vb8Nc1Rd6";
const DUFFEL_TOKEN: &str = "duffel_test_k8Jd2mQp9WzR4tY1";

fn env() -> MapEnv {
    MapEnv(vec![
        ("AMADEUS_CLIENT_ID", API_KEY),
        ("AMADEUS_CLIENT_SECRET", API_SECRET),
        ("DUFFEL_ACCESS_TOKEN", DUFFEL_TOKEN),
    ])
}

/// The envelope of one call of `tool`.
async fn call(gw: &TestGateway, tool: &str, arguments: Value) -> Value {
    let req = reqwest::Client::new()
        .post(gw.url(&format!("/v1/tools/{tool}/call")))
        .json(&json!({ "arguments": arguments }));
    send(req).await.2
}

#[track_caller]
fn assert_clean(what: &str, text: &str) {
    for secret in [ACCESS_TOKEN, API_KEY, API_SECRET, DUFFEL_TOKEN] {
        assert!(!text.contains(secret), "{what} carries {secret}:\n{text}");
    }
}

#[tokio::test]
async fn an_amadeus_refusal_echoing_its_credentials_reaches_neither_the_model_nor_the_log() {
    let (captured, _default) = Captured::install();

    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/security/oauth2/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "type": "amadeusOAuth2Token", "token_type": "Bearer",
            "access_token": ACCESS_TOKEN, "expires_in": 1799
        })))
        .mount(&upstream)
        .await;
    let detail = format!("bad request (sent Bearer {ACCESS_TOKEN}, client {API_KEY}:{API_SECRET})");
    Mock::given(method("GET"))
        .and(path("/v2/schedule/flights"))
        .respond_with(
            ResponseTemplate::new(400).set_body_raw(
                json!({"errors": [{"status": 400, "code": 477, "title": "INVALID FORMAT",
                "detail": detail}]})
                .to_string(),
                "application/vnd.amadeus+json",
            ),
        )
        .mount(&upstream)
        .await;
    let config = status_by_amadeus_alone(support::config_for(&upstream.uri()));
    let gw = TestGateway::start(config, &env()).await;

    let answer = call(
        &gw,
        "get_flight_status",
        json!({"carrier_code": "IB", "flight_number": "3166", "departure_date": in_days(3)}),
    )
    .await;
    assert_eq!(answer["status"], "rejected", "{answer:#}");
    let text = answer.to_string();
    assert_clean("the envelope", &text);
    assert!(
        text.contains("sent Bearer [redacted], client [redacted]:[redacted]"),
        "the refusal's words stay, the credentials go: {answer:#}"
    );
    let log = captured.text();
    assert_clean("the log", &log);
    assert!(
        log.contains("sent Bearer [redacted]"),
        "the log line carries the refusal, redacted:\n{log}"
    );
}

#[tokio::test]
async fn a_duffel_refusal_echoing_its_token_reaches_neither_the_model_nor_the_log() {
    let (captured, _default) = Captured::install();

    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "meta": {"status": 422, "request_id": "FsJ"},
            "errors": [{"type": "validation_error", "code": "validation_required",
                "title": "Required field",
                "message": format!("slices can't be blank (token {DUFFEL_TOKEN})")}]
        })))
        .mount(&upstream)
        .await;
    let config = one_provider_per_tool(support::config_for(&upstream.uri()));
    let gw = TestGateway::start(config, &env()).await;

    let answer = call(
        &gw,
        "search_flights",
        json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)}),
    )
    .await;
    assert_eq!(answer["status"], "rejected", "{answer:#}");
    let text = answer.to_string();
    assert_clean("the envelope", &text);
    assert!(text.contains("(token [redacted])"), "{answer:#}");
    let log = captured.text();
    assert_clean("the log", &log);
    assert!(
        log.contains("(token [redacted])"),
        "the log line carries the refusal, redacted:\n{log}"
    );
}
