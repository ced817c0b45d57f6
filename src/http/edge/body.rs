//! Request bodies at the edge: what HTTP says about a body before any protocol reads it.
//! Every way it can be wrong becomes a 4xx that says what to fix.
//!
//! - A `Content-Length` over the body limit is refused from the header ([`declared_too_large`]),
//!   before a byte of the body is read: waiting for a body the gateway will refuse anyway
//!   would hold the connection until the request timeout.
//! - The body limit is enforced while reading too (a chunked body declares no length); 413
//!   names the limit.
//! - Content types that are plainly not JSON (XML, multipart forms, HTML) get 415. With client
//!   keys on, a missing type, `text/plain` and `application/x-www-form-urlencoded` are read as
//!   JSON: that is what `curl -d` sends, and the body says what it is.
//! - With client keys off ([`Browsers::Refused`]), only `application/json` (or a `+json` type)
//!   is read, and a request a browser marks `Sec-Fetch-Site: cross-site` is refused (403).
//!   Without keys nothing else stops a web page the user happens to open from making the
//!   browser POST a tool call to a gateway on the user's machine: a form or `fetch` with a
//!   missing, `text/plain`, form or multipart body is a "simple" request a browser sends to
//!   any site without asking it first, while `application/json` makes it ask (a CORS
//!   preflight), which the gateway never grants.
//!
//! The bytes are then read as strict JSON by [`crate::agents::body`], whose refusals are 400s.

use std::borrow::Cow;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::error::ApiError;

/// 413 for a request whose `Content-Length` is over `limit` bytes, decided from the header
/// alone (the first check [`super::server::bound_request`] makes).
pub(crate) fn declared_too_large(headers: &HeaderMap, limit: usize) -> Option<Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())?;
    (declared > limit as u64).then(|| ApiError::too_large(limit).into_response())
}

/// Whether a call route must refuse what a browser can send from another site without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Browsers {
    /// Client keys are on: a browser cannot add the key without a preflight, so any JSON-like
    /// body is read.
    KeyProtected,
    /// Client keys are off: only `application/json` bodies, never a cross-site request.
    Refused,
}

/// The body's bytes, or the 403/413/415/400 that says what is wrong with it as HTTP.
pub(crate) fn read_body(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    limit: usize,
    browsers: Browsers,
) -> Result<Bytes, ApiError> {
    // With keys off only JSON passes, which the general content-type check would pass too: one
    // check per request, not both.
    match browsers {
        Browsers::Refused => refuse_browser_requests(headers)?,
        Browsers::KeyProtected => check_content_type(headers)?,
    }
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("could not read the request body: {e}"))
        }
    })
}

/// The body read as one strict JSON value ([`read_body`], then [`crate::agents::body`]). A
/// form-encoded body that is not JSON is told why: `curl -d 'origin=JFK'` labels its body a
/// form, and "malformed JSON" alone would not say that a form is not what the gateway reads.
pub(crate) fn read_json_body(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    limit: usize,
    browsers: Browsers,
) -> Result<Value, ApiError> {
    let bytes = read_body(headers, body, limit, browsers)?;
    crate::agents::body::read_json(&bytes).map_err(|e| {
        // Asked only of a body that is not JSON (a compressed one never is), so a call pays
        // nothing for it.
        if let Some(coding) = content_coding(headers) {
            ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "the body is sent with `Content-Encoding: {coding}`, which the gateway does not decode; send it uncompressed, as plain JSON"
                ),
            )
        } else if essence(headers) == "application/x-www-form-urlencoded" {
            ApiError::bad_request(format!(
                "{e}; the body is labelled a form (application/x-www-form-urlencoded, as `curl -d` labels it), but the gateway reads JSON only: send one JSON object, such as {{\"arguments\": {{…}}}}, with `Content-Type: application/json`"
            ))
        } else {
            e.into()
        }
    })
}

/// The request's `Content-Encoding`, unless absent or `identity`.
fn content_coding(headers: &HeaderMap) -> Option<String> {
    let coding = headers.get(header::CONTENT_ENCODING)?.to_str().ok()?.trim();
    (!coding.is_empty() && !coding.eq_ignore_ascii_case("identity")).then(|| coding.to_string())
}

