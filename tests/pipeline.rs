//! The call pipeline under each provider fault, against wiremock upstreams in Duffel's format:
//! what the caller gets, how many requests reach the upstream, and the breaker state after.
//! Real sockets, so real time with short configured durations.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use faregate::call::{CallRequest, Gateway, Status};
use faregate::config::{Config, ProviderConfig, ProviderKind};
use faregate::tools::CallMode;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/duffel/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A gateway whose tools use `timeout`/`deadline` and the given tweak.
fn gateway(config: Config, tweak: impl FnOnce(&mut Config)) -> Arc<Gateway> {
    let mut config = config;
    tweak(&mut config);
    faregate::app::build(config, &support::NoEnv)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .state
        .gateway
}

fn short(server: &MockServer) -> Config {
    support::with_timeouts(
        support::config_for(&server.uri()),
        Duration::from_millis(300),
        Duration::from_millis(1500),
    )
}

fn flights() -> Value {
    json!({"origin": "LHR", "destination": "JFK", "departure_date": support::in_days(30)})
}

fn booking() -> Value {
    json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG", "travellers": [{"given_name": "Ana", "family_name": "Garcia",
        "born_on": "1990-02-15", "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"}]})
}

async fn call(g: &Arc<Gateway>, tool: &str, arguments: Value) -> faregate::call::Envelope {
    g.call(CallRequest {
        tool: tool.into(),
        arguments,
        mode: CallMode::Interactive,
        call_id: None,
        idempotency_key: (tool == "book_flight").then(|| "key-1".to_string()),
        deadline: None,
    })
    .await
    .unwrap_or_else(|e| panic!("{e:?}"))
}

async fn received(server: &MockServer, p: &str) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == p)
        .count()
}

const SEARCH: &str = "/air/offer_requests";

#[tokio::test]
async fn a_slow_upstream_is_timed_out_and_retried_once_within_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let g = gateway(short(&server), |_| {});
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        env.content
            .starts_with("Flight search is temporarily unavailable")
    );
    assert_eq!(
        received(&server, SEARCH).await,
        2,
        "one attempt and one retry"
    );
    assert_eq!(env.breaker, "closed", "two timeouts are not five in a row");
}

#[tokio::test]
async fn a_5xx_burst_opens_the_breaker_and_then_nothing_reaches_the_upstream() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("error_500.json")))
        .mount(&server)
        .await;
    let g = gateway(short(&server), |_| {});
    let mut breakers = Vec::new();
    for _ in 0..3 {
        let env = call(&g, "search_flights", flights()).await;
        assert_eq!(env.status, Status::Unavailable);
        breakers.push(env.breaker);
    }
    // Calls 1 and 2 make two attempts each; call 3's first attempt is the fifth failure in a
    // row, which opens the breaker, so its retry is refused without reaching the upstream.
    assert_eq!(received(&server, SEARCH).await, 5);
    assert_eq!(breakers, ["closed", "closed", "open"]);
    let started = Instant::now();
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.breaker, "open");
    assert_eq!(env.retry_after_s, Some(30));
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "answered at once"
    );
    assert_eq!(
        received(&server, SEARCH).await,
        5,
        "no request into an open breaker"
    );
}

#[tokio::test]
async fn a_short_retry_after_is_honoured_and_the_retry_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(fixture("error_429.json")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_body_json(fixture("offer_request_201.json")))
        .with_priority(2)
        .mount(&server)
        .await;
    let g = gateway(
        support::with_timeouts(
            support::config_for(&server.uri()),
            Duration::from_secs(2),
            Duration::from_secs(4),
        ),
        |_| {},
    );
    let started = Instant::now();
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.status, Status::Ok, "{env:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited the Retry-After"
    );
    assert_eq!(received(&server, SEARCH).await, 2);
}

