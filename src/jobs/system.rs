//! The job system: what the HTTP edge submits to, and the loop that dispatches, runs and calls
//! back until shutdown.
//!
//! One dispatcher per process wakes every [`POLL`] (or when a submission wakes it), marks
//! which tools have due jobs (so half-open probes go to them first), claims
//! ([`Dispatcher::claim`]) and runs each claimed job on its own task ([`Runner::run`]). A second
//! loop sends callbacks ([`Sender::run`]). Both stop on the shutdown token; leases still held are
//! handed back so another replica (or the next start) picks the jobs up at once.
//!
//! On PostgreSQL a replica also keeps a [`Spool`]: submissions the store does not take within a
//! second wait in a local file, and a third loop moves them into the store when it answers.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::callbacks::allowlist::Allowlists;
use super::callbacks::signing::Signing;
use super::callbacks::{Sender, guard};
use super::dispatch::{Dispatcher, ToolState};
use super::land::Unstored;
use super::policy::RequeuePolicy;
use super::run::Runner;
use super::seen::Seen;
use super::spool::{self, Kept, Spool};
use super::store::{Job, JobFilter, JobStatus, JobStore, NewJob, STORE_WAIT, Store, StoreError};
use super::submit::{self, CallbackRules, SubmitError};
use crate::call::Gateway;
use crate::clients::ClientName;
use crate::clock;
use crate::config::JobsConfig;
use crate::fingerprint::canonical_json;
use crate::policy::SplitMix;
use crate::quota::{self, Quotas};
use crate::store::Db;
use crate::telemetry::Telemetry;
use crate::texts::call as texts;

/// How often the dispatcher looks for due jobs when nothing wakes it.
const POLL: Duration = Duration::from_millis(250);
/// Queue figures are published every this many polls (about every 5 s).
const QUEUE_METRICS_EVERY: u32 = 20;
/// Finished jobs deleted per statement of a purge (a purge runs up to ten of them).
const PURGE_BATCH: u32 = 1000;
/// How long finished jobs are kept when nothing else is configured (`[store] job_retention`).
const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// The lease's base when no tool is served (no job can run then anyway).
const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// Everything background mode needs, shared by the HTTP edge and the workers.
#[derive(Debug)]
pub struct JobSystem {
    store: Store,
    gateway: Arc<Gateway>,
    telemetry: Arc<Telemetry>,
    callback_rules: CallbackRules,
    /// Worker tasks running jobs at once.
    workers: u32,
    /// Wakes the dispatcher when a job is submitted.
    wake: Notify,
    dispatcher: Dispatcher,
    runner: Arc<Runner>,
    callbacks: Arc<Sender>,
    /// The providers' allowances (the dispatcher's and the runner's too).
    quotas: Arc<Quotas>,
    /// Where submissions wait while the store does not answer (PostgreSQL only).
    spool: Option<Spool>,
    /// Writes waiting for the store: while any waits, nothing is claimed.
    unstored: Unstored,
    /// The jobs this replica last saw, answered while the store does not answer.
    seen: Arc<Seen>,
    /// How long a finished job is kept after its last change (`[store] job_retention`).
    retention: Duration,
}

/// A job as the job API finds it.
#[derive(Debug, Clone)]
pub struct Found {
    /// The job.
    pub job: Job,
    /// The replica whose spool holds it while the store does not answer; `None` when it is in
    /// the store.
    pub spooled_on: Option<String>,
    /// When the store did not answer: when (epoch ms) this replica last saw the job in the
    /// state given; `None` when the job was read just now.
    pub seen_at_ms: Option<i64>,
}

impl Found {
    /// A job read just now, from the store.
    fn stored(job: Job) -> Self {
        Found {
            job,
            spooled_on: None,
            seen_at_ms: None,
        }
    }

    /// A job as this replica last saw it.
    fn sighted(sighting: &super::seen::Sighting) -> Self {
        Found {
            job: Job::clone(&sighting.job),
            spooled_on: None,
            seen_at_ms: Some(sighting.at_ms),
        }
    }
}

