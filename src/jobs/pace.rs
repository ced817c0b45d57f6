//! Pacing background work to a provider's rate limit: the one it announces, the one it is
//! configured with, or the one learned from its 429s.
//!
//! A provider that sends rate-limit headers on every answer (Duffel's `ratelimit-*`, read by
//! the adapter into [`Known`]) is paced from its first answer, before any 429: the rate is the
//! requests left in its window spread over the time until the reset, and never more than the
//! window's whole limit spread over the window (the longest time-to-reset seen). Once the
//! announced reset has passed and no newer answer has told what is left, the whole-window rate
//! applies. A provider with a documented fixed limit (Amadeus's transactions per second) is
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
//!   [`SAFETY`]; claims pause until the reset;
//! - from then on the dispatcher claims from a token bucket at the learned rate. 429s answered
//!   to requests already in flight when the limit was hit (reset not yet reached) teach nothing
//!   new and are ignored;
//! - a limit that has not been hit for [`FORGET_AFTER_WINDOWS`] windows (and at least
//!   [`FORGET_AFTER_AT_LEAST`]) is forgotten: the provider may have raised it; the next 429
//!   teaches it again.
//!
//! Pure bookkeeping: no I/O, time passed in, so it is tested on plain instants.

use std::time::Duration;

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
/// How much later than announced a window may reset: an HTTP-date is whole seconds (cut, not
/// rounded), so the window ends up to a second after the announced reset. The pacer counts
/// from the later end, and never spreads what is left over less than this.
pub const RESET_SLACK: Duration = Duration::from_secs(1);

/// One tool's pacing state.
#[derive(Debug, Clone)]
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
    /// The last reset announced by a 429.
    last_reset: Option<Instant>,
    /// Token bucket (only while a rate is known).
    tokens: f64,
    refilled_at: Option<Instant>,
    /// The last claim, to notice idle gaps.
    last_claim: Option<Instant>,
    /// The longest time-to-reset the provider announced: its window, once seen from its start.
    window_announced: Duration,
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
            last_reset: None,
            tokens: 0.0,
            refilled_at: None,
            last_claim: None,
            window_announced: Duration::ZERO,
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
        let rate = [
            self.rate,
            self.announced_rate(now, known),
            configured_rate(known),
        ]
        .into_iter()
        .flatten()
        .min_by(f64::total_cmp)?;
        let since = self.refilled_at.unwrap_or(now);
        // A second's worth (at least one job) plus one, so that a fraction is never cut off.
        let capacity = rate.max(1.0) + 1.0;
        self.tokens =
            (self.tokens + rate * now.saturating_duration_since(since).as_secs_f64()).min(capacity);
        self.refilled_at = Some(now);
        Some(self.tokens.floor() as u32)
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
        self.window_announced = self.window_announced.max(reset_in);
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
        // Only a paced provider's tokens are ever above zero.
        self.tokens = (self.tokens - f64::from(n)).max(0.0);
    }

    /// A job claimed at `claimed_at` succeeded.
    pub fn succeeded(&mut self, claimed_at: Instant) {
        if self.counting_since.is_some_and(|since| claimed_at >= since) {
            self.successes = self.successes.saturating_add(1);
        }
    }

    /// The provider answered 429 at `now`, asking to wait `retry_after` (if it said).
    pub fn rate_limited(&mut self, now: Instant, retry_after: Option<Duration>) {
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
        }
        self.last_reset = Some(reset);
        self.paused_until = Some(reset);
        self.counting_since = Some(reset);
        self.successes = 0;
        self.tokens = 0.0;
        self.refilled_at = Some(reset);
    }
}

