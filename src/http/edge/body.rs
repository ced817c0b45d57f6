//! Request bodies at the edge: what HTTP says about a body before any protocol reads it.
//! Every way it can be wrong becomes a 4xx that says what to fix.
//!
//! - A `Content-Length` over the body limit is refused from the header ([`refuse_declared_too_large`]),
//!   before a byte of the body is read: waiting for a body the gateway will refuse anyway
//!   would hold the connection until the request timeout.
//! - The body limit is enforced while reading too (a chunked body declares no length); 413
//!   names the limit.
//! - Content types that are plainly not JSON (XML, multipart forms, HTML) get 415. A missing
//!   type, `text/plain` and `application/x-www-form-urlencoded` are read as JSON: that is what
//!   `curl -d` sends, and the body says what it is.
//!
//! The bytes are then read as strict JSON by [`crate::agents::body`], whose refusals are 400s.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Middleware: 413 at once for a request whose `Content-Length` is over `limit` bytes.
pub(crate) async fn refuse_declared_too_large(
    State(limit): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => ApiError::too_large(limit).into_response(),
        _ => next.run(request).await,
    }
}

/// The body's bytes, or the 413/415/400 that says what is wrong with it as HTTP.
pub(crate) fn read_body(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    limit: usize,
) -> Result<Bytes, ApiError> {
    check_content_type(headers)?;
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("could not read the request body: {e}"))
        }
    })
}

/// 415 for content types that are plainly not JSON.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json_like = essence == "application/json"
        || essence.ends_with("+json")
        || essence == "text/plain"
        || essence == "application/x-www-form-urlencoded"
        || essence.is_empty();
    if json_like {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the body is declared as {essence}; send JSON with `Content-Type: application/json`"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_that_are_not_json_get_415() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::CONTENT_TYPE,
                ct.parse().unwrap_or_else(|_| panic!("{ct}")),
            );
            check_content_type(&h).is_ok()
        };
        assert!(with("application/json; charset=utf-8"));
        assert!(with("application/vnd.api+json"));
        assert!(with("application/x-www-form-urlencoded"), "curl -d");
        assert!(!with("application/xml"));
        assert!(!with("multipart/form-data; boundary=x"));
    }
}
