//! What a breaker takes from the rest of a fleet: a followed open, a followed recovery, a
//! followed force, and the half-open lease.

use super::*;

#[tokio::test(start_paused = true)]
async fn a_followed_open_keeps_the_peers_open_until_and_counts_nothing_local() {
    let mut h = Harness::new(config());
    h.calls(h.at(0.0), FAIL, 4);
    h.breaker.follow_open(h.at(40.0), true, h.at(1.0));
    assert_eq!(h.breaker.remaining_open(h.at(1.0)), Some(secs(39.0)));
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].from, events[0].to, events[0].reason),
        (
            BreakerState::Closed,
            BreakerState::Open,
            TransitionReason::Followed
        )
    );
    assert_eq!(events[0].origin, Origin::Fleet);
    // The local window still holds only this replica's four failures.
    assert_eq!(h.breaker.snapshot(h.at(1.0)).calls_in_window, 4);
    // The figures at opening are the deciding replica's, not known here: none, rather than
    // this replica's window read as "opened at 100 % of 4 calls" (or 0 % of none).
    let history = h.breaker.snapshot(h.at(1.0)).history;
    assert_eq!(history.times_opened, 1);
    assert_eq!(
        (
            history.failure_rate_at_last_open,
            history.slow_rate_at_last_open,
            history.calls_at_last_open
        ),
        (None, None, None)
    );
    // A shorter open of another peer does not shorten it; a longer one extends it.
    h.breaker.follow_open(h.at(20.0), true, h.at(2.0));
    assert_eq!(h.breaker.remaining_open(h.at(2.0)), Some(secs(38.0)));
    h.breaker.follow_open(h.at(50.0), true, h.at(2.0));
    assert_eq!(h.breaker.remaining_open(h.at(2.0)), Some(secs(48.0)));
}

#[tokio::test(start_paused = true)]
async fn an_open_that_elapsed_unrecovered_is_followed_into_half_open() {
    // A replica that starts (or comes back to the store) after the fleet's open elapsed, with
    // no recovery written: the provider has not answered a probe yet, so it probes first.
    let mut h = Harness::new(config());
    h.breaker.follow_open(h.at(2.5), true, h.at(3.0));
    assert_eq!(h.state(h.at(3.0)), BreakerState::HalfOpen);
    assert_eq!(
        h.transitions(),
        vec![
            (
                BreakerState::Closed,
                BreakerState::Open,
                TransitionReason::Followed
            ),
            (
                BreakerState::Open,
                BreakerState::HalfOpen,
                TransitionReason::OpenElapsed
            ),
        ]
    );
    // One already half-open keeps its period (and its probes): nothing happens.
    h.breaker.follow_open(h.at(2.8), true, h.at(4.0));
    assert_eq!(h.transitions(), vec![]);
    // A forced breaker is the operator's.
    h.breaker.force(ForceMode::Closed, h.at(5.0));
    h.events();
    h.breaker.follow_open(h.at(4.5), true, h.at(6.0));
    assert_eq!(h.state(h.at(6.0)), BreakerState::ForcedClosed);
}

#[tokio::test(start_paused = true)]
async fn local_opens_are_published_as_local() {
    let mut h = Harness::new(config());
    h.trip(h.at(0.0));
    let events = h.events();
    assert!(events.iter().all(|e| e.origin == Origin::Local));
}

#[tokio::test(start_paused = true)]
async fn a_followed_recovery_ramps_or_closes() {
    let mut h = Harness::new(config());
    h.trip(h.at(0.0));
    h.breaker.follow_recovery(true, h.at(31.0));
    assert_eq!(h.state(h.at(31.0)), BreakerState::Ramp);
    let h2 = Harness::new(config());
    h2.trip(h2.at(0.0));
    h2.breaker.follow_recovery(false, h2.at(5.0));
    assert_eq!(h2.state(h2.at(5.0)), BreakerState::Closed);
    // A closed breaker has nothing to recover from.
    h.events();
    h.breaker.follow_recovery(true, h.at(200.0));
    assert_eq!(
        h.transitions().last().map(|t| t.2),
        Some(TransitionReason::RampCompleted)
    );
}