/// The configured ceiling, times [`SAFETY`].
fn configured_rate(known: Option<&Known>) -> Option<f64> {
    known?.configured_per_s.map(|per_s| SAFETY * per_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::limits::Reading;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// A provider allowing 60 per fixed minute, as the simulator enforces it (the window starts
    /// with the first request after the previous one ended).
    fn first_window(p: &mut Pacer, t0: Instant) {
        assert_eq!(p.allowance(t0, None), None, "nothing learned yet: unpaced");
        p.claimed(16, t0);
        for _ in 0..60 {
            p.succeeded(t0);
        }
        // The 61st request at t0 + 2 s: 429, Retry-After 58 s.
        p.rate_limited(t0 + secs(2.0), Some(secs(58.0)));
    }

    #[test]
    fn an_unlimited_provider_is_never_paced() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        p.claimed(100, t0);
        for _ in 0..100 {
            p.succeeded(t0);
        }
        assert_eq!(p.allowance(t0 + secs(1.0), None), None);
        assert_eq!(p.rate(), None);
    }

    #[test]
    fn a_429_pauses_until_the_reset_and_teaches_the_rate() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        first_window(&mut p, t0);
        let rate = p.rate().expect("learned");
        assert!(
            (rate - SAFETY * 1.0).abs() < 1e-9,
            "60 per 60 s × safety, got {rate}"
        );
        assert_eq!(p.allowance(t0 + secs(30.0), None), Some(0));
        assert_eq!(p.allowance(t0 + secs(59.9), None), Some(0));
        // At the reset the bucket starts empty and fills at the learned rate.
        assert_eq!(p.allowance(t0 + secs(60.0), None), Some(0));
        assert_eq!(p.allowance(t0 + secs(61.1), None), Some(1));
    }

    #[test]
    fn paced_claims_stay_under_the_allowance_for_a_whole_window() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        first_window(&mut p, t0);
        // Poll every 250 ms through the next window, claiming everything allowed.
        let reset = t0 + secs(60.0);
        let mut claimed = 0;
        let mut t = reset;
        while t < reset + secs(60.0) {
            let n = p.allowance(t, None).expect("paced");
            p.claimed(n, t);
            claimed += n;
            t += secs(0.25);
        }
        assert!(claimed <= 60, "never more than the allowance: {claimed}");
        assert!(claimed >= 54, "close to the allowance (≥ 90 %): {claimed}");
    }

    #[test]
    fn requests_in_flight_at_the_limit_do_not_teach_a_new_window() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        first_window(&mut p, t0);
        let rate = p.rate();
        p.rate_limited(t0 + secs(2.1), Some(secs(57.9)));
        assert_eq!(p.rate(), rate);
        assert_eq!(p.allowance(t0 + secs(59.0), None), Some(0));
    }

    #[test]
    fn the_second_window_measures_the_period_between_resets() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        // The backlog started 20 s into a window: 60 successes, reset after 40 s, so the first
        // estimate is 1.5/s × safety: too fast …
        p.claimed(16, t0);
        for _ in 0..60 {
            p.succeeded(t0);
        }
        p.rate_limited(t0 + secs(1.0), Some(secs(39.0)));
        assert!(p.rate().expect("learned") > 1.4);
        // … so the next window's limit is hit 42 s after the reset at t0 + 40 s, reset 18 s later:
        // 60 successes over the 60 s between resets.
        let reset1 = t0 + secs(40.0);
        p.claimed(1, reset1 + secs(0.25));
        for _ in 0..60 {
            p.succeeded(reset1 + secs(1.0));
        }
        p.rate_limited(reset1 + secs(42.0), Some(secs(18.0)));
        let rate = p.rate().expect("learned");
        assert!(
            (rate - SAFETY).abs() < 1e-9,
            "60 per 60 s × safety, got {rate}"
        );
    }

    #[test]
    fn successes_of_jobs_claimed_before_the_reset_count_for_no_window() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        first_window(&mut p, t0);
        // A job claimed before the 429 that finished later belongs to the first window.
        p.succeeded(t0 + secs(1.0));
        let reset = t0 + secs(60.0);
        for _ in 0..30 {
            p.succeeded(reset + secs(1.0));
        }
        p.rate_limited(reset + secs(50.0), Some(secs(10.0)));
        let rate = p.rate().expect("learned");
        assert!((rate - SAFETY * 30.0 / 60.0).abs() < 1e-9, "got {rate}");
    }

    #[test]
    fn a_429_without_retry_after_pauses_briefly_and_teaches_nothing() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        p.claimed(5, t0);
        p.succeeded(t0);
        p.rate_limited(t0 + secs(1.0), None);
        assert_eq!(p.rate(), None);
        assert_eq!(p.allowance(t0 + secs(1.5), None), Some(0));
        assert_eq!(p.allowance(t0 + secs(2.0), None), None);
    }

    #[test]
    fn an_idle_gap_restarts_the_count() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        // A few jobs an hour ago …
        p.claimed(3, t0);
        for _ in 0..3 {
            p.succeeded(t0);
        }
        // … then a backlog: 60 succeed in the first second, the 61st is refused.
        let t1 = t0 + secs(3600.0);
        p.claimed(16, t1);
        for _ in 0..60 {
            p.succeeded(t1);
        }
        p.rate_limited(t1 + secs(1.0), Some(secs(59.0)));
        let rate = p.rate().expect("learned");
        assert!(
            (rate - SAFETY).abs() < 1e-9,
            "the hour before is not counted: {rate}"
        );
    }

    #[test]
    fn a_per_second_limit_is_kept_for_ten_minutes() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        p.claimed(10, t0);
        for _ in 0..10 {
            p.succeeded(t0);
        }
        p.rate_limited(t0 + secs(0.5), Some(secs(0.5)));
        assert!(p.allowance(t0 + secs(300.0), None).is_some());
        assert_eq!(p.allowance(t0 + secs(602.0), None), None);
    }

    #[test]
    fn a_limit_not_hit_for_many_windows_is_forgotten() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        first_window(&mut p, t0);
        let reset = t0 + secs(60.0);
        assert!(p.allowance(reset + secs(60.0 * 9.0), None).is_some());
        assert_eq!(p.allowance(reset + secs(60.0 * 10.0 + 1.0), None), None);
        assert_eq!(p.rate(), None);
    }

    fn announced(limit: u32, remaining: u32, reset_in: f64, at: Instant) -> Known {
        Known {
            latest: Some((
                Reading {
                    limit,
                    remaining,
                    reset_in: secs(reset_in),
                },
                at,
            )),
            configured_per_s: None,
        }
    }

    /// A provider allowing `limit` per fixed window of `window` seconds that answers every
    /// claimed job at once with its headers; the pacer polled every 250 ms claims all it may
    /// for `windows` windows. Returns the claims per window; panics on a request over the limit.
    fn drive(p: &mut Pacer, limit: u32, window: f64, windows: u32) -> Vec<u32> {
        let t0 = Instant::now();
        // Nothing is known before the first answer: the first pass is one unpaced claim.
        assert_eq!(p.allowance(t0, None), None);
        p.claimed(1, t0);
        let mut counts = vec![1];
        let mut known = announced(limit, limit - 1, window, t0);
        let mut t = t0 + secs(0.25);
        let mut window_start = t0;
        while t < t0 + secs(window * f64::from(windows)) {
            if t >= window_start + secs(window) {
                window_start += secs(window);
                counts.push(0);
            }
            let n = p
                .allowance(t, Some(&known))
                .expect("paced from the headers");
            p.claimed(n, t);
            let used = counts.last_mut().expect("a window");
            *used += n;
            assert!(*used <= limit, "over the limit: {counts:?}");
            if n > 0 {
                let reset_in = (window_start + secs(window)).saturating_duration_since(t);
                known = announced(limit, limit - *used, reset_in.as_secs_f64(), t);
            }
            t += secs(0.25);
        }
        counts
    }

    #[test]
    fn announced_limits_pace_from_the_first_answer_without_a_429() {
        let mut p = Pacer::new();
        let counts = drive(&mut p, 120, 60.0, 3);
        assert_eq!(p.rate(), None, "nothing was learned from a 429");
        for used in &counts {
            assert!(*used >= 108, "≥ 90 % of 120 in every window: {counts:?}");
        }
    }

    #[test]
    fn nothing_left_pauses_until_the_announced_reset() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        let known = announced(60, 0, 10.0, t0);
        assert_eq!(p.allowance(t0, Some(&known)), Some(0));
        // The announced reset is whole seconds, so the window may last a second longer.
        assert_eq!(p.allowance(t0 + secs(10.9), Some(&known)), Some(0));
        // After it the whole window's rate applies (60 per 11 s × safety, 5.2/s) until an
        // answer says what is left.
        assert_eq!(p.allowance(t0 + secs(11.0), Some(&known)), Some(0));
        assert_eq!(p.allowance(t0 + secs(12.0), Some(&known)), Some(5));
    }

    #[test]
    fn a_configured_ceiling_paces_and_the_lowest_known_rate_wins() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        let configured = Known {
            latest: None,
            configured_per_s: Some(10.0),
        };
        let mut claimed = 0;
        let mut t = t0;
        while t < t0 + secs(10.0) {
            let n = p.allowance(t, Some(&configured)).expect("paced");
            p.claimed(n, t);
            claimed += n;
            t += secs(0.1);
        }
        assert!(
            (90..=100).contains(&claimed),
            "95 % of 10/s for 10 s: {claimed}"
        );
        // Headers allowing 1/s under a 10/s ceiling: 1/s.
        let both = Known {
            configured_per_s: Some(10.0),
            ..announced(60, 60, 60.0, t)
        };
        let mut p = Pacer::new();
        let mut claimed = 0;
        let start = t;
        while t < start + secs(20.0) {
            let n = p.allowance(t, Some(&both)).expect("paced");
            p.claimed(n, t);
            claimed += n;
            t += secs(0.1);
        }
        assert!(
            (17..=20).contains(&claimed),
            "95 % of 1/s for 20 s: {claimed}"
        );
    }
}
