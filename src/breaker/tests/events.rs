//! Events, history, names, config validation and the registry.

use super::*;

#[tokio::test(start_paused = true)]
async fn every_transition_emits_an_event_with_the_right_fields() {
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), FAST, 10);
    h.calls(h.at(1.0), SLOW, 2);
    for _ in 0..5 {
        h.call(h.at(2.0), FAIL).unwrap();
        h.call(h.at(2.0), FAIL).unwrap();
        h.call(h.at(2.0), FAST).unwrap();
    }
    // 27 calls: 15 fast, 2 slow, 10 failed. Three more failures make 15 bad calls of 30: 50 %.
    h.calls(h.at(3.0), FAIL, 2);
    assert_eq!(h.state(h.at(3.0)), BreakerState::Closed);
    h.call(h.at(3.0), FAIL).unwrap();
    let probe_start = h.at(33.0);
    let last_probe = h.pass_probes(probe_start);
    h.breaker.tick(last_probe + secs(61.0));

    let events = h.events();
    let summary: Vec<_> = events
        .iter()
        .map(|e| (e.from, e.to, e.reason, e.at))
        .collect();
    use BreakerState::*;
    assert_eq!(
        summary,
        vec![
            (Closed, Open, TransitionReason::FailureRate, h.at(3.0)),
            (Open, HalfOpen, TransitionReason::OpenElapsed, probe_start),
            (
                HalfOpen,
                Ramp,
                TransitionReason::ProbesSucceeded,
                last_probe
            ),
            (
                Ramp,
                Ramp,
                TransitionReason::RampAdvanced { stage: 1 },
                last_probe + secs(30.0)
            ),
            (
                Ramp,
                Closed,
                TransitionReason::RampCompleted,
                last_probe + secs(60.0)
            ),
        ]
    );
    let trip = &events[0];
    assert_eq!(trip.key, key());
    assert_eq!(trip.calls, 30);
    assert_eq!(trip.failure_rate, 13.0 / 30.0);
    assert_eq!(trip.slow_rate, 2.0 / 30.0);
    assert_eq!((events[2].calls, events[2].failure_rate), (2, 0.0));
    for event in &events {
        assert!(is_legal_transition(event.from, event.to, event.reason));
    }
}

#[tokio::test(start_paused = true)]
async fn history_counts_opens_open_time_rejections_and_the_last_failure_rate() {
    let h = Harness::new(config());
    h.trip(h.at(0.0));
    assert!(h.breaker.try_acquire(h.at(10.0)).is_err());
    assert!(h.breaker.try_acquire(h.at(20.0)).is_err());
    let during = h.breaker.snapshot(h.at(20.0)).history;
    assert_eq!(during.times_opened, 1);
    assert_eq!(during.total_open_time, secs(20.0));
    assert_eq!(during.calls_rejected, 2);
    assert_eq!(during.failure_rate_at_last_open, Some(1.0));
    assert_eq!(during.calls_at_last_open, Some(5));

    // A failed probe after 30 s open: a second opening, and half-open time is not open time.
    h.call(h.at(35.0), FAIL).unwrap();
    let after = h.breaker.snapshot(h.at(45.0)).history;
    assert_eq!(after.times_opened, 2);
    assert_eq!(after.total_open_time, secs(40.0));
    assert_eq!(after.failure_rate_at_last_open, Some(1.0));
    assert_eq!(
        after.calls_at_last_open,
        Some(1),
        "the failed probe decided it"
    );
}

#[test]
fn states_and_keys_use_the_spec_names() {
    use BreakerState::*;
    let names: Vec<_> = [Closed, Open, HalfOpen, Ramp, ForcedOpen, ForcedClosed]
        .iter()
        .map(|s| (s.as_str(), s.detail_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("closed", "closed"),
            ("open", "open"),
            ("half_open", "half_open"),
            ("closed", "ramp"),
            ("forced_open", "forced_open"),
            ("forced_closed", "forced_closed"),
        ]
    );
    assert_eq!(key().to_string(), "search_flights/duffel");
}

#[test]
fn the_standard_config_is_valid() {
    assert!(BreakerConfig::builder().build().is_ok());
}

#[test]
fn config_validation_names_every_bad_key_and_what_would_be_valid() {
    let bad = BreakerConfig {
        window: Duration::ZERO,
        failure_rate: 1.5,
        min_calls: 0,
        slow_call: SlowCall::Auto {
            floor: Duration::ZERO,
        },
        open_for: secs(600.0),
        half_open_probes: 3,
        half_open_successes: 4,
        probe_timeout: Duration::ZERO,
        ramp: vec![
            RampStage {
                share: 0.5,
                duration: secs(30.0),
            },
            RampStage {
                share: 0.1,
                duration: Duration::ZERO,
            },
        ],
        jitter: -0.1,
        ..config()
    };
    let problems = bad.to_builder().build().expect_err("invalid");
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "window",
            "failure_rate",
            "min_calls",
            "slow_call",
            "open_for_max",
            "half_open_successes",
            "probe_timeout",
            "jitter",
            "ramp[1]",
            "ramp[1]",
        ]
    );
    let message = |key| {
        problems
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.to_string())
            .unwrap()
    };
    assert_eq!(
        message("half_open_successes"),
        "half_open_successes: 4 successes can never happen with 3 probes; set half_open_successes at most half_open_probes"
    );
    assert_eq!(
        message("failure_rate"),
        "failure_rate: must be greater than 0 and at most 1 (e.g. 0.5 for 50 %), got 1.5"
    );
    assert_eq!(
        message("open_for_max"),
        "open_for_max: must be at least open_for (10m), the first open period"
    );
    assert_eq!(problems[4].involves, ["open_for", "open_for_max"]);
    assert!(problems[8].message.contains("must grow"));
    assert!(problems[9].message.contains("must last longer than zero"));
}

#[tokio::test(start_paused = true)]
async fn the_registry_shares_breakers_and_their_events() {
    let registry = BreakerRegistry::default();
    let mut rx = registry.subscribe();
    let hotels = BreakerKey::new("search_hotels", "duffel");
    let flights = registry.get_or_insert(key(), config());
    let again = registry.get_or_insert_with(&key(), || unreachable!("exists already"));
    assert!(Arc::ptr_eq(&flights, &again));
    registry.get_or_insert(hotels.clone(), config());
    let keys: Vec<_> = registry.all().iter().map(|b| b.key().clone()).collect();
    assert_eq!(keys, vec![key(), hotels]);
    assert_eq!(registry.len(), 2);

    let t0 = Instant::now();
    for _ in 0..5 {
        flights.try_acquire(t0).unwrap().record(FAIL, t0);
    }
    registry.tick_all(t0 + secs(30.0));
    let first = rx.try_recv().unwrap();
    let second = rx.try_recv().unwrap();
    assert_eq!((first.key.clone(), first.to), (key(), BreakerState::Open));
    assert_eq!(
        (second.from, second.to),
        (BreakerState::Open, BreakerState::HalfOpen)
    );
    assert!(rx.try_recv().is_err());
}
