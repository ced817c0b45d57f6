//! The OAuth2 client-credentials access token (RFC 6749, 4.4): fetched once, shared, refreshed
//! early, single-flight. Amadeus uses it, and so does a provider of kind `http` with
//! `auth = "oauth2"`.
//!
//! A token lives `expires_in` seconds (1799 in Amadeus's docs), at most [`MAX_LIFETIME`] (a
//! day): an endpoint answering years, or `u64::MAX` for "forever", gets its token renewed daily
//! instead of a lifetime no clock can add. An `expires_in` of 0 (some endpoints send it for "not
//! said") is read as absent, an hour: taken at its word, the token would be fetched again before
//! every call, doubling the requests and adding a round trip to each call. Should the token
//! really lapse sooner, the API refuses it with a 401, and both adapters then fetch a new one
//! and send the request once more. A short lifetime that is not 0 (a few seconds) is honoured:
//! such a token is renewed as often as it says. Every clone of a client shares one [`TokenSource`]. A
//! token is used until `margin` before it expires (10 % of its lifetime, at most 60 s), so a
//! call never starts with a token about to lapse.
//!
//! **Single-flight:** when no usable token is cached, the first caller starts one fetch and
//! stores it as a [`Shared`] future; every caller that arrives meanwhile awaits that same
//! future, so 100 concurrent cold calls make exactly one token request and all share its
//! outcome — success or failure (a failing token endpoint is not hammered once per waiter).
//! The fetch is a task of its own, not tied to the caller that started it: if every waiter is
//! cancelled (their attempts timed out), it still runs to its end. The fetch has its own
//! timeout ([`FETCH_TIMEOUT`]), so a hung token endpoint cannot wedge the slot.
//!
//! **A finished fetch leaves the slot**, however it ended: a token, an error, its timeout, a
//! panic or its task cancelled. The task holds a guard that takes it out of the slot when the
//! task's future is dropped, which every one of those ends does; so the next caller after a
//! failure starts a new fetch instead of being handed the old failure again (a `Shared` whose
//! future panicked would answer every later caller with that panic, for good).
//!
//! **What is accepted as a token** (RFC 6749, 5.1): `access_token` a header can carry (a token
//! ending in a line break would fail every call before it left, so it is refused at once, as a
//! malformed answer); `token_type` bearer in any case, or absent (faregate sends only bearer
//! tokens, RFC 6750); `expires_in` a number of seconds (a fraction is dropped) or a string of
//! digits (Azure AD v1 sends `"3600"`), an hour when absent.
//!
//! **A refusal's body is redacted** of the client id and secret before it is read (the
//! provider's classifier copies it into the log detail, and some endpoints echo the request's
//! form back), and the detail names RFC 6749's `error` code and `error_description` (5.2) when
//! the body has them: `invalid_client` and `invalid_scope` tell the operator what to fix.
//!
//! Why not moka: this is one value with one refresh rule; a `std::sync::Mutex` around an
//! `Option` and a shared future (the `futures` crate is already a dependency) says it all
//! without a new dependency.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use hyper::body::Bytes;
use reqwest::StatusCode;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde::de::{self, Deserializer, Unexpected, Visitor};
use tokio::time::Instant;
use tracing::Instrument as _;

use super::error::{ErrorKind, UpstreamError};
use super::http::{read_body, send, transport_error};
use super::redact::redacted;
use crate::secret::Secret;

/// The longest a token request may take before it counts as a timeout.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a token is refreshed ahead of its expiry.
const MAX_MARGIN: Duration = Duration::from_secs(60);
/// The longest a token is used, whatever `expires_in` says: a day. A lifetime of years is an
/// endpoint's way of saying "forever" (or a mistake); renewing daily costs one request a day,
/// and keeps the expiry far from what an `Instant` can hold (`u64::MAX` seconds overflows it).
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// The most of an endpoint's `error_description` (or of a `token_type` it sent) a detail quotes.
const QUOTED_CHARS: usize = 200;

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
/// there is never the model's to fix, whatever it says). The body it is given is redacted of
/// the client's credentials.
pub(crate) type Classify = fn(StatusCode, &HeaderMap, &[u8], SystemTime) -> UpstreamError;

/// The token endpoint's answer (RFC 6749, 5.1).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    /// `Bearer` in any case; absent is read as bearer.
    #[serde(default)]
    token_type: Option<String>,
    /// Seconds; RFC 6749 recommends it, and an hour is assumed without it.
    #[serde(default = "an_hour", deserialize_with = "seconds")]
    expires_in: u64,
}

fn an_hour() -> u64 {
    3600
}

