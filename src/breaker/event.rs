//! The vocabulary of breaker states and transitions, the events the breaker emits, and the table of
//! legal transitions that the property tests hold it to.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::BreakerKey;

/// Where a breaker stands. "Open" means *rejecting* (the electrical sense, not linkerd's gate sense).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Admitting every call and watching the window.
    Closed,
    /// Rejecting every call until the open time has passed.
    Open,
    /// Admitting a few spaced probes to decide between ramp and open.
    HalfOpen,
    /// Recovering: admitting a stage's share of calls. The published states (metrics, logs,
    /// `/status.json`) have no separate name for this, so [`BreakerState::as_str`] calls it
    /// `"closed"`; the stage is in
    /// [`BreakerSnapshot::ramp`](super::BreakerSnapshot::ramp).
    Ramp,
    /// Rejecting every call because an operator said so.
    ForcedOpen,
    /// Admitting every call because an operator said so; metrics are still recorded.
    ForcedClosed,
}

impl BreakerState {
    /// The published name used in metrics, logs and `/status.json`. `Ramp` shows as `"closed"`
    /// (traffic flows, partially); use [`BreakerState::detail_str`] to tell them apart.
    pub fn as_str(&self) -> &'static str {
        match self {
            BreakerState::Closed | BreakerState::Ramp => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
            BreakerState::ForcedOpen => "forced_open",
            BreakerState::ForcedClosed => "forced_closed",
        }
    }

    /// Like [`BreakerState::as_str`], but `Ramp` is `"ramp"`.
    pub fn detail_str(&self) -> &'static str {
        match self {
            BreakerState::Ramp => "ramp",
            other => other.as_str(),
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.detail_str())
    }
}

/// An operator override, set through [`Breaker::force`](super::Breaker::force).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForceMode {
    /// Reject every call.
    Open,
    /// Admit every call (metrics still recorded).
    Closed,
    /// Leave a forced state for `Closed` with a fresh window; a no-op when not forced.
    Auto,
}

/// Why a transition happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransitionReason {
    /// Failures (at least as many as slow calls) brought the window's bad-call rate to the threshold.
    FailureRate,
    /// Slow calls (more than failures) brought the window's bad-call rate to the threshold.
    SlowCallRate,
    /// `consecutive_failures` failures in a row.
    ConsecutiveFailures,
    /// A 429/503 asked for a pause longer than `open_for`; in `Open` it extends the open time.
    RetryAfter {
        /// The provider's `Retry-After`.
        retry_after: Duration,
    },
    /// The open time passed.
    OpenElapsed,
    /// Enough fast probe successes.
    ProbesSucceeded,
    /// A probe failed.
    ProbeFailed,
    /// A probe was not recorded within `probe_timeout`.
    ProbeTimedOut,
    /// Too few fast probe successes remained possible (slow successes count for neither side).
    ProbesInconclusive,
    /// The ramp moved to the next stage (0-based index).
    RampAdvanced {
        /// The stage now in force.
        stage: usize,
    },
    /// The bad-call rate during the ramp reached the threshold.
    RampFailureRate,
    /// The last ramp stage ended; the breaker is fully closed and its re-open count reset.
    RampCompleted,
    /// An operator forced the state.
    Forced(ForceMode),
    /// Another replica of the fleet opened the breaker or saw its probes succeed, and this one
    /// follows (with the same open-until, or into the same recovery); nothing of this replica's
    /// own traffic is counted for it.
    Followed,
}

/// A failure of this replica's call in a run of failures (its breaker closed), which a fleet
/// tells the other replicas so that each counts it in its own run
/// ([`Breaker::note_peer_failure`](super::Breaker::note_peer_failure)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    /// Whose call failed.
    pub key: BreakerKey,
    /// The wait the failure named when it was a 429 that named one
    /// ([`Outcome::rate_limit_pause`](super::Outcome::rate_limit_pause)): a run of such
    /// failures across the fleet opens as the provider's rate-limit pause.
    pub pause: Option<Duration>,
}

/// Who decided a transition: this replica (its own calls, timers or operator), or another
/// replica of the fleet that this one follows. Only local transitions are published to the
/// fleet, so a followed transition never echoes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// This replica's own outcomes, timers, or an operator's request to it.
    Local,
    /// Another replica's transition, read from the shared store.
    Fleet,
}

impl TransitionReason {
    /// A stable snake_case name for logs and metrics labels.
    pub fn as_str(&self) -> &'static str {
        match self {
            TransitionReason::FailureRate => "failure_rate",
            TransitionReason::SlowCallRate => "slow_call_rate",
            TransitionReason::ConsecutiveFailures => "consecutive_failures",
            TransitionReason::RetryAfter { .. } => "retry_after",
            TransitionReason::OpenElapsed => "open_elapsed",
            TransitionReason::ProbesSucceeded => "probes_succeeded",
            TransitionReason::ProbeFailed => "probe_failed",
            TransitionReason::ProbeTimedOut => "probe_timed_out",
            TransitionReason::ProbesInconclusive => "probes_inconclusive",
            TransitionReason::RampAdvanced { .. } => "ramp_advanced",
            TransitionReason::RampFailureRate => "ramp_failure_rate",
            TransitionReason::RampCompleted => "ramp_completed",
            TransitionReason::Forced(ForceMode::Open) => "forced_open",
            TransitionReason::Forced(ForceMode::Closed) => "forced_closed",
            TransitionReason::Forced(ForceMode::Auto) => "forced_auto",
            TransitionReason::Followed => "followed",
        }
    }
}

