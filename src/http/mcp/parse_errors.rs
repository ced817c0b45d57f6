//! A `/mcp` body that is not a JSON-RPC message is answered 400 with a JSON-RPC error, as MCP
//! asks (JSON-RPC 2.0: `-32700` "Parse error" for a body that is not JSON, `-32600` "Invalid
//! Request" for JSON that is not a message); rmcp itself answers both with a plain-text 415.
//!
//! rmcp checks the declared content type before it reads the body, so its 415 for a request
//! declared as `application/json` can only mean that the body did not deserialize; only then
//! is the body looked at again, to tell the two errors apart. A body over the limit is refused
//! before rmcp sees it, with the 413 every route gives.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{ErrorData, JsonRpcError};

use crate::http::edge::ApiError;

/// Middleware in front of rmcp's service; `max` is the body limit.
pub(super) async fn parse_errors(
    State(max): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !declares_json(&request) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max).await else {
        return ApiError::too_large(max).into_response();
    };
    let res = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if res.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return res;
    }
    let error = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(e) => ErrorData::parse_error(
            format!("Parse error: the body is not JSON ({e}); send one JSON-RPC 2.0 message"),
            None,
        ),
        Ok(_) => ErrorData::invalid_request(
            "Invalid Request: the body is JSON but not a JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\" and a method, or a result or error with an id)",
            None,
        ),
    };
    let body = serde_json::to_vec(&JsonRpcError::new(None, error)).unwrap_or_default();
    let mut res = (StatusCode::BAD_REQUEST, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Whether the request says its body is JSON (rmcp's own test of the content type).
fn declares_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}
