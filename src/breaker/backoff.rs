//! How long the breaker stays open: `open_for`, doubled for each consecutive re-open, capped at
//! `open_for_max`, with seeded jitter on the grown times.
//!
//! The jitter generator is a splitmix64 in a `u64`, so the module needs no `rand` dependency and a
//! seed makes every run reproducible.

use std::time::Duration;

/// The open-time policy of one breaker.
#[derive(Debug)]
pub(super) struct Backoff {
    /// First open time.
    base: Duration,
    /// Cap on the open time.
    max: Duration,
    /// Fraction of a grown open time that may be removed at random.
    jitter: f64,
    /// splitmix64 state.
    rng: u64,
}

impl Backoff {
    pub(super) fn new(base: Duration, max: Duration, jitter: f64, seed: u64) -> Self {
        Self {
            base,
            max: max.max(base),
            jitter: if jitter.is_finite() {
                jitter.clamp(0.0, 1.0)
            } else {
                0.0
            },
            rng: seed,
        }
    }

    /// The open time after `reopens` consecutive earlier opens (0 for the first).
    ///
    /// The jitter *removes* up to `jitter` of the grown time rather than adding to it, so breakers
    /// that sit at the cap still spread out, and the result stays within `base..=max`.
    pub(super) fn open_time(&mut self, reopens: u32) -> Duration {
        let factor = 1u32.checked_shl(reopens.min(31)).unwrap_or(u32::MAX);
        let grown = self.base.saturating_mul(factor).min(self.max);
        if reopens == 0 || self.jitter == 0.0 {
            return grown;
        }
        let cut = grown.mul_f64(self.jitter * self.next_unit());
        grown.saturating_sub(cut).max(self.base)
    }

    /// A uniform float in `[0, 1)`.
    fn next_unit(&mut self) -> f64 {
        // splitmix64 (Steele, Lea, Flood 2014): a fine generator for jitter, not for secrets.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}
