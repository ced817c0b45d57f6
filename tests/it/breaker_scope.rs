//! Breaker scope end to end, on real time against the simulator: with Duffel's tools sharing
//! one breaker, a flight search outage holds hotel search too (its own fallback text, no
//! request), the breaker API shows the shared breaker once with the tools it guards, a force
//! must name it, and metrics label it `*`; with `credential`, the key carries a digest of the
//! access token and never the token.

use faregate::breaker::BreakerScope;
use faregate::secret::Secret;
use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use crate::support::{MapEnv, Stack, in_days, one_provider_per_tool, send, wait_until};

fn flights(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

fn hotels() -> Value {
    json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(30),
                         "check_out_date": in_days(32)}})
}

/// A gateway whose tools reach only Duffel (one breaker to watch), with `scope` for Duffel.
async fn stack(scope: BreakerScope, env: MapEnv) -> Stack {
    Stack::builder(41)
        .env(env)
        .config(move |config| {
            let mut config = one_provider_per_tool(config);
            config.breakers.by_provider.insert("duffel".into(), scope);
            config
        })
        .start()
        .await
}

/// `POST /v1/breakers/{key}/force` with `state`.
async fn force(s: &Stack, key: &str, state: &str) -> (u16, Value) {
    s.post(
        &format!("/v1/breakers/{key}/force"),
        json!({ "state": state }),
    )
    .await
}

/// `GET /metrics`, as text.
async fn metrics(s: &Stack) -> String {
    match send(reqwest::Client::new().get(s.url("/metrics"))).await.2 {
        Value::String(text) => text,
        other => panic!("not text: {other}"),
    }
}

/// The breaker of `body` (`GET /v1/breakers`) whose URL key is `key`.
fn listed<'a>(body: &'a Value, key: &str) -> Option<&'a Value> {
    body["breakers"]
        .as_array()
        .and_then(|all| all.iter().find(|b| b["key"] == key))
}

#[tokio::test]
async fn a_flight_outage_holds_every_duffel_tool_when_they_share_a_breaker() {
    let s = stack(BreakerScope::Provider, MapEnv(vec![])).await;
    let (_, body) = s.get_json("/v1/breakers").await;
    let shared = listed(&body, "*.duffel").unwrap_or_else(|| panic!("{body:#}"));
    assert_eq!(shared["scope"], "provider");
    assert_eq!(shared["tool"], "*");
    let tools: Vec<&str> = shared["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for tool in ["search_flights", "search_hotels", "book_flight"] {
        assert!(tools.contains(&tool), "{tool} in {tools:?}");
    }
    assert!(listed(&body, "search_flights.duffel").is_none(), "{body:#}");
    let status_tool = listed(&body, "get_flight_status.amadeus");
    assert!(
        status_tool.is_some(),
        "Amadeus keeps a breaker per tool: {body:#}"
    );

    s.down(RouteGroup::DuffelAirSearch);
    let day = std::sync::atomic::AtomicI64::new(20);
    wait_until(
        std::time::Duration::from_secs(20),
        "the shared breaker to open",
        || async {
            let days = day.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (_, env) = s.call("search_flights", flights(days)).await;
            if env["breaker"] == "open" {
                Ok(())
            } else {
                Err(format!("{env:#}"))
            }
        },
    )
    .await;
    let asked = s.requests(RouteGroup::DuffelStays);
    let (status, env) = s.call("search_hotels", hotels()).await;
    assert_eq!(status, 200);
    assert_eq!(env["status"], "unavailable", "{env:#}");
    assert_eq!(env["breaker"], "open", "{env:#}");
    let content = env["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with("Hotel search is temporarily unavailable"),
        "hotel search's own fallback text: {content}"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelStays),
        asked,
        "hotel search asked nobody"
    );

    // Reading a tool's key answers the shared breaker.
    let (status, one) = s.get_json("/v1/breakers/search_hotels.duffel").await;
    assert_eq!(status, 200, "{one:#}");
    assert_eq!(one["key"], "*.duffel");
    assert_eq!(one["state"], "open");

    // The metrics label the shared breaker once, with the tool `*`.
    let metrics = metrics(&s).await;
    assert!(
        metrics.contains(r#"faregate_breaker_state{provider="duffel",state="open",tool="*"} 1"#),
        "{metrics}"
    );
    assert!(
        !metrics.contains(
            r#"faregate_breaker_state{provider="duffel",state="closed",tool="search_hotels"}"#
        ),
        "no per-tool breaker series for a provider whose tools share one"
    );
}

#[tokio::test]
async fn a_force_must_name_the_shared_breaker_and_holds_every_tool() {
    let s = stack(BreakerScope::Provider, MapEnv(vec![])).await;
    let (status, refused) = force(&s, "search_flights.duffel", "open").await;
    assert_eq!(status, 400, "{refused:#}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"*.duffel\"") && message.contains("search_hotels"),
        "names the breaker to force and what it holds: {message}"
    );
    assert_eq!(refused["breaker"], "*.duffel");

    let (status, forced) = force(&s, "*.duffel", "open").await;
    assert_eq!(status, 200, "{forced:#}");
    assert_eq!(forced["state"], "forced_open");
    for (tool, body) in [("search_flights", flights(20)), ("search_hotels", hotels())] {
        let (_, env) = s.call(tool, body).await;
        assert_eq!(env["status"], "unavailable", "{tool}: {env:#}");
        assert_eq!(env["breaker"], "forced_open", "{tool}: {env:#}");
    }
    assert_eq!(s.requests(RouteGroup::DuffelAirSearch), 0);
    assert_eq!(s.requests(RouteGroup::DuffelStays), 0);

    let (status, _) = force(&s, "*.duffel", "auto").await;
    assert_eq!(status, 200);
    let (_, env) = s.call("search_hotels", hotels()).await;
    assert_eq!(env["status"], "ok", "{env:#}");
}

#[tokio::test]
async fn a_per_account_breaker_is_named_by_a_digest_never_by_the_token() {
    const TOKEN: &str = "duffel_test_account_one_secret";
    let s = stack(
        BreakerScope::Credential,
        MapEnv(vec![("DUFFEL_ACCESS_TOKEN", TOKEN)]),
    )
    .await;
    let key = format!("*.duffel@{}", Secret::new(TOKEN).digest());
    let (_, body) = s.get_json("/v1/breakers").await;
    let shared = listed(&body, &key).unwrap_or_else(|| panic!("{key} in {body:#}"));
    assert_eq!(shared["scope"], "credential");
    assert_eq!(shared["provider"], key.trim_start_matches("*."));
    let (status, one) = s.get_json(&format!("/v1/breakers/{key}")).await;
    assert_eq!(status, 200, "{one:#}");
    let (_, env) = s.call("search_hotels", hotels()).await;
    assert_eq!(env["status"], "ok", "{env:#}");
    let metrics = metrics(&s).await;
    for text in [body.to_string(), metrics] {
        assert!(!text.contains(TOKEN), "the token never shows");
    }
}
