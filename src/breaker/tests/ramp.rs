//! Ramp: 10 % → 50 % → 100 % admission, and reopening on failures during the ramp.

use super::*;

/// A harness whose breaker entered the ramp at the returned instant.
fn ramping(config: BreakerConfig) -> (Harness, Instant) {
    let mut h = Harness::new(config);
    h.trip(h.at(0.0));
    let start = h.pass_probes(h.at(30.0));
    assert_eq!(h.state(start), BreakerState::Ramp);
    h.events();
    (h, start)
}

/// Offers `n` fast calls at `now`; returns how many were admitted (as `kind`).
fn offer(h: &Harness, now: Instant, n: usize, kind: PermitKind) -> usize {
    let mut admitted = 0;
    for _ in 0..n {
        match h.call(now, FAST) {
            Ok(admitted_as) => {
                assert_eq!(admitted_as, kind);
                admitted += 1;
            }
            Err(rejected) => {
                assert_eq!(rejected.reason, RejectReason::RampShare);
                assert_eq!(rejected.state, BreakerState::Ramp);
                assert!(rejected.retry_after <= secs(1.0));
            }
        }
    }
    admitted
}

#[tokio::test(start_paused = true)]
async fn ramp_admits_10_then_50_then_100_percent() {
    let (mut h, start) = ramping(config());
    let ramp = h.breaker.snapshot(start).ramp.unwrap();
    assert_eq!(
        (ramp.index, ramp.share, ramp.until),
        (0, 0.10, start + secs(30.0))
    );
    assert_eq!(h.breaker.state(start).as_str(), "closed");
    assert_eq!(offer(&h, start + secs(1.0), 100, PermitKind::Ramp), 10);

    let stage2 = start + secs(30.0);
    assert_eq!(h.breaker.snapshot(stage2).ramp.unwrap().index, 1);
    assert_eq!(offer(&h, stage2, 100, PermitKind::Ramp), 50);

    let closed = start + secs(60.0);
    assert_eq!(h.state(closed), BreakerState::Closed);
    assert_eq!(h.breaker.snapshot(closed).ramp, None);
    assert_eq!(offer(&h, closed, 100, PermitKind::Normal), 100);

    assert_eq!(
        h.transitions(),
        vec![
            (
                BreakerState::Ramp,
                BreakerState::Ramp,
                TransitionReason::RampAdvanced { stage: 1 }
            ),
            (
                BreakerState::Ramp,
                BreakerState::Closed,
                TransitionReason::RampCompleted
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_first_call_of_a_stage_is_admitted_and_every_tenth_after() {
    let (h, start) = ramping(config());
    let admitted: Vec<bool> = (0..21).map(|_| h.call(start, FAST).is_ok()).collect();
    let expected: Vec<bool> = (0..21).map(|i| i % 10 == 0).collect();
    assert_eq!(admitted, expected);
}

#[tokio::test(start_paused = true)]
async fn failures_during_the_ramp_reopen_with_a_longer_open_time() {
    let (mut h, start) = ramping(BreakerConfig {
        ramp: vec![RampStage {
            share: 0.5,
            duration: secs(30.0),
        }],
        ..config()
    });
    let now = start + secs(5.0);
    // Five admitted calls (of ten offered), three of them failed: 60 % over min(20, 5) calls.
    let outcomes = [FAST, FAIL, FAST, FAIL, FAIL];
    let mut admitted = 0;
    for _ in 0..10 {
        if let Ok(permit) = h.breaker.try_acquire(now) {
            permit.record(outcomes[admitted], now);
            admitted += 1;
        }
    }
    assert_eq!(admitted, 5);
    assert_eq!(h.state(now), BreakerState::Open);
    let events = h.events();
    assert_eq!(events[0].reason, TransitionReason::RampFailureRate);
    assert_eq!((events[0].calls, events[0].failure_rate), (5, 0.6));
    assert_eq!(h.breaker.remaining_open(now), Some(secs(60.0)));
}

#[tokio::test(start_paused = true)]
async fn the_ramp_does_not_judge_on_fewer_than_five_calls() {
    let (h, start) = ramping(BreakerConfig {
        ramp: vec![RampStage {
            share: 0.5,
            duration: secs(30.0),
        }],
        ..config()
    });
    let now = start + secs(5.0);
    let mut admitted = 0;
    while admitted < 4 {
        if let Ok(permit) = h.breaker.try_acquire(now) {
            permit.record(if admitted == 0 { FAST } else { FAIL }, now);
            admitted += 1;
        }
    }
    // Three failures of four calls: 75 %, but under the ramp's minimum.
    assert_eq!(h.state(now), BreakerState::Ramp);
}

/// Opens the breaker with one `outcome` carrying a long Retry-After (90 s), waits it out and
/// passes the probes; returns the state after the probes.
fn after_retry_after_pause(outcome: Outcome) -> (Harness, Instant, BreakerState) {
    let mut h = Harness::new(config());
    h.call(h.at(0.0), outcome).expect("closed breaker admits");
    assert_eq!(h.breaker.remaining_open(h.at(0.0)), Some(secs(90.0)));
    let done = h.pass_probes(h.at(90.0));
    let state = h.state(done);
    h.events();
    (h, done, state)
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_pause_closes_without_the_ramp() {
    let (h, done, state) = after_retry_after_pause(Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(90.0)),
    }));
    // The quota has reset: full traffic at once.
    assert_eq!(state, BreakerState::Closed);
    assert_eq!(offer(&h, done, 100, PermitKind::Normal), 100);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_pause_closes_on_its_first_successful_probe() {
    let mut h = Harness::new(config());
    let retry_after = Some(secs(90.0));
    h.call(
        h.at(0.0),
        Outcome::Failure(FailureReason::RateLimited { retry_after }),
    )
    .expect("closed breaker admits");
    h.call(h.at(90.0), FAST)
        .expect("the first probe is admitted");
    assert_eq!(h.state(h.at(90.0)), BreakerState::Closed);
    h.events();
    // A 503's pause still waits for `half_open_successes` spaced probes.
    let h = Harness::new(config());
    let failed = FailureReason::ServerError {
        status: 503,
        retry_after,
    };
    h.call(h.at(0.0), Outcome::Failure(failed))
        .expect("closed breaker admits");
    h.call(h.at(90.0), FAST)
        .expect("the first probe is admitted");
    assert_eq!(h.state(h.at(90.0)), BreakerState::HalfOpen);
}

#[tokio::test(start_paused = true)]
async fn a_maintenance_pause_still_ramps() {
    // A 503 with Retry-After is a provider coming back from maintenance: it ramps.
    let (_, _, state) = after_retry_after_pause(Outcome::Failure(FailureReason::ServerError {
        status: 503,
        retry_after: Some(secs(90.0)),
    }));
    assert_eq!(state, BreakerState::Ramp);
}

#[tokio::test(start_paused = true)]
async fn failures_after_a_rate_limit_pause_ramp_again() {
    let (h, done, _) = after_retry_after_pause(Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(90.0)),
    }));
    h.trip(done);
    let start = h.pass_probes(done + secs(30.0));
    assert_eq!(h.state(start), BreakerState::Ramp);
}
