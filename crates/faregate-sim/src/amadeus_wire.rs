//! Amadeus wire conventions for the simulator: the error body, the media type, bearer-token
//! checks against tokens the simulated token endpoint issued, and query helpers.
//!
//! Errors are `{"errors":[{status, code, title, detail?, source?}]}` with integer `status` and
//! `code`, as the specs type them, except the 401 "Invalid HTTP header" (38191), which uses
//! strings as the example in Amadeus's developer guides does, so clients meet both forms. Every API answer is
//! `application/vnd.amadeus+json`; the token endpoint answers `application/json`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{Simulator, lock};

/// The media type of Amadeus API answers.
pub(crate) const VND_JSON: &str = "application/vnd.amadeus+json";
/// The documented token lifetime in seconds.
pub(crate) const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(1799);
/// How many issued tokens are remembered (oldest forgotten first).
const TOKEN_CAPACITY: usize = 10_000;

/// One issue of an error body.
#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub(crate) code: i64,
    pub(crate) title: &'static str,
    pub(crate) detail: Option<String>,
    /// `{"parameter": …}` or `{"pointer": …}`.
    pub(crate) source: Option<Value>,
}

/// An Amadeus error answer.
#[derive(Debug, Clone)]
pub(crate) struct AmadeusError {
    pub(crate) status: StatusCode,
    pub(crate) issues: Vec<Issue>,
    /// Render `status` and `code` as strings (as the 401 example of Amadeus's developer guides
    /// does).
    pub(crate) string_codes: bool,
}

impl AmadeusError {
    /// A one-issue error.
    pub(crate) fn new(
        status: StatusCode,
        code: i64,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        AmadeusError {
            status,
            issues: vec![Issue {
                code,
                title,
                detail: Some(detail.into()),
                source: None,
            }],
            string_codes: false,
        }
    }

    /// A 400 about one query parameter.
    pub(crate) fn parameter(code: i64, title: &'static str, name: &str, detail: String) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, code, title, detail);
        e.issues[0].source = Some(json!({ "parameter": name }));
        e
    }

    /// A 400 about one body field (JSON pointer).
    pub(crate) fn pointer(code: i64, title: &'static str, pointer: &str, detail: String) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, code, title, detail);
        e.issues[0].source = Some(json!({ "pointer": pointer }));
        e
    }

    /// The body for a status injected by a fault.
    pub(crate) fn for_status(status: StatusCode) -> Self {
        let (code, title) = match status.as_u16() {
            400 => (477, "INVALID FORMAT"),
            401 => (38190, "Invalid access token"),
            403 => (38197, "Forbidden"),
            404 => (38196, "Resource not found"),
            429 => (38194, "Too many requests"),
            _ => (38189, "Internal error"),
        };
        Self::new(
            status,
            code,
            title,
            format!(
                "The simulator injected this {} response (fault injection).",
                status.as_u16()
            ),
        )
    }

    fn body(&self) -> Value {
        let issues: Vec<Value> = self
            .issues
            .iter()
            .map(|i| {
                let mut v = if self.string_codes {
                    json!({ "status": self.status.as_u16().to_string(), "code": i.code.to_string(), "title": i.title })
                } else {
                    json!({ "status": self.status.as_u16(), "code": i.code, "title": i.title })
                };
                if let Some(d) = &i.detail {
                    v["detail"] = json!(d);
                }
                if let Some(s) = &i.source {
                    v["source"] = s.clone();
                }
                v
            })
            .collect();
        json!({ "errors": issues })
    }
}

impl IntoResponse for AmadeusError {
    fn into_response(self) -> Response {
        vnd_json(self.status, self.body())
    }
}

/// A JSON answer with the Amadeus media type.
pub(crate) fn vnd_json(status: StatusCode, body: Value) -> Response {
    let mut res = (status, axum::Json(body)).into_response();
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(VND_JSON));
    res
}

/// Issued access tokens and their expiry.
#[derive(Debug)]
pub(crate) struct Tokens {
    pub(crate) lifetime: Duration,
    pub(crate) issued: u64,
    expiry: HashMap<String, Instant>,
    order: VecDeque<String>,
}

