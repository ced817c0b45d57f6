//! Two HTTP answers on `/mcp` reshaped so that MCP clients show what happened instead of a
//! stand-in:
//!
//! - **401, 403, 413, 429 and 503 carry a JSON-RPC error** whose message is faregate's own text
//!   (which key to send, in which header; which Host or Origin is refused; how large a body may
//!   be; when to retry), with the HTTP status and headers (`Retry-After`) unchanged
//!   ([`edge::as_json_rpc`], which the outermost edge layer also uses for its own 413 and 503).
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
//! This layer is the outermost of the `/mcp` route, outside client-key authentication and the
//! per-client limits, so it sees the edge's 401 and 429 as well as rmcp's own 403; every other
//! answer passes untouched.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::http::edge;

/// Middleware around the whole `/mcp` route.
pub(crate) async fn client_answers(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let mut res = next.run(request).await;
    if method == Method::DELETE && res.status() == StatusCode::ACCEPTED {
        *res.status_mut() = StatusCode::OK;
        return res;
    }
    edge::as_json_rpc(res).await
}