#[tokio::test(start_paused = true)]
async fn a_followed_rate_limit_pause_recovers_without_the_ramp_on_every_replica() {
    // Replica A's 429 paused the provider until its quota resets; replica B only followed the
    // open. Whichever of them probes at the reset, the recovery is at full rate at once: a ramp
    // here would waste most of the new window (a fleet draining a backlog ran at 10 % then 50 %
    // of its learned allowance for a minute).
    let a = Harness::new(config());
    let retry_after = Some(secs(90.0));
    a.call(
        a.at(0.0),
        Outcome::Failure(FailureReason::RateLimited { retry_after }),
    )
    .expect("closed breaker admits");
    let opened = a.breaker.snapshot(a.at(0.0));
    assert!(opened.quota_pause, "a 429's pause is a quota pause");
    let b = Harness::new(config());
    b.breaker
        .follow_open(a.at(90.0), !opened.quota_pause, b.at(1.0));
    assert!(b.breaker.snapshot(b.at(1.0)).quota_pause);
    let done = b.pass_probes(b.at(90.0));
    assert_eq!(b.state(done), BreakerState::Closed);
    // An open for failures still ramps when a follower probes.
    let c = Harness::new(config());
    c.breaker.follow_open(c.at(30.0), true, c.at(1.0));
    assert!(!c.breaker.snapshot(c.at(1.0)).quota_pause);
    let done = c.pass_probes(c.at(30.0));
    assert_eq!(c.state(done), BreakerState::Ramp);
}

#[tokio::test(start_paused = true)]
async fn forced_states_win_over_followed_opens() {
    let mut h = Harness::new(config());
    h.breaker.force_followed(ForceMode::Closed, h.at(0.0));
    h.breaker.follow_open(h.at(40.0), true, h.at(1.0));
    assert_eq!(h.state(h.at(1.0)), BreakerState::ForcedClosed);
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].origin, Origin::Fleet);
}

#[tokio::test(start_paused = true)]
async fn half_open_probes_need_the_lease_in_a_fleet() {
    let h = Harness::new(config());
    h.breaker.require_probe_lease(true);
    h.trip(h.at(0.0));
    let half_open = h.at(30.0);
    assert!(h.breaker.wants_probe_lease(half_open));
    let refused = h.call(half_open, FAST).unwrap_err();
    assert_eq!(refused.reason, RejectReason::HalfOpenFull);
    h.breaker.grant_probe_lease(h.at(40.0), half_open);
    assert!(h.breaker.holds_probe_lease(half_open));
    assert!(!h.breaker.wants_probe_lease(half_open));
    assert_eq!(h.call(half_open, FAST), Ok(PermitKind::Probe));
    // An expired lease admits no more probes.
    let gap = config().probe_interval / config().half_open_probes;
    let late = h.at(40.0) + gap;
    assert!(h.call(late, FAST).is_err());
    assert!(h.breaker.wants_probe_lease(late));
}

#[tokio::test(start_paused = true)]
async fn a_lease_covers_one_half_open_period() {
    let h = Harness::new(config());
    h.breaker.require_probe_lease(true);
    h.trip(h.at(0.0));
    h.breaker.grant_probe_lease(h.at(100.0), h.at(30.0));
    h.call(h.at(30.0), FAIL).expect("the lease holder probes");
    assert_eq!(h.state(h.at(30.0)), BreakerState::Open);
    // The next half-open period needs a new lease.
    let next = h.at(30.0) + h.breaker.remaining_open(h.at(30.0)).unwrap_or_default();
    assert!(h.breaker.wants_probe_lease(next));
    // A grant outside half-open is ignored, and a single node needs none.
    h.breaker.require_probe_lease(false);
    assert!(!h.breaker.wants_probe_lease(next));
    assert_eq!(h.call(next, FAST), Ok(PermitKind::Probe));
}

