//! Pacing background work to a provider's rate limit: the one it announces, the one it is
//! configured with, or the one learned from its 429s.
//!
//! A provider that sends rate-limit headers on every answer (Duffel's `ratelimit-*`, read by
//! the adapter into [`Known`]) is paced from its first answer, before any 429: the rate is the
//! requests left in its window spread over the time until the reset, and never more than the
//! window's whole limit spread over the window (the longest time-to-reset seen). Once the
//! announced reset has passed and no newer answer has told what is left, the whole-window rate
//! applies. The window follows the provider back down as well as up: a new limit is measured
//! from its own answers, and a window not announced again for [`WINDOW_KEPT_FOR`] of itself
//! becomes the longest time-to-reset seen meanwhile (one long reset, a penalty or a limit the
//! provider has since lifted, would otherwise slow the background for good). A provider with a documented fixed limit (Amadeus's transactions per second) is
//! paced below the configured figure. The lowest of what is known wins, always times
//! [`SAFETY`].
//!
//! Without either, the breaker and the requeue policy stop a backlog from hammering a provider that says "too
//! many requests", but on their own they still find the limit the hard way once per
//! rate-limit window: claim until a 429, wait for the reset, claim until a 429 again. Every
//! window then costs a 429 for each request in flight when the limit was hit. The pacer learns
//! the allowance instead and spreads the backlog over the window, so the 429s become a one-time
//! cost of learning:
//!
//! - every background success of a job claimed in the current window counts toward that
//!   window's allowance; an idle gap in the claims (no backlog, so the provider was not
//!   saturated) restarts the count, so idle time never dilutes the learned rate;
//! - a 429 with `Retry-After` ends the window: the reset is `now + Retry-After`, the window's
//!   length is the time from the previous reset (or, for the first window, from the first claim)
//!   to this one, and the learned rate is the window's successes over its length, times
//!   [`SAFETY`]; claims pause until the reset; a success of a job of that window answered
//!   after the 429 (in flight when the limit was hit) still counts for its rate;
//! - from then on the dispatcher claims from a token bucket at the learned rate. 429s answered
//!   to requests already in flight when the limit was hit (reset not yet reached) teach nothing
//!   new and are ignored;
//! - a limit that has not been hit for [`FORGET_AFTER_WINDOWS`] windows (and at least
//!   [`FORGET_AFTER_AT_LEAST`]) is forgotten: the provider may have raised it; the next 429
//!   teaches it again;
//! - a pause that ends with no rate known (a 429 before any success, or without
//!   `Retry-After`) lets one probe job through first, as a breaker's half-open state does: every
//!   free worker of every replica claiming at the reset would be the cascade pacing exists to
//!   prevent. The provider is unpaced again once the probe is answered with anything but a 429
//!   (a 429 pauses again); a probe not answered within [`PROBE_WAIT`] (its replica stopped) is
//!   followed by another.
//!
//! Pure bookkeeping: no I/O, time passed in, so it is tested on plain instants.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::providers::limits::Known;

/// The share of the learned allowance the dispatcher uses: room for requests that land in the
/// next window and for interactive calls that share the provider's quota.
pub const SAFETY: f64 = 0.95;
/// A learned limit is forgotten after this many windows without a 429.
pub const FORGET_AFTER_WINDOWS: u32 = 10;
/// … and never sooner than this (a per-second limit is not re-learned every 10 s).
pub const FORGET_AFTER_AT_LEAST: Duration = Duration::from_secs(600);
/// Claims this far apart (or three token periods, if longer) mean the tool was idle.
pub const IDLE_GAP: Duration = Duration::from_secs(2);
/// The pause after a 429 without `Retry-After` (nothing is learned from it).
pub const PAUSE_WITHOUT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long a probe after a pause may go unanswered before another is let through.
pub const PROBE_WAIT: Duration = Duration::from_secs(30);
/// How many of its own lengths an announced window is kept without an answer announcing as
/// long a time-to-reset: two, so that under a backlog the start of at least one whole window was
/// seen before the window is made shorter.
pub const WINDOW_KEPT_FOR: u32 = 2;
/// How much later than announced a window may reset: an HTTP-date is whole seconds (cut, not
/// rounded), so the window ends up to a second after the announced reset. The pacer counts
/// from the later end, and never spreads what is left over less than this.
pub const RESET_SLACK: Duration = Duration::from_secs(1);

