//! What an MCP client (and the model or person it shows them to) reads about a task: the
//! `statusMessage` of a working task, and why a task cannot be read or cancelled.
//!
//! A task that waits for a provider that is down is not an error to the client (the job is
//! requeued silently), so its status message says that it waits and that nothing needs doing.

/// A task accepted and waiting for its first run.
pub const TASK_QUEUED: &str =
    "Queued: the call runs as soon as a worker and the provider can take it.";

/// A task whose call is at the provider now.
pub const TASK_RUNNING: &str = "Running: the provider is being called now.";

/// A task waiting for its next attempt: the provider was down or its breaker open.
pub fn task_waiting(wait_s: i64, last_error: Option<&str>) -> String {
    let why = last_error.map_or_else(String::new, |e| format!(" ({e})"));
    format!(
        "Waiting: the provider could not take the call yet{why}; faregate tries again by itself in about {wait_s} s. Nothing to do but keep polling."
    )
}

/// A task that may not be cancelled because it is already running at the provider.
pub fn task_running_not_cancelled(task_id: &str) -> String {
    format!(
        "Task {task_id} is running at the provider now and is not cancelled (a booking may be under way); poll tasks/get for its result."
    )
}

/// A task that may not be cancelled because it has ended.
pub fn task_ended(task_id: &str, status: &str) -> String {
    format!("Task {task_id} has already ended ({status}); there is nothing to cancel.")
}

/// A task id that names no task of this client (another client's reads the same).
pub fn no_such_task(task_id: &str) -> String {
    format!(
        "There is no task {task_id} for this client: use the taskId a tools/call of this client answered."
    )
}

/// A task that ended without a result to relay (too many attempts, or too old).
pub fn task_failed(last_error: Option<&str>) -> String {
    match last_error {
        Some(e) => format!("The call was given up: {e}"),
        None => "The call was given up.".to_string(),
    }
}

/// A `tasks/result` or `tasks/list` request without the task id it needs.
pub const TASK_ID_MISSING: &str =
    "params.taskId is missing: send the taskId a tools/call answered.";

/// `tasks/result` of a cancelled task.
pub fn task_cancelled(task_id: &str) -> String {
    format!("Task {task_id} was cancelled before it ran; it has no result.")
}

/// `tasks/result` of a task still working after the wait.
pub fn task_still_working(task_id: &str, status_message: &str) -> String {
    format!(
        "Task {task_id} is still working ({status_message}); call tasks/result again, or poll tasks/get."
    )
}

/// Tasks need the job store, as background calls do.
pub const TASKS_NEED_JOB_STORE: &str = "Tasks need the gateway's job store ([jobs] store), which this gateway does not have; call the tool without a task.";

/// The job store did not answer.
pub const TASK_STORE_DOWN: &str =
    "The job store did not answer; ask again in a few seconds (the task is not lost).";
