//! Closed: the sliding window, min calls, the 50 % threshold, slow calls, consecutive failures,
//! Retry-After and ignored outcomes.

use super::*;

#[tokio::test(start_paused = true)]
async fn window_of_60s_forgets_calls_older_than_the_window() {
    let h = Harness::new(BreakerConfig {
        consecutive_failures: 0,
        ..config()
    });
    h.calls(h.at(0.0), FAIL, 10);
    assert_eq!(h.breaker.snapshot(h.at(59.999)).calls_in_window, 10);
    assert_eq!(h.breaker.snapshot(h.at(60.0)).calls_in_window, 0);

    // Ten failures now and ten a window later never make 20 calls in one window.
    h.calls(h.at(60.0), FAIL, 10);
    assert_eq!(h.state(h.at(60.0)), BreakerState::Closed);
    // But ten more inside the same window do.
    h.calls(h.at(119.0), FAIL, 10);
    assert_eq!(h.state(h.at(119.0)), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn min_calls_must_be_in_the_window_before_the_rate_counts() {
    let mut h = Harness::new(BreakerConfig {
        consecutive_failures: 0,
        ..config()
    });
    h.calls(h.at(1.0), FAIL, 19);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Closed);
    h.calls(h.at(1.0), FAIL, 1);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Open);
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Closed,
            BreakerState::Open,
            TransitionReason::FailureRate
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn exactly_50_percent_of_20_calls_opens() {
    let mut h = Harness::new(config());
    for i in 0..10 {
        h.call(h.at(1.0), FAST).unwrap();
        assert_eq!(h.state(h.at(1.0)), BreakerState::Closed, "pair {i}");
        h.call(h.at(1.0), FAIL).unwrap();
    }
    assert_eq!(h.state(h.at(1.0)), BreakerState::Open);
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].failure_rate, 0.5);
    assert_eq!(events[0].calls, 20);
}

#[tokio::test(start_paused = true)]
async fn forty_nine_percent_of_100_calls_does_not_open() {
    let h = Harness::new(config());
    h.calls(h.at(1.0), FAST, 2);
    for _ in 0..49 {
        h.call(h.at(1.0), FAIL).unwrap();
        h.call(h.at(1.0), FAST).unwrap();
    }
    let snapshot = h.breaker.snapshot(h.at(1.0));
    assert_eq!(snapshot.calls_in_window, 100);
    assert_eq!(snapshot.failure_rate, 0.49);
    assert_eq!(snapshot.state, BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn slow_successes_count_against_the_rate() {
    let mut h = Harness::new(config());
    // A success exactly at the threshold is slow.
    let at_threshold = Outcome::Success {
        latency: Duration::from_secs(6),
    };
    h.calls(h.at(1.0), FAST, 10);
    h.calls(h.at(1.0), at_threshold, 1);
    h.calls(h.at(1.0), SLOW, 8);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Closed);
    h.calls(h.at(1.0), SLOW, 1);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Open);
    let events = h.events();
    assert_eq!(events[0].reason, TransitionReason::SlowCallRate);
    assert_eq!(events[0].slow_rate, 0.5);
    assert_eq!(events[0].failure_rate, 0.0);
    // Its history says why it opened: none failed, half were slow.
    let history = h.breaker.snapshot(h.at(1.0)).history;
    assert_eq!(history.failure_rate_at_last_open, Some(0.0));
    assert_eq!(history.slow_rate_at_last_open, Some(0.5));
    assert_eq!(history.calls_at_last_open, Some(20));
}

#[tokio::test(start_paused = true)]
async fn five_consecutive_429s_open_before_min_calls() {
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), RATE_LIMITED, 4);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Closed);
    h.calls(h.at(1.0), RATE_LIMITED, 1);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Open);
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Closed,
            BreakerState::Open,
            TransitionReason::ConsecutiveFailures
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_success_resets_the_consecutive_count_and_an_ignored_call_does_not() {
    let h = Harness::new(config());
    h.calls(h.at(1.0), FAIL, 4);
    h.calls(h.at(1.0), SLOW, 1);
    h.calls(h.at(1.0), FAIL, 4);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Closed);
    h.calls(h.at(1.0), Outcome::Ignored, 1);
    h.calls(h.at(1.0), FAIL, 1);
    assert_eq!(h.state(h.at(1.0)), BreakerState::Open);
}