/// One provider's pacing state.
#[derive(Debug, Clone, PartialEq)]
pub struct Pacer {
    /// Jobs per second, once learned.
    rate: Option<f64>,
    /// The learned window length (for forgetting).
    window: Duration,
    /// Claims are paused until then (the provider's announced reset).
    paused_until: Option<Instant>,
    /// The start of the window being counted: the last reset, or the first claim.
    counting_since: Option<Instant>,
    /// Successes of jobs claimed since `counting_since`.
    successes: u32,
    /// Successes of the window the learned rate was taken from, including those answered
    /// after its 429 (jobs in flight when the limit was hit): each refines the rate.
    learned_successes: u32,
    /// The last reset announced by a 429.
    last_reset: Option<Instant>,
    /// Token bucket (only while a rate is known).
    tokens: f64,
    refilled_at: Option<Instant>,
    /// The last claim, to notice idle gaps.
    last_claim: Option<Instant>,
    /// The longest time-to-reset the provider announced: its window, once seen from its start.
    window_announced: Duration,
    /// The limit the window was announced with: a new limit is a new window, measured afresh.
    window_limit: u32,
    /// When an answer last announced a time-to-reset as long as the window (to a second).
    window_seen_at: Option<Instant>,
    /// The longest time-to-reset announced since, shorter than the window: what the window
    /// becomes when it is not announced again for [`WINDOW_KEPT_FOR`] of itself.
    window_since: Duration,
    /// The bucket's size at the last refill: how far interactive spending may take it below
    /// zero.
    capacity: f64,
    /// A pause ended (or will) with no rate known: one probe job goes before the rest.
    probe_due: bool,
    /// When the probe was claimed, until it is answered.
    probe_sent_at: Option<Instant>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    /// A pacer that has learned nothing: it admits everything.
    pub fn new() -> Self {
        Pacer {
            rate: None,
            window: Duration::ZERO,
            paused_until: None,
            counting_since: None,
            successes: 0,
            learned_successes: 0,
            last_reset: None,
            tokens: 0.0,
            refilled_at: None,
            last_claim: None,
            window_announced: Duration::ZERO,
            window_limit: 0,
            window_seen_at: None,
            window_since: Duration::ZERO,
            capacity: 0.0,
            probe_due: false,
            probe_sent_at: None,
        }
    }

    /// The learned rate in jobs per second, if any.
    pub fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// How many jobs may be claimed now: `None` when nothing limits them. `known` is what the
    /// provider announced and what it is configured with.
    pub fn allowance(&mut self, now: Instant, known: Option<&Known>) -> Option<u32> {
        if let Some(until) = self.paused_until {
            if now < until {
                return Some(0);
            }
            self.paused_until = None;
        }
        if let Some(reset) = self.last_reset
            && self.rate.is_some()
            && now.saturating_duration_since(reset)
                > (self.window * FORGET_AFTER_WINDOWS).max(FORGET_AFTER_AT_LEAST)
        {
            // No 429 for many windows: stop pacing by it; the next 429 (if any) teaches the
            // limit again, counted from scratch.
            self.forget();
        }
        let Some(rate) = [
            self.rate,
            self.announced_rate(now, known),
            configured_rate(known),
        ]
        .into_iter()
        .flatten()
        .min_by(f64::total_cmp) else {
            return self.probe_allowance(now);
        };
        // A known rate paces from an empty bucket: no probe is needed.
        (self.probe_due, self.probe_sent_at) = (false, None);
        let since = self.refilled_at.unwrap_or(now);
        // A second's worth (at least one job) plus one, so that a fraction is never cut off.
        let capacity = rate.max(1.0) + 1.0;
        self.capacity = capacity;
        self.tokens =
            (self.tokens + rate * now.saturating_duration_since(since).as_secs_f64()).min(capacity);
        self.refilled_at = Some(now);
        Some(self.tokens.floor() as u32)
    }

