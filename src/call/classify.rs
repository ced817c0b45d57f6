//! Outcome classification: what one upstream attempt means for the breaker.
//!
//! The provider adapter says what happened ([`ErrorKind`]); this table says how the breaker
//! counts it. A refusal the model can fix (unknown airport, expired offer, nothing listed) is not
//! the provider's failure: it is [`Outcome::Refused`], which a closed breaker does not count but
//! a half-open probe counts as the provider answering (see the breaker's rules). A refusal the
//! gateway made itself, without asking the provider, says nothing about it and is ignored.
//! Everything that shows the provider cannot serve us counts as a failure.

use std::time::Duration;

use crate::breaker::{FailureReason, Outcome};
use crate::providers::{ErrorKind, UpstreamError};

/// The breaker outcome of one attempt that took `latency`.
pub(crate) fn classify<T>(result: &Result<T, UpstreamError>, latency: Duration) -> Outcome {
    let error = match result {
        Ok(_) => return Outcome::Success { latency },
        Err(e) => e,
    };
    match &error.kind {
        ErrorKind::Rejected { .. } if error.is_refused_by_gateway() => Outcome::Ignored,
        ErrorKind::Rejected { .. } => Outcome::Refused { latency },
        ErrorKind::Timeout => Outcome::Failure(FailureReason::Timeout),
        ErrorKind::Connect | ErrorKind::Transport => Outcome::Failure(FailureReason::Connect),
        ErrorKind::RateLimited { retry_after } => Outcome::Failure(FailureReason::RateLimited {
            retry_after: *retry_after,
        }),
        ErrorKind::Server {
            status,
            retry_after,
        } => Outcome::Failure(FailureReason::ServerError {
            status: *status,
            retry_after: *retry_after,
        }),
        // Bad credentials or a request format the provider no longer accepts: every call will
        // fail the same way until an operator acts, so it counts (and opens the breaker fast).
        ErrorKind::Misconfigured { status } => Outcome::Failure(FailureReason::ServerError {
            status: *status,
            retry_after: None,
        }),
        ErrorKind::Malformed => Outcome::Failure(FailureReason::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classification_table() {
        let ms = Duration::from_millis(120);
        let secs = |s| Some(Duration::from_secs(s));
        let err = |kind| Err::<(), _>(UpstreamError::new(kind, "test"));
        let table: Vec<(Result<(), UpstreamError>, Outcome)> = vec![
            (Ok(()), Outcome::Success { latency: ms }),
            (
                err(ErrorKind::Rejected {
                    message: "unknown airport".into(),
                }),
                Outcome::Refused { latency: ms },
            ),
            (
                Err(UpstreamError::new(
                    ErrorKind::Rejected {
                        message: "BA117 is not listed".into(),
                    },
                    crate::providers::error::NOT_LISTED,
                )),
                Outcome::Refused { latency: ms },
            ),
            (
                Err(UpstreamError::refused_by_gateway("over budget".into())),
                Outcome::Ignored,
            ),
            (
                err(ErrorKind::Timeout),
                Outcome::Failure(FailureReason::Timeout),
            ),
            (
                err(ErrorKind::Connect),
                Outcome::Failure(FailureReason::Connect),
            ),
            (
                err(ErrorKind::Transport),
                Outcome::Failure(FailureReason::Connect),
            ),
            (
                err(ErrorKind::RateLimited {
                    retry_after: secs(120),
                }),
                Outcome::Failure(FailureReason::RateLimited {
                    retry_after: secs(120),
                }),
            ),
            (
                err(ErrorKind::Server {
                    status: 503,
                    retry_after: secs(5),
                }),
                Outcome::Failure(FailureReason::ServerError {
                    status: 503,
                    retry_after: secs(5),
                }),
            ),
            (
                err(ErrorKind::Server {
                    status: 500,
                    retry_after: None,
                }),
                Outcome::Failure(FailureReason::ServerError {
                    status: 500,
                    retry_after: None,
                }),
            ),
            (
                err(ErrorKind::Misconfigured { status: 401 }),
                Outcome::Failure(FailureReason::ServerError {
                    status: 401,
                    retry_after: None,
                }),
            ),
            (
                err(ErrorKind::Malformed),
                Outcome::Failure(FailureReason::Malformed),
            ),
        ];
        for (result, expected) in table {
            assert_eq!(classify(&result, ms), expected, "{result:?}");
        }
    }
}