impl Default for Tokens {
    fn default() -> Self {
        Tokens {
            lifetime: DEFAULT_TOKEN_LIFETIME,
            issued: 0,
            expiry: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl Tokens {
    /// Remembers a new token.
    pub(crate) fn insert(&mut self, token: String, now: Instant) {
        self.issued += 1;
        self.expiry.insert(token.clone(), now + self.lifetime);
        self.order.push_back(token);
        while self.order.len() > TOKEN_CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.expiry.remove(&old);
            }
        }
    }

    /// Forgets every token (as if all were revoked).
    pub(crate) fn revoke_all(&mut self) {
        self.expiry.clear();
        self.order.clear();
    }
}

/// Checks `Authorization: Bearer <token>` against the issued tokens: a missing or malformed
/// header is 401 38191 (string codes), an unknown token 38190, an expired one 38192.
pub(crate) fn check_bearer(sim: &Simulator, headers: &HeaderMap) -> Result<(), AmadeusError> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        let mut e = AmadeusError::new(
            StatusCode::UNAUTHORIZED,
            38191,
            "Invalid HTTP header",
            "Missing or invalid format for mandatory Authorization header",
        );
        e.string_codes = true;
        return Err(e);
    };
    match lock(&sim.inner.amadeus).tokens.expiry.get(token) {
        None => Err(AmadeusError::new(
            StatusCode::UNAUTHORIZED,
            38190,
            "Invalid access token",
            "The access token provided in the Authorization header is invalid",
        )),
        Some(exp) if *exp <= Instant::now() => Err(AmadeusError::new(
            StatusCode::UNAUTHORIZED,
            38192,
            "Access token expired",
            "The access token is expired",
        )),
        Some(_) => Ok(()),
    }
}

/// Requires `X-HTTP-Method-Override: GET` on a POST search or pricing (the simulator's answer
/// without it is a 400 naming the header; Amadeus documents the header as required).
pub(crate) fn check_override(headers: &HeaderMap) -> Result<(), AmadeusError> {
    match headers
        .get("x-http-method-override")
        .map(HeaderValue::to_str)
    {
        Some(Ok(v)) if v.eq_ignore_ascii_case("GET") => Ok(()),
        _ => Err(AmadeusError::new(
            StatusCode::BAD_REQUEST,
            477,
            "INVALID FORMAT",
            "POST searches need the header X-HTTP-Method-Override: GET",
        )),
    }
}

/// Decoded query parameters.
pub(crate) type Query = BTreeMap<String, String>;

/// A required query parameter (32171 MANDATORY DATA MISSING when absent).
pub(crate) fn required<'a>(q: &'a Query, name: &str) -> Result<&'a str, AmadeusError> {
    q.get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            AmadeusError::parameter(
                32171,
                "MANDATORY DATA MISSING",
                name,
                format!("{name} is required"),
            )
        })
}

/// A `YYYY-MM-DD` date (477 INVALID FORMAT otherwise).
pub(crate) fn date(name: &str, value: &str) -> Result<NaiveDate, AmadeusError> {
    NaiveDate::parse_from_str(value, "%Y-%m-%d").map_err(|_| {
        AmadeusError::parameter(
            477,
            "INVALID FORMAT",
            name,
            format!("{name} must be YYYY-MM-DD, got '{value}'"),
        )
    })
}

/// An integer in `lo..=hi` (477 INVALID FORMAT otherwise); `default` when absent.
pub(crate) fn int_in(
    q: &Query,
    name: &str,
    lo: u64,
    hi: u64,
    default: u64,
) -> Result<u64, AmadeusError> {
    match q.get(name) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| {
                AmadeusError::parameter(
                    477,
                    "INVALID FORMAT",
                    name,
                    format!("{name} must be an integer from {lo} to {hi}, got '{v}'"),
                )
            }),
    }
}

/// Upper-case alphanumeric id of `len` characters derived from `n`.
pub(crate) fn upper_id(n: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut x = super::data::mix(n);
    let mut y = super::data::mix(x ^ 0x5bd1_e995);
    (0..len)
        .map(|i| {
            let src = if i < 10 { &mut x } else { &mut y };
            let c = ALPHABET[(*src % 36) as usize] as char;
            *src /= 36;
            c
        })
        .collect()
}
