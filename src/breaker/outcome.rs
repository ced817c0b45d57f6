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
    /// The provider answered coherently that the request is at fault or that it lists nothing
    /// for it (a refusal the model can fix: 400/404/422, an empty result). Measured after
    /// `latency`, like a success.
    ///
    /// It says nothing about the provider's *load*, so a closed (or ramping) breaker's window
    /// counts it as no call, as [`Outcome::Ignored`]: a model sending bad airports neither trips
    /// nor props up a breaker. But it proves the provider is up and answering, so a half-open
    /// probe that ends this way is a successful probe (fast or slow by its latency), as a
    /// success would be. Were it ignored, a half-open breaker whose probes only ever meet such
    /// requests (background jobs asking for a date the provider does not list) would never
    /// close.
    Refused {
        /// Time from sending the request to having the provider's refusal.
        latency: Duration,
    },
    /// The result says nothing about the provider at all: the call was cancelled (a permit
    /// dropped unrecorded) or the gateway refused it itself without asking the provider. It
    /// counts as no call at all, and a probe that ends this way gives its slot back.
    Ignored,
}

impl Outcome {
    /// The wait a provider's 429 named (its `Retry-After`, or its rate limit's reset), when
    /// this is such a 429: the provider is up and asks to be left alone that long, which the
    /// breaker honours as a rate-limit pause rather than as a sickness.
    pub fn rate_limit_pause(&self) -> Option<Duration> {
        match *self {
            Outcome::Failure(FailureReason::RateLimited { retry_after }) => retry_after,
            _ => None,
        }
    }
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
    /// A 429. With a `Retry-After` it is the provider's rate-limit pause: one longer than
    /// `open_for` opens the breaker for that long, as does the last of `consecutive_failures`
    /// such 429s in a row, or a half-open probe answered so (see the breaker's rules).
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
