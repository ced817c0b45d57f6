//! Breakers by key, shared across tasks, with one event channel for all of them.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::{Breaker, BreakerConfig, BreakerKey, TransitionEvent};

/// All breakers of the gateway.
///
/// The hot path is a lookup followed by work on the `Arc<Breaker>` it returns (callers may also
/// keep the `Arc`, e.g. in the tool table, and skip the lookup). Breakers are created once per key
/// at startup or on first use, and removed only when a configuration reload drops their key, so
/// the map is read-mostly: a `std::sync::RwLock`
/// lets lookups proceed in parallel, is held only for a hash lookup (never across an `.await`,
/// which would be a bug with any lock here), and costs less than an async lock. A mutex would
/// serialise every lookup; a sharded or lock-free map would be a dependency for no measured need.
#[derive(Debug)]
pub struct BreakerRegistry {
    /// The breakers. Written only when a key is first seen.
    breakers: RwLock<HashMap<BreakerKey, Arc<Breaker>>>,
    /// Every breaker sends its transitions here.
    events: broadcast::Sender<TransitionEvent>,
}

impl BreakerRegistry {
    /// An empty registry whose event channel keeps up to `event_capacity` events for slow
    /// subscribers (older ones are dropped for a subscriber that lags; see `broadcast`).
    pub fn new(event_capacity: usize) -> Self {
        let (events, _) = broadcast::channel(event_capacity.max(1));
        Self {
            breakers: RwLock::new(HashMap::new()),
            events,
        }
    }

    /// The breaker for `key`, creating it with `config` if it does not exist yet (an existing
    /// breaker keeps its config).
    pub fn get_or_insert(&self, key: BreakerKey, config: BreakerConfig) -> Arc<Breaker> {
        self.get_or_insert_with(&key, || config)
    }

    /// Like [`BreakerRegistry::get_or_insert`], but builds the config only when the key is new.
    pub fn get_or_insert_with(
        &self,
        key: &BreakerKey,
        config: impl FnOnce() -> BreakerConfig,
    ) -> Arc<Breaker> {
        if let Some(breaker) = self.get(key) {
            return breaker;
        }
        let mut map = self.breakers.write().unwrap_or_else(|e| e.into_inner());
        // Another task may have inserted it between our read and write locks.
        Arc::clone(
            map.entry(key.clone())
                .or_insert_with(|| Breaker::new(key.clone(), config(), self.events.clone())),
        )
    }

    /// The breaker for `key`, if there is one.
    pub fn get(&self, key: &BreakerKey) -> Option<Arc<Breaker>> {
        self.read().get(key).cloned()
    }

    /// Forgets every breaker whose key `keep` refuses (a reload removed its tool or provider)
    /// and returns their keys. A call still holding one finishes on it; it is no longer listed,
    /// ticked or followed.
    pub fn retain(&self, mut keep: impl FnMut(&BreakerKey) -> bool) -> Vec<BreakerKey> {
        let mut removed = Vec::new();
        self.breakers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|key, _| {
                let kept = keep(key);
                if !kept {
                    removed.push(key.clone());
                }
                kept
            });
        removed.sort();
        removed
    }

    /// Every breaker, sorted by key.
    pub fn all(&self) -> Vec<Arc<Breaker>> {
        let mut all: Vec<_> = self.read().values().cloned().collect();
        all.sort_by(|a, b| a.key().cmp(b.key()));
        all
    }

    /// How many breakers exist.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no breaker exists yet.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// A receiver of every breaker's transitions from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<TransitionEvent> {
        self.events.subscribe()
    }

    /// A sender for breakers created outside the registry that should report here.
    pub fn events(&self) -> broadcast::Sender<TransitionEvent> {
        self.events.clone()
    }

    /// Fires due timers on every breaker. The map lock is released before any breaker is
    /// locked, so ticking never delays lookups.
    pub fn tick_all(&self, now: Instant) {
        let breakers: Vec<_> = self.read().values().cloned().collect();
        for breaker in breakers {
            breaker.tick(now);
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<BreakerKey, Arc<Breaker>>> {
        // Poisoning needs a panic inside a HashMap insert or lookup while the lock was held; the
        // map is still consistent then, so it is used as is.
        self.breakers.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for BreakerRegistry {
    /// A registry with room for 1,024 unread events per subscriber.
    fn default() -> Self {
        Self::new(1024)
    }
}
