//! Open: rejection, the timer to half-open, and the growing (capped, jittered, reset) open time.

use super::*;

#[tokio::test(start_paused = true)]
async fn open_rejects_at_once_with_the_remaining_time() {
    let h = Harness::new(config());
    h.trip(h.at(0.0));
    let rejected = h.breaker.try_acquire(h.at(10.0)).unwrap_err();
    assert_eq!(rejected.reason, RejectReason::Open);
    assert_eq!(rejected.state, BreakerState::Open);
    assert_eq!(rejected.retry_after, secs(20.0));
}

#[tokio::test(start_paused = true)]
async fn open_for_30s_becomes_half_open_without_traffic() {
    let mut h = Harness::new(config());
    h.trip(Instant::now());
    h.events();
    tokio::time::advance(secs(29.999)).await;
    assert_eq!(h.state(Instant::now()), BreakerState::Open);
    tokio::time::advance(secs(0.001)).await;
    assert_eq!(h.state(Instant::now()), BreakerState::HalfOpen);

    // `tick` is not needed for the state, and a late tick still reports the exact instant.
    let mut h = Harness::new(config());
    h.trip(h.at(0.0));
    h.events();
    h.breaker.tick(h.at(45.0));
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, TransitionReason::OpenElapsed);
    assert_eq!(events[0].at, h.at(30.0));
}

/// Trips the breaker at `start`, then fails the first probe of each half-open period, `n` times;
/// returns the open times observed.
fn reopen_times(h: &Harness, start: Instant, n: usize) -> Vec<Duration> {
    h.trip(start);
    let mut now = start;
    let mut times = Vec::new();
    for _ in 0..n {
        let open_for = h.breaker.remaining_open(now).unwrap();
        times.push(open_for);
        now += open_for;
        assert_eq!(h.state(now), BreakerState::HalfOpen);
        h.call(now, FAIL).unwrap();
    }
    times
}

#[tokio::test(start_paused = true)]
async fn failed_probes_double_the_open_time_up_to_open_for_max() {
    let mut h = Harness::new(config());
    let times = reopen_times(&h, h.at(0.0), 6);
    let expected: Vec<_> = [30.0, 60.0, 120.0, 240.0, 300.0, 300.0]
        .into_iter()
        .map(secs)
        .collect();
    assert_eq!(times, expected);
    assert!(
        h.transitions()
            .iter()
            .filter(|t| t.1 == BreakerState::Open)
            .skip(1)
            .all(|t| t.2 == TransitionReason::ProbeFailed)
    );
}

#[tokio::test(start_paused = true)]
async fn full_recovery_resets_the_open_time() {
    let h = Harness::new(config());
    let times = reopen_times(&h, h.at(0.0), 3);
    let mut now = h.at(0.0) + times.iter().sum::<Duration>();
    assert_eq!(h.breaker.remaining_open(now), Some(secs(240.0)));
    now += secs(240.0);
    now = h.pass_probes(now);
    assert_eq!(h.state(now), BreakerState::Ramp);
    now += secs(60.0);
    assert_eq!(h.state(now), BreakerState::Closed);
    h.trip(now);
    assert_eq!(h.breaker.remaining_open(now), Some(secs(30.0)));
}

#[tokio::test(start_paused = true)]
async fn jitter_shortens_grown_open_times_reproducibly_and_within_bounds() {
    let jittery = BreakerConfig {
        jitter: 0.5,
        seed: 7,
        ..config()
    };
    let a = Harness::new(jittery.clone());
    let b = Harness::new(jittery);
    let times_a = reopen_times(&a, a.at(0.0), 6);
    let times_b = reopen_times(&b, b.at(0.0), 6);
    assert_eq!(times_a, times_b, "same seed, same open times");
    assert_eq!(times_a[0], secs(30.0), "the first open is never jittered");
    let grown = [30.0, 60.0, 120.0, 240.0, 300.0, 300.0];
    for (time, grown) in times_a.iter().zip(grown) {
        assert!(*time >= secs(30.0) && *time <= secs(grown), "{time:?}");
    }
    assert!(
        times_a[1..]
            .iter()
            .zip(&grown[1..])
            .any(|(t, g)| *t < secs(*g)),
        "jitter 0.5 changed nothing: {times_a:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_late_retry_after_extends_the_open_time() {
    let mut h = Harness::new(config());
    // A call admitted while closed answers after the breaker opened.
    let slow_call = h.breaker.try_acquire(h.at(0.0)).unwrap();
    h.trip(h.at(1.0));
    h.events();
    slow_call.record(
        Outcome::Failure(FailureReason::RateLimited {
            retry_after: Some(secs(200.0)),
        }),
        h.at(5.0),
    );
    assert_eq!(h.breaker.remaining_open(h.at(5.0)), Some(secs(200.0)));
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Open,
            BreakerState::Open,
            TransitionReason::RetryAfter {
                retry_after: secs(200.0)
            }
        )]
    );
    // A late plain result changes nothing.
    let h = Harness::new(config());
    let late = h.breaker.try_acquire(h.at(0.0)).unwrap();
    h.trip(h.at(1.0));
    late.record(FAST, h.at(2.0));
    assert_eq!(h.breaker.remaining_open(h.at(2.0)), Some(secs(29.0)));
}
