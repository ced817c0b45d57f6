//! Public for fuzzing (`fuzz/fuzz_targets/protocol_bodies.rs`): the body parsers of the three
//! call endpoints, run exactly as their handlers run them (the same `json_body`, the same
//! per-protocol `parse`), without a server or a gateway. Nothing else should call this.

use axum::body::Bytes;
use axum::response::IntoResponse;
use serde_json::Value;

use super::agent::{AgentCall, AgentOptions};
use super::json::json_body;
use super::native::{CallBody, NativeCall, read_call};
use super::{anthropic, openai};
use crate::tools::CallMode;

/// Which endpoint's body to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/tools/{tool}/call`.
    Native,
    /// `POST /v1/openai/tool_calls`.
    OpenAi,
    /// `POST /v1/anthropic/tool_use`.
    Anthropic,
}

/// One tool call read from a body.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// The tool's name as sent (not yet looked up).
    pub tool: String,
    /// The arguments, or the per-call error text a model would get instead.
    pub arguments: Result<Value, String>,
    /// The protocol's id for the call.
    pub call_id: Option<String>,
    /// Whether the body asked for background mode.
    pub background: bool,
}

/// A body the handler refuses: the HTTP status and the JSON error body it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The HTTP status (400 for every body a parser refuses).
    pub status: u16,
    /// The error body (`{"message": …}`), or `Value::Null` if it was not JSON.
    pub body: Value,
}

/// Parses `bytes` as the body of `endpoint` (`tool` is the native endpoint's path segment).
pub fn parse_body(
    endpoint: Endpoint,
    tool: &str,
    bytes: &[u8],
) -> Result<Vec<ParsedCall>, Refusal> {
    let body = Ok(Bytes::copy_from_slice(bytes));
    let limit = bytes.len().max(1);
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    let agent = |(calls, options): (Vec<AgentCall>, AgentOptions)| {
        calls
            .into_iter()
            .map(|c| ParsedCall {
                tool: c.tool,
                arguments: c.arguments,
                call_id: c.call_id,
                background: options.mode == CallMode::Background,
            })
            .collect()
    };
    let parsed = match endpoint {
        Endpoint::Native => json_body::<CallBody>(&headers, body, limit)
            .and_then(|b| read_call(tool.to_string(), b))
            .map(|call| match call {
                NativeCall::Interactive(r) => vec![ParsedCall {
                    tool: r.tool,
                    arguments: Ok(r.arguments),
                    call_id: r.call_id,
                    background: false,
                }],
                NativeCall::Background(tool, b) => vec![ParsedCall {
                    tool,
                    arguments: Ok(b.arguments),
                    call_id: b.call_id,
                    background: true,
                }],
            }),
        Endpoint::OpenAi => json_body(&headers, body, limit)
            .and_then(openai::parse)
            .map(|(_, calls, options)| agent((calls, options))),
        Endpoint::Anthropic => json_body(&headers, body, limit)
            .and_then(anthropic::parse)
            .map(agent),
    };
    parsed.map_err(|e| {
        let response = e.into_response();
        let status = response.status().as_u16();
        let bytes =
            futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
                .unwrap_or_default();
        Refusal {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    })
}
