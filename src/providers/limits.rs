//! What providers say about their rate limits on every answer, kept per provider.
//!
//! A provider that documents rate-limit headers (Duffel: `ratelimit-limit`,
//! `ratelimit-remaining`, `ratelimit-reset`) tells on every answer, successful or not, how many
//! requests its window allows, how many are left and when the window resets. The background
//! pacer reads that instead of finding the limit by running every worker into it: pacing starts
//! with the first answer, before the first 429. A provider that documents only a fixed limit
//! (Amadeus: transactions per second per environment) has it configured instead, and
//! [`RateLimits`] holds that too, so the pacer has one place to ask.
//!
//! The adapters write here and know nothing of pacing; the job system reads.
//!
//! Beside each provider's readings it counts who sent this replica's requests in the
//! provider's current window (`clients::ProviderWindow`), so the call path asks, under the one
//! short lock it reads the announcement with, whether a client is over its share of the
//! provider's window while it runs low ([`RateLimits::admit_client`]).
//!
//! It also says what one allowance stands for ([`RateLimits::bucket`]): by default a provider's
//! name, or with `[quota] bucket_key = "provider_and_credential"` the name and a digest of the
//! credential it is called with, so two accounts of one provider in one database are paced
//! apart. The digest is unkeyed SHA-256 of the credential, cut to 16 hex digits: enough to keep
//! accounts apart, and, for a credential with a token's entropy, nothing that leads back to it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::time::Instant;

use super::http::parse_delay;
use crate::clients::{Announced, ClientName, OverProviderShare, ProviderReserve, ProviderWindow};
use crate::secret::Secret;

/// One answer's rate-limit headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Requests the provider's window allows.
    pub limit: u32,
    /// Requests left in the current window.
    pub remaining: u32,
    /// Time from the answer until the window resets.
    pub reset_in: Duration,
}

impl Reading {
    /// The `ratelimit-*` headers of `headers`, when all three are present and readable.
    ///
    /// `ratelimit-reset` is an HTTP-date in Duffel's documentation; a number of seconds (the
    /// IETF draft's form) is read too, so a provider that sends either is understood.
    pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> Option<Reading> {
        let number =
            |name: &str| -> Option<u32> { headers.get(name)?.to_str().ok()?.trim().parse().ok() };
        let limit = number("ratelimit-limit")?;
        let remaining = number("ratelimit-remaining")?;
        let reset = headers.get("ratelimit-reset")?.to_str().ok()?;
        let reset_in = parse_delay(reset, now)?;
        (limit > 0).then_some(Reading {
            limit,
            remaining: remaining.min(limit),
            reset_in,
        })
    }
}

/// A provider's rate limit as the gateway knows it now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Known {
    /// The latest headers and when they arrived, if the provider sends any.
    pub latest: Option<(Reading, Instant)>,
    /// The configured ceiling in requests per second, if any.
    pub configured_per_s: Option<f64>,
}

impl Known {
    /// The latest announcement, as the rule of a client's share of the provider reads it.
    fn announced(&self) -> Option<Announced> {
        self.latest.map(|(reading, at)| Announced {
            limit: reading.limit,
            remaining: reading.remaining,
            resets_at: at + reading.reset_in,
        })
    }
}

/// One provider's entry: what is known of its limit, and who sent this replica's requests in
/// its current window.
#[derive(Debug)]
struct Board {
    known: Known,
    window: ProviderWindow,
}

impl Board {
    fn new() -> Self {
        Board {
            known: Known {
                latest: None,
                configured_per_s: None,
            },
            window: ProviderWindow::default(),
        }
    }
}

/// The rate limits of every provider, by the operator's provider name.
#[derive(Debug, Default)]
pub struct RateLimits {
    /// A short `std::sync::Mutex`: held to copy or replace one small value, or to count one
    /// request, never across an await.
    by_provider: Mutex<HashMap<String, Board>>,
    /// Requests interactive calls sent per provider since the quota room last took them: a
    /// count in memory, so an interactive call never waits on the database.
    interactive: Mutex<HashMap<String, u32>>,
    /// Providers whose allowance is keyed by their account: name → bucket key.
    buckets: Mutex<HashMap<String, String>>,
}

