//! Unit tests of the breaker, one per rule of the module docs, on a paused tokio clock with
//! jitter 0.
//!
//! Each submodule covers one state; `props` holds the property tests. The helpers here build a
//! breaker with the standard tuning and drive it with explicit instants measured from its creation.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::*;

mod closed;
mod events;
mod fleet;
mod forced;
mod half_open;
mod open;
mod props;
mod ramp;
mod reconfigure;

/// A fast success (well under the 6 s slow-call threshold).
const FAST: Outcome = Outcome::Success {
    latency: Duration::from_millis(100),
};

/// A slow success (over the 6 s slow-call threshold).
const SLOW: Outcome = Outcome::Success {
    latency: Duration::from_secs(7),
};

/// A plain failure.
const FAIL: Outcome = Outcome::Failure(FailureReason::Timeout);

/// A 429 without Retry-After.
const RATE_LIMITED: Outcome = Outcome::Failure(FailureReason::RateLimited { retry_after: None });

/// The standard tuning with jitter off.
fn config() -> BreakerConfig {
    BreakerConfig::builder()
        .jitter(0.0)
        .build()
        .expect("the standard tuning is valid")
}

fn key() -> BreakerKey {
    BreakerKey::new("search_flights", "duffel")
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A breaker, a subscription to its events, and the instant it was created.
struct Harness {
    breaker: Arc<Breaker>,
    rx: broadcast::Receiver<TransitionEvent>,
    t0: Instant,
}

impl Harness {
    fn new(config: BreakerConfig) -> Self {
        let (tx, rx) = broadcast::channel(1024);
        let t0 = Instant::now();
        let breaker = Breaker::new(key(), config, tx);
        Self { breaker, rx, t0 }
    }

    /// The instant `s` seconds after creation.
    fn at(&self, s: f64) -> Instant {
        self.t0 + secs(s)
    }

    /// Acquires and records at once.
    fn call(&self, now: Instant, outcome: Outcome) -> Result<PermitKind, Rejected> {
        let permit = self.breaker.try_acquire(now)?;
        let kind = permit.kind();
        permit.record(outcome, now);
        Ok(kind)
    }

    /// Calls `n` times with the same outcome at the same instant, stopping at the first rejection.
    fn calls(&self, now: Instant, outcome: Outcome, n: usize) {
        for i in 0..n {
            if let Err(rejected) = self.call(now, outcome) {
                panic!("call {i} of {n} rejected: {rejected}");
            }
        }
    }

    fn state(&self, now: Instant) -> BreakerState {
        self.breaker.state(now)
    }

    /// The events emitted since the last call.
    fn events(&mut self) -> Vec<TransitionEvent> {
        let mut out = Vec::new();
        while let Ok(event) = self.rx.try_recv() {
            out.push(event);
        }
        out
    }

    /// The (from, to, reason) of the events emitted since the last call.
    fn transitions(&mut self) -> Vec<(BreakerState, BreakerState, TransitionReason)> {
        self.events()
            .into_iter()
            .map(|e| (e.from, e.to, e.reason))
            .collect()
    }

    /// Trips the breaker at `now` with consecutive failures.
    fn trip(&self, now: Instant) {
        for _ in 0..5 {
            self.call(now, FAIL).expect("closed breaker admits");
        }
        assert_eq!(self.state(now), BreakerState::Open);
    }

    /// From half-open at `now`, runs `successes` fast probes spaced by the probe gap; returns the
    /// instant of the last one.
    fn pass_probes(&self, mut now: Instant) -> Instant {
        let config = config();
        let gap = config.probe_interval / config.half_open_probes;
        for i in 0..config.half_open_successes {
            if i > 0 {
                now += gap;
            }
            self.call(now, FAST).expect("probe admitted");
        }
        now
    }
}
