//! Amadeus's documented error semantics, mapped onto [`ErrorKind`].
//!
//! From Amadeus's OpenAPI specifications and the common errors of its developer guides:
//! - Bodies are `{"errors":[{status, code, title, detail, source}]}`; `status` and `code` are
//!   integers in the specs and strings in some answers: both are read. The token endpoint has
//!   its own shape (`error`, `error_description`, `code`, `title`).
//! - 400 and 404 are about the request: `Rejected`, with `detail`/`title` and the offending
//!   `source.parameter` as a model-readable message (404 38196 can also mean a wrong path, but
//!   the same shape answers unknown offers, so it is treated as the request's fault).
//! - 401: codes 38190 (invalid token), 38192 (expired) and 38193 (revoked) are cured by a new
//!   token ([`refreshable`]); the client refreshes and retries once, and a 401 after that, or
//!   any other 401 code (38191 bad header, 39683/39686 key revoked or invalid, 20 restricted),
//!   is `Misconfigured`. 403 (38197) is `Misconfigured` too: an operator must act.
//! - 429 38194 is a network rate limit: transient, `RateLimited` with `Retry-After` when sent
//!   (Amadeus documents none). 429 38195 is the **monthly quota exhausted**: no retry helps
//!   before the quota resets, so it asks for a wait until the start of the next month (UTC; at
//!   least an hour), which opens the tool × provider breaker for that long, and the detail
//!   says "quota exhausted".
//! - 5xx: `Server`.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::wire::{ErrorBody, Issue};
use crate::providers::error::{ErrorKind, UpstreamError};
use crate::providers::http::retry_after;

/// The monthly quota is used up.
pub(crate) const QUOTA_EXHAUSTED: i64 = 38195;
/// 401 codes a new access token cures: invalid, expired, revoked token.
const REFRESHABLE: [i64; 3] = [38190, 38192, 38193];
/// The shortest wait asked for after 38195, whatever the calendar says.
const MIN_QUOTA_WAIT: Duration = Duration::from_secs(3600);

/// Parses an error body, tolerating anything (a proxy's HTML page parses as "no issues").
pub(crate) fn parse(body: &[u8]) -> ErrorBody {
    serde_json::from_slice(body).unwrap_or_default()
}

/// Every application code in the body (issues' codes and the token endpoint's top-level code).
pub(crate) fn codes(body: &ErrorBody) -> Vec<i64> {
    body.errors
        .iter()
        .filter_map(|i| i.code.as_ref().and_then(|c| c.value()))
        .chain(body.code.as_ref().and_then(|c| c.value()))
        .collect()
}

/// Whether a 401 body says the access token (not the API key or the request) is the problem.
/// A 401 without any code is treated as refreshable: one new token is cheap, and a second 401
/// is then reported as misconfiguration.
pub(crate) fn refreshable(body: &[u8]) -> bool {
    let codes = codes(&parse(body));
    codes.is_empty() || codes.iter().any(|c| REFRESHABLE.contains(c))
}

/// The wait after a 38195: until the first day of next month, 00:00 UTC, at least an hour.
/// Amadeus documents the quota as monthly but not the reset instant; month start in UTC is
/// the assumption, and the breaker's half-open probe finds out if it came earlier.
pub(crate) fn quota_wait(now: SystemTime) -> Duration {
    let now: DateTime<Utc> = now.into();
    let (y, m) = if now.month() == 12 {
        (now.year() + 1, 1)
    } else {
        (now.year(), now.month() + 1)
    };
    let next = NaiveDate::from_ymd_opt(y, m, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc());
    next.and_then(|t| (t - now).to_std().ok())
        .unwrap_or(MIN_QUOTA_WAIT)
        .max(MIN_QUOTA_WAIT)
}

