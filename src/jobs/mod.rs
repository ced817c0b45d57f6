//! Background calls: durable, delayed, silent requeue. A provider that is down or rate-limited
//! must not make a queued call fail or hammer it: the job is stored, waits until the provider can
//! take it, and is never silently dropped.
//!
//! A background call is validated, stored and answered `202 queued` at once. Workers claim due
//! jobs with a lease and run them through the same per-tool pipeline as interactive calls
//! ([`crate::call::Gateway::run_background`]), then:
//! - success → `succeeded`, result stored, callback sent if asked;
//! - breaker rejected → `retry_scheduled`, silently, due exactly when the breaker admits again
//!   (its half-open instant), so the probes go to due jobs; a retryable failure → the same, with
//!   a delay anchored on the breaker's remaining open time or the provider's `Retry-After`,
//!   growing per attempt, with jitter ([`policy`]); no callback, no error;
//! - a refusal the model must fix, or `max_attempts` / `max_age` reached → `dead`, callback
//!   with the last error.
//!
//! Coordination per breaker: while a tool's breakers are all open, the dispatcher does not
//! claim its jobs at all, so workers never spin on an open breaker; while they are half-open it
//! claims only as many as they have probes to start now (one per probe gap), so the rest are not
//! refused and requeued over and over; and while jobs are due, the probes go to background jobs
//! first, for the background's turn (interactive calls get the fallback meanwhile).
//!
//! The folder is split by role:
//! - `store/`: the job record, the [`JobStore`] interface and the one SQL [`Store`] for SQLite
//!   (embedded default) and PostgreSQL (a fleet sharing one queue);
//! - `submit.rs`: accepting a call (validate, check the callback);
//! - `spool.rs`: on PostgreSQL, where accepted calls wait (a local SQLite file) while the store
//!   does not answer, and how they move into it exactly once;
//! - `dispatch.rs`: which due jobs this process claims (breaker-aware, paced);
//! - `run.rs`: running one job, and the pure `decide` from outcome to [`Transition`];
//! - `land.rs`: the writes that must land (a run's transition, a callback's record), tried
//!   again until the store takes them;
//! - `seen.rs`: the jobs this replica last saw, which the job API answers while the store
//!   does not;
//! - `callbacks/`: claiming, signing and delivering callbacks, and the SSRF guard;
//! - [`policy`]: the requeue delay (pure); the pacers that limit claims per provider are the
//!   quota room's ([`crate::quota`]);
//! - `system.rs`: the [`JobSystem`] the edge submits to, and its loops (`system/running.rs`).
//!
//! A lease that expires (a crashed worker) returns its job to the queue; every write after a
//! claim checks the lease owner, so a job never runs twice at once. Every time comes from
//! [`crate::clock`], so the dispatcher and the stored due times run on tokio's paused clock in
//! tests.

pub mod callbacks;
mod dispatch;
mod land;
pub mod policy;
mod run;
mod seen;
mod spool;
mod store;
mod submit;
mod system;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use store::{
    CallbackState, Job, JobFilter, JobStatus, JobStore, NewJob, Origin, Overdue, QueueStats,
    ShareRoom, Store, StoreError, Transition, WATCH_RUN_KEY_PREFIX, Which,
};
pub use submit::SubmitError;
pub use system::{Found, JobSystem, Listing};

/// Epoch milliseconds as RFC 3339, for the job API.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Shared handle to the background job system.
pub type Jobs = Arc<JobSystem>;
