//! The spool: background submissions a replica on PostgreSQL accepts while the job store does
//! not answer, kept in a local SQLite file until it does.
//!
//! Why: a background call is a promise ("accepted, the result follows"), and a caller that gets
//! a 503 because the shared database is away for a minute must resubmit, or loses the call. So a
//! replica whose store does not answer within [`STORE_WAIT`] writes the validated job to its
//! spool (the job queue's own table and statements, on a SQLite file) and answers `202 queued`
//! at once; for [`AWAY_FOR`] after such a failure it does not even ask the store first, so a
//! burst of submissions never waits a second each. A task ([`Spool::flush`], every
//! [`FLUSH_EVERY`]) moves spooled jobs into the store once it answers again.
//!
//! Exactly once: a spooled job keeps the id it was answered with (chosen before the store was
//! asked, so a try that timed out yet landed has the same id), its client, idempotency key and
//! creation time. It is inserted with `ON CONFLICT DO NOTHING` and only then deleted from the
//! spool, so a crash between the two finds the id taken on the next flush and just deletes.
//! A spooled job whose client already used its idempotency key for the tool in the store (a
//! resubmission while the store was away) becomes that job: the key means one job, and the id
//! the caller was answered with stays an alias of it. With other arguments it would have been
//! refused had the store answered, so it is stored dead with that reason, never run.
//!
//! While spooled, a job is answered by this replica: its id (`GET /v1/jobs/{id}`) and its
//! idempotency key (the same submission again) find it in the spool. The file survives a
//! restart: a replica that starts with spooled jobs moves them in as soon as the store answers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::OnceCell;

use super::store::{Job, JobFilter, JobStore, NewJob, STORE_WAIT, Store, StoreError};
use crate::clock;
use crate::fingerprint::canonical_json;
use crate::store::{Db, within};
use crate::telemetry::Telemetry;
use crate::texts::call as texts;

/// After the store failed, submissions go straight to the spool for this long.
const AWAY_FOR: Duration = Duration::from_secs(2);
/// How often the spool is moved into the store (and the store tried again).
pub(super) const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Spooled jobs moved per flush step.
const BATCH: u32 = 100;

/// Where a submission was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    /// In the job store, where every replica's workers find it.
    Store,
    /// In this replica's spool, until the store answers again.
    Spool,
}

/// This replica's spool. Opened when first needed (or at start, when its file exists), so a
/// replica whose store always answers never creates the file.
#[derive(Debug)]
pub(super) struct Spool {
    path: PathBuf,
    /// This replica's name, for the job API ("spooled on replica …").
    replica: String,
    file: OnceCell<Store>,
    /// Jobs in the file: zero means there is nothing to look up locally or to move.
    depth: AtomicU64,
    /// Until when (epoch ms) submissions skip the store.
    skip_until_ms: AtomicI64,
    /// Whether the store is away (one log line each way).
    away: AtomicBool,
    telemetry: Arc<Telemetry>,
}

impl Spool {
    /// A spool in the SQLite file at `path`, for `replica`.
    pub(super) fn new(path: PathBuf, replica: String, telemetry: Arc<Telemetry>) -> Self {
        Spool {
            path,
            replica,
            file: OnceCell::new(),
            depth: AtomicU64::new(0),
            skip_until_ms: AtomicI64::new(0),
            away: AtomicBool::new(false),
            telemetry,
        }
    }

    /// This replica's name.
    pub(super) fn replica(&self) -> &str {
        &self.replica
    }

    /// The file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Jobs waiting in the spool.
    pub(super) fn depth(&self) -> u64 {
        self.depth.load(Ordering::Relaxed)
    }

    /// The spool file, opened (and its table made) on first use.
    async fn file(&self) -> Result<&Store, StoreError> {
        self.file
            .get_or_try_init(|| async {
                let store = Store::new(Db::open_sqlite_file(&self.path).await?);
                store.migrate().await?;
                Ok::<_, StoreError>(store)
            })
            .await
    }

    /// At start: a spool file left by an earlier run is opened, so its jobs are answered and
    /// moved in by the next flush.
    pub(super) async fn resume(&self) {
        if !self.path.exists() {
            return;
        }
        match self.file().await {
            Ok(file) => {
                self.recount(file).await;
                let n = self.depth();
                if n > 0 {
                    tracing::info!(jobs = n, path = %self.path.display(), "jobs: the spool holds submissions from an earlier run; they move into the job store when it answers");
                }
            }
            Err(e) => {
                tracing::error!(error = %e, path = %self.path.display(), "jobs: cannot open the spool file; its jobs wait until it can be read")
            }
        }
    }

    /// Stores `job` (already checked): in `store` when it answers within [`STORE_WAIT`], else
    /// in the spool. A key the client used for a job still in the spool answers that job
    /// (`false`), as the store would.
    pub(super) async fn submit(
        &self,
        store: &Store,
        job: NewJob,
    ) -> Result<(Job, bool, Kept), StoreError> {
        if let Some(key) = &job.idempotency_key
            && self.depth() > 0
            && let Some(found) = self
                .file()
                .await?
                .by_key(&job.client, &job.tool, key)
                .await?
        {
            return Ok((found, false, Kept::Spool));
        }
        // The id is chosen before the store is asked: a try that timed out may still land,
        // and its spooled copy then carries the same id, which the store keeps only once.
        let id = uuid::Uuid::now_v7().to_string();
        let now = clock::epoch_ms();
        if !self.skipping_store() {
            match within(STORE_WAIT, store.enqueue_as(&id, job.clone(), now)).await {
                Ok((job, created)) => return Ok((job, created, Kept::Store)),
                Err(e) => self.store_failed(&e),
            }
        }
        let file = self.file().await?;
        let (job, created) = file.enqueue_as(&id, job, now).await?;
        if created {
            self.recount(file).await;
        }
        Ok((job, created, Kept::Spool))
    }

