//! The job system: what the HTTP edge submits to, and the loop that dispatches, runs and calls
//! back until shutdown.
//!
//! One dispatcher per process wakes every [`PACE`]`.busy` while jobs are due, when a submission
//! wakes it, and otherwise when the next job falls due (at most [`PACE`]`.idle` later), marks
//! which tools have due jobs (so half-open probes go to them first), claims
//! ([`Dispatcher::claim`]) and runs each claimed job on its own task ([`Runner::run`]). A second
//! loop sends callbacks ([`Sender::run`]). Both stop on the shutdown token; leases still held are
//! handed back so another replica (or the next start) picks the jobs up at once.
//!
//! On PostgreSQL a replica also keeps a [`Spool`]: submissions the store does not take within a
//! second wait in a local file, and a third loop moves them into the store when it answers.
//!
//! This file is what the API asks of the jobs (submit, read, list, cancel); the loops and the
//! stop are in `system/running.rs`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::callbacks::allowlist::Allowlists;
use super::callbacks::signing::Signing;
use super::callbacks::{Sender, guard};
use super::dispatch::Dispatcher;
use super::land::Unstored;
use super::policy::RequeuePolicy;
use super::run::Runner;
use super::seen::Seen;
use super::spool::{Kept, Spool};
use super::store::{Job, JobFilter, JobStore, NewJob, STORE_WAIT, Store, StoreError};
use super::submit::{self, CallbackRules, SubmitError};
use crate::call::Gateway;
use crate::clients::ClientName;
use crate::clock;
use crate::config::JobsConfig;
use crate::fingerprint::canonical_json;
use crate::policy::SplitMix;
use crate::quota::Quotas;
use crate::store::Db;
use crate::store::pace::Pace;
use crate::telemetry::Telemetry;
use crate::texts::call as texts;

mod running;

/// How often the dispatcher looks for due jobs when nothing wakes it: every 250 ms while some
/// are due, else when the next falls due, at most 2 s later (`store::pace`).
const PACE: Pace = Pace::busy_every(Duration::from_millis(250));
/// How often queue figures are published (and finished jobs purged).
const QUEUE_METRICS_EVERY: Duration = Duration::from_secs(5);
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
        let callbacks_due = Arc::new(Notify::new());
        JobSystem {
            callback_rules: CallbackRules {
                allowlists: allowlists.clone(),
                signing: signing.clone(),
            },
            workers: config.workers,
            wake: Notify::new(),
            dispatcher: Dispatcher {
                owner,
                claims: Default::default(),
                lost: Default::default(),
                lease_ms: std::sync::atomic::AtomicI64::new(lease),
                quotas: Arc::clone(&quotas),
                max_age: config.max_age,
                unserved_told: Default::default(),
            },
            runner: Arc::new(Runner {
                store: store.clone(),
                gateway: Arc::clone(&gateway),
                config,
                policy: RequeuePolicy::standard(),
                jitter: SplitMix::new(clock::epoch_ms() as u64),
                quotas: Arc::clone(&quotas),
                unstored: unstored.clone(),
                seen: Arc::clone(&seen),
                telemetry: Arc::clone(&telemetry),
                callbacks_due: Arc::clone(&callbacks_due),
            }),
            callbacks: Arc::new(Sender {
                store: store.clone(),
                allowlists,
                signing,
                http,
                telemetry: Arc::clone(&telemetry),
                unstored: unstored.clone(),
                wake: callbacks_due,
                deliveries: super::callbacks::deliveries(),
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

    /// Whether submissions are spooled on this replica now, because the store failed one lately
    /// (no statement is run: for the alert rules' tick).
    pub fn spooling(&self) -> bool {
        self.spool.as_ref().is_some_and(|spool| spool.store_away())
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

    /// `[jobs] max_age`: how old a job may grow without running before it ends as dead (a
    /// job of a tool no replica serves included).
    pub fn max_age(&self) -> std::time::Duration {
        self.dispatcher.max_age
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

    /// The job of `client`'s idempotency `key` for `tool` while it has not ended (queued,
    /// waiting to be tried again, running), as the store holds it; `None` when there is none
    /// or it has ended. An interactive booking under that key must not be sent beside it. A
    /// store that has not answered within [`STORE_WAIT`] is an error.
    pub async fn live_by_key(
        &self,
        client: &ClientName,
        tool: &str,
        key: &str,
    ) -> Result<Option<Job>, StoreError> {
        let job = crate::store::within(STORE_WAIT, self.store.by_key(client, tool, key)).await?;
        Ok(job.filter(|j| !j.status.is_final()))
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
