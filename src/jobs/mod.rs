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
//! Storage is a [`JobStore`]: SQLite (embedded default) or PostgreSQL (a fleet sharing one
//! queue), same schema, same conformance suite. A lease that expires (a crashed worker) returns
//! its job to the queue; every write after a claim checks the lease owner, so a job never runs
//! twice at once.

pub mod callback;
mod model;
pub mod pace;
pub mod policy;
mod postgres;
mod row;
mod sqlite;
mod worker;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use model::{CallbackState, Job, JobStatus, JobStore, NewJob, QueueStats, StoreError};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
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

/// The configured store: SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub enum Store {
    /// One file, the embedded default.
    Sqlite(SqliteStore),
    /// A shared queue for a fleet.
    Postgres(PgStore),
}

impl Store {
    /// Opens the store named by a `sqlite://…` or `postgres://…` URL and creates its schema.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let store = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Store::Postgres(PgStore::open(url, None).await?)
        } else if url.starts_with("sqlite:") {
            Store::Sqlite(SqliteStore::open(url).await?)
        } else {
            return Err(StoreError(format!(
                "unknown store URL {url:?}; use sqlite://FILE or postgres://USER@HOST/DB"
            )));
        };
        store.migrate().await?;
        Ok(store)
    }
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Sqlite($s) => $e,
            Store::Postgres($s) => $e,
        }
    };
}

impl JobStore for Store {
    async fn migrate(&self) -> Result<(), StoreError> {
        delegate!(self, s => s.migrate().await)
    }
    async fn enqueue(&self, job: NewJob, now_ms: i64) -> Result<(Job, bool), StoreError> {
        delegate!(self, s => s.enqueue(job, now_ms).await)
    }
    async fn get(&self, id: &str) -> Result<Option<Job>, StoreError> {
        delegate!(self, s => s.get(id).await)
    }
    async fn list(
        &self,
        status: Option<JobStatus>,
        tool: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        delegate!(self, s => s.list(status, tool, limit).await)
    }
    async fn claim(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
        skip_tools: &[String],
    ) -> Result<Vec<Job>, StoreError> {
        delegate!(self, s => s.claim(owner, now_ms, lease_ms, limit, skip_tools).await)
    }
    async fn succeed(
        &self,
        id: &str,
        owner: &str,
        result: &serde_json::Value,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        delegate!(self, s => s.succeed(id, owner, result, now_ms).await)
    }
    async fn retry(
        &self,
        id: &str,
        owner: &str,
        next_attempt_at_ms: i64,
        error: &str,
        attempted: bool,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        delegate!(self, s => s.retry(id, owner, next_attempt_at_ms, error, attempted, now_ms).await)
    }
    async fn kill(
        &self,
        id: &str,
        owner: &str,
        error: &str,
        result: Option<&serde_json::Value>,
        attempted: bool,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        delegate!(self, s => s.kill(id, owner, error, result, attempted, now_ms).await)
    }
    async fn claim_callbacks(
        &self,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        delegate!(self, s => s.claim_callbacks(now_ms, lease_ms, limit).await)
    }
    async fn callback_result(
        &self,
        id: &str,
        sent: bool,
        next_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        delegate!(self, s => s.callback_result(id, sent, next_at_ms, now_ms).await)
    }
    async fn release(&self, owner: &str, now_ms: i64) -> Result<u64, StoreError> {
        delegate!(self, s => s.release(owner, now_ms).await)
    }
    async fn due_tools(&self, now_ms: i64) -> Result<Vec<String>, StoreError> {
        delegate!(self, s => s.due_tools(now_ms).await)
    }
    async fn stats(&self, now_ms: i64) -> Result<QueueStats, StoreError> {
        delegate!(self, s => s.stats(now_ms).await)
    }
}

/// Shared handle to the background job system.
pub type Jobs = Arc<JobSystem>;
