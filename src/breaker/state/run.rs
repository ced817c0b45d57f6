//! The run of failures in a row, and whether it is a provider's rate limit.
//!
//! `consecutive_failures` failures in a row open the breaker. When every one of them was a 429
//! that named its wait (`Retry-After`, or a rate-limit reset), the provider is not sick: it is
//! up, answering, and asking us to wait. Such a run opens the breaker as the provider's
//! rate-limit pause, for the wait the last 429 named (each counts from its own answer, so the
//! last is the provider's latest word), not as a sick provider's trip with its backoff, probes
//! and ramp. A 429 that names no wait says nothing of when to come back, and any other failure
//! (a timeout, a 5xx) may be a sickness: either makes the run an ordinary one until it ends.

use std::time::Duration;

/// Failures in a row since the last success (or the last open, recovery or force).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::breaker) struct Run {
    /// How many.
    failures: u32,
    /// While every failure of the run was a 429 with a wait: the last one's wait.
    pause: Option<Duration>,
}

impl Run {
    /// One more failure, which asked for `pause` when it was a 429 with a wait.
    pub(in crate::breaker) fn fail(&mut self, pause: Option<Duration>) {
        self.pause = if self.failures == 0 || self.pause.is_some() {
            pause
        } else {
            None
        };
        self.failures = self.failures.saturating_add(1);
    }

    /// The run ended (a success, an open, a recovery, a force).
    pub(in crate::breaker) fn end(&mut self) {
        *self = Run::default();
    }

    /// How many failures in a row.
    pub(in crate::breaker) fn failures(&self) -> u32 {
        self.failures
    }

    /// The wait the run's last 429 asked for, when every failure of the run was such a 429.
    pub(in crate::breaker) fn pause(&self) -> Option<Duration> {
        self.pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_a_pause_only_while_every_failure_named_its_wait() {
        let s = Duration::from_secs;
        let mut run = Run::default();
        assert_eq!((run.failures(), run.pause()), (0, None));
        run.fail(Some(s(25)));
        run.fail(Some(s(10)));
        assert_eq!((run.failures(), run.pause()), (2, Some(s(10))), "the last");
        run.fail(None);
        run.fail(Some(s(10)));
        assert_eq!((run.failures(), run.pause()), (4, None), "until it ends");
        run.end();
        run.fail(Some(s(5)));
        assert_eq!((run.failures(), run.pause()), (1, Some(s(5))));
    }
}