#[tokio::test]
async fn a_long_retry_after_opens_the_breaker_for_that_long() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "120")
                .set_body_json(fixture("error_429.json")),
        )
        .mount(&server)
        .await;
    let g = gateway(short(&server), |_| {});
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.status, Status::Unavailable);
    assert_eq!(
        env.retry_after_s,
        Some(120),
        "the provider's wait, not a guess"
    );
    assert_eq!(env.breaker, "open");
    assert!(env.content.contains("about 120 seconds"), "{}", env.content);
    assert_eq!(
        received(&server, SEARCH).await,
        1,
        "no retry: the wait does not fit the deadline"
    );
    let env = call(&g, "search_flights", flights()).await;
    assert!((119..=120).contains(&env.retry_after_s.unwrap_or_default()));
    assert_eq!(received(&server, SEARCH).await, 1);
}

#[tokio::test]
async fn connection_refused_fails_fast_and_counts() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = closed.local_addr().unwrap_or_else(|e| panic!("{e}"));
    drop(closed);
    let g = gateway(
        support::with_timeouts(
            support::config_for(&format!("http://{addr}")),
            Duration::from_millis(300),
            Duration::from_millis(1500),
        ),
        |_| {},
    );
    for expected in ["closed", "closed", "open"] {
        let env = call(&g, "search_flights", flights()).await;
        assert_eq!(env.status, Status::Unavailable);
        assert_eq!(env.breaker, expected);
    }
}

#[tokio::test]
async fn a_malformed_body_is_a_failure_and_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(json!({"data": {"unexpected": true}})),
        )
        .mount(&server)
        .await;
    let g = gateway(short(&server), |_| {});
    for _ in 0..4 {
        assert_eq!(
            call(&g, "search_flights", flights()).await.status,
            Status::Unavailable
        );
    }
    assert_eq!(received(&server, SEARCH).await, 4, "one attempt per call");
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.breaker, "open", "five malformed answers in a row");
}

#[tokio::test]
async fn a_hanging_upstream_answers_at_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(60)))
        .mount(&server)
        .await;
    let g = gateway(
        support::with_timeouts(
            support::config_for(&server.uri()),
            Duration::from_millis(400),
            Duration::from_millis(600),
        ),
        |_| {},
    );
    let started = Instant::now();
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "not the upstream's 60 s"
    );
    // The retry got only what was left of the deadline (200 ms), not another full timeout.
    assert!(received(&server, SEARCH).await <= 2);
}

#[tokio::test]
async fn a_booking_is_never_retried_and_an_unknown_outcome_is_said() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/air/offers/off_0000AEatBgkm1L8gxKGGjG"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("offer_200.json")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/air/orders"))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("error_500.json")))
        .mount(&server)
        .await;
    let g = gateway(short(&server), |_| {});
    let env = call(&g, "book_flight", booking()).await;
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        env.content.contains("not known whether it went through"),
        "{}",
        env.content
    );
    assert_eq!(
        received(&server, "/air/orders").await,
        1,
        "a write is attempted once"
    );
}

#[tokio::test]
async fn a_rate_limited_booking_says_nothing_was_booked() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/air/offers/off_0000AEatBgkm1L8gxKGGjG"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("offer_200.json")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/air/orders"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "5")
                .set_body_json(fixture("error_429.json")),
        )
        .mount(&server)
        .await;
    let g = gateway(short(&server), |_| {});
    let env = call(&g, "book_flight", booking()).await;
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        env.content
            .contains("nothing was booked and nothing was charged"),
        "{}",
        env.content
    );
    assert_eq!(env.retry_after_s, Some(5));
    assert_eq!(received(&server, "/air/orders").await, 1);
}

