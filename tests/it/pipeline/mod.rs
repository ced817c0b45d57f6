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
use wiremock::MockServer;

pub(crate) fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/duffel/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

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

pub(crate) fn short(server: &MockServer) -> Config {
    crate::support::with_timeouts(
        crate::support::config_for(&server.uri()),
        Duration::from_millis(300),
        Duration::from_millis(1500),
    )
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
