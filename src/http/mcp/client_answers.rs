//! Two HTTP answers on `/mcp` reshaped so that MCP clients show what happened instead of a
//! stand-in:
//!
//! - **401 and 403 carry a JSON-RPC error** whose message is faregate's own text (which key to
//!   send, in which header; which Host or Origin is refused), with the HTTP status unchanged.
//!   The official Python SDK (and fastmcp, pydantic-ai, langchain, openai-agents and LiteLLM on
//!   top of it) surfaces the body of a non-2xx answer only when it is a JSON-RPC error; any
//!   other body becomes "Server returned an error response", and the user never learns that a
//!   key is missing. The refusal is written before the body is read (authentication comes
//!   first so that nobody unauthenticated can make the gateway read a large body), so the
//!   request's id is not known and the error's `id` is `null`, as JSON-RPC 2.0 asks; the SDK
//!   pairs it with the request it sent.
//! - **An ended session is 200, not 202.** rmcp answers `DELETE /mcp` with 202 Accepted; the
//!   Python SDK expects 200 or 204 and logs "Session termination failed: 202" on every close
//!   (on every tool call for clients that open a session per call). The session is closed when
//!   the answer is written, so 200 is the truth.
//!
//! This layer is the outermost of the `/mcp` route, outside client-key authentication, so it
//! sees the edge's 401 as well as rmcp's own 403; every other answer passes untouched.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Value, json};

/// The JSON-RPC error code of a 401: no valid key. The MCP specification defines none for
/// authentication, and 2026-07-28 asks applications to stay outside -32768..=-32000 (reserved
/// for JSON-RPC and the specification); the HTTP status is in the digits.
const UNAUTHORIZED: i64 = -31401;

/// The JSON-RPC error code of a 403: a Host or Origin that may not use `/mcp`.
const FORBIDDEN: i64 = -31403;

/// The most of a refusal body that is read to take its message over; refusals are a line.
const REFUSAL_MAX: usize = 16 * 1024;

/// Middleware around the whole `/mcp` route.
pub(crate) async fn client_answers(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let mut res = next.run(request).await;
    if method == Method::DELETE && res.status() == StatusCode::ACCEPTED {
        *res.status_mut() = StatusCode::OK;
        return res;
    }
    let code = match res.status() {
        StatusCode::UNAUTHORIZED => UNAUTHORIZED,
        StatusCode::FORBIDDEN => FORBIDDEN,
        _ => return res,
    };
    let (mut parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, REFUSAL_MAX)
        .await
        .unwrap_or_default();
    let message = refusal_message(&bytes).unwrap_or_else(|| {
        parts
            .status
            .canonical_reason()
            .unwrap_or("refused")
            .to_string()
    });
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body.to_string()))
}

/// The `message` of the edge's JSON refusal, or the text of a plain one.
fn refusal_message(body: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => v.get("message").and_then(Value::as_str).map(str::to_string),
        Err(_) => {
            let text = String::from_utf8_lossy(body).trim().to_string();
            (!text.is_empty()).then_some(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edges_message_is_taken_over_from_json_or_plain_text() {
        assert_eq!(
            refusal_message(
                br#"{"message": "missing credentials; send `Authorization: Bearer <client key>`"}"#
            )
            .as_deref(),
            Some("missing credentials; send `Authorization: Bearer <client key>`")
        );
        assert_eq!(
            refusal_message(b"Forbidden: Host header is not allowed\n").as_deref(),
            Some("Forbidden: Host header is not allowed")
        );
        assert_eq!(refusal_message(b""), None);
        assert_eq!(refusal_message(br#"{"error": 1}"#), None);
    }
}
