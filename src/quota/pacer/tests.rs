//! The pacer's rules on plain instants: 429-learned, announced and configured limits.

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
fn successes_answered_after_the_429_still_count_for_their_window() {
    let t0 = Instant::now();
    let mut p = Pacer::new();
    // 50 of the window's 60 answered before its 429, 10 (in flight at the limit) after it.
    p.claimed(16, t0);
    for _ in 0..50 {
        p.succeeded(t0);
    }
    p.rate_limited(t0 + secs(2.0), Some(secs(58.0)));
    let early = p.rate().expect("learned");
    assert!((early - SAFETY * 50.0 / 60.0).abs() < 1e-9, "got {early}");
    for _ in 0..10 {
        p.succeeded(t0 + secs(1.5));
    }
    let rate = p.rate().expect("learned");
    assert!(
        (rate - SAFETY).abs() < 1e-9,
        "60 per 60 s × safety, got {rate}"
    );
    // The shared row keeps the count.
    let now_ms = 1_000_000;
    let back = Pacer::from_record(&p.to_record(t0 + secs(3.0), now_ms), t0 + secs(3.0), now_ms);
    assert_eq!(back.learned_successes, 60);
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
    // After the pause one probe, then unpaced once it is answered.
    assert_eq!(p.allowance(t0 + secs(2.0), None), Some(1));
    p.claimed(1, t0 + secs(2.0));
    p.succeeded(t0 + secs(2.0));
    assert_eq!(p.allowance(t0 + secs(2.5), None), None);
}

#[test]
fn a_pause_with_no_rate_known_ends_with_one_probe_then_the_provider_is_unpaced() {
    let t0 = Instant::now();
    let mut p = Pacer::new();
    // The very first requests are refused: nothing succeeded, so nothing is learned.
    p.claimed(16, t0);
    p.rate_limited(t0 + secs(0.5), Some(secs(10.0)));
    assert_eq!(p.rate(), None);
    assert_eq!(p.allowance(t0 + secs(5.0), None), Some(0), "paused");
    let reset = t0 + secs(10.5);
    assert_eq!(
        p.allowance(reset, None),
        Some(1),
        "one probe at the reset, not every free worker"
    );
    p.claimed(1, reset);
    assert_eq!(
        p.allowance(reset + secs(0.25), None),
        Some(0),
        "the rest wait for its answer"
    );
    p.succeeded(reset);
    assert_eq!(
        p.allowance(reset + secs(0.5), None),
        None,
        "answered: unpaced"
    );
}

#[test]
fn a_probe_is_paused_again_by_a_429_drawn_again_when_unclaimed_or_unanswered() {
    let t0 = Instant::now();
    let mut p = Pacer::new();
    p.claimed(4, t0);
    p.rate_limited(t0, Some(secs(10.0)));
    // The probe meets a 429: paused again, and probed again after.
    let reset = t0 + secs(10.0);
    assert_eq!(p.allowance(reset, None), Some(1));
    p.claimed(1, reset);
    p.rate_limited(reset + secs(0.1), Some(secs(10.0)));
    let reset = reset + secs(10.1);
    assert_eq!(
        p.allowance(reset - secs(0.1), None),
        Some(0),
        "paused again"
    );
    assert_eq!(p.allowance(reset, None), Some(1));
    // Granted but no job was claimed: handed back, the next claim is the probe.
    p.claimed(1, reset);
    p.refund(1);
    assert_eq!(p.allowance(reset, None), Some(1));
    // Claimed and never answered (its replica stopped): another after PROBE_WAIT.
    p.claimed(1, reset);
    assert_eq!(p.allowance(reset + PROBE_WAIT - secs(0.1), None), Some(0));
    assert_eq!(p.allowance(reset + PROBE_WAIT, None), Some(1));
    p.claimed(1, reset + PROBE_WAIT);
    // Any answer but a 429 (a server error, a refusal) ends the probe.
    p.answered(reset + PROBE_WAIT);
    assert_eq!(p.allowance(reset + PROBE_WAIT + secs(1.0), None), None);
}

#[test]
fn no_probe_where_a_rate_is_known_at_the_reset() {
    let t0 = Instant::now();
    let mut p = Pacer::new();
    first_window(&mut p, t0);
    // Learned from the window's successes: the bucket starts empty and fills at the rate.
    assert_eq!(p.allowance(t0 + secs(60.0), None), Some(0));
    assert_eq!(p.allowance(t0 + secs(61.1), None), Some(1));
    assert_eq!(p.allowance(t0 + secs(63.3), None), Some(2));
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

/// The claims per window of a provider allowing `limit` per `window` seconds (see [`drive`]),
/// paced by a pacer that first read one answer announcing `before` (a limit and a
/// time-to-reset in seconds), or by a fresh one.
fn after(before: Option<(u32, f64)>, limit: u32, window: f64, windows: u32) -> Vec<u32> {
    let mut p = Pacer::new();
    if let Some((limit, reset_in)) = before {
        let t = Instant::now();
        p.allowance(t, Some(&announced(limit, limit / 2, reset_in, t)));
    }
    drive(&mut p, limit, window, windows)
}

#[test]
fn one_long_reset_slows_the_pacer_for_two_of_its_lengths_not_for_good() {
    // 100 per 10 s, once announced with a 10-minute reset (a penalty): the window is kept for
    // two of its lengths (about 1,200 s, 120 windows), then follows what is announced.
    let fresh = after(None, 100, 10.0, 200);
    let penalised = after(Some((100, 600.0)), 100, 10.0, 200);
    let steady = fresh[10..].iter().min().copied().unwrap_or_default();
    assert!(
        penalised[..100].iter().all(|n| *n < steady / 2),
        "within two of the long window's lengths it still paces by it: {penalised:?}"
    );
    assert!(
        penalised[125..].iter().all(|n| *n * 10 >= steady * 9),
        "back to ≥ 90 % of a fresh pacer's {steady} per window: {penalised:?}"
    );
}

#[test]
fn a_new_limit_measures_its_own_window() {
    // An hourly allowance of 5,000, then the provider announces 100 per 10 s.
    let fresh = after(None, 100, 10.0, 20);
    let changed = after(Some((5000, 3600.0)), 100, 10.0, 20);
    let steady = fresh[2..].iter().min().copied().unwrap_or_default();
    assert!(
        changed[2..].iter().all(|n| *n * 10 >= steady * 9),
        "paced by the new limit's window from its first answers, like a fresh pacer's {steady}: \
         {changed:?}"
    );
}
