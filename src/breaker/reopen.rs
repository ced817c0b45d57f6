//! How long the breaker stays open: `open_for`, doubled for each consecutive re-open, capped at
//! `open_for_max`, with seeded jitter on the grown times.
//!
//! The growth is the gateway's one exponential backoff ([`Backoff`]) and the randomness its one
//! generator ([`SplitMix`]); what is particular to the breaker is how the jitter applies (below).

use std::time::Duration;

use crate::policy::{Backoff, SplitMix};

/// The open-time policy of one breaker.
#[derive(Debug)]
pub(super) struct Reopen {
    /// `open_for` up to `open_for_max`.
    growth: Backoff,
    /// Fraction of a grown open time that may be removed at random.
    jitter: f64,
    /// The jitter source, seeded per breaker.
    rng: SplitMix,
}

impl Reopen {
    pub(super) fn new(growth: Backoff, jitter: f64, seed: u64) -> Self {
        Self {
            growth,
            jitter: if jitter.is_finite() {
                jitter.clamp(0.0, 1.0)
            } else {
                0.0
            },
            rng: SplitMix::new(seed),
        }
    }

    /// The open time after `reopens` consecutive earlier opens (0 for the first).
    ///
    /// The jitter *removes* up to `jitter` of the grown time rather than adding to it, so breakers
    /// that sit at the cap still spread out, and the result stays within `open_for..=open_for_max`.
    pub(super) fn open_time(&self, reopens: u32) -> Duration {
        let grown = self.growth.ceiling(reopens);
        if reopens == 0 || self.jitter == 0.0 {
            return grown;
        }
        let cut = grown.mul_f64(self.jitter * self.rng.next_unit());
        grown.saturating_sub(cut).max(self.growth.base())
    }
}