/// With client keys off: 403 for a request a browser marks cross-site, 415 for any body not
/// declared as JSON (what a page on another site could make a browser send unasked).
fn refuse_browser_requests(headers: &HeaderMap) -> Result<(), ApiError> {
    refuse_cross_site(headers)?;
    let essence = essence(headers);
    if essence == "application/json" || essence.ends_with("+json") {
        return Ok(());
    }
    let declared = if essence.is_empty() {
        "the body has no Content-Type header".to_string()
    } else {
        format!("the body is declared as {essence}")
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "{declared}; send it with `Content-Type: application/json` (while client keys are off, nothing else is read, so that a web page cannot make a browser call tools)"
        ),
    ))
}

/// 403 for a request a browser marks cross-site: with client keys off, what a web page on
/// another site makes the user's browser send (also to a route that reads no body, such as a
/// reload).
pub(crate) fn refuse_cross_site(headers: &HeaderMap) -> Result<(), ApiError> {
    let cross_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("cross-site"));
    if cross_site {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "cross-site requests are refused while client keys are off: a web page must not call tools through the user's browser. Call from a program, or set client keys on the gateway",
        ));
    }
    Ok(())
}

/// The media type of the body, lower case, without parameters; empty when none is declared.
/// Borrowed from the header unless it has upper-case letters (no allocation on every call).
fn essence(headers: &HeaderMap) -> Cow<'_, str> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    if declared.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(declared.to_ascii_lowercase())
    } else {
        Cow::Borrowed(declared)
    }
}

/// 415 for content types that are plainly not JSON.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let essence = essence(headers);
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
    use axum::http::HeaderValue;

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

    #[test]
    fn a_compressed_body_is_told_to_come_uncompressed() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        let gzip_magic = Bytes::from_static(b"\x1f\x8b\x08\x00\x00\x00\x00\x00");
        let refused = read_json_body(&h, Ok(gzip_magic), 1024, Browsers::KeyProtected);
        let said = format!("{:?}", refused.err());
        assert!(said.contains("status: 415"), "{said}");
        assert!(
            said.contains("sent with `Content-Encoding: gzip`")
                && said.contains("send it uncompressed"),
            "{said}"
        );
        // A body that is JSON whatever its label is read.
        let plain = read_json_body(
            &h,
            Ok(Bytes::from_static(b"{}")),
            1024,
            Browsers::KeyProtected,
        );
        assert!(plain.is_ok());
    }

    #[test]
    fn a_form_that_is_not_json_is_told_the_gateway_reads_json() {
        let read = |ct: &'static str, body: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            read_json_body(
                &h,
                Ok(Bytes::from_static(body.as_bytes())),
                1024,
                Browsers::KeyProtected,
            )
        };
        let form = read(
            "application/x-www-form-urlencoded",
            "origin=JFK&destination=LHR",
        );
        let said = format!("{:?}", form.err());
        assert!(
            said.contains("malformed JSON")
                && said.contains("the body is labelled a form (application/x-www-form-urlencoded, as `curl -d` labels it), but the gateway reads JSON only"),
            "{said}"
        );
        let plain = format!("{:?}", read("text/plain", "origin=JFK").err());
        assert!(
            plain.contains("malformed JSON") && !plain.contains("labelled a form"),
            "{plain}"
        );
        assert!(
            read("application/x-www-form-urlencoded", r#"{"arguments": {}}"#).is_ok(),
            "curl -d with a JSON body is read"
        );
    }

    #[test]
    fn with_keys_off_only_json_and_never_cross_site() {
        let refused = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (name, value) in pairs {
                h.insert(*name, value.parse().unwrap_or_else(|_| panic!("{value}")));
            }
            refuse_browser_requests(&h)
                .err()
                .map(|e| e.into_response().status().as_u16())
        };
        assert_eq!(refused(&[("content-type", "application/json")]), None);
        assert_eq!(
            refused(&[("content-type", "Application/JSON; charset=utf-8")]),
            None
        );
        assert_eq!(
            refused(&[("content-type", "application/vnd.api+json")]),
            None
        );
        for simple in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            assert_eq!(refused(&[("content-type", simple)]), Some(415), "{simple}");
        }
        assert_eq!(refused(&[]), Some(415), "no content type");
        let cross = [
            ("content-type", "application/json"),
            ("sec-fetch-site", "cross-site"),
        ];
        assert_eq!(refused(&cross), Some(403));
        let same = [
            ("content-type", "application/json"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert_eq!(refused(&same), None);
    }
}