/// One issue as a model can read it: "title: detail (parameter departureDate)".
fn describe(issue: &Issue) -> String {
    let title = issue.title.as_deref().unwrap_or("").trim();
    let detail = issue.detail.as_deref().unwrap_or("").trim();
    let mut text = match (title.is_empty(), detail.is_empty()) {
        (false, false) => format!("{title}: {detail}"),
        (false, true) => title.to_string(),
        (true, false) => detail.to_string(),
        (true, true) => "request refused".to_string(),
    };
    if let Some(src) = &issue.source {
        if let Some(p) = src.parameter.as_deref() {
            text.push_str(&format!(" (parameter {p}"));
            if let Some(ex) = &src.example {
                text.push_str(&format!(", e.g. {ex}"));
            }
            text.push(')');
        } else if let Some(p) = src.pointer.as_deref() {
            text.push_str(&format!(" (at {p})"));
        }
    }
    text
}

/// The body's messages, for models and logs.
fn messages(body: &ErrorBody) -> Vec<String> {
    let mut out: Vec<String> = body.errors.iter().map(describe).collect();
    if out.is_empty()
        && let Some(text) = body.error_description.as_ref().or(body.title.as_ref())
    {
        match &body.error {
            Some(e) => out.push(format!("{e}: {text}")),
            None => out.push(text.clone()),
        }
    }
    out
}

