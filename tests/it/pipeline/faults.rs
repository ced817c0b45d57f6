//! The call pipeline under each provider fault, against wiremock upstreams in Duffel's format:
//! what the caller gets, how many requests reach the upstream, and the breaker state after.
//! Real sockets, so real time with short configured durations.

use std::time::Duration;

use tokio::time::Instant;

use faregate::call::Status;
use faregate::config::{ProviderConfig, ProviderKind};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::support::{self, fixture};

#[tokio::test]
async fn a_slow_upstream_is_timed_out_and_retried_once_within_the_deadline() {
    let server =
        search_answering(ResponseTemplate::new(201).set_delay(Duration::from_secs(5))).await;
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
    let server = search_answering(
        ResponseTemplate::new(503).set_body_json(fixture("duffel", "error_500.json")),
    )
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
                .set_body_json(fixture("duffel", "error_429.json")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(fixture("duffel", "offer_request_201.json")),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    let g = gateway(
        timed(&server, Duration::from_secs(2), Duration::from_secs(4)),
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
    let server = search_answering(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "120")
            .set_body_json(fixture("duffel", "error_429.json")),
    )
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
    let server = search_answering(
        ResponseTemplate::new(201).set_body_json(json!({"data": {"unexpected": true}})),
    )
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
    let server =
        search_answering(ResponseTemplate::new(201).set_delay(Duration::from_secs(60))).await;
    let g = gateway(
        timed(
            &server,
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
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("duffel", "offer_200.json")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/air/orders"))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("duffel", "error_500.json")))
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
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("duffel", "offer_200.json")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/air/orders"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "5")
                .set_body_json(fixture("duffel", "error_429.json")),
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
    let server = search_answering(
        ResponseTemplate::new(201)
            .set_body_json(fixture("duffel", "offer_request_201.json"))
            .set_delay(Duration::from_millis(800)),
    )
    .await;
    let g = gateway(
        timed(&server, Duration::from_secs(3), Duration::from_secs(4)),
        |c| {
            for t in &mut c.tools {
                t.max_concurrent = 2;
            }
        },
    );
    let started = Instant::now();
    // Six different searches: identical ones would share one provider call.
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let g = g.clone();
            tokio::spawn(async move {
                let search = json!({"origin": "LHR", "destination": "JFK",
                    "departure_date": crate::support::in_days(30 + i)});
                let env = call(&g, "search_flights", search).await;
                (env, started.elapsed())
            })
        })
        .collect();
    let mut ok = 0;
    let mut full = 0;
    for c in calls {
        let (env, took) = c.await.unwrap_or_else(|e| panic!("{e}"));
        match env.status {
            Status::Ok => ok += 1,
            Status::Unavailable => {
                full += 1;
                // No provider was asked: none is named, and the tool is busy, not down.
                assert_eq!(env.provider, None, "{}", env.content);
                assert!(
                    env.content.starts_with(
                        "search_flights is busy: this gateway already has 2 search_flights calls in progress"
                    ) && env.content.contains("no provider is known to be failing"),
                    "{}",
                    env.content
                );
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
    let down = search_answering(
        ResponseTemplate::new(503).set_body_json(fixture("duffel", "error_500.json")),
    )
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
                requests_per_second: None,
                connect_timeout: std::time::Duration::from_secs(2),
                timeout: None,
                http2_prior_knowledge: false,
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
        .respond_with(
            ResponseTemplate::new(201).set_body_json(fixture("duffel", "offer_request_201.json")),
        )
        .up_to_n_times(1)
        .mount(&backup)
        .await;
    let env = call(&g, "search_flights", flights()).await;
    assert_eq!(env.status, Status::Ok, "{env:?}");
    assert_eq!(env.provider.as_deref(), Some("backup"));
    assert_eq!(
        received(&down, SEARCH).await,
        1,
        "the first provider was tried once, then the chain failed over"
    );

    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("duffel", "error_500.json")))
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
        .respond_with(
            ResponseTemplate::new(201).set_body_json(fixture("duffel", "offer_request_201.json")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(SEARCH))
        .respond_with(ResponseTemplate::new(503).set_body_json(fixture("duffel", "error_500.json")))
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
