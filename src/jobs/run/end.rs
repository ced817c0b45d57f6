//! A run's end into the store, and the one line that says truly what became of it.
//!
//! The end is written until the store takes it (`land.rs`). Its statement needs the job still
//! `running` under the run's lease, so it answers `false` in two cases that mean opposite
//! things: the lease was lost (it ran out while the store did not answer, and another worker
//! took the job), or an earlier try of this very write was taken by the store and its answer
//! lost (it answered later than the worker waited; the connection was cut after the commit),
//! so the job is no longer `running`. Saying "lease lost" for the second, after the result was
//! in fact stored, is what the log used to do.
//!
//! Only a try that failed first leaves room for the second (a first try's `false` is a lost
//! lease: nothing of this run was written before it). Then, while the run's lease still held
//! when the `false` came, no other worker could have taken the job, and nothing but this run's
//! end moves a job out of `running` under its lease (a shutdown hands leases back only after
//! its workers stopped): an earlier try landed, and the result is stored. Past the
//! lease's end the job is read back: an ended row keeps the lease of the run that ended it
//! (`JobStore::finish`), and a lease is one claim's alone, so a job that names this run's lease
//! and is no longer `running` holds this run's end. Any other row (claimed again since) cannot
//! say whether an earlier try landed before that claim, and the log says so.

use std::time::Duration;

use crate::clock;
use crate::jobs::land::{self, Unstored};
use crate::jobs::store::{Job, JobStatus, JobStore, STORE_WAIT, Transition};
use crate::store::within;

/// How far apart replicas' wall clocks may be: another replica may claim a job this much
/// before its lease's end on this replica's clock (the fleet assumes clocks agree to well under
/// a second, as the job queue's due times and the shared pacers do).
const CLOCKS_AGREE_WITHIN: Duration = Duration::from_secs(1);

/// What became of a run's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::jobs) enum Ended {
    /// It is stored.
    Stored,
    /// It is not: the lease was lost first, and the job is another worker's now.
    NotStored,
    /// The job is another worker's now, and whether this end landed before is not known.
    Unknown,
}

/// Writes `transition` as the end of `job`'s run under `lease` at `now_ms` until the store
/// takes it, and logs what became of it.
pub(in crate::jobs) async fn store_end<S: JobStore>(
    store: &S,
    unstored: &Unstored,
    job: &Job,
    lease: &str,
    transition: &Transition,
    now_ms: i64,
) -> Ended {
    let landed = land::until_stored(unstored, "result", &job.id, || {
        store.finish(&job.id, lease, transition.clone(), now_ms)
    })
    .await;
    let ended = match (landed.value, landed.retried) {
        (true, _) => Ended::Stored,
        (false, false) => Ended::NotStored,
        (false, true) if lease_held(job, clock::epoch_ms()) => Ended::Stored,
        (false, true) => match within(STORE_WAIT, store.get(&job.id)).await {
            Ok(Some(found))
                if found.lease_owner.as_deref() == Some(lease)
                    && found.status != JobStatus::Running =>
            {
                Ended::Stored
            }
            _ => Ended::Unknown,
        },
    };
    match (ended, landed.retried) {
        (Ended::Stored, false) => {}
        (Ended::Stored, true) => {
            tracing::info!(job = %job.id, "jobs: result stored after the job store answered again");
        }
        (Ended::NotStored, _) => {
            tracing::warn!(job = %job.id, "jobs: job lease was lost before its result was stored; another worker owns it now");
        }
        (Ended::Unknown, _) => {
            tracing::warn!(job = %job.id, "jobs: the job's lease ran out while the job store did not answer, and the job is another worker's now; whether a try of this run's result landed before is not known");
        }
    }
    ended
}

/// Whether no other replica may have taken `job` (as claimed by this run) by `now_ms`: its
/// lease had not run out, by any replica's clock.
fn lease_held(job: &Job, now_ms: i64) -> bool {
    let margin = i64::try_from(CLOCKS_AGREE_WITHIN.as_millis()).unwrap_or(i64::MAX);
    job.lease_until_ms
        .is_some_and(|until| now_ms.saturating_add(margin) < until)
}

#[cfg(test)]
mod tests;
