//! Background calls: durable, delayed, silent requeue (seed 000's "the job gets requeued with a
//! delay"; seed 001's lesson about workers hammering a rate-limited API; seed 002's "prefer
//! durable enqueue over silent drop").
//!
//! A background call is validated, stored and answered `202 queued` at once. Workers claim due
//! jobs with a lease and run them through the same per-tool pipeline as interactive calls
//! ([`Gateway::run_background`]), then:
//! - success → `succeeded`, result stored, callback sent if asked;
//! - breaker rejected, or a retryable failure → `retry_scheduled`, silently, with a delay
//!   anchored on the breaker's remaining open time or the provider's `Retry-After`, growing per
//!   attempt, with jitter ([`policy`]); no callback, no error;
//! - a refusal the model must fix, or `max_attempts` / `max_age` reached → `dead`, callback
//!   with the last error.
//!
//! Coordination per breaker: while a tool's breakers are all open, the dispatcher does not
//! claim its jobs at all, so workers never spin on an open breaker; while one is half-open and
//! jobs are due, its probes go to background jobs first (interactive calls get the fallback).
//!
//! Storage is the [`Store`]: one SQL store for SQLite (embedded default) and PostgreSQL (a fleet
//! sharing one queue), every statement written once, one conformance suite. A lease that
//! expires (a crashed worker) returns its job to the queue; every write after a claim checks the
//! lease owner, so a job never runs twice at once.

pub mod callback;
pub mod pace;
pub mod policy;
mod store;
mod worker;

use std::sync::Arc;

pub use store::{
    CallbackState, Job, JobStatus, JobStore, NewJob, QueueStats, Store, StoreError, Transition,
};
pub use worker::{JobSystem, SubmitError};

/// Milliseconds since the Unix epoch, the unit every stored time uses (from [`crate::clock`], so
/// it follows tokio's clock).
pub fn now_ms() -> i64 {
    crate::clock::epoch_ms()
}

/// Epoch milliseconds as RFC 3339, for the job API.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Shared handle to the background job system.
pub type Jobs = Arc<JobSystem>;