#[tokio::test(start_paused = true)]
async fn an_idle_replica_lets_its_lease_lapse_and_takes_it_again_only_for_a_caller() {
    // A replica drained from its balancer must not keep the fleet half-open: a half-open
    // period with no probe never ends, and the other replicas refuse while it holds the lease.
    let h = Harness::new(config());
    h.breaker.require_probe_lease(true);
    h.trip(h.at(0.0));
    let idle = secs(3.0);
    // The first lease of the period is taken at once, callers or not.
    assert!(h.breaker.wants_probe_lease(h.at(30.0)));
    h.breaker.grant_probe_lease(h.at(33.0), h.at(30.0));
    assert!(h.breaker.holds_probe_lease(h.at(31.0)));
    // No caller asked: it is not renewed, and once lapsed not taken again.
    assert!(!h.breaker.keeps_probe_lease(h.at(31.0), idle));
    assert!(!h.breaker.wants_probe_lease(h.at(34.0)));
    assert!(!h.breaker.wants_probe_lease(h.at(60.0)));
    // A caller asks (and is refused, without the lease): now it is wanted.
    let refused = h.call(h.at(61.0), FAST).unwrap_err();
    assert_eq!(refused.reason, RejectReason::HalfOpenFull);
    assert!(h.breaker.wants_probe_lease(h.at(61.25)));
    // Held again, it is renewed while a probe is in flight, however long ago it was asked for.
    h.breaker.grant_probe_lease(h.at(70.0), h.at(61.25));
    let probe = h
        .breaker
        .try_acquire(h.at(61.5))
        .expect("the holder probes");
    assert!(h.breaker.keeps_probe_lease(h.at(65.0), idle));
    drop(probe);
    // Once it is recorded (here: ignored), it is renewed for `idle` after a caller last asked.
    assert!(!h.breaker.keeps_probe_lease(h.at(65.0), idle));
    assert_eq!(h.call(h.at(66.0), FAST), Ok(PermitKind::Probe));
    assert!(h.breaker.keeps_probe_lease(h.at(68.9), idle));
    assert!(!h.breaker.keeps_probe_lease(h.at(69.0), idle));
}

#[tokio::test(start_paused = true)]
async fn peer_failures_join_the_run_and_an_own_success_ends_it() {
    let mut h = Harness::new(config());
    h.calls(h.at(0.0), FAIL, 2);
    h.breaker.note_peer_failure(None, h.at(0.1));
    h.breaker.note_peer_failure(None, h.at(0.1));
    h.calls(h.at(0.2), FAST, 1);
    for _ in 0..4 {
        h.breaker.note_peer_failure(None, h.at(0.3));
    }
    assert_eq!(
        h.state(h.at(0.3)),
        BreakerState::Closed,
        "the run restarted"
    );
    h.calls(h.at(0.4), FAIL, 1);
    assert_eq!(
        h.state(h.at(0.4)),
        BreakerState::Open,
        "4 of the fleet's and 1 of its own"
    );
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, TransitionReason::ConsecutiveFailures);
    assert_eq!(
        events[0].origin,
        Origin::Local,
        "this replica's decision, published"
    );
    // The window holds this replica's own calls only.
    assert_eq!(h.breaker.snapshot(h.at(0.4)).calls_in_window, 4);
}

#[tokio::test(start_paused = true)]
async fn failures_in_a_run_are_told_and_nothing_else() {
    let h = Harness::new(config());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    h.breaker.share_failures(tx);
    h.calls(h.at(0.0), FAST, 3);
    assert!(rx.try_recv().is_err(), "successes are never told");
    h.calls(h.at(0.1), FAIL, 4);
    for _ in 0..4 {
        let told = RunFailure {
            key: key(),
            pause: None,
        };
        assert_eq!(rx.try_recv().ok(), Some(told));
    }
    // The fifth opens the breaker: the open is published instead.
    h.calls(h.at(0.2), FAIL, 1);
    assert!(rx.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_429s_wait_is_told_with_it() {
    let h = Harness::new(config());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    h.breaker.share_failures(tx);
    let limited = Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(10.0)),
    });
    h.calls(h.at(0.0), limited, 1);
    let told = RunFailure {
        key: key(),
        pause: Some(secs(10.0)),
    };
    assert_eq!(rx.try_recv().ok(), Some(told));
}

