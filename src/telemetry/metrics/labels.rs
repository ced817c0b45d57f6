//! The label values the call path and the jobs engine hand to [`Metrics`](super::Metrics).

use crate::breaker::RejectReason;

/// What one upstream attempt came to, as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The provider answered.
    Success,
    /// The attempt failed in a way the breaker counts.
    Failure,
    /// The result says nothing about the provider (a refusal the model can fix, a cancelled call).
    Ignored,
}

impl AttemptOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Success => "success",
            AttemptOutcome::Failure => "failure",
            AttemptOutcome::Ignored => "ignored",
        }
    }
}

/// Which fallback answered an interactive call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackKind {
    /// The last good result for the same arguments.
    Stale,
    /// The tool's fallback text from `prompts/`, or the text saying that the caller's own
    /// deadline passed first (no data either way).
    Text,
    /// A stale result or the maintenance text while maintenance windows hold every provider of
    /// the tool: announced, so apart from the fallback budget.
    Maintenance,
}

/// How a job callback POST ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackOutcome {
    /// The receiver answered 2xx.
    Sent,
    /// This delivery failed; it is tried again after a doubling wait.
    Retry,
    /// Every delivery attempt failed.
    Failed,
}

/// The label value of a callback delivery's outcome.
pub(super) fn callback_outcome(outcome: CallbackOutcome) -> &'static str {
    match outcome {
        CallbackOutcome::Sent => "sent",
        CallbackOutcome::Retry => "retry",
        CallbackOutcome::Failed => "failed",
    }
}

/// The label value of a breaker rejection.
pub fn reject_reason(reason: RejectReason) -> &'static str {
    match reason {
        RejectReason::Open => "open",
        RejectReason::HalfOpenFull => "half_open_full",
        RejectReason::RampShare => "ramp_share",
        RejectReason::ForcedOpen => "forced_open",
    }
}
