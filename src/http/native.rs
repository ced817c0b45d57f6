//! `POST /v1/tools/{tool}/call`: the native call endpoint and its envelope.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use crate::call::{CallError, CallRequest, Status};
use crate::jobs::SubmitError;
use crate::tools::CallMode;

/// The request body. Only `arguments` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallBody {
    arguments: Value,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    deadline_ms: Option<u64>,
    #[serde(default)]
    callback_url: Option<String>,
}

/// Parses a JSON body, turning every way it can be wrong into a 400/413 that says what to fix.
pub(crate) fn json_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than the {limit}-byte limit"),
            )
        } else {
            ApiError::bad_request(format!("could not read the request body: {e}"))
        }
    })?;
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "the request body is empty; send a JSON object such as {\"arguments\": {…}}",
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        let what = if e.is_syntax() || e.is_eof() {
            "malformed JSON"
        } else {
            "unexpected JSON"
        };
        ApiError::bad_request(format!("{what}: {e}"))
    })
}

/// The handler.
pub(crate) async fn call_tool(
    State(state): State<AppState>,
    Path(tool): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if state.gateway.tool(&tool).is_none() {
        return Err(unknown_tool(&state, &tool));
    }
    let body: CallBody = json_body(body, state.max_body_bytes)?;
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
        return submit_background(&state, tool, body).await;
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
    let request = CallRequest {
        tool,
        arguments: body.arguments,
        mode,
        call_id: body.call_id,
        idempotency_key: body.idempotency_key,
        deadline,
    };
    match state.gateway.call(request).await {
        Ok(envelope) => {
            let status = match envelope.status {
                Status::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
                Status::Queued => StatusCode::ACCEPTED,
                _ => StatusCode::OK,
            };
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

/// Accepts a background call: 202 with the job, or the existing job for a repeated
/// idempotency key; 422 for invalid arguments, as interactive calls get.
async fn submit_background(
    state: &AppState,
    tool: String,
    body: CallBody,
) -> Result<Response, ApiError> {
    let Some(jobs) = &state.jobs else {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "mode \"background\" needs a job store; this gateway runs without one",
        ));
    };
    let call_id = body.call_id.clone();
    match jobs
        .submit(
            &tool,
            body.arguments,
            body.call_id,
            body.idempotency_key,
            body.callback_url,
        )
        .await
    {
        Ok((job, created)) => {
            let content = if created {
                format!(
                    "Accepted for background processing as job {}. The result arrives through GET /v1/jobs/{} (or the callback), not in this turn.",
                    job.id, job.id
                )
            } else {
                format!(
                    "This idempotency key was already used for {tool}: job {} ({}) is that request.",
                    job.id,
                    job.status.as_str()
                )
            };
            let envelope = crate::call::Envelope {
                job_id: Some(job.id.clone()),
                ..crate::call::Envelope::text(
                    call_id.unwrap_or_else(|| job.id.clone()),
                    tool,
                    Status::Queued,
                    content,
                )
            };
            Ok((StatusCode::ACCEPTED, Json(envelope)).into_response())
        }
        Err(SubmitError::UnknownTool) => Err(unknown_tool(state, &tool)),
        Err(SubmitError::Invalid(text)) => {
            let envelope = crate::call::Envelope::text(
                call_id.unwrap_or_default(),
                tool,
                Status::InvalidArguments,
                text,
            );
            Ok((StatusCode::UNPROCESSABLE_ENTITY, Json(envelope)).into_response())
        }
        Err(SubmitError::Callback(text)) => Err(ApiError::bad_request(text)),
        Err(SubmitError::Store(e)) => {
            tracing::error!(error = %e, "could not store a background job");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the job store is not answering, so the call was not accepted; try again shortly",
            ))
        }
    }
}

pub(crate) fn unknown_tool(state: &AppState, name: &str) -> ApiError {
    let known: Vec<&'static str> = state.gateway.tools().iter().map(|t| t.spec.name).collect();
    ApiError::not_found(format!(
        "unknown tool \"{name}\"; known tools: {}",
        known.join(", ")
    ))
    .with("known_tools", json!(known))
}
