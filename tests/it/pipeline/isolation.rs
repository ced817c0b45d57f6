//! Isolation inside the pipeline: a hanging flight provider does not slow hotel search, and
//! callers that go away mid-call do not trip a healthy provider's breaker.

use std::time::Duration;

use tokio::time::Instant;

use faregate::call::Status;
use faregate::config::{ProviderConfig, ProviderKind};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::support::{self, fixture};

/// Flights hang; hotel calls stay fast and the flight upstream never sees more than the flight
/// bulkhead.
#[tokio::test]
async fn a_hanging_flight_provider_does_not_slow_hotel_search() {
    let flights_up =
        search_answering(ResponseTemplate::new(201).set_delay(Duration::from_secs(30))).await;
    let hotels_up = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/stays/search"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(fixture("duffel", "stays_search_200.json")),
        )
        .mount(&hotels_up)
        .await;
    let g = gateway(
        timed(&hotels_up, Duration::from_secs(3), Duration::from_secs(4)),
        |c| {
            c.providers.insert(
                "flights_only".into(),
                ProviderConfig {
                    name: "flights_only".into(),
                    kind: ProviderKind::Duffel {
                        token_env: "X".into(),
                    },
                    base_url: reqwest::Url::parse(&flights_up.uri())
                        .unwrap_or_else(|e| panic!("{e}")),
                    requests_per_second: None,
                    connect_timeout: std::time::Duration::from_secs(2),
                    timeout: None,
                    http2_prior_knowledge: false,
                },
            );
            for t in &mut c.tools {
                if t.name == "search_flights" {
                    t.providers = vec!["flights_only".into()];
                    t.max_concurrent = 4;
                }
            }
        },
    );
    let flight_calls: Vec<_> = (0..40)
        .map(|_| {
            let g = g.clone();
            tokio::spawn(async move { call(&g, "search_flights", flights()).await.status })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let hotel_args = json!({"city_code": "PAR", "check_in_date": support::in_days(30), "check_out_date": support::in_days(32)});
    let hotel_calls: Vec<_> = (0..20)
        .map(|_| {
            let g = g.clone();
            let args = hotel_args.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let env = call(&g, "search_hotels", args).await;
                (env.status, started.elapsed())
            })
        })
        .collect();
    for h in hotel_calls {
        let (status, took) = h.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, Status::Ok);
        assert!(
            took < Duration::from_secs(1),
            "hotel call took {took:?} while flights hang"
        );
    }
    assert!(
        received(&flights_up, SEARCH).await <= 4,
        "flight upstream held to its bulkhead"
    );
    let mut unavailable = 0;
    for f in flight_calls {
        if f.await.unwrap_or_else(|e| panic!("{e}")) == Status::Unavailable {
            unavailable += 1;
        }
    }
    assert_eq!(
        unavailable, 40,
        "every flight call got the fallback, none hung past its deadline"
    );
}

#[tokio::test]
async fn callers_that_go_away_do_not_trip_the_breaker() {
    let server =
        search_answering(ResponseTemplate::new(201).set_delay(Duration::from_secs(2))).await;
    let g = gateway(
        timed(&server, Duration::from_secs(3), Duration::from_secs(4)),
        |_| {},
    );
    for _ in 0..8 {
        let cancelled = tokio::time::timeout(
            Duration::from_millis(50),
            call(&g, "search_flights", flights()),
        )
        .await;
        assert!(cancelled.is_err(), "the caller gave up first");
    }
    let breaker = g
        .tool("search_flights")
        .map(|t| t.breakers()[0].clone())
        .unwrap_or_else(|| panic!("served"));
    let snapshot = breaker.snapshot(tokio::time::Instant::now());
    assert_eq!(snapshot.state.as_str(), "closed");
    assert_eq!(
        snapshot.calls_in_window, 0,
        "cancelled attempts count nothing"
    );
}
