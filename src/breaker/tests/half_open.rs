//! Half-open: probes, their spacing and limit, and every way out.

use super::*;

/// A harness whose breaker tripped at 0 s and is half-open from 30 s.
fn half_open(config: BreakerConfig) -> (Harness, Instant) {
    let mut h = Harness::new(config);
    h.trip(h.at(0.0));
    let start = h.at(30.0);
    assert_eq!(h.state(start), BreakerState::HalfOpen);
    h.events();
    (h, start)
}

#[tokio::test(start_paused = true)]
async fn two_fast_successes_of_three_probes_close_into_the_ramp() {
    let (mut h, start) = half_open(config());
    assert_eq!(h.call(start, FAST), Ok(PermitKind::Probe));
    assert_eq!(h.state(start), BreakerState::HalfOpen);
    let second = start + secs(10.0 / 3.0);
    assert_eq!(h.call(second, FAST), Ok(PermitKind::Probe));
    assert_eq!(h.state(second), BreakerState::Ramp);
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].from, events[0].to, events[0].reason),
        (
            BreakerState::HalfOpen,
            BreakerState::Ramp,
            TransitionReason::ProbesSucceeded
        )
    );
    assert_eq!(events[0].calls, 2);
}

#[tokio::test(start_paused = true)]
async fn probes_are_spread_over_the_probe_interval() {
    let (h, start) = half_open(config());
    let gap = secs(10.0) / 3;
    let first = h.breaker.try_acquire(start).unwrap();
    let early = h.breaker.try_acquire(start + gap / 2).unwrap_err();
    assert_eq!(early.reason, RejectReason::HalfOpenFull);
    assert_eq!(early.retry_after, gap - gap / 2);
    let second = h.breaker.try_acquire(start + gap).unwrap();
    assert!(
        h.breaker
            .try_acquire(start + gap * 2 - secs(0.001))
            .is_err()
    );
    let third = h.breaker.try_acquire(start + gap * 2).unwrap();
    assert_eq!(
        [first.kind(), second.kind(), third.kind()],
        [PermitKind::Probe; 3]
    );
    let probes = h.breaker.snapshot(start + gap * 2).probes.unwrap();
    assert_eq!((probes.admitted, probes.in_flight), (3, 3));
    // All three in flight: nothing more is admitted, however long one waits for them.
    let full = h.breaker.try_acquire(start + secs(7.0)).unwrap_err();
    assert_eq!(full.reason, RejectReason::HalfOpenFull);
    for permit in [first, second, third] {
        permit.record(FAST, start + secs(7.0));
    }
}

#[tokio::test(start_paused = true)]
async fn never_more_than_half_open_probes_even_without_spacing() {
    let (h, start) = half_open(BreakerConfig {
        probe_interval: Duration::ZERO,
        ..config()
    });
    let permits: Vec<_> = (0..3)
        .map(|_| h.breaker.try_acquire(start).unwrap())
        .collect();
    let rejected = h.breaker.try_acquire(start).unwrap_err();
    assert_eq!(rejected.reason, RejectReason::HalfOpenFull);
    // The earliest decision is when the first probe would time out.
    assert_eq!(rejected.retry_after, secs(8.0));
    for permit in permits {
        permit.record(FAST, start);
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_at_once() {
    let (mut h, start) = half_open(config());
    h.call(start, FAST).unwrap();
    h.call(start + secs(4.0), RATE_LIMITED).unwrap();
    assert_eq!(h.state(start + secs(4.0)), BreakerState::Open);
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::HalfOpen,
            BreakerState::Open,
            TransitionReason::ProbeFailed
        )]
    );
    assert_eq!(
        h.breaker.remaining_open(start + secs(4.0)),
        Some(secs(60.0))
    );
}

#[tokio::test(start_paused = true)]
async fn probes_without_two_fast_successes_reopen() {
    // Two slow successes leave one probe: two fast ones are no longer possible.
    let (mut h, start) = half_open(config());
    h.call(start, SLOW).unwrap();
    assert_eq!(h.state(start), BreakerState::HalfOpen);
    h.call(start + secs(4.0), SLOW).unwrap();
    assert_eq!(h.state(start + secs(4.0)), BreakerState::Open);
    assert_eq!(h.events()[0].reason, TransitionReason::ProbesInconclusive);

    // One fast and two slow: decided only by the third.
    let (mut h, start) = half_open(config());
    h.call(start, FAST).unwrap();
    h.call(start + secs(4.0), SLOW).unwrap();
    assert_eq!(h.state(start + secs(4.0)), BreakerState::HalfOpen);
    h.call(start + secs(8.0), SLOW).unwrap();
    assert_eq!(h.state(start + secs(8.0)), BreakerState::Open);
    let event = &h.events()[0];
    assert_eq!(event.reason, TransitionReason::ProbesInconclusive);
    assert_eq!((event.calls, event.slow_rate), (3, 2.0 / 3.0));
}

