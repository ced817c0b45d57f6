//! The requeue policy: when a background job that could not run now should try again.
//!
//! Without one, sixteen workers backing off independently each dump their backlog on a
//! rate-limited API the moment their own timers fire. Here the wait is
//! anchored on what the provider side already knows — the breaker's remaining open time, or the
//! provider's `Retry-After` — so jobs come back when the provider can take them, not before.
//! On top of that anchor the wait grows per attempt (a provider that keeps failing is asked
//! less often) and gets jitter (jobs requeued together do not return together). The growth is
//! the gateway's one exponential backoff (`policy::Backoff`).

use std::time::Duration;

use crate::policy::{Backoff, PolicyProblem};

/// The wait after an attempt that did not finish a job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequeuePolicy {
    /// The growth on top of the anchor: attempt `n` adds `base × 2^(n-1)`, up to the cap.
    growth: Backoff,
    /// Jitter as a fraction of the whole wait, added (0.0 = none).
    jitter: f64,
}

/// The standard growth step: a job that keeps failing waits a second more, then two, four, …
const GROWTH_STEP: Duration = Duration::from_secs(1);
/// The standard cap of the growth part: a job is asked again at least every five minutes.
const MAX_GROWTH: Duration = Duration::from_secs(300);
/// The standard jitter: jobs requeued together come back spread over a fifth of their wait.
const JITTER: f64 = 0.2;

impl RequeuePolicy {
    /// The policy of every job system: growth from 1 s up to 5 min, 20 % jitter.
    pub fn standard() -> Self {
        RequeuePolicy {
            growth: Backoff::new(GROWTH_STEP, MAX_GROWTH),
            jitter: JITTER,
        }
    }

    /// Growth from `base` up to `max_growth`, with `jitter` (0..=1) added on top.
    pub fn try_new(
        base: Duration,
        max_growth: Duration,
        jitter: f64,
    ) -> Result<Self, Vec<PolicyProblem>> {
        let mut problems = Vec::new();
        let growth = Backoff::try_new(base, max_growth).map_err(|e| {
            problems.push(PolicyProblem::new(
                "max_growth",
                &["base", "max_growth"],
                e.to_string(),
            ));
        });
        if !(0.0..=1.0).contains(&jitter) {
            problems.push(PolicyProblem::new(
                "jitter",
                &["jitter"],
                format!("must be between 0 and 1, got {jitter}"),
            ));
        }
        match growth {
            Ok(growth) if problems.is_empty() => Ok(RequeuePolicy { growth, jitter }),
            _ => Err(problems),
        }
    }

    /// The wait before the next try.
    ///
    /// - `attempts`: attempts that reached a provider so far (0 when the breaker refused the
    ///   very first one);
    /// - `anchor`: the breaker's remaining open time or the provider's `Retry-After`, if known;
    /// - `unit`: a uniform random number in `[0, 1)` for the jitter.
    pub fn delay(&self, attempts: u32, anchor: Option<Duration>, unit: f64) -> Duration {
        let growth = match attempts {
            0 => Duration::ZERO,
            n => self.growth.ceiling(n - 1),
        };
        let wait = anchor.unwrap_or(Duration::ZERO) + growth;
        // Never come back sooner than the growth step, even with no anchor and no attempt.
        let wait = wait.max(self.growth.base());
        wait + wait.mul_f64(self.jitter * unit.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: f64) -> RequeuePolicy {
        RequeuePolicy::try_new(Duration::from_secs(1), Duration::from_secs(60), jitter)
            .expect("valid")
    }

    #[test]
    fn an_open_breaker_anchors_the_wait_on_its_remaining_time() {
        let p = policy(0.0);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(25)), 0.5),
            Duration::from_secs(25),
            "refused by an open breaker before any attempt: come back when it half-opens"
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(25)), 0.5),
            Duration::from_secs(26)
        );
    }

    #[test]
    fn a_retry_after_anchors_the_wait_too() {
        assert_eq!(
            policy(0.0).delay(2, Some(Duration::from_secs(120)), 0.0),
            Duration::from_secs(122)
        );
    }

    #[test]
    fn the_wait_grows_per_attempt_up_to_the_cap() {
        let p = policy(0.0);
        let waits: Vec<u64> = (1..=8).map(|n| p.delay(n, None, 0.0).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(p.delay(u32::MAX, None, 0.0), Duration::from_secs(60));
    }

    #[test]
    fn jitter_adds_at_most_its_fraction() {
        let p = policy(0.2);
        let anchor = Some(Duration::from_secs(30));
        assert_eq!(p.delay(1, anchor, 0.0), Duration::from_secs(31));
        assert_eq!(p.delay(1, anchor, 1.0), Duration::from_millis(37_200));
        for i in 0..100 {
            let d = p.delay(1, anchor, f64::from(i) / 100.0);
            assert!(d >= Duration::from_secs(31) && d <= Duration::from_millis(37_200));
        }
    }

    /// The anchor the worker passes is the breaker's remaining open time: on a paused clock,
    /// a job refused 10 s into a 30 s open period comes back 20 s later (plus its growth).
    #[tokio::test(start_paused = true)]
    async fn the_anchor_follows_the_breakers_remaining_open_time() {
        use crate::breaker::{Breaker, BreakerConfig, BreakerKey, FailureReason, Outcome};
        use tokio::time::{Instant, advance};

        let (tx, _rx) = tokio::sync::broadcast::channel(16);
        let config = BreakerConfig::builder().jitter(0.0).build().expect("valid");
        let breaker = Breaker::new(BreakerKey::new("get_flight_status", "amadeus"), config, tx);
        for _ in 0..5 {
            let permit = breaker.try_acquire(Instant::now()).expect("closed");
            permit.record(Outcome::Failure(FailureReason::Timeout), Instant::now());
        }
        advance(Duration::from_secs(10)).await;
        let anchor = breaker.remaining_open(Instant::now());
        assert_eq!(anchor, Some(Duration::from_secs(20)));
        let refused = breaker
            .try_acquire(Instant::now())
            .err()
            .map(|r| r.retry_after);
        assert_eq!(refused, anchor, "the rejection carries the same wait");
        assert_eq!(policy(0.0).delay(0, anchor, 0.9), Duration::from_secs(20));
        assert_eq!(policy(0.0).delay(3, anchor, 0.9), Duration::from_secs(24));
        advance(Duration::from_secs(20)).await;
        assert_eq!(
            breaker.remaining_open(Instant::now()),
            None,
            "half-open: due now"
        );
    }

    #[test]
    fn a_refusal_without_anchor_still_waits_one_step() {
        assert_eq!(policy(0.0).delay(0, None, 0.0), Duration::from_secs(1));
    }

    #[test]
    fn an_impossible_policy_is_refused_with_every_problem() {
        let problems = RequeuePolicy::try_new(Duration::from_secs(10), Duration::from_secs(1), 1.5)
            .expect_err("invalid");
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["max_growth", "jitter"]);
        assert_eq!(
            RequeuePolicy::standard().delay(3, None, 0.0),
            Duration::from_secs(4)
        );
    }
}