/// The bucket key of `provider` called with `credential`: the name, `#`, and 16 hex digits of
/// the credential's SHA-256 (never the credential).
pub fn credential_bucket(provider: &str, credential: &Secret) -> String {
    format!("{provider}#{}", credential.digest())
}

impl RateLimits {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Board>> {
        // A poisoned lock only means a panic elsewhere; the map is still usable.
        self.by_provider.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets `provider`'s configured ceiling.
    pub fn configure(&self, provider: &str, per_s: f64) {
        if per_s.is_finite() && per_s > 0.0 {
            self.map()
                .entry(provider.to_string())
                .or_insert_with(Board::new)
                .known
                .configured_per_s = Some(per_s);
        }
    }

    /// Records the headers of an answer of `provider` that arrived at `at`.
    pub fn record(&self, provider: &str, reading: Reading, at: Instant) {
        let mut map = self.map();
        // Every answer records: no new key (an allocation) once the provider has one.
        let latest = Some((reading, at));
        match map.get_mut(provider) {
            Some(board) => board.known.latest = latest,
            None => {
                let mut board = Board::new();
                board.known.latest = latest;
                map.insert(provider.to_string(), board);
            }
        }
    }

    /// Whether `client` may send a request to `provider` now: refused while the provider's
    /// latest announcement is fresh, shows at most `reserve` of its window left, and `client`
    /// sent more than its fair part of this replica's requests in the window
    /// (`clients::ProviderWindow::admit`). Admitted, the request is counted as sent; give it
    /// back with [`RateLimits::unsent`] if it is not sent after all. A provider that has
    /// announced nothing refuses nobody (its requests are counted all the same: a window's
    /// first requests go out before its first answer announces it).
    pub fn admit_client(
        &self,
        provider: &str,
        client: &ClientName,
        reserve: ProviderReserve,
        now: Instant,
    ) -> Result<(), OverProviderShare> {
        let mut map = self.map();
        // The provider's entry is made once, by its first request or answer.
        if !map.contains_key(provider) {
            map.insert(provider.to_string(), Board::new());
        }
        let Some(board) = map.get_mut(provider) else {
            return Ok(());
        };
        let announced = board.known.announced();
        board.window.admit(client, now, announced, reserve)
    }

    /// Whether [`RateLimits::admit_client`] would let `client` send a request to `provider`
    /// now, counting nothing (`clients::ProviderWindow::check`).
    pub fn would_admit_client(
        &self,
        provider: &str,
        client: &ClientName,
        reserve: ProviderReserve,
        now: Instant,
    ) -> Result<(), OverProviderShare> {
        let map = self.map();
        let Some(board) = map.get(provider) else {
            return Ok(());
        };
        board
            .window
            .check(client, now, board.known.announced(), reserve)
    }

    /// A request [`RateLimits::admit_client`] counted was not sent (its breaker refused it).
    pub fn unsent(&self, provider: &str, client: &ClientName) {
        if let Some(board) = self.map().get_mut(provider) {
            board.window.unsent(client);
        }
    }

    /// An interactive call sent one request to `provider`.
    pub fn spent_interactive(&self, provider: &str) {
        let mut spent = self.interactive.lock().unwrap_or_else(|e| e.into_inner());
        match spent.get_mut(provider) {
            Some(n) => *n = n.saturating_add(1),
            None => {
                spent.insert(provider.to_string(), 1);
            }
        }
    }

    /// The interactive requests counted since the last call, per provider, and a fresh count.
    pub fn take_interactive(&self) -> Vec<(String, u32)> {
        let mut spent = self.interactive.lock().unwrap_or_else(|e| e.into_inner());
        spent.drain().filter(|(_, n)| *n > 0).collect()
    }

    /// Keys `provider`'s allowance by the account `credential` names (see
    /// [`credential_bucket`]).
    pub fn key_by_credential(&self, provider: &str, credential: &Secret) {
        self.buckets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                provider.to_string(),
                credential_bucket(provider, credential),
            );
    }

    /// The key of the allowance `provider`'s requests draw on: its name, unless it is keyed by
    /// its account.
    pub fn bucket(&self, provider: &str) -> String {
        self.buckets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(provider)
            .cloned()
            .unwrap_or_else(|| provider.to_string())
    }