/// `expires_in` as a whole number of seconds: a JSON number (a fraction is dropped, a lifetime
/// past `u64` is `u64::MAX`, cut to [`MAX_LIFETIME`] later) or a string of digits (Azure AD v1
/// sends `"3600"`). Anything else (negative, `null`, `"1h"`) is not a token answer.
fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    struct Seconds;
    impl Visitor<'_> for Seconds {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("expires_in as a number of seconds (or a string of digits)")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
            if v.is_finite() && v >= 0.0 {
                // `as` saturates: 1e300 is u64::MAX.
                Ok(v.floor() as u64)
            } else {
                Err(E::invalid_value(Unexpected::Float(v), &self))
            }
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                // All digits: only too many of them fails to parse.
                Ok(v.parse().unwrap_or(u64::MAX))
            } else {
                Err(E::invalid_value(Unexpected::Str(v), &self))
            }
        }
    }
    deserializer.deserialize_any(Seconds)
}

/// The shared token state. `std::sync::Mutex`: every critical section is a few field
/// operations that never `.await`.
#[derive(Default)]
struct Slot {
    /// The current token, if any.
    token: Option<Token>,
    /// The fetch in flight, if any, with its number; every caller needing a token awaits it.
    inflight: Option<(u64, Fetch)>,
    /// How many fetches were started: the next one's number.
    started: u64,
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    // A panic while holding this lock cannot leave the slot inconsistent (plain stores).
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held by a fetch's task: takes fetch `id` out of the slot when the task's future is dropped,
/// which ends every way a task can end (finished, panicked, cancelled, even before it ran).
struct Leaving {
    slot: Arc<Mutex<Slot>>,
    id: u64,
}

impl Drop for Leaving {
    fn drop(&mut self) {
        let mut slot = lock(&self.slot);
        if slot.inflight.as_ref().is_some_and(|(id, _)| *id == self.id) {
            slot.inflight = None;
        }
    }
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
    /// A token source for `provider` at the token endpoint `url`, asked through `http`, whose
    /// failures `classify` reads.
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

    /// A usable token: the cached one, or the result of the (single) fetch in flight.
    pub(crate) async fn get(&self) -> Result<Token, UpstreamError> {
        self.get_or_start(|| self.fetch().boxed()).await
    }

    /// A usable token: the cached one, the outcome of the fetch in flight, or of a fetch
    /// `start` makes (in its own task) when none is.
    async fn get_or_start(
        &self,
        start: impl FnOnce() -> BoxFuture<'static, Result<Token, UpstreamError>>,
    ) -> Result<Token, UpstreamError> {
        let fetch = {
            let mut slot = lock(&self.slot);
            if let Some(t) = &slot.token
                && Instant::now() < t.refresh_at
            {
                return Ok(t.clone());
            }
            match &slot.inflight {
                Some((_, fetch)) => fetch.clone(),
                None => {
                    let id = slot.started;
                    slot.started = id.wrapping_add(1);
                    // Spawned under the lock: the task cannot leave the slot before it is in it.
                    let fetch = self.spawn(id, start());
                    slot.inflight = Some((id, fetch.clone()));
                    fetch
                }
            }
        };
        fetch.await
    }

    /// Runs `fetch` (bounded by [`FETCH_TIMEOUT`]) as task number `id`, which files a token it
    /// gets and leaves the slot however it ends; the shared future of its outcome.
    fn spawn(&self, id: u64, fetch: BoxFuture<'static, Result<Token, UpstreamError>>) -> Fetch {
        let leaving = Leaving {
            slot: Arc::clone(&self.slot),
            id,
        };
        let provider = self.provider.clone();
        let task = async move {
            let leaving = leaving;
            let result = match tokio::time::timeout(FETCH_TIMEOUT, fetch).await {
                Ok(result) => result,
                Err(_) => Err(UpstreamError::new(
                    ErrorKind::Timeout,
                    format!(
                        "token endpoint: no answer within {}",
                        humantime::format_duration(FETCH_TIMEOUT)
                    ),
                )),
            };
            match &result {
                Ok(token) => lock(&leaving.slot).token = Some(token.clone()),
                Err(e) => tracing::warn!(provider, error = %e, "token request failed"),
            }
            drop(leaving);
            result
        }
        // The log lines of the fetch read as part of the call that started it.
        .instrument(tracing::Span::current());
        let provider = self.provider.clone();
        tokio::spawn(task)
            .map(move |joined| {
                joined.unwrap_or_else(|e| {
                    let e = UpstreamError::new(
                        ErrorKind::Transport,
                        format!("token endpoint: the token request ended without an answer: {e}"),
                    );
                    tracing::warn!(provider, error = %e, "token request failed");
                    Err(e)
                })
            })
            .boxed()
            .shared()
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
        let mut slot = lock(&self.slot);
        if slot.token.as_ref().is_some_and(|t| t.value == used.value) {
            slot.token = None;
        }
    }