/// A job listing as the job API shows it.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The jobs, newest first.
    pub jobs: Vec<Found>,
    /// `false` when the store did not answer: then only the jobs this replica holds in its
    /// spool or has seen are listed.
    pub complete: bool,
}

impl JobSystem {
    /// A job system over `store`, its callbacks held to `allowlists` (a `Vec<Url>` is the
    /// gateway's list for every client). Callbacks are refused unless a secret is configured.
    pub fn new(
        store: Store,
        gateway: Arc<Gateway>,
        telemetry: Arc<Telemetry>,
        config: JobsConfig,
        allowlists: impl Into<Allowlists>,
        signing: impl Into<Signing>,
    ) -> Self {
        let allowlists = allowlists.into();
        let signing = signing.into();
        let http = guard::client()
            .map_err(|e| tracing::error!(error = %e, "cannot build the callback HTTP client; callbacks will fail"))
            .ok();
        let owner = format!("{}-{}", std::process::id(), uuid::Uuid::now_v7().simple());
        let unstored = Unstored::default();
        let seen = Arc::new(Seen::default());
        let lease = lease_ms(&gateway, config.lease_margin);
        // A fleet on PostgreSQL paces from one shared bucket per provider; one node on its own.
        let limits = Arc::clone(gateway.rate_limits());
        let quotas = Arc::new(match store.db() {
            Db::Postgres { .. } => Quotas::shared(limits, store.db().clone()),
            Db::Sqlite(_) => Quotas::local(limits),
        });
        JobSystem {
            callback_rules: CallbackRules {
                allowlists: allowlists.clone(),
                signing: signing.clone(),
            },
            workers: config.workers,
            wake: Notify::new(),
            dispatcher: Dispatcher {
                owner: owner.clone(),
                lease_ms: std::sync::atomic::AtomicI64::new(lease),
                quotas: Arc::clone(&quotas),
                max_age: config.max_age,
                unserved_told: Default::default(),
            },
            runner: Arc::new(Runner {
                store: store.clone(),
                gateway: Arc::clone(&gateway),
                config,
                owner,
                policy: RequeuePolicy::standard(),
                jitter: SplitMix::new(clock::epoch_ms() as u64),
                quotas: Arc::clone(&quotas),
                unstored: unstored.clone(),
                seen: Arc::clone(&seen),
                telemetry: Arc::clone(&telemetry),
            }),
            callbacks: Arc::new(Sender {
                store: store.clone(),
                allowlists,
                signing,
                http,
                telemetry: Arc::clone(&telemetry),
                unstored: unstored.clone(),
            }),
            store,
            gateway,
            telemetry,
            quotas,
            spool: None,
            unstored,
            seen,
            retention: DEFAULT_RETENTION,
        }
    }

    /// Whether the job store answers a trivial statement within a second, for `/readyz`, and
    /// takes submissions: a store that failed a submission lately, which this replica spools
    /// until the store takes one again, does not answer, however quickly a `SELECT 1` would
    /// (a lock on the jobs table holds submissions while a connection is free).
    pub async fn store_answers(&self) -> Result<(), StoreError> {
        if let Some(spool) = &self.spool
            && spool.store_away()
        {
            return Err(StoreError(format!(
                "submissions are spooled on this replica until the store takes them ({} waiting)",
                spool.depth()
            )));
        }
        crate::store::within(
            Duration::from_secs(1),
            self.store.db().execute("SELECT 1", &[]),
        )
        .await
        .map(|_| ())
    }

