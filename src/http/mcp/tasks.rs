//! MCP Tasks over the durable job queue: a background `tools/call` answers a task, and the
//! task is the job.
//!
//! Which Tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663), the one rmcp 3.11.0
//! serves and the 2026-07-28 revision points to. A client declares it in its capabilities (per
//! request in 2026-07-28's `_meta`, or at `initialize`); the server then decides per call
//! whether to answer with a task. faregate does so for a call the client asked to run in the
//! background (`_meta` `"faregate/mode": "background"`): the call is submitted exactly as every
//! background call is ([`crate::http::calls`], the calling client's job, idempotency as for
//! jobs), and the answer is the created task (`resultType: "task"`, task id = job id,
//! `working`, `pollIntervalMs`). A client that did not declare the extension is told to (an
//! error result: a queued job has no result matching the output schema); an interactive call
//! is never a task.
//!
//! `tasks/get` reads the job from the shared store, so any replica answers for it:
//! - `queued`, `running`, `retry_scheduled` → `working`, with a `statusMessage` a person can
//!   read (while the provider is down: that the call waits and is retried by itself; the
//!   client sees no error);
//! - `succeeded` → `completed`, with the tool result inline exactly as `tools/call` answers it
//!   (the model text, `structuredContent` only for `ok` and `stale` so it matches the tool's
//!   `outputSchema`, `isError`);
//! - `dead` → `failed`, with a JSON-RPC error saying why it was given up;
//! - `cancelled` → `cancelled`.
//!
//! `tasks/cancel` cancels a job that has not started (`queued`, `retry_scheduled`); a running
//! job is never cancelled (a booking may be under way at the provider), and the client is told
//! so. Another client's task id reads exactly as one that does not exist.
//!
//! Gaps in rmcp 3.11.0: rmcp has no per-tool `execution.taskSupport` (SEP-2663 has task
//! creation decided by the server, so the tools carry none), and no `tasks/list` or
//! `tasks/result` (2025-11-25's experimental Tasks, which SEP-2663 replaced: the result is
//! inline in `tasks/get`). Both are served here as custom methods ([`custom`]): `tasks/list`
//! answers the client's newest tasks, `tasks/result` waits up to 20 s for the task to end and
//! answers its tool result (or its error, with the related task in `_meta`), and past that an
//! error saying it still works. Status notifications (`notifications/tasks`) are not sent: a
//! stateless request has no stream to send them on after its answer, so clients poll.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, ErrorCode, GetTaskResult,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use crate::agents::AgentResult;
use crate::call::{Envelope, Status};
use crate::clock;
use crate::http::edge::Caller;
use crate::http::state::AppState;
use crate::jobs::{Job, JobFilter, JobStatus, Origin, rfc3339};
use crate::texts::tasks as texts;

/// How often a client should poll `tasks/get`. The dispatcher looks for due jobs every 250 ms
/// and a provider's retry is seconds away, so a second is soon enough and cheap.
const POLL_INTERVAL_MS: u64 = 1_000;

/// The JSON-RPC error code of a failed task's `error`: the call was given up at the gateway
/// (outside the range 2026-07-28 reserves for the protocol).
const GIVEN_UP: i32 = -31_000;

/// Whether the request's client declared the Tasks extension (in the request's `_meta`, or at
/// `initialize` for a session).
pub(super) fn client_takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

/// The tool result `tools/call` answers for `result`, and `tasks/get` for a completed task:
/// the model text, `structuredContent` only where it matches the output schema, `isError`.
pub(super) fn tool_result(result: &AgentResult) -> CallToolResult {
    let mut out = CallToolResult::success(vec![ContentBlock::text(result.text.clone())]);
    out.structured_content = result.data().cloned();
    out.is_error = Some(result.is_error);
    out
}

/// The created task for a background call's answer: `None` when the call was not stored as a
/// job (bad arguments, no job store), whose answer stays a tool result.
pub(super) async fn created(state: &AppState, result: &AgentResult) -> Option<CreateTaskResult> {
    let envelope = result.envelope.as_ref()?;
    if envelope.status != Status::Queued {
        return None;
    }
    let job_id = envelope.job_id.as_deref()?;
    // The job as stored (a repeated idempotency key names a job that may have moved on).
    let found = match &state.jobs {
        Some(jobs) => jobs.find(job_id).await.ok().flatten(),
        None => None,
    };
    let task = match found {
        Some(found) => task_of(&found.job),
        None => {
            let now = rfc3339(clock::epoch_ms());
            Task::new(job_id, TaskStatus::Working, now.clone(), now)
                .with_status_message(texts::TASK_QUEUED)
                .with_poll_interval_ms(POLL_INTERVAL_MS)
        }
    };
    Some(CreateTaskResult::new(task))
}