#[tokio::test(start_paused = true)]
async fn a_hung_probe_counts_as_failed_after_probe_timeout() {
    let (mut h, start) = half_open(config());
    let hung = h.breaker.try_acquire(start).unwrap();
    assert_eq!(h.state(start + secs(7.999)), BreakerState::HalfOpen);
    assert_eq!(h.state(start + secs(8.0)), BreakerState::Open);
    let events = h.events();
    assert_eq!(events[0].reason, TransitionReason::ProbeTimedOut);
    assert_eq!(events[0].at, start + secs(8.0));
    // Its answer, when it finally comes, belongs to a period that is over.
    hung.record(FAST, start + secs(20.0));
    assert_eq!(h.state(start + secs(20.0)), BreakerState::Open);
    assert_eq!(
        h.breaker.remaining_open(start + secs(20.0)),
        Some(secs(48.0))
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_probe_gives_its_slot_back() {
    let (mut h, start) = half_open(BreakerConfig {
        probe_interval: Duration::ZERO,
        ..config()
    });
    tokio::time::advance(start - Instant::now()).await;
    let probe = h.breaker.try_acquire(Instant::now()).unwrap();
    drop(probe);
    assert_eq!(h.state(Instant::now()), BreakerState::HalfOpen);
    assert!(h.events().is_empty(), "a cancelled probe decides nothing");
    let probes = h.breaker.snapshot(Instant::now()).probes.unwrap();
    assert_eq!((probes.admitted, probes.in_flight), (0, 0));
    // The slot serves the next probes, which decide as usual.
    h.call(Instant::now(), FAST).unwrap();
    h.call(Instant::now(), FAST).unwrap();
    assert_eq!(h.state(Instant::now()), BreakerState::Ramp);
}

/// While background jobs of the tool are due, the probes are theirs: an interactive call is
/// refused at once, told to come back when the probe in flight must have answered, and a
/// background job still gets a probe.
#[tokio::test(start_paused = true)]
async fn probes_go_to_background_jobs_first() {
    let (h, start) = half_open(config());
    let interactive = |due| Caller::Interactive {
        background_due: due,
    };
    let refused = h
        .breaker
        .try_acquire_as(start, interactive(true))
        .unwrap_err();
    assert_eq!(
        (refused.state, refused.reason),
        (BreakerState::HalfOpen, RejectReason::HalfOpenFull)
    );
    let gap = secs(10.0) / 3;
    assert_eq!(refused.retry_after, gap, "the probe gap");
    let probe = h.breaker.try_acquire_as(start, Caller::Background).unwrap();
    assert_eq!(probe.kind(), PermitKind::Probe);
    let refused = h
        .breaker
        .try_acquire_as(start + secs(1.0), interactive(true))
        .unwrap_err();
    assert_eq!(refused.retry_after, secs(7.0), "until the probe's timeout");
    probe.record(FAST, start + secs(1.0));
    // Without background work waiting, an interactive call probes like anyone else.
    let second = h
        .breaker
        .try_acquire_as(start + gap, interactive(false))
        .unwrap();
    assert_eq!(second.kind(), PermitKind::Probe);
    second.record(FAST, start + gap);
    // Once closed (here: ramping), the flag changes nothing.
    assert_eq!(h.state(start + gap), BreakerState::Ramp);
    assert!(
        h.breaker
            .try_acquire_as(start + gap, interactive(true))
            .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn an_ignored_probe_gives_its_slot_back() {
    let (h, start) = half_open(BreakerConfig {
        probe_interval: Duration::ZERO,
        ..config()
    });
    h.call(start, Outcome::Ignored).unwrap();
    h.call(start, Outcome::Ignored).unwrap();
    let probes = h.breaker.snapshot(start).probes.unwrap();
    assert_eq!((probes.admitted, probes.in_flight), (0, 0));
    h.call(start, FAST).unwrap();
    h.call(start, FAST).unwrap();
    assert_eq!(h.state(start), BreakerState::Ramp);
}

/// A provider's refusal (a request it does not list) is a coherent answer: the provider is up,
/// so a probe ending so counts as a successful probe. The soak found a half-open breaker whose
/// every probe was a background job asking for a date the provider does not list; each gave
/// its slot back, and the breaker stayed half-open for as long as the jobs were queued.
#[tokio::test(start_paused = true)]
async fn probes_the_provider_refuses_close_it() {
    let (mut h, start) = half_open(config());
    let refused = |ms| Outcome::Refused {
        latency: Duration::from_millis(ms),
    };
    assert_eq!(h.call(start, refused(80)), Ok(PermitKind::Probe));
    let probes = h.breaker.snapshot(start).probes.unwrap();
    assert_eq!((probes.admitted, probes.fast_successes), (1, 1));
    let second = start + secs(10.0) / 3;
    assert_eq!(h.call(second, refused(80)), Ok(PermitKind::Probe));
    assert_eq!(h.state(second), BreakerState::Ramp);
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::HalfOpen,
            BreakerState::Ramp,
            TransitionReason::ProbesSucceeded
        )]
    );

    // A slow refusal is a slow success: it does not close the breaker, as a slow success.
    let (h, start) = half_open(config());
    h.call(start, refused(7_000)).unwrap();
    h.call(start + secs(4.0), refused(7_000)).unwrap();
    assert_eq!(h.state(start + secs(4.0)), BreakerState::Open);
}

/// Probes go to due background jobs for the background's turn only: the probe interval from
/// the start of the half-open period, or until a job's probe is given back without a verdict.
/// After that an interactive call probes, even with jobs due all the time.
#[tokio::test(start_paused = true)]
async fn an_interactive_call_probes_after_the_backgrounds_turn() {
    let busy = Caller::Interactive {
        background_due: true,
    };
    let (h, start) = half_open(config());
    // A job probed at the start and its answer is still awaited (it may hang until 8 s).
    let job = h.breaker.try_acquire_as(start, Caller::Background).unwrap();
    let refused = h
        .breaker
        .try_acquire_as(start + secs(5.0), busy)
        .unwrap_err();
    assert_eq!(refused.reason, RejectReason::HalfOpenFull);
    assert_eq!(
        refused.retry_after,
        secs(3.0),
        "until the job's probe times out"
    );
    job.record(FAST, start + secs(5.0));
    let refused = h
        .breaker
        .try_acquire_as(start + secs(9.0), busy)
        .unwrap_err();
    assert_eq!(refused.retry_after, secs(1.0), "until the turn ends");
    let probe = h.breaker.try_acquire_as(start + secs(10.0), busy).unwrap();
    assert_eq!(probe.kind(), PermitKind::Probe);
    probe.record(FAST, start + secs(10.1));
    assert_eq!(h.state(start + secs(10.1)), BreakerState::Ramp);

    // A job's probe given back without a verdict ends the turn at once.
    let (h, start) = half_open(config());
    drop(h.breaker.try_acquire_as(start, Caller::Background).unwrap());
    let probe = h.breaker.try_acquire_as(start + secs(4.0), busy).unwrap();
    assert_eq!(probe.kind(), PermitKind::Probe);
    probe.record(FAST, start + secs(4.0));
}

/// What the dispatcher reads to claim no more jobs than the breaker admits: all while closed,
/// none while open, and while half-open one per probe gap while a slot is free.
#[tokio::test(start_paused = true)]
async fn the_background_room_follows_the_probes() {
    let h = Harness::new(config());
    assert_eq!(h.breaker.background_room(h.at(0.0)), None, "closed");
    h.trip(h.at(0.0));
    assert_eq!(h.breaker.background_room(h.at(29.0)), Some(0), "open");
    let start = h.at(30.0);
    assert_eq!(h.breaker.background_room(start), Some(1), "half-open");
    let probe = h.breaker.try_acquire(start).unwrap();
    assert_eq!(h.breaker.background_room(start + secs(1.0)), Some(0));
    let gap = secs(10.0) / 3;
    assert_eq!(h.breaker.background_room(start + gap), Some(1));
    probe.record(FAST, start + gap);
    h.call(start + gap, FAST).unwrap();
    assert_eq!(h.breaker.background_room(start + gap), None, "ramp");
}

#[tokio::test(start_paused = true)]
async fn a_probe_answered_429_with_a_retry_after_pauses_for_it() {
    // The provider is up and asks us to wait 10 s: not a failed probe (60 s, then two probes
    // and the ramp), but its rate-limit pause, ended by one successful probe.
    let (mut h, start) = half_open(config());
    let limited = Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(10.0)),
    });
    assert_eq!(h.call(start, limited), Ok(PermitKind::Probe));
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::HalfOpen,
            BreakerState::Open,
            TransitionReason::RetryAfter {
                retry_after: secs(10.0)
            }
        )]
    );
    assert_eq!(h.breaker.remaining_open(start), Some(secs(10.0)));
    let back = start + secs(10.0);
    assert_eq!(h.call(back, FAST), Ok(PermitKind::Probe));
    assert_eq!(h.state(back), BreakerState::Closed);
    // The pause did not grow the backoff: the next trip opens for `open_for` again.
    h.trip(back);
    assert_eq!(h.breaker.remaining_open(back), Some(secs(30.0)));
}

#[tokio::test(start_paused = true)]
async fn a_pause_after_a_sick_open_lasts_what_the_provider_asked() {
    // Tripped by timeouts, then a probe answered 429 `Retry-After: 45`: 45 s, not the 60 s
    // the second opening's backoff would be; a failure after it still backs off from the
    // first opening (60 s).
    let (h, start) = half_open(config());
    let limited = Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(45.0)),
    });
    assert_eq!(h.call(start, limited), Ok(PermitKind::Probe));
    assert_eq!(h.breaker.remaining_open(start), Some(secs(45.0)));
    let back = start + secs(45.0);
    assert_eq!(h.call(back, FAIL), Ok(PermitKind::Probe));
    assert_eq!(h.breaker.remaining_open(back), Some(secs(60.0)));
}