/// Classifies a non-success Amadeus response (API or token endpoint); `what` names the call
/// for the log detail (`"flight offers search"`, `"token endpoint"`).
pub(crate) fn classify(
    what: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> UpstreamError {
    let parsed = parse(body);
    let codes = codes(&parsed);
    let messages = messages(&parsed);
    let text = if messages.is_empty() {
        String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
    } else {
        messages.join("; ")
    };
    let code_list = codes
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut detail = format!("{what}: HTTP {} [{code_list}]: {text}", status.as_u16());
    let kind = match status.as_u16() {
        429 if codes.contains(&QUOTA_EXHAUSTED) => {
            let wait = quota_wait(now);
            detail = format!(
                "{}: Amadeus monthly quota used up (429 code 38195); no retry helps before it resets, so the breaker stays open for {} ({detail})",
                crate::providers::error::QUOTA_EXHAUSTED,
                humantime::format_duration(Duration::from_secs(wait.as_secs()))
            );
            ErrorKind::RateLimited {
                retry_after: Some(wait),
            }
        }
        429 => ErrorKind::RateLimited {
            retry_after: retry_after(headers, now),
        },
        400 | 404 | 422 => ErrorKind::Rejected {
            message: if messages.is_empty() {
                "the provider refused the request".into()
            } else {
                messages.join("; ")
            },
        },
        401 | 403 | 405 | 406 | 415 => ErrorKind::Misconfigured {
            status: status.as_u16(),
        },
        s => ErrorKind::Server {
            status: s,
            retry_after: if s >= 500 {
                retry_after(headers, now)
            } else {
                None
            },
        },
    };
    UpstreamError::new(kind, detail)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn now() -> SystemTime {
        // 2027-01-15T08:00:00Z
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    fn status(s: u16) -> StatusCode {
        StatusCode::from_u16(s).unwrap_or(StatusCode::IM_A_TEAPOT)
    }

    fn kind(s: u16, body: &str) -> ErrorKind {
        classify("test", status(s), &HeaderMap::new(), body.as_bytes(), now()).kind
    }

    #[test]
    fn the_classification_table() {
        let rejected = |m: &str| ErrorKind::Rejected { message: m.into() };
        let table: Vec<(u16, &str, ErrorKind)> = vec![
            (
                400,
                r#"{"errors":[{"status":400,"code":477,"title":"INVALID FORMAT","detail":"departureDate must be YYYY-MM-DD","source":{"parameter":"departureDate","example":"2026-11-02"}}]}"#,
                rejected(
                    "INVALID FORMAT: departureDate must be YYYY-MM-DD (parameter departureDate, e.g. 2026-11-02)",
                ),
            ),
            (
                400,
                r#"{"errors":[{"status":"400","code":"4926","title":"INVALID DATA RECEIVED","detail":"flight offer does not match","source":{"pointer":"/data/flightOffers[0]"}}]}"#,
                rejected(
                    "INVALID DATA RECEIVED: flight offer does not match (at /data/flightOffers[0])",
                ),
            ),
            (
                404,
                r#"{"errors":[{"status":404,"code":38196,"title":"Resource not found"}]}"#,
                rejected("Resource not found"),
            ),
            (
                401,
                r#"{"errors":[{"code":"38191","title":"Invalid HTTP header","detail":"Missing or invalid format for mandatory Authorization header","status":"401"}]}"#,
                ErrorKind::Misconfigured { status: 401 },
            ),
            (
                401,
                r#"{"error":"invalid_client","error_description":"Client credentials are invalid","code":38187,"title":"Invalid parameters"}"#,
                ErrorKind::Misconfigured { status: 401 },
            ),
            (
                403,
                r#"{"errors":[{"status":403,"code":38197,"title":"Forbidden"}]}"#,
                ErrorKind::Misconfigured { status: 403 },
            ),
            (
                429,
                r#"{"errors":[{"code":38194,"title":"Too many requests","detail":"The network rate limit is exceeded, please try again later","status":429}]}"#,
                ErrorKind::RateLimited { retry_after: None },
            ),
            (
                429,
                r#"{"errors":[{"code":"38195","title":"Quota limit exceeded","status":"429"}]}"#,
                ErrorKind::RateLimited {
                    retry_after: Some(quota_wait(now())),
                },
            ),
            (
                500,
                r#"{"errors":[{"status":500,"code":141,"title":"SYSTEM ERROR HAS OCCURRED","detail":"Primitive Timeout"}]}"#,
                ErrorKind::Server {
                    status: 500,
                    retry_after: None,
                },
            ),
            (
                503,
                "<html>bad gateway</html>",
                ErrorKind::Server {
                    status: 503,
                    retry_after: None,
                },
            ),
        ];
        for (s, body, expected) in table {
            assert_eq!(kind(s, body), expected, "{s} {body}");
        }
    }

    #[test]
    fn quota_exhaustion_waits_until_next_month_and_says_so() {
        let e = classify(
            "flight offers search",
            StatusCode::TOO_MANY_REQUESTS,
            &HeaderMap::new(),
            br#"{"errors":[{"code":38195,"title":"Quota limit exceeded","status":429}]}"#,
            now(),
        );
        // 2027-01-15T08:00Z → 2027-02-01T00:00Z.
        let expected = Duration::from_secs((16 * 24 + 16) * 3600);
        assert_eq!(
            e.kind,
            ErrorKind::RateLimited {
                retry_after: Some(expected)
            }
        );
        assert!(e.detail.starts_with("quota exhausted"), "{}", e.detail);
        // Late on the last day of a month the wait is at least an hour.
        let late = DateTime::parse_from_rfc3339("2026-12-31T23:30:00Z")
            .map(SystemTime::from)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        assert_eq!(quota_wait(late), MIN_QUOTA_WAIT);
    }

    #[test]
    fn rate_limits_keep_a_retry_after_when_sent() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("3"));
        let e = classify(
            "test",
            StatusCode::TOO_MANY_REQUESTS,
            &headers,
            br#"{"errors":[{"code":38194,"status":429}]}"#,
            now(),
        );
        assert_eq!(
            e.kind,
            ErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(3))
            }
        );
    }

    #[test]
    fn token_errors_decide_whether_a_refresh_helps() {
        assert!(refreshable(
            br#"{"errors":[{"code":38190,"title":"Invalid access token","status":401}]}"#
        ));
        assert!(refreshable(
            br#"{"errors":[{"code":"38192","title":"Access token expired","status":"401"}]}"#
        ));
        assert!(refreshable(b""));
        assert!(!refreshable(
            br#"{"errors":[{"code":"38191","title":"Invalid HTTP header","status":"401"}]}"#
        ));
        assert!(!refreshable(
            br#"{"errors":[{"status":401,"code":20,"title":"RESTRICTED","detail":"Query unauthorized"}]}"#
        ));
    }
}