/// `tasks/get`: the caller's task as its job stands now.
pub(super) async fn get(
    state: &AppState,
    caller: &Caller,
    task_id: &str,
) -> Result<GetTaskResult, ErrorData> {
    let job = own_job(state, caller, task_id).await?;
    Ok(GetTaskResult::new(detailed(&job)))
}

/// `tasks/cancel`: cancels the caller's task if its job has not started.
pub(super) async fn cancel(
    state: &AppState,
    caller: &Caller,
    task_id: &str,
) -> Result<(), ErrorData> {
    let job = own_job(state, caller, task_id).await?;
    let refusal = |job: &Job| match job.status {
        JobStatus::Running => {
            ErrorData::invalid_params(texts::task_running_not_cancelled(task_id), None)
        }
        status => {
            ErrorData::invalid_params(texts::task_ended(task_id, task_status(status).0), None)
        }
    };
    if !matches!(job.status, JobStatus::Queued | JobStatus::RetryScheduled) {
        return Err(refusal(&job));
    }
    let jobs = state.jobs.as_ref().ok_or_else(no_job_store)?;
    match jobs.cancel(task_id, &caller.client()).await {
        Ok(true) => Ok(()),
        // It started (or ended) between the read and the cancel.
        Ok(false) => Err(refusal(&own_job(state, caller, task_id).await?)),
        Err(e) => {
            tracing::warn!(error = %e, task = task_id, "could not cancel a task");
            Err(ErrorData::internal_error(texts::TASK_STORE_DOWN, None))
        }
    }
}

/// The caller's job `task_id`; another client's reads as a missing one.
async fn own_job(state: &AppState, caller: &Caller, task_id: &str) -> Result<Job, ErrorData> {
    let jobs = state.jobs.as_ref().ok_or_else(no_job_store)?;
    match jobs.find(task_id).await {
        Ok(Some(found)) if found.job.client == caller.client() => Ok(found.job),
        Ok(_) => Err(ErrorData::invalid_params(
            texts::no_such_task(task_id),
            None,
        )),
        Err(e) => {
            tracing::warn!(error = %e, task = task_id, "could not read a task");
            Err(ErrorData::internal_error(texts::TASK_STORE_DOWN, None))
        }
    }
}

fn no_job_store() -> ErrorData {
    ErrorData::invalid_request(texts::TASKS_NEED_JOB_STORE, None)
}

/// The task status of a job status, and whether the task has ended.
fn task_status(status: JobStatus) -> (&'static str, TaskStatus) {
    match status {
        JobStatus::Queued | JobStatus::Running | JobStatus::RetryScheduled => {
            ("working", TaskStatus::Working)
        }
        JobStatus::Succeeded => ("completed", TaskStatus::Completed),
        JobStatus::Dead => ("failed", TaskStatus::Failed),
        JobStatus::Cancelled => ("cancelled", TaskStatus::Cancelled),
    }
}

/// The task's base fields for `job`.
fn task_of(job: &Job) -> Task {
    let mut task = Task::new(
        job.id.clone(),
        task_status(job.status).1,
        rfc3339(job.created_at_ms),
        rfc3339(job.updated_at_ms),
    );
    let message = match job.status {
        JobStatus::Queued => Some(texts::TASK_QUEUED.to_string()),
        JobStatus::Running => Some(texts::TASK_RUNNING.to_string()),
        JobStatus::RetryScheduled => {
            let wait_s = ((job.next_attempt_at_ms - clock::epoch_ms()) / 1_000).max(0);
            Some(texts::task_waiting(wait_s, job.last_error.as_deref()))
        }
        JobStatus::Succeeded | JobStatus::Dead | JobStatus::Cancelled => None,
    };
    if let Some(message) = message {
        task = task
            .with_status_message(message)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
    }
    task
}

/// The task with its payload: the tool result once completed, the error once failed.
fn detailed(job: &Job) -> DetailedTask {
    let stored = job.result.as_ref().and_then(Envelope::from_stored);
    let payload = match (job.status, stored) {
        (JobStatus::Queued | JobStatus::Running | JobStatus::RetryScheduled, _) => {
            TaskPayload::Working
        }
        (JobStatus::Succeeded, Some(envelope)) => {
            let result = tool_result(&AgentResult::answered(job.call_id.clone(), envelope));
            match serde_json::to_value(result) {
                Ok(serde_json::Value::Object(result)) => TaskPayload::Completed { result },
                _ => failed(job, "the stored result could not be rendered"),
            }
        }
        (JobStatus::Succeeded, None) => failed(job, "the stored result is not a tool result"),
        (JobStatus::Dead, stored) => {
            // The envelope's text says why (the provider's refusal, the fallback text).
            let why = stored.map(|e| crate::agents::model_text(&e));
            failed(
                job,
                why.as_deref()
                    .or(job.last_error.as_deref())
                    .unwrap_or("given up"),
            )
        }
        (JobStatus::Cancelled, _) => TaskPayload::Cancelled,
    };
    DetailedTask::new(task_of(job), payload)
}

