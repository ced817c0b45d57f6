//! A request rate per client that a fleet can hold together: a GCRA (generic cell rate
//! algorithm, the token bucket in one timestamp per client) whose bucket can also be charged
//! for calls other replicas admitted.
//!
//! Why our own and not governor's: a fleet's replicas each admit calls in memory (a call never
//! waits for the database), then tell each other what they admitted (`fleet_rate.rs`, every
//! [`SHARE_EVERY`]), and each replica charges its own bucket for the others' calls
//! ([`Rates::charge`]). A charge must be taken even when the bucket cannot cover it (the calls
//! were made), which governor's `check_n` does not do: it refuses and takes nothing. So over
//! any stretch of time the fleet admits a client's rate once, not once per replica; what can
//! slip through is one burst per replica within one sharing interval, before the others hear.
//!
//! Each client's bucket is one instant, its theoretical arrival time (`tat`): the time at which
//! the bucket would be full again. A call at `now` is admitted when `max(tat, now) + interval`
//! is no later than `now + burst × interval`, and then moves `tat` there. The clock is tokio's,
//! so tests run on a paused clock.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How often a fleet's replicas tell each other what they admitted.
pub const SHARE_EVERY: Duration = Duration::from_millis(100);

/// How long after its last admitted call a client is still told about (and charged for the
/// others' calls): a client that stopped calling here needs no bucket here.
pub(super) const TOLD_FOR: Duration = Duration::from_secs(10);

/// The most a charge can push a bucket into the future: a replica told of a flood (another
/// replica's clock or counts gone wrong) refuses its client for at most this long.
const MOST_OWED: Duration = Duration::from_secs(600);

/// Clients kept before idle ones are swept (only reachable with auth off and many peer
/// addresses calling; keyed clients are as few as the configured keys).
const SWEEP_ABOVE: usize = 4096;

/// A rate: one call per `interval`, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    interval: Duration,
    burst: u32,
}

impl Quota {
    /// `count` calls per `per`, up to `burst` at once; `None` when that is no rate (a zero
    /// count or period).
    pub fn new(count: u32, per: Duration, burst: u32) -> Option<Quota> {
        let interval = per.checked_div(count)?;
        (!interval.is_zero()).then_some(Quota {
            interval,
            burst: burst.max(1),
        })
    }

    /// How far ahead of `now` a full bucket's instant may be.
    fn tolerance(self) -> Duration {
        self.interval.saturating_mul(self.burst)
    }
}

/// One client's bucket and what this process admitted for it.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// When the bucket is full again.
    tat: Instant,
    /// The interval of the last quota it was checked against (a charge is in calls).
    interval: Duration,
    /// Calls this process admitted for the client in its current stretch of calls.
    admitted: u64,
    /// The last one's instant.
    last_admitted: Instant,
    /// When the current stretch began: the client's first call here after [`TOLD_FOR`] without
    /// one (or ever).
    stretch_from: Instant,
}

/// What this process admitted for one client lately ([`Rates::admitted`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted<K> {
    /// The client.
    pub client: K,
    /// Calls admitted in the client's current stretch of calls here.
    pub count: u64,
    /// How long ago that stretch began.
    pub stretch_age: Duration,
    /// How long until the client's bucket here is full again (zero when it is): another
    /// replica that has not heard this one's calls yet, or has no bucket of the client at all,
    /// keeps its own bucket no fuller ([`Rates::floor`]).
    pub full_in: Duration,
}

