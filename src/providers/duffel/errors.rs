//! Duffel's documented error semantics, mapped onto [`ErrorKind`].
//!
//! Duffel's documented error codes, from its "Errors" page and changelog:
//! - 422 `validation_error` / `invalid_state_error` (e.g. `offer_no_longer_available`,
//!   `duplicate_booking`) and 404 `not_found` are about the request: the model can fix them.
//! - 400 `invalid_request_error` (headers), 401/403 (token) are ours to fix: an operator acts.
//! - 429 `rate_limit_exceeded`: wait until `ratelimit-reset` (an HTTP-date) or `Retry-After`.
//! - 5xx: the provider failed. 500/502 on order creation mean "do not retry"; 502
//!   `order_not_created` guarantees nothing was booked.

use std::time::SystemTime;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::wire::ErrorBody;
use crate::providers::error::{ALREADY_DONE, ErrorKind, UpstreamError, WriteEffect};
use crate::providers::http::{parse_delay, retry_after};

/// Classifies a non-success Duffel response.
pub(crate) fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> UpstreamError {
    let parsed: Option<ErrorBody> = crate::providers::wire_json::from_slice(body).ok();
    let request_id = parsed
        .as_ref()
        .and_then(|b| b.meta.as_ref())
        .and_then(|m| m.request_id.clone())
        .or_else(|| {
            headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        });
    let first = parsed.as_ref().and_then(|b| b.errors.first());
    let code = first.and_then(|e| e.code.clone()).unwrap_or_default();
    let kind_name = first.and_then(|e| e.kind.clone()).unwrap_or_default();
    let messages: Vec<String> = parsed
        .as_ref()
        .map(|b| {
            b.errors
                .iter()
                .map(|e| {
                    let text = e
                        .message
                        .clone()
                        .or_else(|| e.title.clone())
                        .unwrap_or_else(|| "request refused".into());
                    match e
                        .source
                        .as_ref()
                        .and_then(|s| s.get("field"))
                        .and_then(|f| f.as_str())
                    {
                        Some(field) if !text.contains(field) => format!("{field}: {text}"),
                        _ => text,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let detail = format!(
        "HTTP {} {kind_name}/{code}: {}",
        status.as_u16(),
        if messages.is_empty() {
            String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
        } else {
            messages.join("; ")
        }
    );

    let kind = match status.as_u16() {
        429 => ErrorKind::RateLimited {
            retry_after: retry_after(headers, now).or_else(|| {
                headers
                    .get("ratelimit-reset")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| parse_delay(v, now))
            }),
        },
        422 if code == "duplicate_booking" => ErrorKind::Rejected {
            message: format!(
                "{ALREADY_DONE}: Duffel found a booking with the same details (the same offer or the same idempotency key), so nothing new was booked"
            ),
        },
        404 | 422 => ErrorKind::Rejected {
            message: if messages.is_empty() {
                "the provider refused the request".into()
            } else {
                messages.join("; ")
            },
        },
        400 | 401 | 403 | 406 => ErrorKind::Misconfigured {
            status: status.as_u16(),
        },
        s if s >= 500 => ErrorKind::Server {
            status: s,
            retry_after: retry_after(headers, now),
        },
        s => ErrorKind::Server {
            status: s,
            retry_after: None,
        },
    };
    // Duffel documents `order_not_created` as the one answer that guarantees no order exists.
    let effect = if code == "order_not_created" {
        WriteEffect::NotDone
    } else {
        WriteEffect::Possible
    };
    UpstreamError {
        kind,
        detail,
        request_id,
        effect,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use reqwest::header::HeaderValue;

    use super::*;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    #[test]
    fn validation_errors_are_rejections_naming_the_field() {
        let body = br#"{"meta":{"status":422,"request_id":"FsJ"},"errors":[{"type":"validation_error","code":"validation_required","title":"Required field","message":"Field 'slices' can't be blank","source":{"pointer":"/slices","field":"slices"}}]}"#;
        let e = classify(
            StatusCode::UNPROCESSABLE_ENTITY,
            &HeaderMap::new(),
            body,
            now(),
        );
        assert_eq!(
            e.kind,
            ErrorKind::Rejected {
                message: "Field 'slices' can't be blank".into()
            }
        );
        assert_eq!(e.request_id.as_deref(), Some("FsJ"));
    }

    #[test]
    fn rate_limit_waits_until_the_reset_date() {
        let mut headers = HeaderMap::new();
        let reset = httpdate::fmt_http_date(now() + Duration::from_secs(42));
        headers.insert(
            "ratelimit-reset",
            HeaderValue::from_str(&reset).unwrap_or(HeaderValue::from_static("")),
        );
        let e = classify(StatusCode::TOO_MANY_REQUESTS, &headers, b"{}", now());
        assert_eq!(
            e.kind,
            ErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(42))
            }
        );
    }

    #[test]
    fn auth_and_header_errors_are_for_the_operator() {
        for status in [400u16, 401, 403] {
            let e = classify(
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                &HeaderMap::new(),
                br#"{"errors":[{"type":"authentication_error","code":"access_token_not_found","message":"bad token"}]}"#,
                now(),
            );
            assert_eq!(e.kind, ErrorKind::Misconfigured { status });
        }
    }

    #[test]
    fn order_not_created_says_nothing_was_booked_and_other_5xx_do_not() {
        let body = br#"{"errors":[{"type":"api_error","code":"order_not_created","title":"Order not created","message":"The order could not be created"}]}"#;
        let e = classify(StatusCode::BAD_GATEWAY, &HeaderMap::new(), body, now());
        assert_eq!(e.effect, WriteEffect::NotDone);
        assert!(!e.write_may_have_happened());
        let body =
            br#"{"errors":[{"type":"api_error","code":"internal_server_error","message":"oops"}]}"#;
        let e = classify(StatusCode::BAD_GATEWAY, &HeaderMap::new(), body, now());
        assert_eq!(e.effect, WriteEffect::Possible);
        assert!(e.write_may_have_happened());
    }

    #[test]
    fn server_errors_keep_their_retry_after() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("120"));
        let e = classify(StatusCode::SERVICE_UNAVAILABLE, &headers, b"oops", now());
        assert_eq!(
            e.kind,
            ErrorKind::Server {
                status: 503,
                retry_after: Some(Duration::from_secs(120))
            }
        );
        assert!(e.detail.contains("oops"));
    }
}
