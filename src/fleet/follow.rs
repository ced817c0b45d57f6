//! Applying a shared row to this replica's breaker: the operator's force first, then the
//! automatic state (an open with its open-until, or a recovery).

use tokio::time::Instant;

use super::record::{AutoState, SharedBreaker, instant_of};
use crate::breaker::{Breaker, BreakerState, ForceMode};

/// Makes `breaker` follow `shared`, written by another replica (or by this one before a
/// restart). A breaker this row does not force leaves a forced state it still holds.
pub(crate) fn follow(breaker: &Breaker, shared: &SharedBreaker, now: Instant) {
    let state = breaker.state(now);
    match shared.forced {
        Some(mode) => {
            let already = matches!(
                (mode, state),
                (ForceMode::Open, BreakerState::ForcedOpen)
                    | (ForceMode::Closed, BreakerState::ForcedClosed)
            );
            if !already {
                breaker.force_followed(mode, now);
            }
            return;
        }
        None if matches!(state, BreakerState::ForcedOpen | BreakerState::ForcedClosed) => {
            breaker.force_followed(ForceMode::Auto, now);
        }
        None => {}
    }
    match shared.auto {
        AutoState::Closed => {}
        AutoState::Open { until_ms, ramp } => {
            breaker.follow_open(instant_of(until_ms), ramp, now);
        }
        AutoState::Recovered { ramp } => breaker.follow_recovery(ramp, now),
    }
}