/// A closed breaker tells whether its provider's latest calls failed (a caller whose own
/// deadline passed is then answered with the fallback, not as a mere hurry): from a failure, a
/// peer's too, until a success.
#[tokio::test(start_paused = true)]
async fn a_failing_run_is_told_until_a_success_ends_it() {
    let h = Harness::new(config());
    assert!(!h.breaker.in_failing_run(), "nothing called yet");
    h.calls(h.at(1.0), FAST, 1);
    assert!(!h.breaker.in_failing_run());
    h.calls(h.at(1.0), FAIL, 1);
    assert!(h.breaker.in_failing_run(), "one timeout");
    h.calls(h.at(1.0), Outcome::Ignored, 1);
    assert!(h.breaker.in_failing_run(), "an ignored call ends nothing");
    h.calls(h.at(1.0), SLOW, 1);
    assert!(!h.breaker.in_failing_run(), "a success ends it");
    h.breaker.note_peer_failure(None, h.at(2.0));
    assert!(
        h.breaker.in_failing_run(),
        "another replica's failure joins it"
    );
    assert_eq!(h.state(h.at(2.0)), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn retry_after_120s_opens_for_120s() {
    let mut h = Harness::new(config());
    let throttled = Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(Duration::from_secs(120)),
    });
    h.call(h.at(1.0), throttled).unwrap();
    assert_eq!(h.breaker.remaining_open(h.at(1.0)), Some(secs(120.0)));
    assert_eq!(h.state(h.at(120.999)), BreakerState::Open);
    assert_eq!(h.state(h.at(121.0)), BreakerState::HalfOpen);
    assert_eq!(
        h.events()[0].reason,
        TransitionReason::RetryAfter {
            retry_after: secs(120.0)
        }
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_counts_only_on_429_and_503_and_only_when_longer_than_open_for() {
    let h = Harness::new(config());
    let long = Some(Duration::from_secs(120));
    let error_500 = Outcome::Failure(FailureReason::ServerError {
        status: 500,
        retry_after: long,
    });
    let short_429 = Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(Duration::from_secs(30)),
    });
    h.call(h.at(1.0), error_500).unwrap();
    h.call(h.at(1.0), short_429).unwrap();
    assert_eq!(h.state(h.at(1.0)), BreakerState::Closed);

    let unavailable = Outcome::Failure(FailureReason::ServerError {
        status: 503,
        retry_after: long,
    });
    h.call(h.at(2.0), unavailable).unwrap();
    assert_eq!(h.breaker.remaining_open(h.at(2.0)), Some(secs(120.0)));
}

#[tokio::test(start_paused = true)]
async fn ignored_outcomes_count_nothing() {
    let h = Harness::new(config());
    h.calls(h.at(1.0), Outcome::Ignored, 50);
    let snapshot = h.breaker.snapshot(h.at(1.0));
    assert_eq!(snapshot.calls_in_window, 0);
    assert_eq!(snapshot.state, BreakerState::Closed);
}

/// A permit dropped unrecorded is a cancelled call: it says nothing about the provider, so
/// callers that go away cannot trip a healthy breaker.
#[tokio::test(start_paused = true)]
async fn dropped_permits_count_nothing() {
    let h = Harness::new(config());
    for _ in 0..50 {
        drop(h.breaker.try_acquire(h.at(0.0)).unwrap());
    }
    assert_eq!(h.state(h.at(0.0)), BreakerState::Closed);
    assert_eq!(h.breaker.snapshot(h.at(0.0)).calls_in_window, 0);
}