#[tokio::test]
async fn a_full_bulkhead_answers_at_once_and_caps_upstream_concurrency() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(fixture("offer_request_201.json"))
                .set_delay(Duration::from_millis(800)),
        )
        .mount(&server)
        .await;
    let g = gateway(
        support::with_timeouts(
            support::config_for(&server.uri()),
            Duration::from_secs(3),
            Duration::from_secs(4),
        ),
        |c| {
            for t in &mut c.tools {
                t.max_concurrent = 2;
            }
        },
    );
    let started = Instant::now();
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let g = g.clone();
            tokio::spawn(async move {
                let env = call(&g, "search_flights", flights()).await;
                (env.status, started.elapsed())
            })
        })
        .collect();
    let mut ok = 0;
    let mut full = 0;
    for c in calls {
        let (status, took) = c.await.unwrap_or_else(|e| panic!("{e}"));
        match status {
            Status::Ok => ok += 1,
            Status::Unavailable => {
                full += 1;
                assert!(
                    took < Duration::from_millis(500),
                    "a full bulkhead answers at once"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((ok, full), (2, 4));
    assert_eq!(
        received(&server, SEARCH).await,
        2,
        "never more than the bulkhead upstream"
    );
}

#[tokio::test]
async fn a_chain_moves_to_the_next_provider_and_both_down_gives_the_fallback() {
    let down = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("error_500.json")))
        .mount(&down)
        .await;
    let backup = MockServer::start().await;
    let g = gateway(short(&down), |c| {
        c.providers.insert(
            "backup".into(),
            ProviderConfig {
                name: "backup".into(),
                kind: ProviderKind::Duffel {
                    token_env: "BACKUP_TOKEN".into(),
                },
                base_url: reqwest::Url::parse(&backup.uri()).unwrap_or_else(|e| panic!("{e}")),
            },
        );
        for t in &mut c.tools {
            if t.name == "search_flights" {
                t.providers = vec!["duffel".into(), "backup".into()];
            }
        }
    });
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_body_json(fixture("offer_request_201.json")))
        .up_to_n_times(1)
        .mount(&backup)
        .await;
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.status, Status::Ok, "{env:?}");
    assert_eq!(env.provider.as_deref(), Some("backup"));
    assert_eq!(
        received(&down, SEARCH).await,
        2,
        "the first provider got its attempts first"
    );

    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("error_500.json")))
        .mount(&backup)
        .await;
    let env = call(
        &g,
        "search_flights",
        json!({"origin": "LHR", "destination": "JFK", "departure_date": support::in_days(31)}),
    )
    .await;
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        env.content
            .starts_with("Flight search is temporarily unavailable")
    );
}

#[tokio::test]
async fn a_cached_result_is_served_stale_with_its_age_until_stale_for() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_body_json(fixture("offer_request_201.json")))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("error_500.json")))
        .with_priority(2)
        .mount(&server)
        .await;
    let g = gateway(short(&server), |c| {
        for t in &mut c.tools {
            t.stale_for = Duration::from_millis(1500);
        }
    });
    let fresh = call(&g, "search_flights", flights()).await;
    assert_eq!(fresh.status, Status::Ok);
    let stale = call(&g, "search_flights", flights()).await;
    assert_eq!(stale.status, Status::Stale, "{stale:?}");
    assert_eq!(stale.data, fresh.data, "the same result, not a new one");
    assert_eq!(stale.stale_age_s, Some(0));
    assert!(
        stale.content.starts_with("STALE RESULT, 0 s old"),
        "{}",
        stale.content
    );
    assert!(stale.content.contains(&fresh.content));
    // Other arguments were never answered: no stale result for them.
    let other = call(
        &g,
        "search_flights",
        json!({"origin": "LHR", "destination": "JFK", "departure_date": support::in_days(31)}),
    )
    .await;
    assert_eq!(other.status, Status::Unavailable);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let expired = call(&g, "search_flights", flights()).await;
    assert_eq!(expired.status, Status::Unavailable, "past stale_for");
}

/// Seed 000: flights hang; hotel calls stay fast and the flight upstream never sees more than
/// the flight bulkhead.
#[tokio::test]
async fn a_hanging_flight_provider_does_not_slow_hotel_search() {
    let flights_up = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(30)))
        .mount(&flights_up)
        .await;
    let hotels_up = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/stays/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("stays_search_200.json")))
        .mount(&hotels_up)
        .await;
    let g = gateway(
        support::with_timeouts(
            support::config_for(&hotels_up.uri()),
            Duration::from_secs(3),
            Duration::from_secs(4),
        ),
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
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(2)))
        .mount(&server)
        .await;
    let g = gateway(
        support::with_timeouts(
            support::config_for(&server.uri()),
            Duration::from_secs(3),
            Duration::from_secs(4),
        ),
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
