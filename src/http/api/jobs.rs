//! `GET /v1/jobs/{job_id}` and `GET /v1/jobs?status=&tool=&limit=`: background jobs as callers
//! see them.
//!
//! A job belongs to the client that submitted it: that client reads it by id and finds it in
//! its listing, and the admin key sees every client's. Another client's job id answers 404,
//! exactly as an id that does not exist, so a client cannot even learn that a job exists.
//!
//! A job submitted while the job store did not answer waits in the spool of the replica that
//! accepted it: that replica answers it by id, `queued`, with a `spooled` field saying so.
//! While the store does not answer, a job this replica has seen (accepted, ran, or read) is
//! answered as it last saw it, with `as_of` and an `as_seen` field saying so, and a listing
//! holds those jobs with a `partial` field; only a job it never saw is a 503.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clients::ClientName;
use crate::http::edge::{ApiError, Caller, PathParam};
use crate::http::state::AppState;
use crate::jobs::{Found, Job, JobStatus, Jobs, rfc3339};
use crate::texts::agents as texts;

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

/// The client whose jobs `caller` sees; `None` for the admin key, which sees every client's.
fn visible_client(caller: &Caller) -> Option<ClientName> {
    match caller {
        Caller::Admin(_) => None,
        other => Some(other.client()),
    }
}

/// `GET /v1/jobs/{job_id}`: the caller's own job (any job for the admin key); 404 otherwise.
pub(crate) async fn one(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let jobs = jobs(&state)?;
    let found = jobs.find(&id).await.map_err(store_error)?;
    let visible = visible_client(&caller);
    match found {
        Some(found)
            if visible
                .as_ref()
                .is_none_or(|client| found.job.client == *client) =>
        {
            Ok(Json(describe_found(&found)))
        }
        // Another client's job reads as no job at all: the same answer, the same text.
        _ => Err(ApiError::not_found(format!("no job {id}"))),
    }
}

/// A job as found: described, and said where it was found when not just now in the store.
fn describe_found(found: &Found) -> Value {
    let mut described = describe(&found.job);
    if let Some(replica) = &found.spooled_on {
        described["spooled"] = Value::String(texts::job_spooled(replica));
    }
    if let Some(at_ms) = found.seen_at_ms {
        let as_of = rfc3339(at_ms);
        described["as_seen"] = Value::String(texts::job_as_seen(&as_of));
        described["as_of"] = Value::String(as_of);
    }
    described
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

/// `GET /v1/jobs`: the caller's own jobs (every client's for the admin key).
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| {
        ApiError::bad_query(e, "the parameters are status, tool and limit (1 to 1000)")
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
    let client = visible_client(&caller);
    let listing = jobs
        .list(status, q.tool.as_deref(), client.as_ref(), limit)
        .await
        .map_err(store_error)?;
    let mut answer = json!({ "jobs": listing.jobs.iter().map(describe_found).collect::<Vec<_>>() });
    if !listing.complete {
        answer["partial"] = Value::String(texts::JOBS_PARTIAL.to_string());
    }
    Ok(Json(answer))
}
