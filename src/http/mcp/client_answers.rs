//! Two HTTP answers on `/mcp` reshaped so that MCP clients show what happened instead of a
//! stand-in:
//!
//! - **401, 403, 413, 429 and 503 carry a JSON-RPC error** whose message is faregate's own text
//!   (which key to send, in which header; which Host or Origin is refused; how large a body may
//!   be; when to retry), and so do rmcp's own 400, 404, 405, 406 and 415, reworded where rmcp's
//!   text names no remedy ([`explained`]: a missing `Mcp-Session-Id`, an unknown session, an
//!   unsupported revision, which now lists the served ones), with the HTTP status and headers
//!   (`Retry-After`, `Allow`) unchanged
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
//! These answers are shaped by `/mcp`'s one edge layer, [`guard`], which also makes the edge's
//! checks for it: the declared body size (413), the client key (401), the request timeout
//! (503), a `GET`'s place among the client's event streams (429, or 503 when streams hold their
//! share of the connections; `edge::open_stream`), and the client's limits (429), admitting a
//! request by its body (only a `tools/call` counts as a call). A `GET`'s stream also ends when
//! graceful shutdown starts (`edge::ending_at`), while the calls in flight run on. One layer,
//! not one per step: axum gives each `from_fn` layer, on every request, a boxed future and a
//! boxed copy of the layers under it, and a held call keeps all of them (memory per held call,
//! BENCHMARKS.md). It sees the edge's refusals as well as rmcp's own 403; every other answer
//! passes untouched.

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use rmcp::model::ProtocolVersion;
use tokio_util::sync::CancellationToken;

use super::revisions::REVISIONS;
use crate::http::edge::{self, Caller, Gate, StreamSlot};

/// Middleware around the whole `/mcp` route: the edge's checks, then the answer reshaped.
///
/// A plain function: the size and key checks run before its future exists, which then keeps
/// the gate, the timer and the rest of the request.
pub(crate) fn guard(
    State(gate): State<Arc<Gate>>,
    mut request: Request,
    next: Next,
) -> impl Future<Output = Response> {
    let ending_session = request.method() == Method::DELETE;
    let checked =
        edge::check_size_and_key(&gate, &mut request).and_then(|()| stream_slot(&gate, &request));
    async move {
        let res = match checked {
            Err(refused) => *refused,
            Ok(slot) => {
                let limit = gate.bounds.timeout;
                let run = async {
                    match &gate.limits {
                        Some((limits, telemetry)) => {
                            edge::limit(limits, telemetry, request, next).await
                        }
                        None => next.run(request).await,
                    }
                };
                let res = match tokio::time::timeout(limit, run).await {
                    Ok(res) => res,
                    Err(_) => edge::request_timed_out(limit),
                };
                match slot {
                    // An event stream ends when shutdown starts, as `/v1/events` does: rmcp's
                    // own token is cancelled only after the drain, so that the calls in flight
                    // finish and are answered.
                    Some((slot, shutdown)) => edge::ending_at(slot.around(res), shutdown),
                    None => res,
                }
            }
        };
        if ending_session && res.status() == StatusCode::ACCEPTED {
            let mut res = res;
            *res.status_mut() = StatusCode::OK;
            return res;
        }
        edge::as_json_rpc(res, explained).await
    }
}

/// A `GET` is an event stream (a session's, or its resumption with `Last-Event-ID`): its slot
/// among the client's streams, held by the answer until the stream ends, and the token that
/// ends it when graceful shutdown starts (`Telemetry::close_streams`); or the refusal (429
/// over the client's `[limits] client_max_streams`, 503 when streams hold their share of the
/// connections). Any other method opens no stream here: a `POST` answered as a stream ends with
/// its call, which the client's call limits count, and which shutdown lets finish.
fn stream_slot(
    gate: &Gate,
    request: &Request,
) -> Result<Option<(StreamSlot, CancellationToken)>, Box<Response>> {
    match &gate.streams {
        Some((streams, telemetry)) if request.method() == Method::GET => {
            let caller = request.extensions().get::<Caller>();
            let client = edge::client_id(caller, request.extensions());
            let slot = edge::open_stream(streams, telemetry, client)?;
            Ok(Some((slot, telemetry.streams_token())))
        }
        _ => Ok(None),
    }
}

/// rmcp's refusals in words that say what to send instead; any other text as it is.
fn explained(message: String) -> String {
    match message.as_str() {
        "Bad Request: Session ID is required" => "Bad Request: this request needs the Mcp-Session-Id header: send the session id that the answer to initialize carried in its Mcp-Session-Id header, or send initialize first to open a session".into(),
        "Not Found: Session not found" => "Not Found: no session with this Mcp-Session-Id is open here (it was closed, the gateway restarted, or another client opened it); send initialize without Mcp-Session-Id to open a new one".into(),
        _ => match message.strip_prefix("Bad Request: Unsupported MCP-Protocol-Version: ") {
            Some(version) => {
                let served: Vec<&str> = REVISIONS.iter().map(ProtocolVersion::as_str).collect();
                format!(
                    "Bad Request: MCP-Protocol-Version {version} is not served here; send one of {} (the revision agreed in initialize, or 2026-07-28 without one)",
                    served.join(", ")
                )
            }
            None => message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_refusals_say_what_to_send_instead() {
        let said = |m: &str| explained(m.to_string());
        assert!(
            said("Bad Request: Session ID is required").contains("needs the Mcp-Session-Id header")
        );
        assert!(
            said("Not Found: Session not found").contains("send initialize without Mcp-Session-Id")
        );
        assert_eq!(
            said("Bad Request: Unsupported MCP-Protocol-Version: 1999-01-01"),
            "Bad Request: MCP-Protocol-Version 1999-01-01 is not served here; send one of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28 (the revision agreed in initialize, or 2026-07-28 without one)"
        );
        assert_eq!(
            said("Forbidden: Host header is not allowed"),
            "Forbidden: Host header is not allowed"
        );
    }
}
