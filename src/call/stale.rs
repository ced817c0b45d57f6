//! The stale-result fallback: the last good result for the same arguments, with its age.
//!
//! When a read tool's provider cannot answer, an honest old answer beats none, as long as the
//! model is told how old it is (the envelope's `stale` status with `stale_age_s`). Entries are
//! keyed by the canonical JSON of the arguments (`fingerprint::canonical_json`, object keys
//! sorted), so the same search written in another key order hits the same entry.
//!
//! Age is measured on `tokio::time::Instant`, so the `stale_for` limit is exact and testable on
//! a paused clock; moka's own time-to-live (on its real-time clock) only bounds memory.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::envelope::Data;
use crate::fingerprint::canonical_json;

/// The most entries one tool keeps.
const CAPACITY: u64 = 10_000;

/// One remembered good result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StaleEntry {
    /// The result's `data` (shared with the answer that was fresh, serialized once).
    pub data: Data,
    /// The result's `content` when it was fresh.
    pub content: String,
    /// The provider that answered.
    pub provider: String,
    /// When it was fetched.
    pub fetched_at: Instant,
}

/// Last good results of one tool.
#[derive(Debug)]
pub(crate) struct StaleCache {
    cache: moka::sync::Cache<String, Arc<StaleEntry>>,
    stale_for: Duration,
}

impl StaleCache {
    /// A cache serving entries up to `stale_for` old; `None` when `stale_for` is zero.
    pub(crate) fn new(stale_for: Duration) -> Option<Self> {
        if stale_for.is_zero() {
            return None;
        }
        Some(StaleCache {
            cache: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(stale_for)
                .build(),
            stale_for,
        })
    }

    /// The cache key of some arguments.
    pub(crate) fn key(arguments: &Value) -> String {
        canonical_json(arguments)
    }

    /// Remembers a good result.
    pub(crate) fn put(&self, key: String, entry: StaleEntry) {
        self.cache.insert(key, Arc::new(entry));
    }

    /// The entry and its age, if one exists and is at most `stale_for` old at `now`.
    pub(crate) fn get(&self, key: &str, now: Instant) -> Option<(Arc<StaleEntry>, Duration)> {
        let entry = self.cache.get(key)?;
        let age = now.saturating_duration_since(entry.fetched_at);
        (age <= self.stale_for).then_some((entry, age))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(at: Instant) -> StaleEntry {
        StaleEntry {
            data: json!({"offers": []}).into(),
            content: "0 offers".into(),
            provider: "duffel".into(),
            fetched_at: at,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn entries_are_served_with_their_age_until_stale_for() {
        let cache = StaleCache::new(Duration::from_secs(15 * 60)).expect("enabled");
        let key = StaleCache::key(&json!({"origin": "JFK", "destination": "LHR"}));
        cache.put(key.clone(), entry(Instant::now()));
        tokio::time::advance(Duration::from_secs(4 * 60)).await;
        let (hit, age) = cache.get(&key, Instant::now()).expect("fresh enough");
        assert_eq!(age, Duration::from_secs(240));
        assert_eq!(hit.provider, "duffel");
        tokio::time::advance(Duration::from_secs(11 * 60)).await;
        assert!(
            cache.get(&key, Instant::now()).is_some(),
            "exactly 15 min is served"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(cache.get(&key, Instant::now()).is_none(), "past stale_for");
    }

    #[test]
    fn the_same_arguments_in_another_order_share_a_key() {
        assert_eq!(
            StaleCache::key(&json!({"a": 1, "b": [1, 2]})),
            StaleCache::key(&json!({"b": [1, 2], "a": 1}))
        );
        assert!(StaleCache::new(Duration::ZERO).is_none());
    }
}