#[tokio::test(start_paused = true)]
async fn a_fleets_run_of_429s_with_a_retry_after_pauses_for_the_last_one() {
    // Three replicas' 429s `Retry-After: 10`, two of them told by peers: the run is the
    // provider's rate limit, as on one replica, and the pause is published without the ramp.
    let mut h = Harness::new(config());
    let limited = Outcome::Failure(FailureReason::RateLimited {
        retry_after: Some(secs(10.0)),
    });
    h.calls(h.at(0.0), limited, 3);
    h.breaker.note_peer_failure(Some(secs(12.0)), h.at(0.1));
    h.breaker.note_peer_failure(Some(secs(9.0)), h.at(0.2));
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Closed,
            BreakerState::Open,
            TransitionReason::RetryAfter {
                retry_after: secs(9.0)
            }
        )]
    );
    let snapshot = h.breaker.snapshot(h.at(0.2));
    assert!(snapshot.quota_pause, "followed without the ramp");
    assert_eq!(snapshot.open_until, Some(h.at(9.2)));
    // A peer's failure of another kind (or from a replica too old to say) makes it a trip.
    let mut h = Harness::new(config());
    h.calls(h.at(0.0), limited, 4);
    h.breaker.note_peer_failure(None, h.at(0.1));
    assert_eq!(h.transitions()[0].2, TransitionReason::ConsecutiveFailures);
}

/// A caller refused a probe only because the fleet has not granted this replica the lease yet
/// (nobody holds it) may wait for the grant, and probes once it comes; not while another
/// replica holds it, nor when it is the background jobs' turn, nor outside half-open.
#[tokio::test(start_paused = true)]
async fn a_refused_caller_waits_for_a_lease_nobody_holds_and_probes_once_granted() {
    let h = Harness::new(config());
    h.breaker.require_probe_lease(true);
    let interactive = Caller::Interactive {
        background_due: false,
    };
    assert!(
        h.breaker
            .probe_lease_coming(h.at(0.0), interactive)
            .is_none(),
        "closed: nothing to wait for"
    );
    h.trip(h.at(0.0));
    let half_open = h.at(30.0);
    assert!(h.call(half_open, FAST).is_err());
    let grant = h
        .breaker
        .probe_lease_coming(half_open, interactive)
        .unwrap_or_else(|| panic!("nobody holds the lease: the caller may wait for it"));
    let jobs_turn = Caller::Interactive {
        background_due: true,
    };
    assert!(
        h.breaker.probe_lease_coming(half_open, jobs_turn).is_none(),
        "the jobs' turn: an interactive caller leaves the probe to them"
    );
    let waiting = tokio::spawn({
        let breaker = Arc::clone(&h.breaker);
        async move {
            let grant = breaker
                .probe_lease_coming(half_open, Caller::Background)
                .unwrap_or_else(|| panic!("a background caller waits too"));
            grant.await;
        }
    });
    tokio::task::yield_now().await;
    h.breaker.grant_probe_lease(h.at(33.0), half_open);
    grant.await;
    waiting.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(h.call(half_open, FAST), Ok(PermitKind::Probe));

    // Another replica's lease: nobody waits while it may hold it.
    let other = Harness::new(config());
    other.breaker.require_probe_lease(true);
    other.trip(other.at(0.0));
    let half_open = other.at(30.0);
    assert!(other.call(half_open, FAST).is_err());
    other
        .breaker
        .probe_lease_elsewhere(other.at(30.5), half_open);
    assert!(
        other
            .breaker
            .probe_lease_coming(other.at(30.25), interactive)
            .is_none()
    );
    assert!(
        other
            .breaker
            .probe_lease_coming(other.at(31.0), interactive)
            .is_some(),
        "once that lease may have lapsed, this replica takes it for its caller"
    );

    // A replica that lost the period's first lease to another does not take it when that one
    // lapses, unless a caller of its own asks.
    let loser = Harness::new(config());
    loser.breaker.require_probe_lease(true);
    loser.trip(loser.at(0.0));
    assert!(loser.breaker.wants_probe_lease(loser.at(30.0)));
    loser
        .breaker
        .probe_lease_elsewhere(loser.at(30.5), loser.at(30.0));
    assert!(!loser.breaker.wants_probe_lease(loser.at(34.0)));
    assert!(loser.call(loser.at(40.0), FAST).is_err());
    assert!(loser.breaker.wants_probe_lease(loser.at(40.0)));
}
