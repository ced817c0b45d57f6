//! `POST /v1/openai/tool_calls` and `POST /v1/anthropic/tool_use`: the vendors' tool calls in,
//! their tool results out. The shapes are [`crate::agents::openai`] and
//! [`crate::agents::anthropic`]; here a body is read, its calls run concurrently, and the
//! results are rendered in the order the calls came. A call that cannot run (unknown tool,
//! malformed arguments) is that call's error text, never a failed batch.

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde_json::Value;

use crate::agents::{anthropic, body::read_json, openai};
use crate::http::calls::run_agent_calls;
use crate::http::edge::{ApiError, Caller, read_body};
use crate::http::state::AppState;

/// `POST /v1/openai/tool_calls`.
pub(crate) async fn openai_tool_calls(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let bytes = read_body(&headers, body, state.max_body_bytes, state.browsers())?;
    let read = openai::parse(read_json(&bytes)?)?;
    let results = run_agent_calls(&state, &caller, read.calls, read.options).await;
    Ok(Json(openai::render(read.api, &results)))
}

/// `POST /v1/anthropic/tool_use`.
pub(crate) async fn anthropic_tool_use(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let bytes = read_body(&headers, body, state.max_body_bytes, state.browsers())?;
    let read = anthropic::parse(read_json(&bytes)?)?;
    let results = run_agent_calls(&state, &caller, read.calls, read.options).await;
    Ok(Json(anthropic::render(&results)))
}