    /// What is known of `provider`'s limit.
    pub fn get(&self, provider: &str) -> Option<Known> {
        self.map().get(provider).map(|board| board.known)
    }
}

/// Where one adapter records its answers' headers: the shared board and its provider's name.
#[derive(Debug, Clone)]
pub struct LimitsSink {
    limits: std::sync::Arc<RateLimits>,
    provider: String,
}

impl LimitsSink {
    /// A sink writing `provider`'s readings into `limits`.
    pub fn new(limits: std::sync::Arc<RateLimits>, provider: &str) -> Self {
        LimitsSink {
            limits,
            provider: provider.to_string(),
        }
    }

    /// Records the rate-limit headers of one answer, if it carries them.
    pub fn observe(&self, headers: &HeaderMap) {
        if let Some(reading) = Reading::from_headers(headers, crate::clock::system_now()) {
            self.limits
                .record(&self.provider, reading, crate::clock::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn an_account_bucket_names_the_provider_and_a_digest_never_the_credential() {
        let one = Secret::new("duffel_live_0123456789abcdef");
        let key = credential_bucket("duffel", &one);
        assert_eq!(
            key,
            credential_bucket("duffel", &one),
            "stable across replicas"
        );
        assert!(
            key.starts_with("duffel#") && key.len() == "duffel#".len() + 16,
            "{key}"
        );
        assert!(!key.contains("0123456789abcdef"), "{key}");
        let two = Secret::new("duffel_live_fedcba9876543210");
        assert_ne!(
            key,
            credential_bucket("duffel", &two),
            "two accounts, two buckets"
        );

        let limits = RateLimits::default();
        assert_eq!(limits.bucket("duffel"), "duffel", "by name unless asked");
        limits.key_by_credential("duffel", &one);
        assert_eq!(limits.bucket("duffel"), key);
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("header value"));
        }
        h
    }

    #[test]
    fn duffel_headers_are_read_with_an_http_date_reset() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let reset = httpdate::fmt_http_date(now + Duration::from_secs(42));
        let h = headers(&[
            ("ratelimit-limit", "120"),
            ("ratelimit-remaining", "77"),
            ("ratelimit-reset", &reset),
        ]);
        assert_eq!(
            Reading::from_headers(&h, now),
            Some(Reading {
                limit: 120,
                remaining: 77,
                reset_in: Duration::from_secs(42)
            })
        );
    }

    #[test]
    fn seconds_are_read_too_and_bad_or_missing_headers_give_nothing() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let ok = headers(&[
            ("ratelimit-limit", "60"),
            ("ratelimit-remaining", "99"),
            ("ratelimit-reset", "5"),
        ]);
        let reading = Reading::from_headers(&ok, now).expect("read");
        assert_eq!(reading.remaining, 60, "remaining is capped at the limit");
        assert_eq!(reading.reset_in, Duration::from_secs(5));
        for bad in [
            headers(&[("ratelimit-limit", "60"), ("ratelimit-remaining", "1")]),
            headers(&[
                ("ratelimit-limit", "sixty"),
                ("ratelimit-remaining", "1"),
                ("ratelimit-reset", "5"),
            ]),
            headers(&[
                ("ratelimit-limit", "0"),
                ("ratelimit-remaining", "0"),
                ("ratelimit-reset", "5"),
            ]),
            headers(&[
                ("ratelimit-limit", "60"),
                ("ratelimit-remaining", "1"),
                ("ratelimit-reset", "tomorrow"),
            ]),
        ] {
            assert_eq!(Reading::from_headers(&bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn the_board_keeps_the_latest_reading_and_the_configured_ceiling() {
        let limits = RateLimits::default();
        assert_eq!(limits.get("amadeus"), None);
        limits.configure("amadeus", 10.0);
        limits.configure("amadeus", f64::NAN);
        let at = Instant::now();
        let r = Reading {
            limit: 60,
            remaining: 10,
            reset_in: Duration::from_secs(3),
        };
        limits.record("amadeus", r, at);
        assert_eq!(
            limits.get("amadeus"),
            Some(Known {
                latest: Some((r, at)),
                configured_per_s: Some(10.0)
            })
        );
    }
}
