//! Which failures are worth another attempt at the same provider.
//!
//! Retries are the pipeline's, not the HTTP client's: each attempt takes its own breaker permit
//! (so every attempt is counted, and none fires into an open breaker), only idempotent tools
//! retry, and every wait must fit inside the call's deadline. How many attempts and how long
//! each wait is the tool's `policy::RetryPolicy` ("full jitter": uniform in
//! `[0, min(max, base × 2^retry)]`, so that many callers failing together do not come back
//! together).

use crate::providers::ErrorKind;

/// Whether another attempt at the same provider may succeed.
///
/// Timeouts, broken connections, 5xx and rate limits are transient. A refusal the model can fix,
/// an operator problem (credentials) and a malformed body will be the same next time.
pub(crate) fn is_retryable(kind: &ErrorKind) -> bool {
    match kind {
        ErrorKind::Timeout
        | ErrorKind::Connect
        | ErrorKind::Transport
        | ErrorKind::RateLimited { .. } => true,
        // 501 Not Implemented will not start working; every other 5xx may.
        ErrorKind::Server { status, .. } => *status != 501,
        ErrorKind::Rejected { .. } | ErrorKind::Misconfigured { .. } | ErrorKind::Malformed => {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_retry_and_permanent_ones_do_not() {
        let retry = [
            ErrorKind::Timeout,
            ErrorKind::Connect,
            ErrorKind::Transport,
            ErrorKind::RateLimited { retry_after: None },
            ErrorKind::Server {
                status: 503,
                retry_after: None,
            },
        ];
        let stop = [
            ErrorKind::Rejected {
                message: "x".into(),
            },
            ErrorKind::Misconfigured { status: 401 },
            ErrorKind::Malformed,
            ErrorKind::Server {
                status: 501,
                retry_after: None,
            },
        ];
        assert!(retry.iter().all(is_retryable));
        assert!(!stop.iter().any(is_retryable));
    }
}
