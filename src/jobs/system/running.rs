//! The running half of [`JobSystem`]: the dispatcher's loop (claim what may run now, run each
//! claimed job on a task of its own), the spool's flush, the queue's figures and the purge of
//! finished jobs, and the stop: running jobs finish within the grace, and every lease left is
//! handed back. Apart from `system.rs`, which is what the API asks of the jobs (submit, read,
//! list, cancel).
//!
//! A store out of the replica's reach never holds the stop: each pass of the loop is cut short
//! by the shutdown, and handing the leases back is given [`STORE_WAIT`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{JobSystem, PACE, PURGE_BATCH, QUEUE_METRICS_EVERY, lease_ms};
use crate::clock;
use crate::jobs::dispatch::ToolState;
use crate::jobs::spool;
use crate::jobs::store::{JobStatus, JobStore, STORE_WAIT, StoreError};
use crate::quota;
use crate::store::pace::Found;

impl JobSystem {
    /// Moves the spool into the store every [`spool::FLUSH_EVERY`] until `shutdown`.
    async fn flush_spool(self: Arc<Self>, shutdown: CancellationToken) {
        let Some(spool) = &self.spool else { return };
        spool.resume().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(spool::FLUSH_EVERY) => {},
            }
            match spool.flush(&self.store).await {
                Ok(0) => {}
                Ok(moved) => {
                    tracing::debug!(moved, "spooled jobs moved into the job store");
                    self.wake.notify_one();
                }
                // Logged once by the spool when the store goes away; a broken spool file says so.
                Err(e) if spool.store_away() => tracing::debug!(error = %e, "spool not moved yet"),
                Err(e) => {
                    tracing::warn!(error = %e, path = %spool.path().display(), "jobs: cannot move the spool into the job store")
                }
            }
        }
    }

    /// Runs the dispatcher, workers and callback sender until `shutdown`; then lets running
    /// jobs finish within `grace`, abandons the rest, and hands back every lease this process
    /// holds, so no job is lost (nor counted as an attempt) by a shutdown.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken, grace: Duration) {
        let workers = Arc::new(Semaphore::new(self.workers as usize));
        let mut tasks = JoinSet::new();
        self.register_job_series();
        let callbacks = tokio::spawn(Arc::clone(&self.callbacks).run(shutdown.clone()));
        let spool = tokio::spawn(Arc::clone(&self).flush_spool(shutdown.clone()));
        // The shared pacers' table, unless a shutdown comes first (the store out of reach).
        tokio::select! {
            _ = shutdown.cancelled() => {},
            () = self.quotas.prepare() => {},
        }
        // Interactive calls count what they send in memory; this spends it from the buckets.
        let flush = {
            let quotas = Arc::clone(&self.quotas);
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = tokio::time::sleep(quota::FLUSH_EVERY) => quotas.flush_interactive().await,
                    }
                }
            })
        };
        let mut wait = PACE.busy;
        let mut published: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {},
                _ = tokio::time::sleep(wait) => {},
            }
            while tasks.try_join_next().is_some() {}
            // A shutdown does not wait out a pass the store keeps waiting (its pool waits up to
            // 10 s for a connection to a database out of reach): the grace is the jobs'. A
            // claim cut short here is handed back with every other lease below.
            let pass = async {
                let found = match self.dispatch(&workers, &mut tasks).await {
                    Ok(found) => found,
                    Err(e) => {
                        tracing::warn!(error = %e, "job dispatch failed; retrying");
                        Found::Work
                    }
                };
                if published.is_none_or(|at| at.elapsed() >= QUEUE_METRICS_EVERY) {
                    published = Some(tokio::time::Instant::now());
                    self.publish_queue_metrics().await;
                    self.purge_finished().await;
                }
                found
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                found = pass => wait = PACE.wait(found, clock::epoch_ms()),
            }
        }
        // Let running jobs finish within the grace period, then return what is still leased.
        let finished =
            tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
        if finished.is_err() {
            tracing::warn!(
                abandoned = tasks.len(),
                "background jobs still running after the shutdown grace period; their leases go back to the queue"
            );
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
        callbacks.abort();
        flush.abort();
        spool.abort();
        // Bounded as every statement a stopping replica must not wait on: a store that does not
        // answer lets the leases expire instead of holding the exit.
        let released = self
            .store
            .release(&self.dispatcher.owner, clock::epoch_ms());
        match crate::store::within(STORE_WAIT, released).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(released = n, "returned job leases to the queue"),
            Err(e) => tracing::warn!(error = %e, "could not return job leases; they expire"),
        }
    }

    /// One dispatch pass: tells the tools which of them have due jobs (probe priority), claims
    /// what may run now, and runs each claimed job on its own task. What it found: work while
    /// any job is due (whether or not it could be claimed), else when the next falls due.
    async fn dispatch(
        &self,
        workers: &Arc<Semaphore>,
        tasks: &mut JoinSet<()>,
    ) -> Result<Found, StoreError> {
        // A result of this process waits for the store: it lands first (see `land.rs`).
        if self.unstored.any() {
            return Ok(Found::Work);
        }
        // Jobs a claim took whose answer was lost go back first, so this pass may claim them.
        self.dispatcher.lost.hand_back(&self.store).await?;
        let now = clock::now();
        let lease = lease_ms(&self.gateway, self.runner.config.lease_margin);
        self.dispatcher
            .lease_ms
            .store(lease, std::sync::atomic::Ordering::Relaxed);
        let due = self.store.due_tools(clock::epoch_ms()).await?;
        let share = self.gateway.client_share();
        let tools: Vec<ToolState> = self
            .gateway
            .tools()
            .iter()
            .map(|tool| {
                tool.set_background_due(due.iter().any(|t| t == tool.spec.name));
                ToolState::of(tool, share, now)
            })
            .collect();
        if due.is_empty() {
            // Nothing a claim could take: an empty claim would still be a statement a pass.
            return Ok(Found::of(false, [self.store.next_due().await?]));
        }
        let claimed = self
            .dispatcher
            .claim(&self.store, &tools, &due, workers)
            .await?;
        for claim in claimed {
            let runner = Arc::clone(&self.runner);
            tasks.spawn(async move {
                runner
                    .run(claim.job, &claim.lease, claim.claimed_at, &claim.provider)
                    .await;
                drop(claim.worker);
            });
        }
        Ok(Found::Work)
    }

    /// Deletes the jobs that ended more than the retention ago, in batches (every replica does
    /// it; a job deleted twice is deleted once). A store that does not answer is asked again
    /// at the next purge.
    async fn purge_finished(&self) {
        let retention = i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX);
        let before = clock::epoch_ms().saturating_sub(retention);
        let mut purged = 0;
        for _ in 0..10 {
            match self.store.purge(before, PURGE_BATCH).await {
                Ok(n) => {
                    purged += n;
                    if n < u64::from(PURGE_BATCH) {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not purge finished jobs; trying again later");
                    break;
                }
            }
        }
        if purged > 0 {
            tracing::info!(purged, "finished jobs past their retention deleted");
        }
    }

    /// Creates the job counters and latency histograms of every tool served now at zero, so
    /// `rate()` and `increase()` see the first job end and the first callback (a series born at
    /// 1 reads as no change). Again on each queue publication, for tools a reload added.
    fn register_job_series(&self) {
        let metrics = self.telemetry.metrics();
        metrics.register_job_callbacks();
        for tool in self.gateway.tools() {
            metrics.register_job_tool(tool.spec.name);
        }
    }

    /// Queue depth by tool and state and the oldest due job's age, for `/metrics`.
    async fn publish_queue_metrics(&self) {
        self.register_job_series();
        let stats = match self.store.stats(clock::epoch_ms()).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "could not read queue figures");
                return;
            }
        };
        let metrics = self.telemetry.metrics();
        for tool in self.gateway.tools() {
            let name = tool.spec.name;
            for status in JobStatus::ALL {
                let n = stats
                    .depth
                    .iter()
                    .find(|(t, s, _)| t == name && *s == status)
                    .map_or(0, |(_, _, n)| *n);
                metrics.set_queue_depth(name, status.as_str(), n);
            }
            let age = stats
                .oldest_due_age_ms
                .iter()
                .find(|(t, _)| t == name)
                .map_or(0, |(_, ms)| u64::try_from(*ms).unwrap_or(0));
            metrics.set_oldest_due_job_age(name, Duration::from_millis(age));
        }
    }
}