/// One state change of one breaker, broadcast to every subscriber of the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionEvent {
    /// Which breaker.
    pub key: BreakerKey,
    /// The state before.
    pub from: BreakerState,
    /// The state after.
    pub to: BreakerState,
    /// Why.
    pub reason: TransitionReason,
    /// When the transition became due. Timer-driven transitions carry the instant the timer
    /// expired, not the (later) instant someone noticed, so events are exact without `tick`.
    pub at: Instant,
    /// Failures / calls of the population that decided: the probes when leaving half-open,
    /// the window otherwise.
    pub failure_rate: f64,
    /// Slow successes / calls of the same population.
    pub slow_rate: f64,
    /// Calls in that population.
    pub calls: u32,
    /// Whether this replica decided it or follows another replica.
    pub origin: Origin,
}

/// Whether `from → to` for `reason` is a transition the breaker may make. This is the
/// specification the property tests check every emitted event against.
pub fn is_legal_transition(from: BreakerState, to: BreakerState, reason: TransitionReason) -> bool {
    use BreakerState as S;
    use TransitionReason as R;
    match (from, to) {
        // Following a peer: any automatic state may open, and an open or half-open one may
        // recover with the peer's probes.
        (S::Closed | S::HalfOpen | S::Ramp, S::Open) if reason == R::Followed => true,
        (S::Open | S::HalfOpen, S::Ramp | S::Closed) if reason == R::Followed => true,
        (S::Closed, S::Open) => matches!(
            reason,
            R::FailureRate | R::SlowCallRate | R::ConsecutiveFailures | R::RetryAfter { .. }
        ),
        (S::Open, S::HalfOpen) => reason == R::OpenElapsed,
        (S::Open, S::Open) => matches!(reason, R::RetryAfter { .. } | R::Followed),
        (S::HalfOpen, S::Open) => matches!(
            reason,
            R::ProbeFailed | R::ProbeTimedOut | R::ProbesInconclusive | R::RetryAfter { .. }
        ),
        (S::HalfOpen, S::Ramp) | (S::HalfOpen, S::Closed) => reason == R::ProbesSucceeded,
        (S::Ramp, S::Ramp) => matches!(reason, R::RampAdvanced { .. }),
        (S::Ramp, S::Closed) => reason == R::RampCompleted,
        (S::Ramp, S::Open) => matches!(
            reason,
            R::RampFailureRate | R::ConsecutiveFailures | R::RetryAfter { .. }
        ),
        (from, S::ForcedOpen) => from != S::ForcedOpen && reason == R::Forced(ForceMode::Open),
        (from, S::ForcedClosed) => {
            from != S::ForcedClosed && reason == R::Forced(ForceMode::Closed)
        }
        (S::ForcedOpen | S::ForcedClosed, S::Closed) => reason == R::Forced(ForceMode::Auto),
        _ => false,
    }
}

/// Every transition the breaker may make, as the `(from, to, reason)` label values of
/// `faregate_breaker_transitions_total` (`detail_str` states, `TransitionReason::as_str`
/// reasons), without duplicates. Telemetry creates each of these series at zero when a breaker
/// is registered: a counter series born at 1 on its first increment reads as no change to
/// PromQL's `increase()` and `changes()`, so the first opening of every breaker would be lost
/// to the alert rules.
pub fn legal_transition_labels() -> Vec<(&'static str, &'static str, &'static str)> {
    use BreakerState as S;
    use TransitionReason as R;
    const STATES: [BreakerState; 6] = [
        S::Closed,
        S::Open,
        S::HalfOpen,
        S::Ramp,
        S::ForcedOpen,
        S::ForcedClosed,
    ];
    // One value per label: the durations and the stage are not part of the label.
    let reasons = [
        R::FailureRate,
        R::SlowCallRate,
        R::ConsecutiveFailures,
        R::RetryAfter {
            retry_after: Duration::ZERO,
        },
        R::OpenElapsed,
        R::ProbesSucceeded,
        R::ProbeFailed,
        R::ProbeTimedOut,
        R::ProbesInconclusive,
        R::RampAdvanced { stage: 0 },
        R::RampFailureRate,
        R::RampCompleted,
        R::Forced(ForceMode::Open),
        R::Forced(ForceMode::Closed),
        R::Forced(ForceMode::Auto),
        R::Followed,
    ];
    // A new state or reason stops these matches compiling: a reminder to list it above.
    for s in STATES {
        match s {
            S::Closed | S::Open | S::HalfOpen | S::Ramp | S::ForcedOpen | S::ForcedClosed => {}
        }
    }
    for r in reasons {
        match r {
            R::FailureRate
            | R::SlowCallRate
            | R::ConsecutiveFailures
            | R::RetryAfter { .. }
            | R::OpenElapsed
            | R::ProbesSucceeded
            | R::ProbeFailed
            | R::ProbeTimedOut
            | R::ProbesInconclusive
            | R::RampAdvanced { .. }
            | R::RampFailureRate
            | R::RampCompleted
            | R::Forced(_)
            | R::Followed => {}
        }
    }
    let mut labels = Vec::new();
    for from in STATES {
        for to in STATES {
            for reason in reasons {
                let label = (from.detail_str(), to.detail_str(), reason.as_str());
                if is_legal_transition(from, to, reason) && !labels.contains(&label) {
                    labels.push(label);
                }
            }
        }
    }
    labels
}
