//! The OAuth2 client-credentials access token (RFC 6749, 4.4): fetched once, shared, refreshed
//! early, single-flight. Amadeus uses it, and so does a provider of kind `http` with
//! `auth = "oauth2"`.
//!
//! A token lives `expires_in` seconds (1799 in Amadeus's docs). Every clone of a client shares
//! one [`TokenSource`]. A token is used until `margin` before it expires (10 % of its
//! lifetime, at most 60 s), so a call never starts with a token about to lapse.
//!
//! **Single-flight:** when no usable token is cached, the first caller starts one fetch and
//! stores it as a [`Shared`] future; every caller that arrives meanwhile awaits that same
//! future, so 100 concurrent cold calls make exactly one token request and all share its
//! outcome — success or failure (a failing token endpoint is not hammered once per waiter).
//! The fetch is not tied to the caller that started it: if that caller is cancelled (its
//! attempt timed out), the next waiter drives the same fetch on. The fetch has its own
//! timeout, so a hung token endpoint cannot wedge the slot.
//!
//! Why not moka: this is one value with one refresh rule; a `std::sync::Mutex` around an
//! `Option` and a shared future (the `futures` crate is already a dependency) says it all
//! without a new dependency.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use reqwest::Url;
use tokio::time::Instant;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;

use super::error::{ErrorKind, UpstreamError};
use super::http::{read_body, send, transport_error};
use crate::secret::Secret;

/// The longest a token request may take before it counts as a timeout.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a token is refreshed ahead of its expiry.
const MAX_MARGIN: Duration = Duration::from_secs(60);

/// A cached access token.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    /// The bearer token.
    pub(crate) value: Secret,
    /// When it stops being handed out (its expiry minus the margin).
    refresh_at: Instant,
}

type Fetch = Shared<BoxFuture<'static, Result<Token, UpstreamError>>>;

/// How a provider's token endpoint failures read: `(status, headers, body, now)` to the error,
/// whose detail starts with "token endpoint" (the provider knows its error bodies; a refusal
/// there is never the model's to fix, whatever it says).
pub(crate) type Classify = fn(StatusCode, &HeaderMap, &[u8], SystemTime) -> UpstreamError;

/// The token endpoint's answer (RFC 6749, 5.1).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    /// Seconds; RFC 6749 recommends it, and an hour is assumed without it.
    #[serde(default = "an_hour")]
    expires_in: u64,
}

fn an_hour() -> u64 {
    3600
}

/// The shared token state. `std::sync::Mutex`: every critical section is a few field
/// operations that never `.await`.
#[derive(Default)]
struct Slot {
    /// The current token, if any.
    token: Option<Token>,
    /// The fetch in flight, if any; every caller needing a token awaits this one.
    inflight: Option<Fetch>,
}

