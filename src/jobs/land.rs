//! Writes that must land: the one transition a worker stores after its job's provider was
//! asked, and the record of a delivered callback. Losing either repeats work the caller
//! notices (a second provider call; a second callback), so a write the store does not take is
//! kept and tried again, with a doubling wait up to [`MAX_WAIT`], until the store answers.
//!
//! Each try is bounded like every statement a replica must not wait on ([`STORE_WAIT`]), and a
//! write that fails says so once; what it came to when it lands is for the caller to say
//! ([`Landed`]), since only the caller knows what its answer means. Trying again is safe: a
//! run's end names its lease and needs the job still `running`, so a try that timed out yet
//! landed makes the next one change nothing (it answers `false`, as for a lost lease, and the
//! run reads the job back to tell the two apart: `run/end.rs`); a callback record written twice
//! at worst counts its delivery twice (the state it writes is the same).
//! While any write waits, the dispatcher claims nothing ([`Unstored::any`]): when the store
//! returns, this replica's own results land before it could claim one of their jobs again.
//!
//! What this cannot keep: a result whose lease expired while it waited (the store away for
//! longer than the longest tool deadline plus `[jobs] lease_margin`) may meet a job another
//! replica claimed meanwhile; the late write then finds the lease gone and is dropped, and the
//! other run's result stands. A read was then asked twice; a booking never is, because its
//! ledger entry answers the second run. A worker stopped by a shutdown while its write waits
//! leaves the job to its lease, which expires and runs it again (a booking, again, from the
//! ledger).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::store::{STORE_WAIT, StoreError};
use crate::store::within;

/// The first wait after a failed write; it doubles …
const FIRST_WAIT: Duration = Duration::from_millis(100);
/// … up to this, so a write lands within about a second of the store's return.
const MAX_WAIT: Duration = Duration::from_secs(1);

/// How many writes of this process wait for the store.
#[derive(Debug, Clone, Default)]
pub(super) struct Unstored(Arc<AtomicUsize>);

impl Unstored {
    /// Whether any write waits.
    pub(super) fn any(&self) -> bool {
        self.0.load(Ordering::Relaxed) > 0
    }
}

/// Counts one waiting write while it lives (an aborted worker's too).
struct Waiting<'a>(&'a Unstored);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a write that had to land answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Landed<T> {
    /// The answer of the try that landed.
    pub(super) value: T,
    /// Whether tries failed before it: one of them may have been taken by the store with its
    /// answer lost, so the value may be the answer to a write already made.
    pub(super) retried: bool,
}

/// Runs `write` until the store takes it; `what` and `job` name it in the log line that says
/// it is kept.
pub(super) async fn until_stored<T, F, Fut>(
    unstored: &Unstored,
    what: &str,
    job: &str,
    mut write: F,
) -> Landed<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut waiting = None;
    let mut wait = FIRST_WAIT;
    let mut tries: u32 = 0;
    loop {
        tries += 1;
        match within(STORE_WAIT, write()).await {
            Ok(value) => {
                if waiting.is_some() {
                    tracing::debug!(%job, what, tries, "jobs: the job store answered a kept write again");
                }
                return Landed {
                    value,
                    retried: waiting.is_some(),
                };
            }
            Err(e) => {
                if waiting.is_none() {
                    unstored.0.fetch_add(1, Ordering::Relaxed);
                    waiting = Some(Waiting(unstored));
                    tracing::warn!(%job, what, error = %e, "jobs: the job store did not take a write; it is kept and tried again until the store answers");
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_WAIT);
            }
        }
    }
}

#[cfg(test)]
mod tests;
