//! Breaker tuning: one set of defaults and one validator.
//!
//! A [`BreakerConfig`] can only be had from [`BreakerBuilder::build`], which checks every rule
//! at once and names each key at fault ([`PolicyProblem`]). The config loader starts from
//! [`BreakerConfig::builder`] (the standard tuning below), applies `[defaults.breaker]` and each
//! tool's `[breaker]`, and builds one config per tool; [`Breaker::new`](super::Breaker::new)
//! then trusts what it is given.

use std::time::Duration;

use crate::policy::{Backoff, PolicyProblem};

/// The tuning of one breaker. The fields are private to `breaker/`: build it with
/// [`BreakerConfig::builder`]. Every field but `probe_timeout`, `jitter` and `seed` is a key of
/// `[defaults.breaker]` and of a tool's `[breaker]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    /// Length of the sliding window of closed-state calls (standard: 60 s). It is kept in 60
    /// buckets of `window / 60`, so a call drops out between `window - window/60` and `window`
    /// after it was recorded.
    pub(super) window: Duration,
    /// The breaker opens when `(failures + slow) / calls >= failure_rate` in the window
    /// (standard: 0.5) ...
    pub(super) failure_rate: f64,
    /// ... but only once at least this many calls are in the window (standard: 20).
    pub(super) min_calls: u32,
    /// How a success is judged slow (standard: at 6 s or more).
    pub(super) slow_call: SlowCall,
    /// This many failures in a row open the breaker regardless of `min_calls`; 0 disables the
    /// rule (standard: 5).
    pub(super) consecutive_failures: u32,
    /// How long the first opening lasts (standard: 30 s).
    pub(super) open_for: Duration,
    /// Cap on the open time, which doubles with each consecutive re-open (standard: 5 min).
    pub(super) open_for_max: Duration,
    /// How many probes half-open admits, never more in flight at once (standard: 3).
    pub(super) half_open_probes: u32,
    /// How many fast probe successes close the breaker into the ramp (standard: 2).
    pub(super) half_open_successes: u32,
    /// The probes are spread over this interval: each probe is admitted no earlier than
    /// `probe_interval / half_open_probes` after the previous one (standard: 10 s). The builder
    /// refuses zero; the machine admits probes back to back then, which its tests use.
    pub(super) probe_interval: Duration,
    /// A probe that has not been recorded after this long counts as failed, so half-open can
    /// never get stuck on a hung call. The loader sets the tool's attempt timeout (standard:
    /// 8 s, the standard tool timeout).
    pub(super) probe_timeout: Duration,
    /// Recovery stages after half-open: each admits `share` of the calls for `duration`. After
    /// the last stage the breaker is fully closed. Empty means half-open closes straight to
    /// closed (standard: 10 % for 30 s, then 50 % for 30 s).
    pub(super) ramp: Vec<RampStage>,
    /// Fraction (0..=1) of a *grown* open time that may be removed at random, so that breakers
    /// which re-opened together do not probe together; the first open is never jittered
    /// (standard: [`REOPEN_JITTER`]).
    pub(super) jitter: f64,
    /// Mixed with a hash of the breaker's key to seed its jitter (standard: 0). Breakers of
    /// different keys differ already; a test sets a seed to vary one key's sequence.
    pub(super) seed: u64,
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

impl SlowCall {
    /// `slow_call = "auto"`: learned from the median, never below [`AUTO_FLOOR`].
    pub fn auto() -> Self {
        SlowCall::Auto { floor: AUTO_FLOOR }
    }
}

/// The lowest slow-call threshold `"auto"` learns: below half a second a "slow" call is noise,
/// not pressure on the provider's pool.
pub const AUTO_FLOOR: Duration = Duration::from_millis(500);

/// Successes needed before [`SlowCall::Auto`] trusts its median.
pub const AUTO_MIN_SAMPLES: usize = 10;

/// The standard share of a grown open time removed at random: enough to spread breakers of
/// different tools that re-opened together, small enough that the backoff still grows.
pub const REOPEN_JITTER: f64 = 0.2;

/// One stage of ramped recovery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampStage {
    /// Share of calls admitted during the stage, strictly between 0 and 1.
    pub share: f64,
    /// How long the stage lasts.
    pub duration: Duration,
}

/// A [`BreakerConfig`] being put together; [`BreakerBuilder::build`] checks it.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerBuilder(BreakerConfig);

// === impl BreakerConfig ===

impl BreakerConfig {
    /// A builder holding the standard tuning (see each field).
    pub fn builder() -> BreakerBuilder {
        BreakerBuilder(BreakerConfig {
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
            jitter: REOPEN_JITTER,
            seed: 0,
        })
    }

    /// A builder starting from this config.
    pub fn to_builder(&self) -> BreakerBuilder {
        BreakerBuilder(self.clone())
    }

    /// The share of bad calls that opens the breaker.
    pub fn failure_rate(&self) -> f64 {
        self.failure_rate
    }

    /// How long the first opening lasts.
    pub fn open_for(&self) -> Duration {
        self.open_for
    }

    /// How a success is judged slow.
    pub fn slow_call(&self) -> SlowCall {
        self.slow_call
    }