/// Where tokens come from, shared by every clone of one provider's client.
#[derive(Clone)]
pub struct TokenSource {
    http: reqwest::Client,
    url: Url,
    client_id: Secret,
    client_secret: Secret,
    /// The scope asked for, when the provider wants one.
    scope: Option<String>,
    /// Who is asking, for logs (`Amadeus`, or the provider's configured name).
    provider: String,
    classify: Classify,
    slot: Arc<Mutex<Slot>>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("url", &self.url.as_str())
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl TokenSource {
    /// A token source for `provider` at the token endpoint `url`, whose failures `classify`
    /// reads.
    pub(crate) fn new(
        provider: &str,
        http: reqwest::Client,
        url: Url,
        (client_id, client_secret): (Secret, Secret),
        classify: Classify,
    ) -> Self {
        TokenSource {
            http,
            url,
            client_id,
            client_secret,
            scope: None,
            provider: provider.to_string(),
            classify,
            slot: Arc::new(Mutex::new(Slot::default())),
        }
    }

    /// The same source, asking for `scope`.
    pub(crate) fn with_scope(mut self, scope: Option<String>) -> Self {
        self.scope = scope;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A panic while holding this lock cannot leave the slot inconsistent (plain stores).
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A usable token: the cached one, or the result of the (single) fetch in flight.
    pub(crate) async fn get(&self) -> Result<Token, UpstreamError> {
        let fetch = {
            let mut slot = self.lock();
            if let Some(t) = &slot.token
                && Instant::now() < t.refresh_at
            {
                return Ok(t.clone());
            }
            slot.inflight
                .get_or_insert_with(|| self.fetch().boxed().shared())
                .clone()
        };
        let result = fetch.clone().await;
        let mut slot = self.lock();
        // The first waiter to finish files the outcome; later ones find the slot moved on.
        if slot.inflight.as_ref().is_some_and(|f| f.ptr_eq(&fetch)) {
            slot.inflight = None;
            if let Ok(t) = &result {
                slot.token = Some(t.clone());
            }
        }
        result
    }

    /// The client secret, as the token request sends it (what an echo of it is redacted by).
    pub(crate) fn client_secret(&self) -> &str {
        self.client_secret.expose()
    }

    /// The client id: it names the account the tokens are for.
    pub(crate) fn client_id(&self) -> &Secret {
        &self.client_id
    }

    /// Forgets `used` after the API refused it (401), so the next [`get`](Self::get) fetches
    /// a new one. A newer token already cached by another caller is kept.
    pub(crate) fn invalidate(&self, used: &Token) {
        let mut slot = self.lock();
        if slot.token.as_ref().is_some_and(|t| t.value == used.value) {
            slot.token = None;
        }
    }

    /// One token request, independent of the caller (it is shared between waiters).
    fn fetch(&self) -> impl Future<Output = Result<Token, UpstreamError>> + Send + 'static {
        let form = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}{}",
            form_encode(self.client_id.expose()),
            form_encode(self.client_secret.expose()),
            self.scope
                .as_deref()
                .map(|s| format!("&scope={}", form_encode(s)))
                .unwrap_or_default()
        );
        let (http, url) = (self.http.clone(), self.url.clone());
        let (classify, provider) = (self.classify, self.provider.clone());
        async move {
            let fail = |mut e: UpstreamError| {
                e.detail = format!("token endpoint: {}", e.detail);
                e
            };
            // The lifetime counts from before the request: never later than the provider's clock.
            let started = Instant::now();
            let response = send(|| {
                http.post(url.clone())
                    .timeout(FETCH_TIMEOUT)
                    .header(reqwest::header::ACCEPT, "application/json")
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(form.clone())
            })
            .await
            .map_err(|e| fail(transport_error(e)))?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = read_body(response).await.map_err(fail)?;
            if !status.is_success() {
                // The classifier's detail starts with "token endpoint".
                let mut e = classify(status, &headers, &body, crate::clock::system_now());
                // No tool argument reaches the token request: a 400 or 404 here is a wrong
                // base URL or credentials format, for an operator, never for the model.
                if matches!(e.kind, ErrorKind::Rejected { .. }) {
                    e.kind = ErrorKind::Misconfigured {
                        status: status.as_u16(),
                    };
                }
                tracing::warn!(provider, error = %e, "token request failed");
                return Err(e);
            }
            let parsed: TokenResponse = serde_json::from_slice(&body).map_err(|e| {
                UpstreamError::new(
                    ErrorKind::Malformed,
                    format!(
                        "token endpoint: HTTP {} body is not a token: {e}",
                        status.as_u16()
                    ),
                )
            })?;
            if parsed.access_token.trim().is_empty() {
                return Err(UpstreamError::new(
                    ErrorKind::Malformed,
                    "token endpoint: empty access_token",
                ));
            }
            let lifetime = Duration::from_secs(parsed.expires_in);
            let margin = (lifetime / 10).min(MAX_MARGIN);
            tracing::debug!(
                provider,
                expires_in = parsed.expires_in,
                "access token issued"
            );
            Ok(Token {
                value: Secret::new(parsed.access_token),
                refresh_at: started + lifetime.saturating_sub(margin),
            })
        }
    }
}

/// `application/x-www-form-urlencoded` encoding of one value (reqwest's `form` feature would
/// add a dependency for these two fields).
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::form_encode;

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form_encode("TEST_KEY"), "TEST_KEY");
        assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
