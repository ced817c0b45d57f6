//! The arguments of the last read a tool could not answer: what the gateway asks again, as a
//! probe of its own, to find out that the tool answers again when no caller does.
//!
//! Why: a breaker closes only after its half-open probes succeed, and probes are calls. An
//! agent that told a traveller "flight search is down, I will tell you when it is back" stops
//! calling, and on a quiet gateway nobody else calls either, so the breaker would stay
//! half-open and the back-in-service notice waiting for it would never fire. A health check
//! would not do: the providers publish none, and a tool's endpoint is healthy only when it
//! answers the tool's own request. So the gateway replays a real request it could not answer,
//! one whose answer a traveller was waiting for (`back_in_service/system.rs` decides when).
//!
//! Kept as the canonical JSON of the arguments (the read's memory key, already built for the
//! call), replaced by every read a provider failed and set by a fast-failed read only while
//! nothing is kept: the fast-fail path pays one atomic load, not a lock. Arguments a provider
//! refused as wrong (an unknown airport) are never kept: they could not show the tool is back.
//! Reads only: a write is never repeated by anyone but its caller.
//!
//! This is one replica's memory; `back_in_service/` shares it through the store (from its loop,
//! never from the call path), so that a replica that saw no failure, or one restarted, can still
//! ask ([`Unanswered::adopt`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The last unanswered read's arguments, as canonical JSON.
#[derive(Debug, Default)]
pub(crate) struct Unanswered {
    /// Whether `arguments` holds any (read without the lock on the fast-fail path).
    kept: AtomicBool,
    /// The arguments.
    arguments: Mutex<Option<String>>,
}

impl Unanswered {
    /// Keeps `key` (a read's canonical arguments) after a provider failed it, replacing
    /// what was kept: the newest request is the likeliest to still be worth asking.
    pub(crate) fn provider_failed(&self, key: &str) {
        self.put(key);
    }

    /// Keeps `key` after every breaker refused the read, unless arguments are kept already
    /// (a replica that started while the provider was down has seen no provider fail).
    pub(crate) fn refused(&self, key: &str) {
        if !self.kept.load(Ordering::Relaxed) {
            self.put(key);
        }
    }

    /// Keeps `key`, a read another replica could not answer (`back_in_service/` shares them
    /// through the store), unless arguments are kept already: this replica's own are as good,
    /// and a provider failure still replaces what is adopted.
    pub(crate) fn adopt(&self, key: &str) {
        self.refused(key);
    }

    /// The kept arguments, if any.
    pub(crate) fn get(&self) -> Option<String> {
        self.lock().clone()
    }

    /// Forgets `key` if it is still the one kept: it can no longer be asked (its date has
    /// passed) or the tool answered.
    pub(crate) fn forget(&self, key: &str) {
        let mut kept = self.lock();
        if kept.as_deref() == Some(key) {
            *kept = None;
            self.kept.store(false, Ordering::Relaxed);
        }
    }

    fn put(&self, key: &str) {
        let mut kept = self.lock();
        if kept.as_deref() != Some(key) {
            *kept = Some(key.to_string());
        }
        self.kept.store(true, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // A panic while holding it left a whole `Option` behind: nothing to repair.
        self.arguments
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::Unanswered;

    #[test]
    fn a_provider_failure_replaces_and_a_refusal_only_fills_an_empty_slot() {
        let kept = Unanswered::default();
        kept.refused(r#"{"a":1}"#);
        assert_eq!(kept.get().as_deref(), Some(r#"{"a":1}"#));
        kept.refused(r#"{"a":2}"#);
        assert_eq!(
            kept.get().as_deref(),
            Some(r#"{"a":1}"#),
            "a refusal keeps the first"
        );
        kept.provider_failed(r#"{"a":3}"#);
        assert_eq!(
            kept.get().as_deref(),
            Some(r#"{"a":3}"#),
            "a failure replaces"
        );
    }

    #[test]
    fn forgetting_drops_only_the_arguments_it_names() {
        let kept = Unanswered::default();
        kept.provider_failed(r#"{"a":1}"#);
        kept.forget(r#"{"a":0}"#);
        assert_eq!(kept.get().as_deref(), Some(r#"{"a":1}"#));
        kept.forget(r#"{"a":1}"#);
        assert_eq!(kept.get(), None);
        kept.refused(r#"{"a":2}"#);
        assert_eq!(
            kept.get().as_deref(),
            Some(r#"{"a":2}"#),
            "empty again: a refusal fills it"
        );
    }
}
