//! The call pipeline against wiremock upstreams: what a caller gets under each provider fault
//! ([`faults`]), and how one tool's trouble stays away from others and from callers that leave
//! ([`isolation`]). This file holds their helpers: a gateway built in process against a
//! wiremock upstream with short timings, and request counters.

mod faults;
mod isolation;

use std::sync::Arc;
use std::time::Duration;

use faregate::call::{CallRequest, Gateway};
use faregate::config::Config;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A gateway whose tools use `timeout`/`deadline` and the given tweak.
pub(crate) fn gateway(config: Config, tweak: impl FnOnce(&mut Config)) -> Arc<Gateway> {
    let mut config = config;
    // One provider per tool unless a test builds a chain: retries are the last provider's.
    for t in &mut config.tools {
        t.providers.retain(|p| p == "duffel");
    }
    tweak(&mut config);
    faregate::app::build(config, &crate::support::NoEnv)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .state
        .gateway
}

/// The configuration against `server`, every tool with `timeout` per attempt within `deadline`.
pub(crate) fn timed(server: &MockServer, timeout: Duration, deadline: Duration) -> Config {
    crate::support::with_timeouts(crate::support::config_for(&server.uri()), timeout, deadline)
}

/// The short timings most of these tests use: 300 ms per attempt within 1.5 s.
pub(crate) fn short(server: &MockServer) -> Config {
    timed(
        server,
        Duration::from_millis(300),
        Duration::from_millis(1500),
    )
}

/// A wiremock upstream whose flight search ([`SEARCH`]) answers every request with `response`.
pub(crate) async fn search_answering(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

pub(crate) fn flights() -> Value {
    json!({"origin": "LHR", "destination": "JFK", "departure_date": crate::support::in_days(30)})
}

pub(crate) fn booking() -> Value {
    json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG", "travellers": [{"given_name": "Ana", "family_name": "Garcia",
        "born_on": "1990-02-15", "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"}]})
}

pub(crate) async fn call(
    g: &Arc<Gateway>,
    tool: &str,
    arguments: Value,
) -> faregate::call::Envelope {
    g.call(CallRequest {
        tool: tool.into(),
        arguments,
        call_id: None,
        idempotency_key: (tool == "book_flight").then(|| "key-1".to_string()),
        deadline: None,
        client: faregate::clients::ClientName::local(),
        trace: None,
    })
    .await
    .unwrap_or_else(|e| panic!("{e:?}"))
}

pub(crate) async fn received(server: &MockServer, p: &str) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == p)
        .count()
}

pub(crate) const SEARCH: &str = "/air/offer_requests";