    /// The re-open backoff: `open_for` doubled per consecutive re-open, up to `open_for_max`.
    pub(super) fn reopen_backoff(&self) -> Backoff {
        Backoff::new(self.open_for, self.open_for_max)
    }
}

// === impl BreakerBuilder ===

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, value: $ty) -> &mut Self {
                self.0.$name = value;
                self
            }
        )*
    };
}

impl BreakerBuilder {
    setters! {
        /// Sets `window`.
        window: Duration;
        /// Sets `failure_rate`.
        failure_rate: f64;
        /// Sets `min_calls`.
        min_calls: u32;
        /// Sets `slow_call`.
        slow_call: SlowCall;
        /// Sets `consecutive_failures` (0 disables the rule).
        consecutive_failures: u32;
        /// Sets `open_for`.
        open_for: Duration;
        /// Sets `open_for_max`.
        open_for_max: Duration;
        /// Sets `half_open_probes`.
        half_open_probes: u32;
        /// Sets `half_open_successes`.
        half_open_successes: u32;
        /// Sets `probe_interval`.
        probe_interval: Duration;
        /// Sets `probe_timeout` (the tool's attempt timeout).
        probe_timeout: Duration;
        /// Sets the ramp stages.
        ramp: Vec<RampStage>;
        /// Sets the share of a grown open time removed at random.
        jitter: f64;
        /// Sets the seed mixed into the breaker's jitter.
        seed: u64;
    }

    /// The config, or every problem with it in field order.
    pub fn build(&self) -> Result<BreakerConfig, Vec<PolicyProblem>> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(self.0.clone())
        } else {
            Err(problems)
        }
    }

    fn problems(&self) -> Vec<PolicyProblem> {
        let c = &self.0;
        let mut problems = Vec::new();
        let mut problem = |key: &'static str, message: String| {
            problems.push(PolicyProblem::new(key, involved(key), message));
        };
        let longer_than_zero = || "must be longer than zero".to_string();
        if c.window.is_zero() {
            problem("window", longer_than_zero());
        }
        if !(c.failure_rate > 0.0 && c.failure_rate <= 1.0) {
            problem(
                "failure_rate",
                format!(
                    "must be greater than 0 and at most 1 (e.g. 0.5 for 50 %), got {}",
                    c.failure_rate
                ),
            );
        }
        if c.min_calls == 0 {
            problem("min_calls", "must be at least 1".into());
        }
        match c.slow_call {
            SlowCall::Fixed(d) if d.is_zero() => {
                problem("slow_call", "must be longer than zero, or \"auto\"".into())
            }
            SlowCall::Auto { floor } if floor.is_zero() => problem(
                "slow_call",
                "the floor of \"auto\" must be longer than zero".into(),
            ),
            _ => {}
        }
        if c.open_for.is_zero() {
            problem("open_for", longer_than_zero());
        }
        if Backoff::try_new(c.open_for, c.open_for_max).is_err() {
            problem(
                "open_for_max",
                format!(
                    "must be at least open_for ({}), the first open period",
                    humantime::format_duration(c.open_for)
                ),
            );
        }
        if c.half_open_probes == 0 {
            problem("half_open_probes", "must be at least 1".into());
        }
        if c.half_open_successes == 0 {
            problem("half_open_successes", "must be at least 1".into());
        } else if c.half_open_successes > c.half_open_probes {
            problem(
                "half_open_successes",
                format!(
                    "{} successes can never happen with {} probes; set half_open_successes at most half_open_probes",
                    c.half_open_successes, c.half_open_probes
                ),
            );
        }
        if c.probe_interval.is_zero() {
            problem("probe_interval", longer_than_zero());
        }
        if c.probe_timeout.is_zero() {
            problem(
                "probe_timeout",
                "must be longer than zero (it is the tool's timeout)".into(),
            );
        }
        if !(0.0..=1.0).contains(&c.jitter) {
            problem(
                "jitter",
                format!("must be between 0 and 1, got {}", c.jitter),
            );
        }
        let mut previous = 0.0;
        for (i, stage) in c.ramp.iter().enumerate() {
            let key = format!("ramp[{i}]");
            if !(stage.share > previous && stage.share < 1.0) {
                problems.push(PolicyProblem::new(
                    key.clone(),
                    involved("ramp"),
                    "ramp shares must grow from stage to stage and stay below 100%",
                ));
            }
            if stage.duration.is_zero() {
                problems.push(PolicyProblem::new(
                    key,
                    involved("ramp"),
                    "the stage must last longer than zero",
                ));
            }
            if stage.share.is_finite() {
                previous = stage.share;
            }
        }
        problems
    }
}

/// The keys whose values together make a problem reported at `key`.
fn involved(key: &'static str) -> &'static [&'static str] {
    match key {
        "window" => &["window"],
        "failure_rate" => &["failure_rate"],
        "min_calls" => &["min_calls"],
        "slow_call" => &["slow_call"],
        "open_for" => &["open_for"],
        "open_for_max" => &["open_for", "open_for_max"],
        "half_open_probes" => &["half_open_probes"],
        "half_open_successes" => &["half_open_successes", "half_open_probes"],
        "probe_interval" => &["probe_interval"],
        "ramp" => &["ramp"],
        // `probe_timeout` is the tool's `timeout` and `jitter` no file sets: the loader
        // reports those values itself.
        _ => &[],
    }
}
