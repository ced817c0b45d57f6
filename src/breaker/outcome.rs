//! What a call's result means to the breaker.
//!
//! The call pipeline classifies each upstream response into an [`Outcome`] (one table, per
//! provider error kind); the breaker only ever sees this vocabulary, never HTTP or provider
//! types.

use std::time::Duration;

/// The classified result of one upstream attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The provider answered usefully. Whether it was *slow* is the breaker's judgement, made
    /// against its slow-call threshold.
    Success {
        /// Time from sending the request to having the parsed answer.
        latency: Duration,
    },
    /// The attempt failed in a way that says something about the provider's health.
    Failure(FailureReason),
    /// The result says nothing about the provider's health (a client error the model can fix:
    /// 400/404/422). It counts as no call at all, and a probe that ends this way gives its slot back.
    Ignored,
}

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// No answer within the call timeout.
    Timeout,
    /// The connection could not be made (DNS, TCP, TLS).
    Connect,
    /// A 5xx answer. A 503 with a `Retry-After` longer than `open_for` opens the breaker for at
    /// least that long; on other statuses `retry_after` is ignored.
    ServerError {
        /// The HTTP status.
        status: u16,
        /// The parsed `Retry-After` header, if any.
        retry_after: Option<Duration>,
    },
    /// A 429. A `Retry-After` longer than `open_for` opens the breaker for at least that long.
    RateLimited {
        /// The parsed `Retry-After` header, if any.
        retry_after: Option<Duration>,
    },
    /// A 200 whose body does not parse into the provider's documented shape.
    Malformed,
}

impl FailureReason {
    /// The provider's `Retry-After`, when it is one the breaker honours (429 and 503 only).
    pub fn retry_after(&self) -> Option<Duration> {
        match *self {
            FailureReason::RateLimited { retry_after } => retry_after,
            FailureReason::ServerError {
                status: 503,
                retry_after,
            } => retry_after,
            _ => None,
        }
    }
}