#[tokio::test(start_paused = true)]
async fn auto_slow_call_threshold_is_3x_the_median_with_a_floor() {
    let h = Harness::new(BreakerConfig {
        slow_call: SlowCall::Auto {
            floor: Duration::from_secs(1),
        },
        ..config()
    });
    let threshold = |h: &Harness| h.breaker.snapshot(h.at(1.0)).slow_call_threshold;
    let success = |ms| Outcome::Success {
        latency: Duration::from_millis(ms),
    };
    // Before enough samples, the floor.
    h.calls(h.at(1.0), success(2_000), AUTO_MIN_SAMPLES - 1);
    assert_eq!(threshold(&h), secs(1.0));
    h.calls(h.at(1.0), success(2_000), 1);
    assert_eq!(threshold(&h), secs(6.0));

    // Fast successes pull the median down, but never below the floor.
    let h = Harness::new(BreakerConfig {
        slow_call: SlowCall::Auto {
            floor: Duration::from_secs(1),
        },
        ..config()
    });
    h.calls(h.at(1.0), success(500), 6);
    h.calls(h.at(1.0), success(100), 10);
    assert_eq!(threshold(&h), secs(1.0));
    h.calls(h.at(1.0), success(700), 8);
    // 24 samples: 10 of 100 ms, 6 of 500 ms, 8 of 700 ms; the (upper) median is 500 ms.
    assert_eq!(threshold(&h), secs(1.5));
}

/// A 429 asking for `s` seconds.
fn limited_for(s: f64) -> Outcome {
    Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(s)),
    })
}

#[tokio::test(start_paused = true)]
async fn five_429s_with_a_short_retry_after_pause_for_it_and_close_without_the_ramp() {
    // The probe of a new user: a provider answering 429 `Retry-After: 10` (no longer than
    // `open_for`, so no single one opens the breaker) five times in a row. The breaker opened
    // as `consecutive_failures` for the backoff's 30 s, then wanted two spaced probes and the
    // ramp, as for a sick provider; the provider only asked for 10 s.
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), limited_for(10.0), 5);
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Closed,
            BreakerState::Open,
            TransitionReason::RetryAfter {
                retry_after: secs(10.0)
            }
        )]
    );
    assert_eq!(h.breaker.remaining_open(h.at(1.0)), Some(secs(10.0)));
    assert!(h.breaker.snapshot(h.at(1.0)).quota_pause);
    assert_eq!(h.state(h.at(11.0)), BreakerState::HalfOpen);
    assert_eq!(h.call(h.at(11.0), FAST), Ok(PermitKind::Probe));
    assert_eq!(h.state(h.at(11.0)), BreakerState::Closed, "no ramp");
    assert_eq!(
        h.transitions().last().map(|t| (t.1, t.2)),
        Some((BreakerState::Closed, TransitionReason::ProbesSucceeded))
    );
}

#[tokio::test(start_paused = true)]
async fn the_last_429_of_the_run_says_how_long_the_pause_is() {
    // Each 429 counts its wait from its own answer: the last one is the provider's latest word.
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), limited_for(25.0), 4);
    h.calls(h.at(16.0), limited_for(10.0), 1);
    let events = h.events();
    assert_eq!(
        events[0].reason,
        TransitionReason::RetryAfter {
            retry_after: secs(10.0)
        }
    );
    assert_eq!(h.breaker.remaining_open(h.at(16.0)), Some(secs(10.0)));
}

#[tokio::test(start_paused = true)]
async fn a_run_with_other_failures_in_it_is_no_rate_limit_pause() {
    // Timeouts before the 429s: the provider may be sick, so the run opens as ever.
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), FAIL, 2);
    h.calls(h.at(1.0), limited_for(10.0), 3);
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Closed,
            BreakerState::Open,
            TransitionReason::ConsecutiveFailures
        )]
    );
    assert_eq!(h.breaker.remaining_open(h.at(1.0)), Some(secs(30.0)));
    assert!(!h.breaker.snapshot(h.at(1.0)).quota_pause);
    // So does a 429 that named no wait among them.
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), limited_for(10.0), 4);
    h.calls(h.at(1.0), RATE_LIMITED, 1);
    assert_eq!(h.transitions()[0].2, TransitionReason::ConsecutiveFailures);
    // A success ends the run: the 429s after it start a new one.
    let mut h = Harness::new(config());
    h.calls(h.at(1.0), FAIL, 4);
    h.calls(h.at(1.0), FAST, 1);
    h.calls(h.at(1.0), limited_for(10.0), 5);
    assert_eq!(
        h.transitions()[0].2,
        TransitionReason::RetryAfter {
            retry_after: secs(10.0)
        }
    );
}
