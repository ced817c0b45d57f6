//! The time-based sliding window of call results, kept in a ring of buckets.
//!
//! Recording and reading are O(1) amortised: the window keeps running totals and, when time moves
//! past a bucket, subtracts that bucket before reusing it. It never allocates after construction.

use std::time::Duration;

use tokio::time::Instant;

/// Number of buckets a window is divided into (1 s each for the default 60 s window).
pub(super) const BUCKETS: usize = 60;

/// Call counts over some population (a window, or the probes of one half-open period).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// All counted calls: fast successes, slow successes and failures.
    pub(super) calls: u32,
    /// Failed calls.
    pub(super) failures: u32,
    /// Successful but slow calls.
    pub(super) slow: u32,
}

impl Counts {
    /// Failures / calls, 0 when empty.
    pub(super) fn failure_rate(&self) -> f64 {
        ratio(self.failures, self.calls)
    }

    /// Slow successes / calls, 0 when empty.
    pub(super) fn slow_rate(&self) -> f64 {
        ratio(self.slow, self.calls)
    }

    /// (Failures + slow) / calls, 0 when empty. Computed as one division of exact integers, so
    /// 10 of 20 is exactly 0.5 and compares equal to a configured 0.5.
    pub(super) fn bad_rate(&self) -> f64 {
        ratio(self.failures + self.slow, self.calls)
    }

    /// Adds one call of the given kind.
    pub(super) fn add(&mut self, kind: CallKind) {
        self.calls += 1;
        match kind {
            CallKind::Fast => {}
            CallKind::Slow => self.slow += 1,
            CallKind::Failed => self.failures += 1,
        }
    }

    fn subtract(&mut self, other: Counts) {
        self.calls -= other.calls;
        self.failures -= other.failures;
        self.slow -= other.slow;
    }
}

fn ratio(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        0.0
    } else {
        f64::from(part) / f64::from(whole)
    }
}

/// How a counted call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallKind {
    /// A success below the slow-call threshold.
    Fast,
    /// A success at or above the slow-call threshold.
    Slow,
    /// A failure.
    Failed,
}

/// A sliding window of [`BUCKETS`] buckets.
#[derive(Debug)]
pub(super) struct Window {
    /// Bucket boundaries are measured from here.
    origin: Instant,
    /// Width of one bucket in nanoseconds (at least 1).
    width_ns: u64,
    /// Absolute index (since `origin`) of the newest bucket; bucket `i` lives at `i % BUCKETS`.
    head: u64,
    /// The buckets themselves.
    buckets: [Counts; BUCKETS],
    /// Sum of all buckets.
    totals: Counts,
}

impl Window {
    /// An empty window whose buckets are aligned on `origin`.
    pub(super) fn new(window: Duration, origin: Instant) -> Self {
        let width_ns = u64::try_from(window.as_nanos() / BUCKETS as u128)
            .unwrap_or(u64::MAX)
            .max(1);
        Self {
            origin,
            width_ns,
            head: 0,
            buckets: [Counts::default(); BUCKETS],
            totals: Counts::default(),
        }
    }

    /// Records one call at `now`.
    pub(super) fn record(&mut self, now: Instant, kind: CallKind) {
        self.roll(now);
        self.buckets[(self.head % BUCKETS as u64) as usize].add(kind);
        self.totals.add(kind);
    }

    /// The counts of calls still inside the window at `now`.
    pub(super) fn counts(&mut self, now: Instant) -> Counts {
        self.roll(now);
        self.totals
    }

    /// Forgets every call.
    pub(super) fn clear(&mut self) {
        self.buckets = [Counts::default(); BUCKETS];
        self.totals = Counts::default();
    }

    /// Moves the head to `now`'s bucket, emptying the buckets that fell out. A `now` earlier than
    /// the head (a caller that read the clock before a racing one) counts in the head bucket.
    fn roll(&mut self, now: Instant) {
        let index = u64::try_from(now.saturating_duration_since(self.origin).as_nanos())
            .unwrap_or(u64::MAX)
            / self.width_ns;
        if index <= self.head {
            return;
        }
        let steps = (index - self.head).min(BUCKETS as u64);
        for i in 1..=steps {
            let slot = ((self.head + i) % BUCKETS as u64) as usize;
            let old = std::mem::take(&mut self.buckets[slot]);
            self.totals.subtract(old);
        }
        self.head = index;
    }
}