    /// Job `id` if it is in the spool.
    pub(super) async fn get(&self, id: &str) -> Result<Option<Job>, StoreError> {
        if self.depth() == 0 {
            return Ok(None);
        }
        self.file().await?.get(id).await
    }

    /// Spooled jobs matching the filters (as [`JobStore::list`]), newest first.
    pub(super) async fn list(
        &self,
        filter: JobFilter<'_>,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        if self.depth() == 0 {
            return Ok(Vec::new());
        }
        self.file().await?.list(filter, limit).await
    }

    /// Whether the store failed within the last [`AWAY_FOR`]: submissions and the job API's
    /// reads do not wait for it then.
    pub(super) fn skipping_store(&self) -> bool {
        clock::epoch_ms() < self.skip_until_ms.load(Ordering::Relaxed)
    }

    /// Whether the store failed lately (a read of it would wait in vain).
    pub(super) fn store_away(&self) -> bool {
        self.away.load(Ordering::Relaxed)
    }

    /// Moves spooled jobs into `store`, oldest first; how many moved. With nothing spooled
    /// while the store was away, one read tells whether it answers again.
    pub(super) async fn flush(&self, store: &Store) -> Result<u64, StoreError> {
        if self.depth() == 0 {
            if self.store_away() {
                within(STORE_WAIT, store.get("")).await.inspect_err(|e| {
                    self.store_failed(e);
                })?;
                self.store_answers(0);
            }
            return Ok(0);
        }
        let file = self.file().await?;
        let mut moved = 0;
        loop {
            let batch = file.oldest(BATCH).await?;
            if batch.is_empty() {
                break;
            }
            for job in batch {
                let (stored, _) = within(
                    STORE_WAIT,
                    store.enqueue_as(&job.id, new_job(&job), job.created_at_ms),
                )
                .await
                .inspect_err(|e| {
                    self.store_failed(e);
                })?;
                if stored.id != job.id {
                    within(STORE_WAIT, merge(store, &job, &stored))
                        .await
                        .inspect_err(|e| {
                            self.store_failed(e);
                        })?;
                }
                file.delete(&job.id).await?;
                moved += 1;
            }
            self.recount(file).await;
        }
        self.store_answers(moved);
        Ok(moved)
    }

    /// The store failed: skip it for [`AWAY_FOR`], and say so once.
    pub(super) fn store_failed(&self, error: &StoreError) {
        let until = clock::ms_after(clock::epoch_ms(), AWAY_FOR);
        self.skip_until_ms.store(until, Ordering::Relaxed);
        if !self.away.swap(true, Ordering::Relaxed) {
            tracing::warn!(error = %error, path = %self.path.display(), "jobs: the job store does not answer; background submissions are spooled on this replica until it returns");
        }
    }

    /// The store answered: ask it first again, and say so once.
    fn store_answers(&self, moved: u64) {
        self.skip_until_ms.store(0, Ordering::Relaxed);
        if self.away.swap(false, Ordering::Relaxed) {
            tracing::info!(
                moved,
                "jobs: the job store answers again; spooled submissions moved into it"
            );
        }
    }

    /// Reads the depth again (and publishes it).
    async fn recount(&self, file: &Store) {
        match file.count().await {
            Ok(n) => {
                self.depth.store(n, Ordering::Relaxed);
                self.telemetry.metrics().set_jobs_spooled(n);
            }
            Err(e) => tracing::warn!(error = %e, "jobs: cannot count the spooled jobs"),
        }
    }
}

/// Moves in `spooled`, whose client's idempotency key names `stored` in the store (resubmitted
/// while the store was away). With the same arguments it is that job: its id becomes an alias,
/// so the caller polling the id it was answered with finds `stored`. With other arguments it is
/// refused as a submission would have been, and stored dead with the reason, so that id reads
/// why instead of nothing. A flush cut short here does the same again (both are idempotent).
async fn merge(store: &Store, spooled: &Job, stored: &Job) -> Result<(), StoreError> {
    let now = clock::epoch_ms();
    if canonical_json(&spooled.arguments) == canonical_json(&stored.arguments) {
        tracing::info!(job = %spooled.id, into = %stored.id, tool = %spooled.tool, "jobs: a spooled job's idempotency key names a job in the store; it is that job");
        store.alias(&spooled.id, &stored.id, now).await
    } else {
        tracing::warn!(job = %spooled.id, other = %stored.id, tool = %spooled.tool, "jobs: a spooled job's idempotency key names a job with other arguments in the store; it is stored dead, never run");
        let error = texts::job_key_reused(&spooled.tool, &stored.id);
        store
            .enqueue_refused(
                &spooled.id,
                &new_job(spooled),
                spooled.created_at_ms,
                now,
                &error,
            )
            .await
    }
}

/// A spooled job as the submission it was.
fn new_job(job: &Job) -> NewJob {
    NewJob {
        tool: job.tool.clone(),
        arguments: job.arguments.clone(),
        call_id: job.call_id.clone(),
        client: job.client.clone(),
        idempotency_key: job.idempotency_key.clone(),
        callback_url: job.callback_url.clone(),
        trace: job.trace.clone(),
    }
}

#[cfg(test)]
mod tests;
