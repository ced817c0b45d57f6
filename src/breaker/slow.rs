//! The slow-call threshold: fixed, or learned as 3 × the median latency of recent successes.

use std::time::Duration;

use super::config::{AUTO_MIN_SAMPLES, SlowCall};

/// How many recent successes the auto threshold remembers.
const SAMPLES: usize = 64;

/// The median is recomputed every this many new samples, so the hot path stays cheap.
const RECOMPUTE_EVERY: usize = 8;

/// The slow-call threshold of one breaker.
#[derive(Debug)]
pub(super) struct SlowThreshold {
    /// The configured rule.
    rule: SlowCall,
    /// The threshold in force.
    current: Duration,
    /// Ring of recent success latencies in nanoseconds (auto mode only).
    samples: Box<[u64; SAMPLES]>,
    /// Total samples ever taken; the ring holds the last `min(taken, SAMPLES)`.
    taken: usize,
}

impl SlowThreshold {
    /// The threshold for `rule`, before anything was learned.
    pub(super) fn new(rule: SlowCall) -> Self {
        let current = match rule {
            SlowCall::Fixed(d) => d,
            SlowCall::Auto { floor } => floor,
        };
        Self {
            rule,
            current,
            samples: Box::new([0; SAMPLES]),
            taken: 0,
        }
    }

    /// The threshold in force: a success at or above it is slow.
    pub(super) fn get(&self) -> Duration {
        self.current
    }

    /// Whether a success with this latency is slow.
    pub(super) fn is_slow(&self, latency: Duration) -> bool {
        latency >= self.current
    }

    /// Learns from one success (the caller only calls this while closed).
    pub(super) fn learn(&mut self, latency: Duration) {
        let SlowCall::Auto { floor } = self.rule else {
            return;
        };
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.samples[self.taken % SAMPLES] = ns;
        self.taken += 1;
        if self.taken >= AUTO_MIN_SAMPLES
            && (self.taken == AUTO_MIN_SAMPLES || self.taken.is_multiple_of(RECOMPUTE_EVERY))
        {
            let len = self.taken.min(SAMPLES);
            let mut sorted = [0u64; SAMPLES];
            sorted[..len].copy_from_slice(&self.samples[..len]);
            let (_, median, _) = sorted[..len].select_nth_unstable(len / 2);
            let learned = Duration::from_nanos(median.saturating_mul(3));
            self.current = learned.max(floor);
        }
    }
}
