//! The last good results of a read tool, with their age: served fresh within `fresh_for`, and
//! stale within `stale_for`.
//!
//! Two uses of one memory. A repeat of a read within the tool's `fresh_for` is answered from
//! here without asking a provider (status `ok`, with `cached_age_s`): many agents search the same
//! popular routes at the same moment, and each provider search costs seconds and quota. And when
//! a read's provider cannot answer, an honest old answer beats none, as long as the model is told
//! how old it is (the envelope's `stale` status with `stale_age_s`), up to `stale_for`. Entries
//! are keyed by the canonical JSON of the arguments (`fingerprint::canonical_json`, object keys
//! sorted), so the same search written in another key order hits the same entry.
//!
//! Age is measured on `tokio::time::Instant`, so both limits are exact and testable on a paused
//! clock; moka's own time-to-live (on its real-time clock) only bounds memory.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::envelope::Data;
use super::shared_text::SharedText;
use crate::fingerprint::canonical_json;

/// The most entries one tool keeps.
const CAPACITY: u64 = 10_000;

/// One remembered good result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GoodResult {
    /// The result's `data` (shared with the answer that was fresh, serialized once).
    pub data: Data,
    /// The result's `content` when it was fresh (escaped once for all the answers that repeat
    /// it).
    pub content: SharedText,
    /// The provider that answered.
    pub provider: String,
    /// When it was fetched.
    pub fetched_at: Instant,
}

/// Last good results of one read tool.
#[derive(Debug)]
pub(crate) struct LastGood {
    cache: moka::sync::Cache<String, Arc<GoodResult>>,
    fresh_for: Duration,
    stale_for: Duration,
}

impl LastGood {
    /// A memory answering repeats up to `fresh_for` old and failures up to `stale_for` old;
    /// `None` when both are zero.
    pub(crate) fn new(fresh_for: Duration, stale_for: Duration) -> Option<Self> {
        let keep_for = fresh_for.max(stale_for);
        if keep_for.is_zero() {
            return None;
        }
        Some(LastGood {
            cache: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(keep_for)
                .build(),
            fresh_for,
            stale_for,
        })
    }

    /// This memory under a new configuration (a reload) with `fresh_for` and `stale_for`, and
    /// without the providers in `dropped`: the same memory when nothing of that changed,
    /// otherwise a new one holding the results of the providers still configured (each keeps
    /// its own age, so nothing is served older than the new windows allow). An operator who
    /// takes a provider out of a tool's chain means its answers too: they are neither repeated
    /// as fresh nor given as stale. `None` when both windows are now zero.
    pub(crate) fn renewed(
        &self,
        fresh_for: Duration,
        stale_for: Duration,
        dropped: &[&str],
    ) -> Option<Self> {
        if (fresh_for, stale_for) == (self.fresh_for, self.stale_for) && dropped.is_empty() {
            return Some(LastGood {
                cache: self.cache.clone(),
                fresh_for,
                stale_for,
            });
        }
        let renewed = LastGood::new(fresh_for, stale_for)?;
        for (key, entry) in self.cache.iter() {
            if !dropped.contains(&entry.provider.as_str()) {
                renewed.cache.insert(String::clone(&key), entry);
            }
        }
        Some(renewed)
    }

    /// The cache key of some arguments.
    pub(crate) fn key(arguments: &Value) -> String {
        canonical_json(arguments)
    }

    /// Remembers a good result.
    pub(crate) fn put(&self, key: String, entry: GoodResult) {
        self.cache.insert(key, Arc::new(entry));
    }

    /// The result that answers a repeat without a provider, and its age: one at most
    /// `fresh_for` old at `now`.
    pub(crate) fn fresh(&self, key: &str, now: Instant) -> Option<(Arc<GoodResult>, Duration)> {
        self.at_most(key, now, self.fresh_for)
    }

    /// The result a failed call may be answered with, and its age: one at most `stale_for` old
    /// at `now`.
    pub(crate) fn stale(&self, key: &str, now: Instant) -> Option<(Arc<GoodResult>, Duration)> {
        self.at_most(key, now, self.stale_for)
    }

