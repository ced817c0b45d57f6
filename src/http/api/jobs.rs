//! `GET /v1/jobs/{job_id}`, `GET /v1/jobs?status=&tool=&limit=` and `DELETE /v1/jobs/{job_id}`:
//! background jobs as callers see them, and cancelling one that has not started.
//!
//! A cancel moves a `queued` or `retry_scheduled` job to `cancelled` (never claimed again, no
//! callback) and answers the job. A running job is never cancelled, since a booking may be under
//! way at the provider: the answer is a 409 saying so, as for a job that has ended.
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
use crate::http::state::{AppState, SharedState};
use crate::jobs::{Found, Job, JobFilter, JobStatus, Jobs, Origin, rfc3339};
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
            "last_error": job.callback_error,
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
    State(state): State<SharedState>,
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
            let mut described = describe_found(&found);
            if let Some(waiting) = waiting_on_its_tool(&state, jobs, &found.job) {
                described["waiting"] = Value::String(waiting);
            }
            if let Some(booking) = booking_of(&state, &found.job).await {
                described["booking"] = booking;
            }
            Ok(Json(described))
        }
        // Another client's job reads as no job at all: the same answer, the same text.
        _ => Err(ApiError::not_found(format!("no job {id}"))),
    }
}

/// `DELETE /v1/jobs/{job_id}`: cancels the caller's job (any job for the admin key) if it has
/// not started; 409 for a running or ended job, 404 as for reads.
pub(crate) async fn cancel(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(id): PathParam,
) -> Result<Json<Value>, ApiError> {
    let jobs = jobs(&state)?;
    let visible = visible_client(&caller);
    let find = || async {
        let found = jobs.find(&id).await.map_err(store_error)?;
        found
            .filter(|f| {
                visible
                    .as_ref()
                    .is_none_or(|client| f.job.client == *client)
            })
            .ok_or_else(|| ApiError::not_found(format!("no job {id}")))
    };
    let refusal = |found: &Found| {
        let text = match found.job.status {
            _ if found.spooled_on.is_some() => texts::job_spooled_not_cancelled(&id),
            JobStatus::Running => texts::job_running_not_cancelled(&id),
            status => texts::job_ended(&id, status.as_str()),
        };
        ApiError::new(StatusCode::CONFLICT, text)
    };
    let found = find().await?;
    if found.seen_at_ms.is_some() {
        // Read from this replica's memory: the store is away, and only the store can cancel.
        return Err(store_error(crate::jobs::StoreError(
            "the store did not answer a cancel".into(),
        )));
    }
    let waiting = matches!(
        found.job.status,
        JobStatus::Queued | JobStatus::RetryScheduled
    );
    if !waiting || found.spooled_on.is_some() {
        return Err(refusal(&found));
    }
    let cancelled = jobs
        .cancel(&id, &found.job.client)
        .await
        .map_err(store_error)?;
    let now = find().await?;
    if cancelled {
        Ok(Json(describe_found(&now)))
    } else {
        // It started (or ended) between the read and the cancel.
        Err(refusal(&now))
    }
}

/// What the booking ledger holds now for a booking job's key: a job that ended "not known
/// whether it went through" stays so, while reconciliation may since have learned that it was
/// booked (or not); the client reads that here without sending the key again.
///
/// Only the entry of this job's own request (its tool and arguments): an entry the key holds
/// for another request is not this job's booking. And while the job goes on, an attempt that
/// booked nothing is not its outcome: the entry reads `pending` then, as a booking under way.
async fn booking_of(state: &AppState, job: &Job) -> Option<Value> {
    let key = job.idempotency_key.as_deref()?;
    state.gateway.tool(&job.tool).filter(|t| t.is_write())?;
    let ledger = state.gateway.ledger()?;
    let digest = crate::ledger::arguments_digest(&job.tool, &job.arguments);
    match ledger
        .get(job.client.as_str(), key, crate::clock::epoch_ms())
        .await
    {
        Ok(entry) => entry
            .filter(|e| e.tool == job.tool && e.digest == digest)
            .map(|e| {
                let mut described = super::bookings::describe(&e);
                if e.state == crate::ledger::State::Failed && !job.status.is_final() {
                    described["state"] = Value::String("pending".into());
                    described["reason"] = Value::String(texts::job_booking_again(
                        e.reason.as_deref().unwrap_or("failed"),
                    ));
                }
                described
            }),
        Err(e) => {
            tracing::warn!(error = %e, "the booking ledger could not be read for a job");
            None
        }
    }
}

/// Why a job that is due has not run: its tool admits no calls now (every provider's breaker
/// open, forced open or in a maintenance window), or this replica does not serve it (a reload
/// took it away). Its `next_attempt_at` has passed, and without this it would look stuck; it
/// runs, silently, once a breaker admits calls again or a replica serves the tool.
fn waiting_on_its_tool(state: &AppState, jobs: &Jobs, job: &Job) -> Option<String> {
    let due = matches!(job.status, JobStatus::Queued | JobStatus::RetryScheduled)
        && job.next_attempt_at_ms <= crate::clock::epoch_ms();
    if !due {
        return None;
    }
    let Some(tool) = state.gateway.tool(&job.tool) else {
        return Some(texts::job_waiting_on_unserved_tool(
            &job.tool,
            &crate::texts::span(jobs.max_age()),
        ));
    };
    (!state
        .gateway
        .is_available(&tool, tokio::time::Instant::now()))
    .then(|| texts::job_waiting_on_tool(&job.tool))
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
    #[serde(default)]
    origin: Option<String>,
}

/// `GET /v1/jobs`: the caller's own jobs (every client's for the admin key).
pub(crate) async fn list(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| {
        ApiError::bad_query(
            e,
            "the parameters are status, tool, origin (calls, watch_runs or all) and limit (1 to 1000)",
        )
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
    // A client's own calls by default: its watches' runs (one per interval) would soon push
    // them off the list, and they are read through GET /v1/watches.
    let origin = match q.origin.as_deref() {
        None | Some("calls") => Origin::Calls,
        Some("watch_runs") => Origin::WatchRuns,
        Some("all") => Origin::Any,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "origin \"{other}\" is not valid; use calls (the default: background calls), watch_runs (the runs of watches) or all"
            )));
        }
    };
    let limit = ApiError::list_limit(q.limit)?;
    let client = visible_client(&caller);
    let filter = JobFilter {
        status,
        tool: q.tool.as_deref(),
        client: client.as_ref(),
        origin,
    };
    let listing = jobs.list(filter, limit).await.map_err(store_error)?;
    // A tool no longer served may still have jobs stored (a reload removed it): those are
    // listed. Nothing of a tool that is not served is most likely a typo, not an empty list.
    if let Some(tool) = filter.tool
        && listing.jobs.is_empty()
        && state.gateway.tool(tool).is_none()
    {
        let known = crate::http::calls::allowed_tools(&state, &caller.scope());
        return Err(ApiError::bad_request(texts::no_jobs_of_unknown_tool(
            tool, &known,
        )));
    }
    let mut answer = json!({ "jobs": listing.jobs.iter().map(describe_found).collect::<Vec<_>>() });
    if !listing.complete {
        answer["partial"] = Value::String(texts::JOBS_PARTIAL.to_string());
    }
    Ok(Json(answer))
}
