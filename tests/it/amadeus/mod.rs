//! The Amadeus adapter against wiremock upstreams that answer in Amadeus's wire format: every
//! endpoint and error shape ([`endpoints`]) and the OAuth token's life ([`tokens`]). This file
//! holds their helpers: fixtures, a client against wiremock, the token endpoint.

mod endpoints;
mod kept;
mod tokens;

use std::time::Duration;

use faregate::call::Gateway;
use faregate::providers::UpstreamError;
use faregate::providers::amadeus::AmadeusClient;
use faregate::secret::Secret;
use faregate::tools::{self, ToolOutput, ToolRequest};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{fixture, in_days};

pub(crate) const TOKEN: &str = "/v1/security/oauth2/token";
pub(crate) const OFFERS: &str = "/v2/shopping/flight-offers";
pub(crate) const PRICING: &str = "/v1/shopping/flight-offers/pricing";
pub(crate) const BY_CITY: &str = "/v1/reference-data/locations/hotels/by-city";
pub(crate) const HOTEL_OFFERS: &str = "/v3/shopping/hotel-offers";
pub(crate) const STATUS: &str = "/v2/schedule/flights";

/// A response as Amadeus's APIs send it: `application/vnd.amadeus+json`.
pub(crate) fn vnd(status: u16, body: &Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body.to_string(), "application/vnd.amadeus+json")
}

pub(crate) fn client(server: &MockServer) -> AmadeusClient {
    let http = faregate::providers::http::client(8).unwrap_or_else(|e| panic!("{e}"));
    let url = reqwest::Url::parse(&server.uri()).unwrap_or_else(|e| panic!("{e}"));
    AmadeusClient::new(
        http,
        url,
        Secret::new("TEST_KEY"),
        Secret::new("TEST SECRET&"),
    )
}

/// The token endpoint, answering `response`, expected `times` times.
pub(crate) async fn mount_token(server: &MockServer, response: ResponseTemplate, times: u64) {
    Mock::given(method("POST"))
        .and(path(TOKEN))
        .and(header("content-type", "application/x-www-form-urlencoded"))
        .and(body_string_contains("grant_type=client_credentials"))
        .and(body_string_contains("client_id=TEST_KEY"))
        .and(body_string_contains("client_secret=TEST+SECRET%26"))
        .respond_with(response)
        .expect(times)
        .mount(server)
        .await;
}

pub(crate) async fn token_ok(server: &MockServer, times: u64) {
    mount_token(
        server,
        ResponseTemplate::new(200).set_body_json(fixture("amadeus", "token_200.json")),
        times,
    )
    .await;
}

pub(crate) fn request(tool: &str, args: Value) -> ToolRequest {
    let spec = tools::spec(tool).unwrap_or_else(|| panic!("{tool}"));
    spec.parse(args, Gateway::today(), None)
        .unwrap_or_else(|e| panic!("{e:?}"))
}

pub(crate) fn flights_args() -> Value {
    json!({"origin": "MAD", "destination": "LON", "departure_date": in_days(30)})
}

pub(crate) async fn call(
    c: &AmadeusClient,
    req: &ToolRequest,
) -> Result<ToolOutput, UpstreamError> {
    c.call(req, Duration::from_secs(5)).await
}

/// The API's bearer token from the token fixture.
pub(crate) fn bearer() -> wiremock::matchers::HeaderExactMatcher {
    header("authorization", "Bearer AbCdEf0123456789")
}

pub(crate) fn status_request() -> ToolRequest {
    request(
        "get_flight_status",
        json!({"carrier_code": "IB", "flight_number": "3166", "departure_date": in_days(2)}),
    )
}