    fn at_most(
        &self,
        key: &str,
        now: Instant,
        limit: Duration,
    ) -> Option<(Arc<GoodResult>, Duration)> {
        if limit.is_zero() {
            return None;
        }
        let entry = self.cache.get(key)?;
        let age = now.saturating_duration_since(entry.fetched_at);
        (age <= limit).then_some((entry, age))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(at: Instant) -> GoodResult {
        GoodResult {
            data: json!({"offers": []}).into(),
            content: "0 offers".into(),
            provider: "duffel".into(),
            fetched_at: at,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn entries_are_served_with_their_age_until_stale_for() {
        let cache = LastGood::new(Duration::ZERO, Duration::from_secs(15 * 60)).expect("enabled");
        let key = LastGood::key(&json!({"origin": "JFK", "destination": "LHR"}));
        cache.put(key.clone(), entry(Instant::now()));
        assert!(cache.fresh(&key, Instant::now()).is_none(), "no fresh_for");
        tokio::time::advance(Duration::from_secs(4 * 60)).await;
        let (hit, age) = cache.stale(&key, Instant::now()).expect("fresh enough");
        assert_eq!(age, Duration::from_secs(240));
        assert_eq!(hit.provider, "duffel");
        tokio::time::advance(Duration::from_secs(11 * 60)).await;
        assert!(
            cache.stale(&key, Instant::now()).is_some(),
            "exactly 15 min is served"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            cache.stale(&key, Instant::now()).is_none(),
            "past stale_for"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_repeat_is_fresh_until_fresh_for_and_stale_after() {
        let cache =
            LastGood::new(Duration::from_secs(60), Duration::from_secs(15 * 60)).expect("enabled");
        let key = LastGood::key(&json!({"origin": "JFK"}));
        cache.put(key.clone(), entry(Instant::now()));
        tokio::time::advance(Duration::from_secs(60)).await;
        let (_, age) = cache
            .fresh(&key, Instant::now())
            .expect("exactly 60 s is fresh");
        assert_eq!(age, Duration::from_secs(60));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(
            cache.fresh(&key, Instant::now()).is_none(),
            "past fresh_for"
        );
        assert!(cache.stale(&key, Instant::now()).is_some(), "still stale");
    }

    #[tokio::test(start_paused = true)]
    async fn fresh_for_alone_keeps_results_for_repeats_but_not_for_failures() {
        let cache = LastGood::new(Duration::from_secs(60), Duration::ZERO).expect("enabled");
        let key = LastGood::key(&json!({"origin": "JFK"}));
        cache.put(key.clone(), entry(Instant::now()));
        assert!(cache.fresh(&key, Instant::now()).is_some());
        assert!(cache.stale(&key, Instant::now()).is_none(), "no stale_for");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reload_keeps_the_results_of_the_providers_still_configured() {
        let (fresh, stale) = (Duration::from_secs(60), Duration::from_secs(15 * 60));
        let cache = LastGood::new(fresh, stale).expect("enabled");
        let (by_duffel, by_amadeus) = ("duffel-key".to_string(), "amadeus-key".to_string());
        cache.put(by_duffel.clone(), entry(Instant::now()));
        cache.put(
            by_amadeus.clone(),
            GoodResult {
                provider: "amadeus".into(),
                ..entry(Instant::now())
            },
        );
        let now = Instant::now();

        let same = cache.renewed(fresh, stale, &[]).expect("enabled");
        same.put("later".into(), entry(now));
        assert!(
            cache.fresh("later", now).is_some(),
            "nothing changed: one memory, also for calls still in flight"
        );

        let without_duffel = cache.renewed(fresh, stale, &["duffel"]).expect("enabled");
        assert!(without_duffel.fresh(&by_duffel, now).is_none());
        assert!(without_duffel.stale(&by_duffel, now).is_none());
        assert!(without_duffel.fresh(&by_amadeus, now).is_some());

        let shorter = cache
            .renewed(Duration::ZERO, stale, &[])
            .expect("stale_for left");
        assert!(shorter.fresh(&by_duffel, now).is_none(), "no fresh_for now");
        assert!(shorter.stale(&by_duffel, now).is_some());
        assert!(cache.renewed(Duration::ZERO, Duration::ZERO, &[]).is_none());
    }

    #[test]
    fn the_same_arguments_in_another_order_share_a_key() {
        assert_eq!(
            LastGood::key(&json!({"a": 1, "b": [1, 2]})),
            LastGood::key(&json!({"b": [1, 2], "a": 1}))
        );
        assert!(LastGood::new(Duration::ZERO, Duration::ZERO).is_none());
    }
}
