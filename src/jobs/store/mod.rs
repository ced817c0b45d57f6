//! Where jobs are kept: the job record and the store interface (`model.rs`), and the one SQL
//! store that implements it on SQLite and PostgreSQL (`sql.rs`, every statement once; the few
//! differences between the two in `dialect.rs`).
//!
//! A store takes every time as an epoch-millisecond argument, so the conformance suite
//! (`tests.rs`) controls time without a clock and runs the same rules against every store:
//! SQLite and PostgreSQL (through `FAREGATE_TEST_POSTGRES_URL`).

mod dialect;
mod model;
mod sql;

#[cfg(test)]
mod tests;

pub use model::{
    CallbackState, Job, JobStatus, JobStore, NewJob, QueueStats, StoreError, Transition,
};
pub use sql::Store;
