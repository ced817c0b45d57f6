//! Forced states: open, closed (metrics still counted) and back to auto.

use super::*;

#[tokio::test(start_paused = true)]
async fn forced_open_rejects_everything_until_auto() {
    let mut h = Harness::new(config());
    h.breaker.force(ForceMode::Open, h.at(1.0));
    let rejected = h.breaker.try_acquire(h.at(1.0)).unwrap_err();
    assert_eq!(rejected.reason, RejectReason::ForcedOpen);
    assert_eq!(rejected.state.as_str(), "forced_open");
    // No timer moves it.
    assert_eq!(h.state(h.at(3_600.0)), BreakerState::ForcedOpen);
    assert_eq!(h.breaker.remaining_open(h.at(3_600.0)), None);
    h.breaker.force(ForceMode::Auto, h.at(3_600.0));
    assert_eq!(h.call(h.at(3_600.0), FAST), Ok(PermitKind::Normal));
    assert_eq!(
        h.transitions(),
        vec![
            (
                BreakerState::Closed,
                BreakerState::ForcedOpen,
                TransitionReason::Forced(ForceMode::Open)
            ),
            (
                BreakerState::ForcedOpen,
                BreakerState::Closed,
                TransitionReason::Forced(ForceMode::Auto)
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn forced_closed_admits_everything_and_still_counts() {
    let h = Harness::new(config());
    h.trip(h.at(0.0));
    h.breaker.force(ForceMode::Closed, h.at(1.0));
    h.calls(h.at(1.0), FAIL, 50);
    let snapshot = h.breaker.snapshot(h.at(1.0));
    assert_eq!(snapshot.state, BreakerState::ForcedClosed);
    assert_eq!(snapshot.state.as_str(), "forced_closed");
    assert_eq!((snapshot.calls_in_window, snapshot.failure_rate), (55, 1.0));
}

#[tokio::test(start_paused = true)]
async fn auto_returns_to_closed_with_a_fresh_window() {
    let h = Harness::new(config());
    h.breaker.force(ForceMode::Closed, h.at(1.0));
    h.calls(h.at(1.0), FAIL, 19);
    h.breaker.force(ForceMode::Auto, h.at(2.0));
    let snapshot = h.breaker.snapshot(h.at(2.0));
    assert_eq!(snapshot.state, BreakerState::Closed);
    assert_eq!(snapshot.calls_in_window, 0);
    // Nor does the failure run carry over.
    h.calls(h.at(2.0), FAIL, 4);
    assert_eq!(h.state(h.at(2.0)), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn auto_is_a_no_op_when_not_forced() {
    let mut h = Harness::new(config());
    h.trip(h.at(0.0));
    h.events();
    h.breaker.force(ForceMode::Auto, h.at(1.0));
    assert_eq!(h.state(h.at(1.0)), BreakerState::Open);
    assert!(h.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_permit_from_before_a_force_does_not_count_after_it() {
    let h = Harness::new(config());
    let before = h.breaker.try_acquire(h.at(0.0)).unwrap();
    h.breaker.force(ForceMode::Closed, h.at(1.0));
    before.record(FAIL, h.at(2.0));
    assert_eq!(h.breaker.snapshot(h.at(2.0)).calls_in_window, 0);
}