    /// Keeps finished jobs (succeeded, dead, cancelled) for `retention` after their last change
    /// (a callback's delivery included), then deletes them; the default is 7 days.
    pub fn keep_finished_for(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Keeps submissions the store does not take in the SQLite file at `path` (see
    /// [`Spool`]), answering for them as `replica`. Only a PostgreSQL store needs it: a SQLite
    /// store is a local file already.
    pub fn spool_in(mut self, path: std::path::PathBuf, replica: String) -> Self {
        self.spool = Some(Spool::new(path, replica, Arc::clone(&self.telemetry)));
        self
    }

    /// The providers' allowances for background jobs.
    pub fn quotas(&self) -> &Arc<Quotas> {
        &self.quotas
    }

    /// The store (for the job API and metrics).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Validates and stores a background call of `job.client`. With an idempotency key that
    /// client already used for the tool, answers the existing job (`false`) instead of a new one,
    /// if it was asked with the same arguments (whatever their key order); with other arguments
    /// the call is refused (`Invalid`), as an interactive booking's is: the earlier job's result
    /// is not this call's. With a spool, a store that does not answer within a second leaves the
    /// job in the spool.
    pub async fn submit(&self, job: NewJob) -> Result<(Job, bool), SubmitError> {
        submit::check(&self.gateway, &self.callback_rules, &job).await?;
        let asked = job
            .idempotency_key
            .is_some()
            .then(|| canonical_json(&job.arguments));
        let (job, created) = match &self.spool {
            None => self.store.enqueue(job, clock::epoch_ms()).await,
            Some(spool) => spool
                .submit(&self.store, job)
                .await
                .map(|(job, created, kept)| {
                    if kept == Kept::Spool {
                        tracing::debug!(job = %job.id, "job spooled");
                    }
                    (job, created)
                }),
        }
        .map_err(SubmitError::Store)?;
        if !created
            && let Some(asked) = asked
            && canonical_json(&job.arguments) != asked
        {
            return Err(SubmitError::Invalid(texts::job_key_reused(
                &job.tool, &job.id,
            )));
        }
        self.seen.note(&job, clock::epoch_ms());
        self.wake.notify_one();
        Ok((job, created))
    }

    /// Job `id`: from the spool while it waits there, else from the store (a store that does
    /// not answer fails after a second when there is a spool). When the store fails, the job
    /// as this replica last saw it, if it saw it (see `seen.rs`).
    pub async fn find(&self, id: &str) -> Result<Option<Found>, StoreError> {
        let read = match &self.spool {
            None => self.store.get(id).await,
            Some(spool) => {
                if let Some(job) = spool.get(id).await? {
                    return Ok(Some(Found {
                        spooled_on: Some(spool.replica().to_string()),
                        ..Found::stored(job)
                    }));
                }
                // A store that just failed is not waited for when this replica has seen the job.
                match self.seen.get(id) {
                    Some(sighting) if spool.skipping_store() => {
                        return Ok(Some(Found::sighted(&sighting)));
                    }
                    _ => {}
                }
                let read = crate::store::within(STORE_WAIT, self.store.get(id)).await;
                if let Err(e) = &read {
                    spool.store_failed(e);
                }
                read
            }
        };
        match read {
            Ok(job) => {
                if let Some(job) = &job {
                    self.seen.note(job, clock::epoch_ms());
                }
                Ok(job.map(Found::stored))
            }
            Err(e) => self.seen.get(id).map(|s| Some(Found::sighted(&s))).ok_or(e),
        }
    }

    /// Jobs of `client` (every client's for `None`), newest first, filtered as
    /// [`JobStore::list`]. When the store fails: the jobs in this replica's spool and those it
    /// has seen, marked incomplete; an error only when there are none.
    pub async fn list(&self, filter: JobFilter<'_>, limit: u32) -> Result<Listing, StoreError> {
        let listed = self.store.list(filter, limit);
        let read = match &self.spool {
            None => listed.await,
            Some(spool) if spool.skipping_store() => Err(StoreError(
                "the job store failed within the last seconds".to_string(),
            )),
            Some(spool) => {
                let read = crate::store::within(STORE_WAIT, listed).await;
                if let Err(e) = &read {
                    spool.store_failed(e);
                }
                read
            }
        };
        let error = match read {
            Ok(jobs) => {
                let now = clock::epoch_ms();
                jobs.iter().for_each(|job| self.seen.note(job, now));
                return Ok(Listing {
                    jobs: jobs.into_iter().map(Found::stored).collect(),
                    complete: true,
                });
            }
            Err(e) => e,
        };
        let mut jobs: Vec<Found> = match &self.spool {
            Some(spool) => spool
                .list(filter, limit)
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|job| Found {
                    spooled_on: Some(spool.replica().to_string()),
                    ..Found::stored(job)
                })
                .collect(),
            None => Vec::new(),
        };
        for sighting in self.seen.list(filter, limit) {
            if !jobs.iter().any(|f| f.job.id == sighting.job.id) {
                jobs.push(Found::sighted(&sighting));
            }
        }
        if jobs.is_empty() {
            return Err(error);
        }
        jobs.sort_by(|a, b| b.job.id.cmp(&a.job.id));
        jobs.truncate(limit as usize);
        Ok(Listing {
            jobs,
            complete: false,
        })
    }

    /// Cancels `client`'s job `id` if it has not started yet (see [`JobStore::cancel`]);
    /// whether it was cancelled. A job still in this replica's spool is not cancelled (it is
    /// not in the store yet), and neither is a running one.
    pub async fn cancel(&self, id: &str, client: &ClientName) -> Result<bool, StoreError> {
        let cancelled = self.store.cancel(id, client, clock::epoch_ms()).await?;
        if cancelled && let Ok(Some(job)) = self.store.get(id).await {
            self.seen.note(&job, clock::epoch_ms());
        }
        Ok(cancelled)
    }

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
        let mut polls: u32 = 0;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {},
                _ = tokio::time::sleep(POLL) => {},
            }
            while tasks.try_join_next().is_some() {}
            // A shutdown does not wait out a pass the store keeps waiting (its pool waits up to
            // 10 s for a connection to a database out of reach): the grace is the jobs'. A
            // claim cut short here is handed back with every other lease below.
            polls = polls.wrapping_add(1);
            let pass = async {
                if let Err(e) = self.dispatch(&workers, &mut tasks).await {
                    tracing::warn!(error = %e, "job dispatch failed; retrying");
                }
                if polls % QUEUE_METRICS_EVERY == 1 {
                    self.publish_queue_metrics().await;
                    self.purge_finished().await;
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                () = pass => {},
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
    /// what may run now, and runs each claimed job on its own task.
    async fn dispatch(
        &self,
        workers: &Arc<Semaphore>,
        tasks: &mut JoinSet<()>,
    ) -> Result<(), StoreError> {
        // A result of this process waits for the store: it lands first (see `land.rs`).
        if self.unstored.any() {
            return Ok(());
        }
        let now = clock::now();
        let lease = lease_ms(&self.gateway, self.runner.config.lease_margin);
        self.dispatcher
            .lease_ms
            .store(lease, std::sync::atomic::Ordering::Relaxed);
        let due = self.store.due_tools(clock::epoch_ms()).await?;
        let tools: Vec<ToolState> = self
            .gateway
            .tools()
            .iter()
            .map(|tool| {
                let name = tool.spec.name;
                tool.set_background_due(due.iter().any(|t| t == name));
                ToolState {
                    name: name.to_string(),
                    all_open: tool.all_open(now),
                    provider: tool
                        .provider_names()
                        .first()
                        .map_or_else(|| name.to_string(), |p| p.to_string()),
                }
            })
            .collect();
        let claimed = self
            .dispatcher
            .claim(&self.store, &tools, &due, workers)
            .await?;
        for claim in claimed {
            let runner = Arc::clone(&self.runner);
            tasks.spawn(async move {
                runner
                    .run(claim.job, claim.claimed_at, &claim.provider)
                    .await;
                drop(claim.worker);
            });
        }
        Ok(())
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

/// A claimed job's lease in milliseconds: the longest deadline of the tools served now plus
/// `margin`, so no run outlasts its lease.
fn lease_ms(gateway: &Gateway, margin: Duration) -> i64 {
    let lease = gateway
        .tools()
        .iter()
        .map(|t| t.config.deadline)
        .max()
        .unwrap_or(DEFAULT_DEADLINE)
        + margin;
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
}
