//! `GET /v1/jobs/{job_id}` and `GET /v1/jobs?status=&tool=&limit=`: background jobs as callers
//! see them.
//!
//! A job is read by its id with any client key (the id is the capability: a UUIDv7 with 74
//! random bits, handed only to the caller that submitted it). Listing jobs shows every
//! client's arguments and results, so it is job administration and needs the admin key.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::edge::{ApiError, PathParam, Role};
use crate::http::state::AppState;
use crate::jobs::{Job, JobStatus, JobStore, Jobs, rfc3339};

/// The job as the API shows it.
pub(crate) fn describe(job: &Job) -> Value {
    json!({
        "job_id": job.id,
        "tool": job.tool,
        "client": job.client.as_str(),
        "status": job.status.as_str(),
        "attempts": job.attempts,
        "next_attempt_at": matches!(job.status, JobStatus::Queued | JobStatus::RetryScheduled)
            .then(|| rfc3339(job.next_attempt_at_ms)),
        "created_at": rfc3339(job.created_at_ms),
        "updated_at": rfc3339(job.updated_at_ms),
        "call_id": job.call_id,
        "idempotency_key": job.idempotency_key,
        "result": job.result,
        "last_error": job.last_error,
        "callback": job.callback_url.as_ref().map(|url| json!({
            "url": url,
            "state": job.callback.as_str(),
            "attempts": job.callback_attempts,
        })),
    })
}

fn jobs(state: &AppState) -> Result<&Jobs, ApiError> {
    state.jobs.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "background jobs are off: this gateway runs without a job store",
        )
    })
}

fn store_error(e: crate::jobs::StoreError) -> ApiError {
    tracing::error!(error = %e, "job store failed");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "the job store is not answering; try again shortly",
    )
}

/// `GET /v1/jobs/{job_id}`.
pub(crate) async fn one(
    State(state): State<AppState>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let jobs = jobs(&state)?;
    match jobs.store().get(&id).await.map_err(store_error)? {
        Some(job) => Ok(Json(describe(&job))),
        None => Err(ApiError::not_found(format!("no job {id}"))),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

/// `GET /v1/jobs` (admin).
pub(crate) async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    if let Err(res) = state.authorize(&headers, Role::Admin, "listing every job") {
        return Ok(*res);
    }
    // axum's own rejection is text/plain; every error of this API is JSON (schemathesis found it).
    let Query(q) = query.map_err(|e| {
        ApiError::bad_request(format!(
            "{}; the parameters are status, tool and limit (1 to 1000)",
            e.body_text()
        ))
    })?;
    let jobs = jobs(&state)?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(JobStatus::parse(s).ok_or_else(|| {
            ApiError::bad_request(format!(
                "status \"{s}\" is not valid; use one of {}",
                JobStatus::ALL.map(JobStatus::as_str).join(", ")
            ))
        })?),
    };
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let list = jobs
        .store()
        .list(status, q.tool.as_deref(), limit)
        .await
        .map_err(store_error)?;
    Ok(Json(json!({ "jobs": list.iter().map(describe).collect::<Vec<_>>() })).into_response())
}