fn failed(job: &Job, why: &str) -> TaskPayload {
    let error = json!({
        "code": GIVEN_UP,
        "message": texts::task_failed(Some(why)),
        "data": {"jobId": job.id, "attempts": job.attempts, "lastError": job.last_error},
    });
    let error: JsonObject = match error {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    TaskPayload::Failed { error }
}

/// How long `tasks/result` waits for a working task before answering that it still works (a
/// client's request timeout is often 30 s; a provider outage may last minutes).
const RESULT_WAIT: Duration = Duration::from_secs(20);

/// How often `tasks/result` reads the job while it waits.
const RESULT_POLL: Duration = Duration::from_millis(250);

/// How many tasks `tasks/list` answers: the client's newest.
const LIST_LIMIT: u32 = 100;

/// The JSON-RPC error code of a `tasks/result` whose task still works after [`RESULT_WAIT`].
const STILL_WORKING: i32 = -31_001;

/// The `_meta` key tying a result to its task (2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// 2025-11-25's `tasks/list` and `tasks/result`, which SEP-2663 (and so rmcp 3.11.0) dropped,
/// served here for clients written against 2025-11-25's Tasks (the MCP Python SDK 2.3.0 still
/// has their types); any other method is not found.
pub(super) async fn custom(
    state: &AppState,
    caller: &Caller,
    method: &str,
    params: Option<Value>,
) -> Result<Value, ErrorData> {
    let task_id = || {
        params
            .as_ref()
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ErrorData::invalid_params(texts::TASK_ID_MISSING, None))
    };
    match method {
        "tasks/list" => list(state, caller).await,
        "tasks/result" => result(state, caller, &task_id()?).await,
        other => Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
            None,
        )),
    }
}

/// `tasks/list`: the caller's newest tasks (its background jobs, not its watches' runs),
/// newest first.
async fn list(state: &AppState, caller: &Caller) -> Result<Value, ErrorData> {
    let jobs = state.jobs.as_ref().ok_or_else(no_job_store)?;
    let client = caller.client();
    let filter = JobFilter {
        client: Some(&client),
        origin: Origin::Calls,
        ..JobFilter::default()
    };
    let listing = jobs.list(filter, LIST_LIMIT).await.map_err(|e| {
        tracing::warn!(error = %e, "could not list tasks");
        ErrorData::internal_error(texts::TASK_STORE_DOWN, None)
    })?;
    let tasks: Vec<Task> = listing
        .jobs
        .iter()
        .map(|found| task_of(&found.job))
        .collect();
    Ok(json!({ "tasks": tasks }))
}

/// `tasks/result`: waits (up to [`RESULT_WAIT`]) for the caller's task to end, then answers
/// as 2025-11-25 asks: the tool result of a completed task, the error of a failed one.
async fn result(state: &AppState, caller: &Caller, task_id: &str) -> Result<Value, ErrorData> {
    let waited_until = tokio::time::Instant::now() + RESULT_WAIT;
    loop {
        let job = own_job(state, caller, task_id).await?;
        let related = json!({ RELATED_TASK: { "taskId": task_id } });
        match detailed(&job).payload {
            TaskPayload::Completed { mut result } => {
                result.insert("_meta".to_string(), related);
                return Ok(Value::Object(result));
            }
            TaskPayload::Failed { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("given up")
                    .to_string();
                return Err(ErrorData::new(ErrorCode(GIVEN_UP), message, Some(related)));
            }
            TaskPayload::Cancelled => {
                return Err(ErrorData::invalid_params(
                    texts::task_cancelled(task_id),
                    Some(related),
                ));
            }
            _ if tokio::time::Instant::now() >= waited_until => {
                let message = texts::task_still_working(
                    task_id,
                    task_of(&job).status_message.as_deref().unwrap_or_default(),
                );
                return Err(ErrorData::new(
                    ErrorCode(STILL_WORKING),
                    message,
                    Some(related),
                ));
            }
            _ => tokio::time::sleep(RESULT_POLL).await,
        }
    }
}