    /// The allowance while no rate is known: one probe after a pause, none while it is out,
    /// and unpaced once it was answered.
    fn probe_allowance(&mut self, now: Instant) -> Option<u32> {
        if let Some(sent) = self.probe_sent_at {
            if now.saturating_duration_since(sent) < PROBE_WAIT {
                return Some(0);
            }
            // Never answered (its replica stopped, its answer was lost): another goes.
            (self.probe_due, self.probe_sent_at) = (true, None);
        }
        self.probe_due.then_some(1)
    }

    /// A job claimed at `claimed_at` was answered with anything but a 429: if it was the probe
    /// (or claimed after it), the provider takes requests again, and is unpaced.
    pub fn answered(&mut self, claimed_at: Instant) {
        if self.probe_sent_at.is_some_and(|sent| claimed_at >= sent) {
            self.probe_sent_at = None;
        }
    }

    /// Whether a probe is out, waiting for its answer.
    pub fn probing(&self) -> bool {
        self.probe_sent_at.is_some()
    }

    /// The 429-learned limit is forgotten; what the provider announces still paces.
    fn forget(&mut self) {
        self.rate = None;
        self.window = Duration::ZERO;
        self.last_reset = None;
        self.counting_since = None;
        self.successes = 0;
    }

    /// The rate the provider's latest rate-limit headers allow, times [`SAFETY`].
    fn announced_rate(&mut self, now: Instant, known: Option<&Known>) -> Option<f64> {
        let (reading, at) = known?.latest?;
        let reset_in = reading.reset_in + RESET_SLACK;
        self.follow_window(reading.limit, reset_in, at);
        let whole_window = f64::from(reading.limit) / self.window_announced.as_secs_f64();
        let elapsed = now.saturating_duration_since(at);
        let rate = if elapsed < reset_in {
            let left = (reset_in - elapsed).max(RESET_SLACK).as_secs_f64();
            whole_window.min(f64::from(reading.remaining) / left)
        } else {
            // The window reset since: what is left in the new one is not known yet.
            whole_window
        };
        Some(SAFETY * rate)
    }

    /// An answer at `at` announced `limit` and a window that resets in `reset_in` (slack
    /// included): the window grows to the longest time-to-reset announced, and shrinks to the
    /// longest announced since when it was not announced for [`WINDOW_KEPT_FOR`] of itself, or
    /// starts afresh with a new limit.
    fn follow_window(&mut self, limit: u32, reset_in: Duration, at: Instant) {
        // A record from before the window was timed has no limit: the window it holds is kept.
        let new_limit = self.window_limit != 0 && limit != self.window_limit;
        self.window_limit = limit;
        if new_limit || reset_in >= self.window_announced {
            self.window_announced = reset_in;
        }
        // Announced again, to the second the headers tell (an answer a poll after the window
        // starts announces a little less than the whole).
        if reset_in + RESET_SLACK >= self.window_announced {
            (self.window_seen_at, self.window_since) = (Some(at), Duration::ZERO);
            return;
        }
        self.window_since = self.window_since.max(reset_in);
        let Some(seen) = self.window_seen_at else {
            self.window_seen_at = Some(at);
            return;
        };
        if at >= seen + self.window_announced * WINDOW_KEPT_FOR {
            // Not announced for two of its lengths: the window is what was announced meanwhile.
            self.window_announced = self.window_since;
            (self.window_seen_at, self.window_since) = (Some(at), Duration::ZERO);
        }
    }

