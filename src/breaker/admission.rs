//! What the gate answers when asked for a permit: who is asking ([`Caller`]), what kind of call
//! an admitted permit is ([`PermitKind`]), and why a call was refused ([`Rejected`]).
//!
//! Their own file because both halves of the breaker speak them: the state machine decides
//! them (`state.rs`) and the gate hands them out (`gate.rs`), so neither imports the other for
//! its vocabulary.

use std::fmt;
use std::time::Duration;

use super::BreakerState;

/// What kind of call a permit admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PermitKind {
    /// A call admitted while closed or forced closed.
    Normal,
    /// A half-open probe (see [`Caller`] for who gets one first).
    Probe,
    /// A call admitted within a ramp stage's share.
    Ramp,
}

/// Who asks for a permit, as far as half-open probes care.
///
/// Probes go to background work first: a job can wait for the verdict (it is requeued anyway),
/// while an interactive call would spend a waiting model's turn on a provider that is probably
/// still sick. So while background jobs of the same tool are due, a half-open breaker refuses an
/// interactive call (its caller answers at once with the fallback) and leaves the probes to the
/// jobs, for the background's turn only: `probe_interval` from the start of the half-open
/// period, or until a job's probe is given back without a verdict. After it an interactive call
/// probes like a job (a queue that is always due must not lock interactive callers out). In
/// every other state both callers are admitted alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// A background job.
    Background,
    /// An interactive call.
    Interactive {
        /// Whether background jobs of the same tool are due now.
        background_due: bool,
    },
}

/// Why a call was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The breaker is open.
    Open,
    /// Half-open, and every probe is in use or the next one is not due yet.
    HalfOpenFull,
    /// Ramping, and this call is over the stage's share.
    RampShare,
    /// An operator forced the breaker open.
    ForcedOpen,
}

/// A call the breaker would not admit: answer with the fallback (interactive) or requeue after
/// `retry_after` (background).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    /// When trying again may succeed: the rest of the open time; the time to the next probe slot;
    /// at most 1 s over the ramp's share; `open_for` when forced open (a hint only).
    pub retry_after: Duration,
    /// The state that rejected the call.
    pub state: BreakerState,
    /// Why.
    pub reason: RejectReason,
}

/// What a job's `last_error` and the logs say: in words, with whole seconds (a job's reader
/// gets "its recovery probes are all in use; retry after 4 s", not `HalfOpenFull` and
/// `3.331310462s`).
impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            RejectReason::Open => "it is open",
            RejectReason::HalfOpenFull => "its recovery probes are all in use",
            RejectReason::RampShare => "it lets only part of the calls through while it recovers",
            RejectReason::ForcedOpen => "an operator forced it open",
        };
        let secs = self.retry_after.as_millis().div_ceil(1000).max(1);
        write!(
            f,
            "breaker {} rejected the call: {why}; retry after {secs} s",
            self.state.as_str(),
        )
    }
}

impl std::error::Error for Rejected {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_reads_in_words_and_whole_seconds() {
        let rejected = Rejected {
            retry_after: Duration::from_millis(3_331),
            state: BreakerState::HalfOpen,
            reason: RejectReason::HalfOpenFull,
        };
        assert_eq!(
            rejected.to_string(),
            "breaker half_open rejected the call: its recovery probes are all in use; retry after 4 s"
        );
    }
}
