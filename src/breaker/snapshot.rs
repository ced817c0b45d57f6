//! Read-only views of a breaker for `/status.json`, metrics and the dashboard.

use std::time::Duration;

use tokio::time::Instant;

use super::{BreakerKey, BreakerState};

/// Everything a dashboard shows about one breaker at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerSnapshot {
    /// Which breaker.
    pub key: BreakerKey,
    /// The state now. During recovery this is [`BreakerState::Ramp`], shown as `"closed"`.
    pub state: BreakerState,
    /// When the current state began (a ramp stage advance does not change it).
    pub since: Instant,
    /// Failures / calls in the window. While open or half-open these describe the window that
    /// tripped the breaker, ageing out (no call is counted while open), so within the window's
    /// length they read 0 % of 0 calls: what tripped it is [`BreakerHistory`]'s figures at the
    /// last open.
    /// During the ramp, the ramp's own calls.
    pub failure_rate: f64,
    /// Slow successes / calls in the window.
    pub slow_rate: f64,
    /// Calls in the window.
    pub calls_in_window: u32,
    /// When the open period ends, while (automatically) open.
    pub open_until: Option<Instant>,
    /// While open: the pause is the provider's rate limit (its `Retry-After` on a 429), so the
    /// recovery skips the ramp.
    pub quota_pause: bool,
    /// The ramp stage, while ramping.
    pub ramp: Option<RampStatus>,
    /// The probes, while half-open.
    pub probes: Option<ProbeStatus>,
    /// The slow-call threshold in force.
    pub slow_call_threshold: Duration,
    /// Counters since the breaker was created.
    pub history: BreakerHistory,
}

/// The ramp stage in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampStatus {
    /// 0-based index into the configured stages.
    pub index: usize,
    /// Share of calls admitted.
    pub share: f64,
    /// When the stage ends.
    pub until: Instant,
}

/// The state of half-open probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeStatus {
    /// Probes this half-open period may admit.
    pub allowed: u32,
    /// Probes admitted so far (in flight or finished; an ignored probe gives its slot back).
    pub admitted: u32,
    /// Probes admitted and not yet recorded.
    pub in_flight: u32,
    /// Probes that succeeded under the slow-call threshold.
    pub fast_successes: u32,
}

/// What the breaker remembers across states: what an operator asks of a breaker after an
/// incident (how often it opened, how long it stayed open, how many calls it failed fast while
/// open, and the provider's error rate when it opened).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BreakerHistory {
    /// Automatic openings (forced open is an operator's choice and is not counted).
    pub times_opened: u64,
    /// Time spent automatically open, including the current open period.
    pub total_open_time: Duration,
    /// Calls rejected for any reason (open, forced open, half-open full, over the ramp's share).
    pub calls_rejected: u64,
    /// Failures / calls of the deciding population when the breaker last opened; `None` before
    /// any open, and for an open followed from another replica (that replica's calls decided
    /// it, and this one's window would read 0 %).
    pub failure_rate_at_last_open: Option<f64>,
    /// Slow successes / calls of the same population then: a breaker opened on slow calls
    /// failed none of them, and an operator reading only the failure rate would see 0 %.
    pub slow_rate_at_last_open: Option<f64>,
    /// How many calls that population counted (`None` as for the rates).
    pub calls_at_last_open: Option<u32>,
}