    /// `n` jobs were claimed at `now`.
    pub fn claimed(&mut self, n: u32, now: Instant) {
        if n == 0 {
            return;
        }
        let gap = self.rate.map_or(IDLE_GAP, |rate| {
            IDLE_GAP.max(Duration::from_secs_f64((3.0 / rate).min(86_400.0)))
        });
        // A pause the provider asked for is not idleness: measure from its end.
        let idle = self
            .last_claim
            .map(|last| self.last_reset.map_or(last, |reset| last.max(reset)))
            .is_some_and(|since| now.saturating_duration_since(since) > gap);
        if idle || self.counting_since.is_none() {
            // A new busy period: count it on its own.
            self.counting_since = Some(now);
            self.successes = 0;
            self.last_reset = None;
        }
        self.last_claim = Some(now);
        if self.probe_due {
            (self.probe_due, self.probe_sent_at) = (false, Some(now));
        }
        // Only a paced provider's tokens are ever above zero; spending may have taken them
        // below, which claims leave as it is.
        self.tokens = (self.tokens - f64::from(n)).max(self.tokens.min(0.0));
    }

    /// `n` reserved claims were not made after all: their tokens go back.
    pub fn refund(&mut self, n: u32) {
        self.tokens = (self.tokens + f64::from(n)).min(self.capacity);
        if n > 0 && self.probe_sent_at.is_some() {
            // The probe found no job to claim: the next claim is the probe.
            (self.probe_due, self.probe_sent_at) = (true, None);
        }
    }

    /// Interactive calls sent `n` requests: they are spent from the bucket, down to one bucket
    /// below empty, so background claims wait for them (an interactive call itself never waits).
    pub fn spent(&mut self, n: u32) {
        self.tokens = (self.tokens - f64::from(n)).max(-self.capacity);
    }

    /// A job claimed at `claimed_at` succeeded.
    pub fn succeeded(&mut self, claimed_at: Instant) {
        self.answered(claimed_at);
        if self.counting_since.is_some_and(|since| claimed_at >= since) {
            self.successes = self.successes.saturating_add(1);
        } else if self.rate.is_some()
            && !self.window.is_zero()
            && self
                .last_reset
                .is_some_and(|reset| claimed_at < reset && claimed_at + self.window >= reset)
        {
            // A job of the window the rate was learned from, answered after its 429: the
            // provider served it within that window's limit, so it counts for that rate
            // (on a busy fleet many are still in flight when the limit is hit).
            self.learned_successes = self.learned_successes.saturating_add(1);
            self.rate =
                Some(SAFETY * f64::from(self.learned_successes) / self.window.as_secs_f64());
        }
    }

    /// The provider answered 429 at `now`, asking to wait `retry_after` (if it said).
    pub fn rate_limited(&mut self, now: Instant, retry_after: Option<Duration>) {
        // Whatever the pause, the first claim after it is a probe unless a rate is known then.
        (self.probe_due, self.probe_sent_at) = (true, None);
        let Some(retry_after) = retry_after else {
            let until = now + PAUSE_WITHOUT_RETRY_AFTER;
            self.paused_until = Some(self.paused_until.map_or(until, |p| p.max(until)));
            return;
        };
        let reset = now + retry_after;
        if self.paused_until.is_some_and(|until| now < until) {
            // Another request that was in flight when the limit was hit: same window.
            self.paused_until = self.paused_until.map(|until| until.max(reset));
            self.last_reset = self.last_reset.map(|r| r.max(reset)).or(Some(reset));
            return;
        }
        let window_start = self.last_reset.or(self.counting_since).unwrap_or(now);
        let window = reset.saturating_duration_since(window_start);
        if self.successes > 0 && !window.is_zero() {
            self.rate = Some(SAFETY * f64::from(self.successes) / window.as_secs_f64());
            self.window = window;
            self.learned_successes = self.successes;
        }
        self.last_reset = Some(reset);
        self.paused_until = Some(reset);
        self.counting_since = Some(reset);
        self.successes = 0;
        self.tokens = 0.0;
        self.refilled_at = Some(reset);
    }
}

