//! `POST /v1/openai/tool_calls` and `POST /v1/anthropic/tool_use`: the vendors' tool calls in,
//! their tool results out. The shapes are [`crate::agents::openai`] and
//! [`crate::agents::anthropic`]; here a body is read, its calls run concurrently, and the
//! results are rendered in the order the calls came. A call that cannot run (unknown tool,
//! malformed arguments) is that call's error text, never a failed batch.
//!
//! A call of a watch tool (`watch_create`, `watch_list`, `watch_delete`) is carried out by
//! [`super::watch_tools`]; every other call goes the way of every protocol's calls
//! ([`crate::http::calls::run_agent_call`]).

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde_json::Value;

use super::watch_tools;
use crate::agents::{AgentCall, AgentResult, CallOptions, anthropic, body::read_json, openai};
use crate::http::calls::run_agent_call;
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
    let results = run_calls(&state, &caller, read.calls, read.options).await;
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
    let results = run_calls(&state, &caller, read.calls, read.options).await;
    Ok(Json(anthropic::render(&results)))
}

/// Runs the calls of one request of `caller` concurrently; the results come back in their
/// order.
async fn run_calls(
    state: &AppState,
    caller: &Caller,
    calls: Vec<AgentCall>,
    options: CallOptions,
) -> Vec<AgentResult> {
    let runs = calls.into_iter().map(|call| async move {
        let watched = watch_tools::run(
            state,
            caller,
            &call.tool,
            &call.arguments,
            call.call_id.clone(),
        );
        match watched.await {
            Some(result) => result,
            None => run_agent_call(state, caller, call, options, None).await,
        }
    });
    futures::future::join_all(runs).await
}
