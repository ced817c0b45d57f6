//! Breaker configuration: plain data with units in the types, plus `validate`.
//!
//! The config loader builds a [`BreakerConfig`] per tool × provider from `[defaults.breaker]` and the
//! tool's own `[breaker]` table, then calls [`BreakerConfig::validate`] and reports every
//! [`ConfigProblem`] at once (`faregate check`). [`Breaker::new`](super::Breaker::new) does not
//! validate: it trusts the loader, and the state machine still makes progress with odd values.

use std::fmt;
use std::time::Duration;

/// The tuning of one breaker. Every field maps to a key of `[defaults.breaker]` in SPEC.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    /// Length of the sliding window of closed-state calls. It is kept in 60 buckets of
    /// `window / 60`, so a call drops out between `window - window/60` and `window` after it was
    /// recorded.
    pub window: Duration,
    /// The breaker opens when `(failures + slow) / calls >= failure_rate` in the window.
    pub failure_rate: f64,
    /// ... but only once at least this many calls are in the window.
    pub min_calls: u32,
    /// How a success is judged slow.
    pub slow_call: SlowCall,
    /// This many failures in a row open the breaker regardless of `min_calls`; 0 disables the rule.
    pub consecutive_failures: u32,
    /// How long the first opening lasts.
    pub open_for: Duration,
    /// Cap on the open time, which doubles with each consecutive re-open.
    pub open_for_max: Duration,
    /// How many probes half-open admits (never more in flight at once).
    pub half_open_probes: u32,
    /// How many fast probe successes close the breaker into the ramp.
    pub half_open_successes: u32,
    /// The probes are spread over this interval: each probe is admitted no earlier than
    /// `probe_interval / half_open_probes` after the previous one. Zero admits them back to back.
    pub probe_interval: Duration,
    /// A probe that has not been recorded after this long counts as failed (the tool's call
    /// timeout), so half-open can never get stuck on a hung call.
    pub probe_timeout: Duration,
    /// Recovery stages after half-open: each admits `share` of the calls for `duration`. After the
    /// last stage the breaker is fully closed. Empty means half-open closes straight to closed.
    pub ramp: Vec<RampStage>,
    /// Fraction (0..=1) of a *grown* open time that may be removed at random, so that breakers
    /// which re-opened together do not probe together. The first open is never jittered.
    pub jitter: f64,
    /// Seed of the breaker's jitter generator; give replicas different seeds.
    pub seed: u64,
}

/// How a success is judged slow. A slow success counts against the failure rate, and a slow
/// probe success neither closes nor reopens half-open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowCall {
    /// A success with latency at or above this is slow.
    Fixed(Duration),
    /// Three times the median latency of recent successes, learned while closed, never below
    /// `floor`. Until enough successes have been seen (see [`AUTO_MIN_SAMPLES`]), the threshold
    /// is `floor`: a fresh breaker then errs towards calling things slow, which only matters once
    /// `min_calls` calls are in the window, by which time the median is usually known.
    Auto {
        /// The lowest threshold auto mode will use, and its value before it has learned.
        floor: Duration,
    },
}

/// Successes needed before [`SlowCall::Auto`] trusts its median.
pub const AUTO_MIN_SAMPLES: usize = 10;

/// One stage of ramped recovery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampStage {
    /// Share of calls admitted during the stage, strictly between 0 and 1.
    pub share: f64,
    /// How long the stage lasts.
    pub duration: Duration,
}

/// One problem found by [`BreakerConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The config key at fault, as written in `faregate.toml` (e.g. `"half_open_successes"`).
    pub key: &'static str,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "breaker.{}: {}", self.key, self.message)
    }
}

// === impl BreakerConfig ===

impl Default for BreakerConfig {
    /// The SPEC `[defaults.breaker]` values, with a probe timeout of 8 s (the SPEC's example tool
    /// timeout), a 10 s probe interval, jitter 0.2 and seed 0.
    fn default() -> Self {
        Self {
            window: Duration::from_secs(60),
            failure_rate: 0.5,
            min_calls: 20,
            slow_call: SlowCall::Fixed(Duration::from_secs(6)),
            consecutive_failures: 5,
            open_for: Duration::from_secs(30),
            open_for_max: Duration::from_secs(300),
            half_open_probes: 3,
            half_open_successes: 2,
            probe_interval: Duration::from_secs(10),
            probe_timeout: Duration::from_secs(8),
            ramp: vec![
                RampStage {
                    share: 0.10,
                    duration: Duration::from_secs(30),
                },
                RampStage {
                    share: 0.50,
                    duration: Duration::from_secs(30),
                },
            ],
            jitter: 0.2,
            seed: 0,
        }
    }
}

impl BreakerConfig {
    /// Every problem with this config, in key order; empty when it is valid.
    pub fn validate(&self) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let mut problem =
            |key: &'static str, message: String| problems.push(ConfigProblem { key, message });

        if self.window.is_zero() {
            problem(
                "window",
                "must be a positive duration such as \"60s\"".into(),
            );
        }
        if !(self.failure_rate > 0.0 && self.failure_rate <= 1.0) {
            problem(
                "failure_rate",
                format!(
                    "must be greater than 0 and at most 1 (e.g. 0.5 for 50 %), got {}",
                    self.failure_rate
                ),
            );
        }
        if self.min_calls == 0 {
            problem("min_calls", "must be at least 1".into());
        }
        match self.slow_call {
            SlowCall::Fixed(d) if d.is_zero() => problem(
                "slow_call",
                "must be a positive duration such as \"6s\", or \"auto\"".into(),
            ),
            SlowCall::Auto { floor } if floor.is_zero() => problem(
                "slow_call",
                "the floor of \"auto\" must be a positive duration".into(),
            ),
            _ => {}
        }
        if self.open_for.is_zero() {
            problem(
                "open_for",
                "must be a positive duration such as \"30s\"".into(),
            );
        }
        if self.open_for_max < self.open_for {
            problem(
                "open_for_max",
                format!(
                    "must be at least open_for ({:?}), got {:?}",
                    self.open_for, self.open_for_max
                ),
            );
        }
        if self.half_open_probes == 0 {
            problem("half_open_probes", "must be at least 1".into());
        }
        if self.half_open_successes == 0 || self.half_open_successes > self.half_open_probes {
            problem(
                "half_open_successes",
                format!(
                    "must be between 1 and half_open_probes ({}), got {}",
                    self.half_open_probes, self.half_open_successes
                ),
            );
        }
        if self.probe_timeout.is_zero() {
            problem(
                "probe_timeout",
                "must be a positive duration (the tool's call timeout)".into(),
            );
        }
        let mut previous = 0.0;
        for (i, stage) in self.ramp.iter().enumerate() {
            if !(stage.share > previous && stage.share < 1.0) {
                problem(
                    "ramp",
                    format!(
                        "stage {} share must be above the previous stage's ({:.0} %) and below \
                         100 %, got {} %",
                        i + 1,
                        previous * 100.0,
                        stage.share * 100.0
                    ),
                );
            }
            if stage.duration.is_zero() {
                problem(
                    "ramp",
                    format!(
                        "stage {} must last a positive duration such as \"30s\"",
                        i + 1
                    ),
                );
            }
            if stage.share.is_finite() {
                previous = previous.max(stage.share);
            }
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            problem(
                "jitter",
                format!("must be between 0 and 1, got {}", self.jitter),
            );
        }
        problems
    }
}
