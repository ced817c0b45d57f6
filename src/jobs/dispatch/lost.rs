//! Claims whose answer never came: handed back by their lease once the store answers again.
//!
//! A claim is one statement that leases due jobs and returns them. When the store takes it but
//! its answer is lost (the connection cut after PostgreSQL committed; a reply later than the
//! caller waits), the jobs are `running` under this replica's lease and no worker here runs
//! them: without more, they would wait out the whole lease (the longest tool deadline plus
//! `[jobs] lease_margin`, about 50 s) before any replica claims them again.
//!
//! Every claim takes its jobs under a lease of its own (`store::claim_lease`), so a failed one
//! is noted here, and each dispatch pass first hands its lease back (`JobStore::release`: the
//! jobs become due at once, no attempt counted). That is safe for "a job never runs twice at
//! once": a failed claim returned no job, so no worker of this replica runs any job under that
//! lease, and nothing else writes with it.
//!
//! A hand-back that finds nothing may have come before the claim it undoes (a statement the
//! server still runs when the replica gives up on it), so a lease is handed back again at each
//! pass until a hand-back answered that was asked at least [`SETTLED_AFTER`] after the claim
//! failed, or one found jobs (a claim commits once). Past that, the lease is the backstop: a
//! claim that commits even later leaves its jobs to their lease's end, as before.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::clock;
use crate::jobs::store::{JobStore, STORE_WAIT, StoreError};
use crate::store::within;

/// How long after a failed claim a hand-back that finds nothing is believed: longer than a
/// claim statement runs on a store that answers.
pub(in crate::jobs) const SETTLED_AFTER: Duration = Duration::from_secs(1);

/// A claim that failed: its lease and when it failed.
#[derive(Debug)]
struct Lost {
    lease: String,
    failed_at: Instant,
}

/// The claims of this process whose answer was lost and whose leases are not handed back yet.
#[derive(Debug, Default)]
pub(in crate::jobs) struct LostClaims {
    /// A short `std::sync::Mutex`: held to copy or change a few names, never across an await.
    lost: Mutex<Vec<Lost>>,
}

impl LostClaims {
    fn lost(&self) -> std::sync::MutexGuard<'_, Vec<Lost>> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The claim under `lease` failed with `error`: the store may have taken it.
    pub(super) fn note(&self, lease: String, error: &StoreError) {
        tracing::warn!(%lease, %error, "jobs: a claim got no answer; the store may have leased jobs to this replica that no worker here runs, so they are handed back as soon as the store answers again");
        self.lost().push(Lost {
            lease,
            failed_at: clock::now(),
        });
    }

    /// Hands back the leases of every failed claim; an error when the store does not answer
    /// (each hand-back is given [`STORE_WAIT`]), and then the rest wait for the next pass.
    pub(in crate::jobs) async fn hand_back<S: JobStore>(
        &self,
        store: &S,
    ) -> Result<(), StoreError> {
        let leases: Vec<(String, Instant)> = self
            .lost()
            .iter()
            .map(|l| (l.lease.clone(), l.failed_at))
            .collect();
        for (lease, failed_at) in leases {
            let asked_at = clock::now();
            let released = within(STORE_WAIT, store.release(&lease, clock::epoch_ms())).await?;
            if released > 0 {
                tracing::warn!(%lease, jobs = released, "jobs: a claim's answer was lost after the store took it; its jobs are handed back to the queue (no attempt counted) instead of waiting out their lease");
            }
            if released > 0 || asked_at.saturating_duration_since(failed_at) >= SETTLED_AFTER {
                self.lost().retain(|l| l.lease != lease);
            }
        }
        Ok(())
    }

    /// Whether any failed claim's lease is still to be handed back.
    #[cfg(test)]
    pub(in crate::jobs) fn any(&self) -> bool {
        !self.lost().is_empty()
    }
}