/// Every client's bucket, keyed by `K`.
#[derive(Debug)]
pub struct Rates<K> {
    /// A std mutex: held for a lookup and a few additions, never across an await.
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K> Default for Rates<K> {
    fn default() -> Self {
        Rates {
            buckets: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> Rates<K> {
    fn buckets(&self) -> std::sync::MutexGuard<'_, HashMap<K, Bucket>> {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits one call of `client` under `quota`, or says how long until one would be.
    pub fn admit(&self, client: &K, quota: Quota, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets();
        if buckets.len() > SWEEP_ABOVE {
            buckets.retain(|_, b| b.tat > now || now.duration_since(b.last_admitted) < TOLD_FOR);
        }
        let bucket = buckets.entry(client.clone()).or_insert(Bucket {
            tat: now,
            interval: quota.interval,
            admitted: 0,
            last_admitted: now,
            stretch_from: now,
        });
        bucket.interval = quota.interval;
        if now.duration_since(bucket.last_admitted) >= TOLD_FOR {
            bucket.admitted = 0;
            bucket.stretch_from = now;
        }
        let next = bucket.tat.max(now) + quota.interval;
        let limit = now + quota.tolerance();
        if next > limit {
            return Err(next - limit);
        }
        bucket.tat = next;
        bucket.admitted += 1;
        bucket.last_admitted = now;
        Ok(())
    }

    /// The clients this process admitted a call for within [`TOLD_FOR`] of `now`, each with
    /// how many it admitted in its current stretch of calls (a running count: a replica that
    /// hears it subtracts the count it heard before) and how long ago that stretch began.
    pub fn admitted(&self, now: Instant) -> Vec<Admitted<K>> {
        self.buckets()
            .iter()
            .filter(|(_, b)| b.admitted > 0 && now.duration_since(b.last_admitted) < TOLD_FOR)
            .map(|(k, b)| Admitted {
                client: k.clone(),
                count: b.admitted,
                stretch_age: now.duration_since(b.stretch_from),
                full_in: b.tat.saturating_duration_since(now),
            })
            .collect()
    }

    /// Keeps `client`'s bucket no fuller than another replica's, which is full again at
    /// `full_at` (up to [`MOST_OWED`] ahead of `now`): its calls were made whether or not this
    /// replica heard each of them, and a client this replica has no bucket of (it has not
    /// called here lately) gets one, so that its first call here is not a fresh burst. A floor
    /// adds nothing to the calls [`charge`](Self::charge) counts, and is not counted by them.
    pub fn floor(&self, client: &K, full_at: Instant, now: Instant) {
        if full_at <= now {
            return;
        }
        let full_at = full_at.min(now + MOST_OWED);
        let mut buckets = self.buckets();
        match buckets.get_mut(client) {
            Some(bucket) => bucket.tat = bucket.tat.max(full_at),
            None => {
                // Not a call of this replica's: its stretch begins at its first call here.
                let quiet = now.checked_sub(TOLD_FOR).unwrap_or(now);
                buckets.insert(
                    client.clone(),
                    Bucket {
                        tat: full_at,
                        // Unknown until the client calls here; a charge meanwhile is covered by
                        // the floor the other replica's next exchange sets.
                        interval: Duration::ZERO,
                        admitted: 0,
                        last_admitted: quiet,
                        stretch_from: now,
                    },
                );
            }
        }
    }

    /// Charges `client`'s bucket for `calls` that other replicas admitted, whether or not it
    /// can cover them (up to [`MOST_OWED`] ahead of `now`). A client with no bucket here is
    /// not charged: it has not called here lately, and its first call finds a fresh bucket.
    pub fn charge(&self, client: &K, calls: u64, now: Instant) {
        if calls == 0 {
            return;
        }
        if let Some(bucket) = self.buckets().get_mut(client) {
            let owed = bucket
                .interval
                .saturating_mul(u32::try_from(calls).unwrap_or(u32::MAX));
            let most = now + MOST_OWED;
            bucket.tat = bucket
                .tat
                .max(now)
                .checked_add(owed)
                .map_or(most, |t| t.min(most));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(count: u32, burst: u32) -> Quota {
        Quota::new(count, Duration::from_secs(1), burst).unwrap_or_else(|| panic!("a rate"))
    }

    #[tokio::test(start_paused = true)]
    async fn the_burst_passes_then_the_rate_refills() {
        let rates = Rates::default();
        let q = quota(2, 3);
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(rates.admit(&"a", q, now), Ok(()));
        }
        assert_eq!(rates.admit(&"a", q, now), Err(Duration::from_millis(500)));
        assert_eq!(
            rates.admit(&"b", q, now),
            Ok(()),
            "clients are counted apart"
        );
        let later = now + Duration::from_millis(500);
        assert_eq!(
            rates.admit(&"a", q, later),
            Ok(()),
            "one call back after 1/rate"
        );
        assert!(rates.admit(&"a", q, later).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn calls_of_other_replicas_are_charged_even_beyond_the_bucket() {
        let rates = Rates::default();
        let q = quota(10, 5);
        let now = Instant::now();
        assert_eq!(rates.admit(&"a", q, now), Ok(()));
        // The others admitted 20 calls: two seconds of this rate, more than the burst.
        rates.charge(&"a", 20, now);
        assert_eq!(
            rates.admit(&"a", q, now),
            Err(Duration::from_millis(1_700)),
            "refused until the fleet's calls are paid back: 2.1 s of calls, less the burst's 0.5 s, plus this call's 0.1 s"
        );
        assert_eq!(
            rates.admit(&"a", q, now + Duration::from_millis(1_700)),
            Ok(())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_did_not_call_here_is_not_charged_and_not_told() {
        let rates: Rates<&str> = Rates::default();
        let q = quota(1, 1);
        let now = Instant::now();
        rates.charge(&"a", 100, now);
        assert_eq!(rates.admit(&"a", q, now), Ok(()), "a fresh bucket");
        let told = |at: Instant| -> Vec<(&str, u64, Duration)> {
            rates
                .admitted(at)
                .into_iter()
                .map(|a| (a.client, a.count, a.stretch_age))
                .collect()
        };
        let second = Duration::from_secs(1);
        assert_eq!(told(now + second), vec![("a", 1, second)]);
        assert_eq!(
            told(now + TOLD_FOR),
            vec![],
            "a client quiet here for TOLD_FOR is no longer told about"
        );
        let back = now + TOLD_FOR + second;
        assert_eq!(rates.admit(&"a", q, back), Ok(()));
        assert_eq!(
            told(back),
            vec![("a", 1, Duration::ZERO)],
            "its next call begins a new stretch, counted from 1"
        );
    }

    /// A slow rate (one call in ten seconds) spread over replicas: the other replica's bucket
    /// is kept no fuller than this one's, whether or not it had one.
    #[tokio::test(start_paused = true)]
    async fn a_floor_keeps_a_bucket_no_fuller_than_another_replicas() {
        let here: Rates<&str> = Rates::default();
        let there: Rates<&str> = Rates::default();
        let q = Quota::new(6, Duration::from_secs(60), 1).unwrap_or_else(|| panic!("a rate"));
        let now = Instant::now();
        assert_eq!(there.admit(&"a", q, now), Ok(()));
        let told = there.admitted(now);
        assert_eq!(told[0].full_in, Duration::from_secs(10));
        here.floor(&"a", now + told[0].full_in, now);
        let second = now + Duration::from_secs(1);
        assert_eq!(
            here.admit(&"a", q, second),
            Err(Duration::from_secs(9)),
            "no bucket here before, and still no fresh burst: refused until the fleet's is full"
        );
        assert!(
            here.admitted(second).is_empty(),
            "a floor is no call of this replica's, and not told"
        );
        here.floor(&"a", now, second);
        here.floor(&"a", now + Duration::from_secs(5), second);
        assert_eq!(
            here.admit(&"a", q, second),
            Err(Duration::from_secs(9)),
            "a lower floor takes nothing back"
        );
        assert_eq!(here.admit(&"a", q, now + Duration::from_secs(10)), Ok(()));
        here.floor(&"b", now + Duration::from_secs(86_400), now);
        assert_eq!(
            here.admit(&"b", q, now),
            Err(MOST_OWED),
            "a floor is bounded as a charge is"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_charge_is_bounded() {
        let rates = Rates::default();
        let q = quota(1, 1);
        let now = Instant::now();
        assert_eq!(rates.admit(&"a", q, now), Ok(()));
        rates.charge(&"a", u64::MAX, now);
        assert_eq!(
            rates.admit(&"a", q, now),
            Err(MOST_OWED),
            "no overflow, and at most MOST_OWED of refusals"
        );
    }

    #[test]
    fn a_zero_rate_is_no_rate() {
        assert_eq!(Quota::new(0, Duration::from_secs(1), 1), None);
        assert_eq!(Quota::new(1, Duration::ZERO, 1), None);
        assert_eq!(
            Quota::new(4, Duration::from_secs(1), 0).map(Quota::tolerance),
            Some(Duration::from_millis(250)),
            "a burst of 0 is read as 1"
        );
    }
}
