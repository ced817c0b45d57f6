//! `POST /v1/tools/{tool}/call`: the native call endpoint and its envelope.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::{ApiError, PathParam};
use super::json::json_body;
use crate::call::{CallError, CallInfo, CallRequest, Envelope, Status};
use crate::jobs::SubmitError;
use crate::texts::call as texts;
use crate::tools::CallMode;

/// The request body. Only `arguments` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallBody {
    pub(crate) arguments: Value,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    pub(crate) call_id: Option<String>,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    deadline_ms: Option<u64>,
    #[serde(default)]
    callback_url: Option<String>,
}

/// The handler.
pub(crate) async fn call_tool(
    State(state): State<AppState>,
    PathParam(tool): PathParam,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if state.gateway.tool(&tool).is_none() {
        return Err(unknown_tool(&state, &tool));
    }
    let body: CallBody = json_body(&headers, body, state.max_body_bytes)?;
    check_text("call_id", body.call_id.as_deref(), 256)?;
    check_text("idempotency_key", body.idempotency_key.as_deref(), 255)?;
    let request = match read_call(tool, body)? {
        NativeCall::Interactive(request) => request,
        NativeCall::Background(tool, body) => return submit_background(&state, tool, body).await,
    };
    match state.gateway.call(request).await {
        Ok(envelope) => {
            let status = match envelope.status {
                Status::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
                Status::Queued => StatusCode::ACCEPTED,
                _ => StatusCode::OK,
            };
            // The envelope's data was serialized once when the result was made; its bytes are
            // copied here, not serialized again.
            Ok((
                status,
                [(header::CONTENT_TYPE, "application/json")],
                envelope.to_json_bytes(),
            )
                .into_response())
        }
        Err(CallError::UnknownTool { name, .. }) => Err(unknown_tool(&state, &name)),
    }
}

/// A native call body after the checks every call gets, before any tool runs.
#[derive(Debug)]
pub(crate) enum NativeCall {
    /// Run it now.
    Interactive(CallRequest),
    /// Store it as a background job (the tool's name and the body).
    Background(String, CallBody),
}

/// Reads `mode`, `callback_url` and `deadline_ms` from a parsed body (the handler's path, and
/// [`super::fuzzing`]'s).
pub(crate) fn read_call(tool: String, body: CallBody) -> Result<NativeCall, ApiError> {
    let mode = match body.mode.as_deref() {
        None | Some("interactive") => CallMode::Interactive,
        Some("background") => CallMode::Background,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "mode \"{other}\" is not valid; use \"interactive\" or \"background\""
            )));
        }
    };
    if mode == CallMode::Background {
        return Ok(NativeCall::Background(tool, body));
    }
    if body.callback_url.is_some() {
        return Err(ApiError::bad_request(
            "callback_url is only used with mode \"background\"",
        ));
    }
    let deadline = match body.deadline_ms {
        Some(0) => {
            return Err(ApiError::bad_request(
                "deadline_ms must be at least 1 (milliseconds)",
            ));
        }
        Some(ms) => Some(Duration::from_millis(ms.min(600_000))),
        None => None,
    };
    Ok(NativeCall::Interactive(CallRequest {
        tool,
        arguments: body.arguments,
        call_id: body.call_id,
        idempotency_key: body.idempotency_key,
        deadline,
    }))
}

/// Accepts a background call: 202 with the job, or the existing job for a repeated
/// idempotency key; 422 for invalid arguments, as interactive calls get.
async fn submit_background(
    state: &AppState,
    tool: String,
    body: CallBody,
) -> Result<Response, ApiError> {
    let envelope = submit_job(
        state,
        tool,
        body.arguments,
        body.call_id,
        body.idempotency_key,
        body.callback_url,
    )
    .await?;
    let status = match envelope.status {
        Status::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::ACCEPTED,
    };
    Ok((status, Json(envelope)).into_response())
}

/// Stores a background call: a `queued` envelope with the job (or the existing job for a
/// repeated idempotency key), or an `invalid_arguments` envelope naming every bad field. Shared
/// by the native endpoint and the agent protocols.
pub(crate) async fn submit_job(
    state: &AppState,
    tool: String,
    arguments: Value,
    call_id: Option<String>,
    idempotency_key: Option<String>,
    callback_url: Option<String>,
) -> Result<Envelope, ApiError> {
    let Some(jobs) = &state.jobs else {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "mode \"background\" needs a job store; this gateway runs without one",
        ));
    };
    match jobs
        .submit(
            &tool,
            arguments,
            call_id.clone(),
            idempotency_key,
            callback_url,
        )
        .await
    {
        Ok((job, created)) => {
            let content = if created {
                texts::queued(&job.id)
            } else {
                texts::already_queued(&tool, &job.id, job.status.as_str())
            };
            let call_id = call_id.unwrap_or_else(|| job.id.clone());
            Ok(Envelope::queued(
                CallInfo::new(call_id, tool),
                content,
                job.id,
            ))
        }
        Err(SubmitError::UnknownTool) => Err(unknown_tool(state, &tool)),
        Err(SubmitError::Invalid(text)) => Ok(Envelope::invalid_arguments(
            CallInfo::new(call_id.unwrap_or_default(), tool),
            text,
        )),
        Err(SubmitError::Callback(text)) => {
            Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, text)
                .with("field", json!("callback_url")))
        }
        Err(SubmitError::Store(e)) => {
            tracing::error!(error = %e, "could not store a background job");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the job store is not answering, so the call was not accepted; try again shortly",
            ))
        }
    }
}

/// Ids are echoed into answers, logs and provider metadata: printable, bounded text only, so
/// a value cannot forge log lines or headers.
fn check_text(field: &str, value: Option<&str>, max: usize) -> Result<(), ApiError> {
    let Some(v) = value else { return Ok(()) };
    if v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "{field} must be 1 to {max} printable characters (no line breaks or control characters)"
        )));
    }
    Ok(())
}

pub(crate) fn unknown_tool(state: &AppState, name: &str) -> ApiError {
    let known: Vec<&'static str> = state.gateway.tools().iter().map(|t| t.spec.name).collect();
    ApiError::not_found(texts::unknown_tool(name, &known)).with("known_tools", json!(known))
}
