//! The retry policy of one tool: how many attempts an idempotent call gets, and how long it
//! waits between them.
//!
//! Which failures are worth another attempt is the call pipeline's question (it knows the
//! provider errors); this value only says how many and how long.

use std::time::Duration;

use super::{Backoff, PolicyProblem};

/// Attempts and backoff of one tool (`[defaults.retry]` merged with the tool's `[retry]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts at one provider, the first included; at least 1.
    attempts: u32,
    /// The wait before each retry, drawn with full jitter.
    backoff: Backoff,
}

/// Attempts per call unless configured: one retry.
const ATTEMPTS: u32 = 2;
/// The first retry waits up to this long.
const BACKOFF: Duration = Duration::from_millis(100);
/// No retry waits longer than this.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

impl RetryPolicy {
    /// The policy when nothing is configured: 2 attempts, backoff from 100 ms up to 2 s.
    pub fn standard() -> Self {
        RetryPolicy {
            attempts: ATTEMPTS,
            backoff: Backoff::new(BACKOFF, BACKOFF_MAX),
        }
    }

    /// `attempts` in all (at least 1) with a backoff from `backoff` up to `backoff_max`.
    pub fn try_new(
        attempts: u32,
        backoff: Duration,
        backoff_max: Duration,
    ) -> Result<Self, Vec<PolicyProblem>> {
        let mut problems = Vec::new();
        if attempts == 0 {
            problems.push(PolicyProblem::new(
                "attempts",
                &["attempts"],
                "must be at least 1 (1 = no retry)",
            ));
        }
        let backoff = Backoff::try_new(backoff, backoff_max).map_err(|_| {
            PolicyProblem::new(
                "backoff_max",
                &["backoff", "backoff_max"],
                format!(
                    "must be at least backoff ({})",
                    humantime::format_duration(backoff)
                ),
            )
        });
        match backoff {
            Ok(backoff) if problems.is_empty() => Ok(RetryPolicy { attempts, backoff }),
            Ok(_) => Err(problems),
            Err(problem) => {
                problems.push(problem);
                Err(problems)
            }
        }
    }

    /// Total attempts at one provider for an idempotent call.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The wait before each retry.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_policy_is_one_retry_after_at_most_100_ms() {
        let p = RetryPolicy::standard();
        assert_eq!(p.attempts(), 2);
        assert_eq!(p.backoff().ceiling(0), Duration::from_millis(100));
        assert_eq!(p.backoff().cap(), Duration::from_secs(2));
        assert_eq!(
            RetryPolicy::try_new(2, Duration::from_millis(100), Duration::from_secs(2)),
            Ok(p)
        );
    }

    #[test]
    fn every_problem_is_named_with_its_keys() {
        let problems = RetryPolicy::try_new(0, Duration::from_secs(3), Duration::from_secs(1))
            .expect_err("invalid");
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["attempts", "backoff_max"]);
        assert_eq!(problems[1].involves, ["backoff", "backoff_max"]);
        assert_eq!(
            problems[1].to_string(),
            "backoff_max: must be at least backoff (3s)"
        );
    }
}