    /// The client's credentials in every form the token request sends them (as they are, and
    /// form-encoded), the secret's first: what a token endpoint's error body is redacted of.
    fn sent_credentials(&self) -> Vec<String> {
        let (secret, id) = (self.client_secret.expose(), self.client_id.expose());
        let mut sent = vec![
            secret.to_string(),
            form_encode(secret),
            id.to_string(),
            form_encode(id),
        ];
        sent.dedup();
        sent.retain(|s| !s.is_empty());
        sent
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
        let (classify, sent) = (self.classify, self.sent_credentials());
        async move {
            let fail = |mut e: UpstreamError| {
                e.detail = format!("token endpoint: {}", e.detail);
                e
            };
            // The lifetime counts from before the request: never later than the provider's clock.
            let started = Instant::now();
            let response = send(|| {
                http.post(url.clone())
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
                return Err(refused(classify, status, &headers, body, &sent));
            }
            issued(&body, status, started)
        }
    }
}

/// The error of a token endpoint's refusal: `body` redacted of the client's credentials
/// (`sent`) before `classify` reads it, and RFC 6749's `error` code and `error_description`
/// added to the detail when the body has them and the classifier did not say them.
fn refused(
    classify: Classify,
    status: StatusCode,
    headers: &HeaderMap,
    body: Bytes,
    sent: &[String],
) -> UpstreamError {
    let body = redacted(body, sent);
    // The classifier's detail starts with "token endpoint".
    let mut e = classify(status, headers, &body, crate::clock::system_now());
    // No tool argument reaches the token request: a 400 or 404 here is a wrong base URL or
    // credentials format, for an operator, never for the model.
    if matches!(e.kind, ErrorKind::Rejected { .. }) {
        e.kind = ErrorKind::Misconfigured {
            status: status.as_u16(),
        };
    }
    if let Some((code, description)) = oauth_error(&body)
        && !e.detail.contains(&code)
    {
        e.detail = match description {
            Some(description) => format!("{}: {code}: {description}", e.detail),
            None => format!("{}: {code}", e.detail),
        };
    }
    e
}

/// RFC 6749 5.2's `error` and `error_description` of an error body, when it has an `error`;
/// each [`quoted`].
fn oauth_error(body: &[u8]) -> Option<(String, Option<String>)> {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    let said: ErrorBody = serde_json::from_slice(body).ok()?;
    let code = quoted(&said.error);
    let description = said.error_description.as_deref().map(quoted);
    (!code.is_empty()).then_some((code, description.filter(|d| !d.is_empty())))
}

/// `text` as a detail may quote it: a control character (a line break) as a space, at most
/// [`QUOTED_CHARS`] characters.
fn quoted(text: &str) -> String {
    text.trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(QUOTED_CHARS)
        .collect()
}

/// The token a successful answer `body` (with `status`) issues, its lifetime counted from
/// `started`; a malformed answer (see the module's docs) is refused.
fn issued(body: &[u8], status: StatusCode, started: Instant) -> Result<Token, UpstreamError> {
    let malformed = |why: String| {
        UpstreamError::new(
            ErrorKind::Malformed,
            format!(
                "token endpoint: HTTP {} body is not a token: {why}",
                status.as_u16()
            ),
        )
    };
    let parsed: TokenResponse =
        serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
    if parsed.access_token.trim().is_empty() {
        return Err(UpstreamError::new(
            ErrorKind::Malformed,
            "token endpoint: empty access_token",
        ));
    }
    // As reqwest's `bearer_auth` builds the header: a token it cannot send would be cached and
    // fail every call before it left.
    if HeaderValue::try_from(format!("Bearer {}", parsed.access_token)).is_err() {
        return Err(malformed(
            "access_token holds a character no HTTP header can carry (a control character, such as a line break)".into(),
        ));
    }
    if let Some(kind) = &parsed.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(malformed(format!(
            "token_type is {:?}, and only bearer tokens are sent (RFC 6750)",
            quoted(kind)
        )));
    }
    // 0 is "not said" (see the module's docs), as if absent.
    let seconds = match parsed.expires_in {
        0 => an_hour(),
        given => given,
    };
    let lifetime = Duration::from_secs(seconds).min(MAX_LIFETIME);
    let margin = (lifetime / 10).min(MAX_MARGIN);
    tracing::debug!(expires_in = parsed.expires_in, "access token issued");
    Ok(Token {
        value: Secret::new(parsed.access_token),
        // Never overflows below a day; were it to, the token is used once and fetched again.
        refresh_at: started
            .checked_add(lifetime.saturating_sub(margin))
            .unwrap_or(started),
    })
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
mod tests;
