//! A small bounded, expiring in-memory map: the offers and hotel offers this gateway handed
//! out recently.
//!
//! Amadeus pricing needs the **whole** flight offer as search returned it, and an offer's `id`
//! is unique only within one search answer, so faregate mints its own id (`amx_<hex>`) per
//! offer and keeps the offer here. Entries expire after a fixed time and the oldest are evicted
//! beyond a capacity, so memory stays bounded however many searches run. The map lives in this
//! process: another replica, or this one after a restart, answers `Rejected` ("search again").

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// Entries by id with an expiry, oldest evicted first beyond `capacity`.
#[derive(Debug)]
pub(crate) struct Recent<V> {
    ttl: Duration,
    capacity: usize,
    /// `std::sync::Mutex`: inserts and lookups are short and never `.await`.
    inner: Arc<Mutex<Inner<V>>>,
}

impl<V> Clone for Recent<V> {
    fn clone(&self) -> Self {
        Recent {
            ttl: self.ttl,
            capacity: self.capacity,
            inner: self.inner.clone(),
        }
    }
}

#[derive(Debug)]
struct Inner<V> {
    map: HashMap<String, (Instant, V)>,
    order: VecDeque<String>,
}

impl<V: Clone> Recent<V> {
    /// An empty map keeping entries `ttl`, at most `capacity` of them.
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        Recent {
            ttl,
            capacity,
            inner: Arc::new(Mutex::new(Inner {
                map: HashMap::new(),
                order: VecDeque::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long an entry is kept.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Stores `value` under `id`.
    pub(crate) fn insert(&self, id: String, value: V) {
        let now = Instant::now();
        let mut inner = self.lock();
        if inner
            .map
            .insert(id.clone(), (now + self.ttl, value))
            .is_none()
        {
            inner.order.push_back(id);
        }
        // Drop expired entries from the front, then the oldest beyond the capacity.
        while let Some(front) = inner.order.front().cloned() {
            let expired = inner.map.get(&front).is_none_or(|(exp, _)| *exp <= now);
            if expired || inner.order.len() > self.capacity {
                inner.order.pop_front();
                inner.map.remove(&front);
            } else {
                break;
            }
        }
    }

    /// The value under `id`, unless unknown or expired.
    pub(crate) fn get(&self, id: &str) -> Option<V> {
        let inner = self.lock();
        inner
            .map
            .get(id)
            .filter(|(exp, _)| Instant::now() < *exp)
            .map(|(_, v)| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_oldest_are_evicted() {
        let r: Recent<u32> = Recent::new(Duration::from_secs(60), 2);
        r.insert("a".into(), 1);
        r.insert("b".into(), 2);
        r.insert("c".into(), 3);
        assert_eq!(r.get("a"), None, "evicted beyond the capacity");
        assert_eq!(r.get("b"), Some(2));
        assert_eq!(r.get("c"), Some(3));
        let short: Recent<u32> = Recent::new(Duration::ZERO, 10);
        short.insert("x".into(), 1);
        assert_eq!(short.get("x"), None, "expired");
    }
}
