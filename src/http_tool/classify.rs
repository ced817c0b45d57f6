//! How a configured tool's provider answer is classified, as a pure table from status, headers
//! and body to a [`Class`] (the adapter turns it into the gateway's `ErrorKind`).
//!
//! - 2xx: an answer, if its body is JSON; anything else is [`Class::Malformed`] (a failure the
//!   breaker counts: a provider that answers garbage is not working). An empty body too: a
//!   write's success with an empty body is read before this table (`Operation::read`), so
//!   only a read's (or a binding's) reaches it, and a read keeps its result from JSON.
//! - A status the tool lists in `[classify] rejected` (by default 400, 404, 409 and 422): the
//!   model can fix the call, so [`Class::Rejected`], with the provider's own message when
//!   `[classify] message` points at one. Not a provider failure.
//! - 429: [`Class::RateLimited`], with the wait from `Retry-After`, or else from the reset of
//!   the `ratelimit-reset` / `x-ratelimit-reset` headers.
//! - 5xx: [`Class::Server`], with `Retry-After` when given.
//! - Any other status (401 and 403 above all, redirects, which are never followed): the
//!   operator must act, [`Class::Misconfigured`].

use std::time::{Duration, SystemTime};

use serde_json::Value;
use serde_json_path::JsonPath;

/// The statuses a model can fix when a tool lists none.
pub const DEFAULT_REJECTED: [u16; 4] = [400, 404, 409, 422];

/// The longest provider message a model reads in a refusal.
const MAX_MESSAGE_CHARS: usize = 300;

/// What one answer is.
#[derive(Debug, Clone, PartialEq)]
pub enum Class {
    /// A success whose body is this JSON.
    Answer(Value),
    /// The model can fix the call; the text says how, when the provider said.
    Rejected {
        /// The provider's message, or a sentence naming the status.
        message: String,
    },
    /// The answer holds nothing for the call, and the binding says that may change
    /// (`classify.empty`): the text says so.
    NotListed {
        /// The binding's sentence.
        message: String,
    },
    /// Over the provider's rate limit, with the wait it asked for.
    RateLimited {
        /// How long to wait, when the provider said.
        retry_after: Option<Duration>,
    },
    /// The provider failed.
    Server {
        /// The status.
        status: u16,
        /// How long to wait, when the provider said.
        retry_after: Option<Duration>,
    },
    /// The provider refused our credentials or our request: an operator must act.
    Misconfigured {
        /// The status.
        status: u16,
    },
    /// A success status whose body is not JSON.
    Malformed {
        /// What was wrong, for operators.
        detail: String,
    },
}

/// The classification rules of one tool.
#[derive(Debug, Clone)]
pub struct Classify {
    /// The statuses the model can fix.
    pub rejected: Vec<u16>,
    /// Where a refusal's body holds its message (a JSONPath to a string).
    pub message: Option<JsonPath>,
}

/// The headers classification reads, as their text values.
#[derive(Debug, Clone, Copy, Default)]
pub struct Waits<'a> {
    /// `Retry-After`: seconds or an HTTP-date.
    pub retry_after: Option<&'a str>,
    /// `ratelimit-reset` or `x-ratelimit-reset`: seconds until the window resets (or an epoch
    /// second, which some providers send instead: a value past a year is read as one).
    pub ratelimit_reset: Option<&'a str>,
}

impl Classify {
    /// Classifies one answer received at `now`.
    pub fn classify(&self, status: u16, waits: Waits<'_>, body: &[u8], now: SystemTime) -> Class {
        match status {
            200..=299 if body.trim_ascii().is_empty() => Class::Malformed {
                detail: format!(
                    "HTTP {status} with an empty body: a read keeps its result from a JSON answer, and only a write's success may be empty"
                ),
            },
            200..=299 => match serde_json::from_slice::<Value>(body) {
                Ok(value) => Class::Answer(value),
                Err(e) => Class::Malformed {
                    detail: format!("HTTP {status} with a body that is not JSON: {e}"),
                },
            },
            s if self.rejected.contains(&s) => Class::Rejected {
                message: self.message(status, body),
            },
            429 => Class::RateLimited {
                retry_after: waits.wait(now),
            },
            500..=599 => Class::Server {
                status,
                retry_after: waits.retry_after.and_then(|v| delay(v, now)),
            },
            _ => Class::Misconfigured { status },
        }
    }

    /// The provider's message in a refusal's body, or a sentence naming the status.
    fn message(&self, status: u16, body: &[u8]) -> String {
        let found = self.message.as_ref().and_then(|path| {
            let body: Value = serde_json::from_slice(body).ok()?;
            let nodes = path.query(&body);
            let text = nodes.all().first()?.as_str()?.trim().to_string();
            (!text.is_empty()).then_some(text)
        });
        match found {
            Some(text) if text.chars().count() > MAX_MESSAGE_CHARS => {
                let cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
                format!("{cut}…")
            }
            Some(text) => text,
            None => {
                format!("the provider refused the request (HTTP {status}); check the arguments")
            }
        }
    }
}

impl Waits<'_> {
    /// The wait a 429 asks for: `Retry-After` first, else the rate-limit window's reset.
    fn wait(&self, now: SystemTime) -> Option<Duration> {
        self.retry_after
            .and_then(|v| delay(v, now))
            .or_else(|| self.ratelimit_reset.and_then(|v| reset(v, now)))
    }
}

/// `Retry-After`: whole seconds, or an HTTP-date (never negative).
fn delay(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A rate-limit reset: seconds from now, or an epoch second (a value past a year of seconds).
fn reset(value: &str, now: SystemTime) -> Option<Duration> {
    const YEAR: u64 = 365 * 24 * 3600;
    let secs: u64 = value.trim().parse().ok()?;
    if secs <= YEAR {
        return Some(Duration::from_secs(secs));
    }
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}
