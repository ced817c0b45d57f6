//! Retry policy: which failures are worth another attempt, and how long to wait first.
//!
//! Retries are the pipeline's, not the HTTP client's: each attempt takes its own breaker permit
//! (so every attempt is counted, and none fires into an open breaker), only idempotent tools
//! retry, and every wait must fit inside the call's deadline. Waits use "full jitter"
//! (uniform in `[0, min(max, base × 2^retry)]`) so that many callers failing together do not
//! come back together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::providers::ErrorKind;

/// Whether another attempt at the same provider may succeed.
///
/// Timeouts, broken connections, 5xx and rate limits are transient. A refusal the model can fix,
/// an operator problem (credentials) and a malformed body will be the same next time.
pub fn is_retryable(kind: &ErrorKind) -> bool {
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

/// Exponential backoff with full jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Ceiling of the first wait.
    pub base: Duration,
    /// Cap of every wait.
    pub max: Duration,
}

impl Backoff {
    /// The wait before retry number `retry` (0 for the first retry), `unit` being a uniform
    /// random number in `[0, 1)`.
    pub fn delay(&self, retry: u32, unit: f64) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(30));
        let ceiling = self.base.saturating_mul(factor).min(self.max);
        ceiling.mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// A tiny shared random source for jitter (splitmix64). Jitter needs spread, not secrecy.
#[derive(Debug)]
pub struct Jitter(AtomicU64);

impl Jitter {
    /// A source starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Jitter(AtomicU64::new(seed))
    }

    /// The next number in `[0, 1)`.
    pub fn next_unit(&self) -> f64 {
        let mut z = self
            .0
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
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

    #[test]
    fn backoff_grows_exponentially_up_to_the_cap_with_full_jitter() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_secs(2),
        };
        // unit 1.0 is the ceiling itself.
        let ceilings: Vec<u64> = (0..7).map(|r| b.delay(r, 1.0).as_millis() as u64).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(b.delay(3, 0.0), Duration::ZERO);
        assert_eq!(b.delay(3, 0.5), Duration::from_millis(400));
        assert_eq!(b.delay(u32::MAX, 1.0), Duration::from_secs(2));
    }

    #[test]
    fn jitter_stays_in_range_and_spreads() {
        let j = Jitter::new(42);
        let draws: Vec<f64> = (0..1000).map(|_| j.next_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let low = draws.iter().filter(|u| **u < 0.5).count();
        assert!((400..600).contains(&low), "{low} of 1000 below one half");
    }
}
