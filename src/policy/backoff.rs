//! Exponential backoff and the one random source for jitter.
//!
//! Four waits in the gateway grow the same way: a breaker's open time after each re-open, a
//! call's retries, a background job's requeue delay and a callback's redelivery. Each is
//! `base × 2^n`, capped; they differ only in how they jitter it (a breaker removes up to a share
//! of the grown time, a retry draws uniformly below it, a requeue adds a share on top), so the
//! growth lives here once and each user applies its own jitter to [`Backoff::ceiling`].
//!
//! The random source is splitmix64 in an atomic `u64`: jitter needs spread, not secrecy, so
//! there is no `rand` dependency, and a seed makes every sequence reproducible.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Exponential growth with a cap: the wait before try `n` (0 for the first) is at most
/// `base × 2^n`, and never more than `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait.
    base: Duration,
    /// The longest wait; at least `base`.
    cap: Duration,
}

/// Why a [`Backoff`] cannot be built: its cap is below its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidBackoff {
    /// The base asked for.
    pub base: Duration,
}

impl fmt::Display for InvalidBackoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the cap must be at least the first wait ({})",
            humantime::format_duration(self.base)
        )
    }
}

impl std::error::Error for InvalidBackoff {}

impl Backoff {
    /// A backoff from `base` up to `cap`; refused when `cap` is below `base`.
    pub fn try_new(base: Duration, cap: Duration) -> Result<Self, InvalidBackoff> {
        if cap < base {
            return Err(InvalidBackoff { base });
        }
        Ok(Backoff { base, cap })
    }

    /// A backoff for values fixed in the code or validated before: a `cap` below `base` is
    /// raised to `base` (the wait then never grows).
    pub const fn new(base: Duration, cap: Duration) -> Self {
        let cap = if cap.as_nanos() < base.as_nanos() {
            base
        } else {
            cap
        };
        Backoff { base, cap }
    }

    /// The first wait.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// The longest wait.
    pub fn cap(&self) -> Duration {
        self.cap
    }

    /// The wait before try `n` without jitter: `base × 2^n`, at most the cap.
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 1u32 << n.min(31);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// "Full jitter": uniform in `[0, ceiling(n)]`, `unit` being a uniform number in `[0, 1)`.
    /// Callers that fail together then come back spread over the whole interval.
    pub fn full_jitter(&self, n: u32, unit: f64) -> Duration {
        self.ceiling(n).mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// A seeded splitmix64 generator (Steele, Lea, Flood 2014), shared by reference: fine for
/// jitter, not for secrets.
#[derive(Debug)]
pub struct SplitMix(AtomicU64);

impl SplitMix {
    /// A generator starting from `seed`; the same seed gives the same sequence.
    pub fn new(seed: u64) -> Self {
        SplitMix(AtomicU64::new(seed))
    }

    /// The next number, uniform in `[0, 1)`.
    pub fn next_unit(&self) -> f64 {
        const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut z = self
            .0
            .fetch_add(GOLDEN, Ordering::Relaxed)
            .wrapping_add(GOLDEN);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_wait_doubles_up_to_the_cap() {
        let b = Backoff::try_new(ms(100), ms(2000)).expect("valid");
        let ceilings: Vec<u64> = (0..7).map(|n| b.ceiling(n).as_millis() as u64).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(b.ceiling(u32::MAX), ms(2000));
    }

    #[test]
    fn full_jitter_draws_below_the_ceiling() {
        let b = Backoff::try_new(ms(100), ms(2000)).expect("valid");
        assert_eq!(b.full_jitter(3, 0.0), Duration::ZERO);
        assert_eq!(b.full_jitter(3, 0.5), ms(400));
        assert_eq!(b.full_jitter(u32::MAX, 1.0), ms(2000));
    }

    #[test]
    fn a_cap_below_the_base_is_refused_or_raised() {
        assert_eq!(
            Backoff::try_new(ms(500), ms(100)),
            Err(InvalidBackoff { base: ms(500) })
        );
        assert_eq!(
            InvalidBackoff { base: ms(500) }.to_string(),
            "the cap must be at least the first wait (500ms)"
        );
        let raised = Backoff::new(ms(500), ms(100));
        assert_eq!((raised.base(), raised.cap()), (ms(500), ms(500)));
        assert_eq!(raised.ceiling(5), ms(500));
        assert!(Backoff::try_new(Duration::ZERO, Duration::ZERO).is_ok());
    }

    #[test]
    fn the_generator_stays_in_range_spreads_and_repeats_from_its_seed() {
        let g = SplitMix::new(42);
        let draws: Vec<f64> = (0..1000).map(|_| g.next_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let low = draws.iter().filter(|u| **u < 0.5).count();
        assert!((400..600).contains(&low), "{low} of 1000 below one half");
        let again = SplitMix::new(42);
        assert_eq!(again.next_unit(), draws[0]);
    }
}
