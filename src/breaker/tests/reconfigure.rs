//! A new policy on a live breaker (a configuration reload): the state and its timers stay, the
//! next transition follows the new rules.

use super::*;

/// The standard tuning with jitter off and `edit` applied.
fn tuned(edit: impl FnOnce(&mut BreakerBuilder)) -> BreakerConfig {
    let mut builder = BreakerConfig::builder();
    builder.jitter(0.0);
    edit(&mut builder);
    builder.build().expect("a valid tuning")
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_stays_open_until_its_time_and_reopens_by_the_new_policy() {
    let mut h = Harness::new(config());
    h.trip(h.at(0.0));
    let remaining = h.breaker.remaining_open(h.at(10.0));
    h.breaker.reconfigure(
        tuned(|b| {
            b.open_for(secs(60.0)).open_for_max(secs(600.0));
        }),
        h.at(10.0),
    );
    assert_eq!(h.state(h.at(10.0)), BreakerState::Open);
    assert_eq!(h.breaker.remaining_open(h.at(10.0)), remaining);
    // Half-open at the old time (30 s); a failed probe reopens for the new doubled time.
    assert_eq!(h.state(h.at(30.0)), BreakerState::HalfOpen);
    h.call(h.at(30.0), FAIL).expect("a probe is admitted");
    assert_eq!(h.breaker.remaining_open(h.at(30.0)), Some(secs(120.0)));
    assert_eq!(
        h.transitions().last().map(|t| (t.1, t.2)),
        Some((BreakerState::Open, TransitionReason::ProbeFailed))
    );
}

#[tokio::test(start_paused = true)]
async fn a_forced_breaker_stays_forced_and_an_unchanged_policy_changes_nothing() {
    let mut h = Harness::new(config());
    h.breaker.force(ForceMode::Open, h.at(1.0));
    h.events();
    h.breaker.reconfigure(config(), h.at(2.0));
    h.breaker.reconfigure(
        tuned(|b| {
            b.consecutive_failures(2);
        }),
        h.at(3.0),
    );
    assert_eq!(h.state(h.at(3.0)), BreakerState::ForcedOpen);
    assert!(h.transitions().is_empty(), "no transition without traffic");
}

#[tokio::test(start_paused = true)]
async fn the_failure_run_counts_on_under_the_new_threshold() {
    let h = Harness::new(config());
    h.calls(h.at(0.0), FAIL, 2);
    assert_eq!(h.state(h.at(0.0)), BreakerState::Closed);
    h.breaker.reconfigure(
        tuned(|b| {
            b.consecutive_failures(3);
        }),
        h.at(1.0),
    );
    h.calls(h.at(1.0), FAIL, 1);
    assert_eq!(
        h.state(h.at(1.0)),
        BreakerState::Open,
        "2 + 1 failures in a row"
    );
    assert_eq!(h.breaker.snapshot(h.at(1.0)).history.times_opened, 1);
}

#[tokio::test(start_paused = true)]
async fn a_ramp_stage_the_new_policy_lacks_closes_the_breaker() {
    let mut h = Harness::new(config());
    h.trip(h.at(0.0));
    let start = h.pass_probes(h.at(30.0));
    assert_eq!(h.state(start), BreakerState::Ramp);
    h.events();
    h.breaker.reconfigure(
        tuned(|b| {
            b.ramp(Vec::new());
        }),
        start,
    );
    assert_eq!(h.state(start), BreakerState::Closed);
    assert_eq!(h.call(start, FAST), Ok(PermitKind::Normal));
    assert_eq!(
        h.transitions(),
        vec![(
            BreakerState::Ramp,
            BreakerState::Closed,
            TransitionReason::RampCompleted
        )]
    );
}
