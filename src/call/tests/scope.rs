//! Breaker scope on tokio's paused clock: with `provider`, one tool's failures open the breaker
//! every tool of the provider shares, and another tool fails fast with its own fallback text;
//! with `credential`, each provider account has its own breaker; by default each tool keeps its
//! own.

use super::*;
use crate::breaker::{BreakerKey, BreakerScope};
use crate::call::envelope::{Envelope, Status};
use crate::call::gateway::CallRequest;

fn request(tool: &str, arguments: Value) -> CallRequest {
    CallRequest {
        tool: tool.into(),
        arguments,
        call_id: None,
        idempotency_key: None,
        deadline: None,
        client: crate::clients::ClientName::local(),
        trace: None,
    }
}

fn flight_search(days_ahead: i64) -> CallRequest {
    let date = Gateway::today() + chrono::Duration::days(days_ahead);
    request(
        "search_flights",
        json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()}),
    )
}

fn hotel_search() -> CallRequest {
    let check_in = Gateway::today() + chrono::Duration::days(30);
    let check_out = check_in + chrono::Duration::days(2);
    request(
        "search_hotels",
        json!({"city_code": "PAR", "check_in_date": check_in.to_string(),
               "check_out_date": check_out.to_string()}),
    )
}

/// A gateway over the shipped configuration with `edit` applied, served by `providers`.
fn gateway_where(
    edit: impl FnOnce(&mut Config),
    providers: &[(&str, &Arc<Scripted>)],
) -> Arc<Gateway> {
    let mut config = config();
    edit(&mut config);
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    Arc::new(
        Gateway::new(&config, &upstreams(providers), telemetry).unwrap_or_else(|e| panic!("{e:?}")),
    )
}

/// Searches flights (a new date each time, so no answer comes from memory) until the answer
/// says the breaker is open; the last answer.
async fn search_flights_until_open(gateway: &Arc<Gateway>) -> Envelope {
    for day in 30..40 {
        let envelope = gateway.call(flight_search(day)).await.expect("served");
        assert_eq!(envelope.status, Status::Unavailable, "{envelope:?}");
        if envelope.breaker == "open" {
            return envelope;
        }
    }
    panic!("the flight search breaker never opened");
}

fn always_failing() -> Arc<Scripted> {
    Scripted::new([fail(ms(20), server_error())])
}

#[tokio::test(start_paused = true)]
async fn with_scope_provider_one_tools_failures_hold_every_tool_of_the_provider() {
    let duffel = always_failing();
    let gateway = gateway_where(
        |c| c.breakers.scope = BreakerScope::Provider,
        &[("duffel", &duffel)],
    );
    let shared = BreakerKey::shared("duffel");
    for tool in ["search_flights", "search_hotels", "book_flight"] {
        let served = gateway.tool(tool).expect("served");
        assert_eq!(served.breakers()[0].key(), &shared, "{tool}");
    }
    assert!(
        gateway
            .tools_guarded_by(&shared)
            .starts_with(&["search_flights"]),
        "{:?}",
        gateway.tools_guarded_by(&shared)
    );

    search_flights_until_open(&gateway).await;
    let asked = duffel.calls();
    let hotels = gateway.call(hotel_search()).await.expect("served");
    assert_eq!(hotels.status, Status::Unavailable, "{hotels:?}");
    assert_eq!(hotels.breaker, "open");
    assert_eq!(duffel.calls(), asked, "the hotel search asked nobody");
    assert!(
        hotels
            .content
            .starts_with("Hotel search is temporarily unavailable"),
        "the hotel tool's own fallback text: {}",
        hotels.content
    );
    assert!(hotels.retry_after_s.is_some_and(|s| s > 0), "{hotels:?}");
}

#[tokio::test(start_paused = true)]
async fn by_default_one_tools_failures_leave_the_other_tools_of_the_provider_alone() {
    let duffel = always_failing();
    let gateway = gateway_where(|_| {}, &[("duffel", &duffel)]);
    search_flights_until_open(&gateway).await;
    let asked = duffel.calls();
    let hotels = gateway.call(hotel_search()).await.expect("served");
    assert_eq!(hotels.breaker, "closed", "{hotels:?}");
    assert!(duffel.calls() > asked, "the hotel search asked Duffel");
    assert_eq!(
        gateway.tool("search_hotels").expect("served").breakers()[0].key(),
        &BreakerKey::new("search_hotels", "duffel")
    );
}

#[tokio::test(start_paused = true)]
async fn with_scope_credential_each_provider_account_has_its_own_breaker() {
    // Two Duffel accounts behind two provider names, flights tried on the first, then the
    // second; hotels on the first account only.
    let first = Scripted::on_account("aaaa000000000001", [fail(ms(20), server_error())]);
    let second = Scripted::on_account("bbbb000000000002", [ok(ms(20), flights())]);
    let gateway = gateway_where(
        |c| {
            c.breakers.scope = BreakerScope::Credential;
            for tool in &mut c.tools {
                if tool.name == "search_flights" {
                    tool.providers = vec!["duffel".into(), "duffel_eu".into()];
                }
            }
        },
        &[("duffel", &first), ("duffel_eu", &second)],
    );
    let flights_tool = gateway.tool("search_flights").expect("served");
    let keys: Vec<BreakerKey> = flights_tool
        .breakers()
        .iter()
        .map(|b| b.key().clone())
        .collect();
    assert_eq!(
        keys,
        [
            BreakerKey::shared_account("duffel", "aaaa000000000001"),
            BreakerKey::shared_account("duffel_eu", "bbbb000000000002"),
        ]
    );
    // The first account fails every call; the second answers each one.
    for day in 30..36 {
        let envelope = gateway.call(flight_search(day)).await.expect("served");
        assert_eq!(envelope.status, Status::Ok, "{envelope:?}");
        assert_eq!(envelope.provider.as_deref(), Some("duffel_eu"));
    }
    let now = Instant::now();
    let states: Vec<_> = flights_tool
        .breakers()
        .iter()
        .map(|b| b.state(now))
        .collect();
    assert_eq!(
        states,
        [
            crate::breaker::BreakerState::Open,
            crate::breaker::BreakerState::Closed
        ],
        "the failing account's breaker opened, the other's did not"
    );
    // The hotel search on the first account shares its open breaker.
    let asked = first.calls();
    let hotels = gateway.call(hotel_search()).await.expect("served");
    assert_eq!(hotels.status, Status::Unavailable, "{hotels:?}");
    assert_eq!(first.calls(), asked);
}

#[test]
fn with_scope_credential_one_provider_name_on_two_accounts_has_two_keys() {
    let scope = BreakerScope::Credential;
    let one = scope.key("search_flights", "duffel", Some("aaaa000000000001"));
    let same = scope.key("search_hotels", "duffel", Some("aaaa000000000001"));
    let other = scope.key("search_flights", "duffel", Some("bbbb000000000002"));
    assert_eq!(one, same, "one account: one breaker for every tool");
    assert_ne!(one, other, "another account: another breaker");
}
