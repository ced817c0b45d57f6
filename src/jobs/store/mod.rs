//! Where jobs are kept: the job record and the store interface (`model.rs`), and the one SQL
//! store that implements it on SQLite and PostgreSQL (`sql.rs`, every statement once; the few
//! differences between the two databases live in the shared `store` room).
//!
//! A store takes every time as an epoch-millisecond argument, so the conformance suite
//! (`tests.rs`) controls time without a clock and runs the same rules against every store:
//! SQLite, PostgreSQL (through `FAREGATE_TEST_POSTGRES_URL`) and the in-memory store that the
//! paused-clock tests of the job system use.

#[cfg(test)]
pub(crate) mod memory;
mod model;
mod sql;
mod unreadable;

#[cfg(test)]
mod tests;

pub(super) use model::claim_lease;
pub use model::{
    CallbackState, Job, JobFilter, JobStatus, JobStore, NewJob, Origin, Overdue, QueueStats,
    ShareRoom, StoreError, Transition, WATCH_RUN_KEY_PREFIX, Which,
};
pub use sql::Store;

/// How long one statement of a submission, a flush of the spool or a write that must land may
/// wait on the store: a loaded database answering in 400 ms is slow, not away (the fleet's
/// statements and the shared pacers use the same bound).
pub(super) const STORE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