/// A [`Pacer`] as the database keeps it: instants as epoch milliseconds, so that another
/// replica (another process, another monotonic clock) reads the same moments. Replicas' wall
/// clocks are assumed to agree to well under a second (NTP), as the job queue's due times do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacerRecord {
    rate: Option<f64>,
    window_ms: u64,
    paused_until_ms: Option<i64>,
    counting_since_ms: Option<i64>,
    successes: u32,
    #[serde(default)]
    learned_successes: u32,
    last_reset_ms: Option<i64>,
    tokens: f64,
    refilled_at_ms: Option<i64>,
    last_claim_ms: Option<i64>,
    window_announced_ms: u64,
    #[serde(default)]
    window_limit: u32,
    #[serde(default)]
    window_seen_at_ms: Option<i64>,
    #[serde(default)]
    window_since_ms: u64,
    capacity: f64,
    #[serde(default)]
    probe_due: bool,
    #[serde(default)]
    probe_sent_at_ms: Option<i64>,
}

impl Pacer {
    /// The record of this pacer, `now` being `now_ms` on the wall clock.
    pub fn to_record(&self, now: Instant, now_ms: i64) -> PacerRecord {
        let ms = |at: Option<Instant>| at.map(|at| to_ms(at, now, now_ms));
        PacerRecord {
            rate: self.rate,
            window_ms: self.window.as_millis() as u64,
            paused_until_ms: ms(self.paused_until),
            counting_since_ms: ms(self.counting_since),
            successes: self.successes,
            learned_successes: self.learned_successes,
            last_reset_ms: ms(self.last_reset),
            tokens: self.tokens,
            refilled_at_ms: ms(self.refilled_at),
            last_claim_ms: ms(self.last_claim),
            window_announced_ms: self.window_announced.as_millis() as u64,
            window_limit: self.window_limit,
            window_seen_at_ms: ms(self.window_seen_at),
            window_since_ms: self.window_since.as_millis() as u64,
            capacity: self.capacity,
            probe_due: self.probe_due,
            probe_sent_at_ms: ms(self.probe_sent_at),
        }
    }

    /// The pacer a record holds, `now` being `now_ms` on the wall clock. Values that cannot
    /// be (a rate that is not a positive number) read as not known.
    pub fn from_record(r: &PacerRecord, now: Instant, now_ms: i64) -> Pacer {
        let at = |ms: Option<i64>| ms.map(|ms| from_ms(ms, now, now_ms));
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        Pacer {
            rate: r.rate.filter(|x| x.is_finite() && *x > 0.0),
            window: Duration::from_millis(r.window_ms),
            paused_until: at(r.paused_until_ms),
            counting_since: at(r.counting_since_ms),
            successes: r.successes,
            learned_successes: r.learned_successes,
            last_reset: at(r.last_reset_ms),
            tokens: finite(r.tokens),
            refilled_at: at(r.refilled_at_ms),
            last_claim: at(r.last_claim_ms),
            window_announced: Duration::from_millis(r.window_announced_ms),
            window_limit: r.window_limit,
            window_seen_at: at(r.window_seen_at_ms),
            window_since: Duration::from_millis(r.window_since_ms),
            capacity: finite(r.capacity).max(0.0),
            probe_due: r.probe_due,
            probe_sent_at: at(r.probe_sent_at_ms),
        }
    }
}

fn to_ms(at: Instant, now: Instant, now_ms: i64) -> i64 {
    if at >= now {
        now_ms.saturating_add((at - now).as_millis() as i64)
    } else {
        now_ms.saturating_sub((now - at).as_millis() as i64)
    }
}

fn from_ms(ms: i64, now: Instant, now_ms: i64) -> Instant {
    let delta = Duration::from_millis(ms.abs_diff(now_ms));
    if ms >= now_ms {
        now + delta
    } else {
        // Older than this process's monotonic clock can say: as old as it can.
        now.checked_sub(delta).unwrap_or(now)
    }
}

/// The configured ceiling, times [`SAFETY`].
fn configured_rate(known: Option<&Known>) -> Option<f64> {
    known?.configured_per_s.map(|per_s| SAFETY * per_s)
}

#[cfg(test)]
mod tests;
