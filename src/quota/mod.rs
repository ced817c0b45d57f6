//! Provider quotas: how many background jobs may be sent to each provider now, one allowance
//! per provider for the whole fleet.
//!
//! [`pacer`] is the pure allowance and token bucket of one provider (time passed in). On one
//! node the pacers live in this process. A fleet on PostgreSQL keeps them in the database
//! ([`shared`], migration `quota_1_pacers`): what one replica learns from a 429, the pause it
//! causes and every claim any replica makes draw on the same row, so the fleet's total stays at
//! the target share of the provider's limit instead of one share per replica.
//!
//! The hot path of an interactive call never waits on the database: the call path counts its
//! requests per provider in memory ([`RateLimits::spent_interactive`]), and a flush every
//! [`FLUSH_EVERY`] spends them from the shared bucket in one write per provider, so background
//! claims slow down when interactive calls use the quota, never the other way round.
//!
//! One allowance is one bucket, keyed by the provider's name, or by its name and a digest of its
//! credential (`[quota] bucket_key`, [`RateLimits::bucket`]): tools of one provider share it,
//! and so do replicas calling it with the same account.
//!
//! When the database does not answer within [`STORE_WAIT`], each replica goes on with its local
//! copy of the pacer (the last shared state it saw) and tries the database again after
//! [`RETRY_STORE_AFTER`]: no dispatcher stalls, and the fleet rejoins the shared bucket when
//! the database is back. It says so once in the log each way.

pub mod pacer;
pub(crate) mod shared;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::clock;
use crate::providers::RateLimits;
use crate::store::{Db, StoreError};
use pacer::Pacer;
use shared::SharedPacers;

/// The longest a pacer step waits for the database before going on locally.
pub const STORE_WAIT: Duration = Duration::from_secs(1);
/// After the database failed, how long replicas pace locally before trying it again.
pub const RETRY_STORE_AFTER: Duration = Duration::from_secs(2);
/// How often interactive calls' requests are spent from the shared buckets.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// How many times a step is tried when other replicas keep writing the same row first.
const SWAP_TRIES: u32 = 5;

/// What a provider answered a background job, as the pacer learns from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A success.
    Succeeded,
    /// 429, with the provider's `Retry-After` if it sent one.
    RateLimited(Option<Duration>),
    /// Anything else teaches nothing about the limit.
    Other,
}

/// Every provider's pacer, local or shared by the fleet.
#[derive(Debug)]
pub struct Quotas {
    /// What providers announce and are configured with (read by every step).
    limits: Arc<RateLimits>,
    /// The pacers of this process: the only ones on one node, and in a fleet the last shared
    /// state seen, to go on from when the database is away. A short `std::sync::Mutex`: held
    /// for a few arithmetic steps, never across an await.
    local: Mutex<HashMap<String, Pacer>>,
    /// The fleet's pacers, when the store is shared.
    shared: Option<SharedPacers>,
    /// The database failed lately: pace locally until `retry_at`.
    degraded: AtomicBool,
    retry_at: Mutex<Option<Instant>>,
}

impl Quotas {
    /// Pacers kept in this process only (one node).
    pub fn local(limits: Arc<RateLimits>) -> Self {
        Quotas {
            limits,
            local: Mutex::default(),
            shared: None,
            degraded: AtomicBool::new(false),
            retry_at: Mutex::new(None),
        }
    }

    /// Pacers shared through `db` by every replica on it.
    pub fn shared(limits: Arc<RateLimits>, db: Db) -> Self {
        Quotas {
            shared: Some(SharedPacers::new(db)),
            ..Quotas::local(limits)
        }
    }

    /// Whether this process paces from the shared pacers.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Whether the shared pacers are away and this process paces on its own.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Creates the shared table when missing; on failure the replica paces locally.
    ///
    /// Not bounded by [`STORE_WAIT`]: this runs once at start, where waiting for the database
    /// costs no caller anything, while giving up would leave the table missing and the replica
    /// local until restarted (a migration takes a lock other starting replicas may hold).
    pub async fn prepare(&self) {
        if let Some(shared) = &self.shared
            && let Err(e) = shared.migrate(clock::epoch_ms()).await
        {
            self.went_local(&e);
        }
    }

    /// Reserves up to `want` claims of `provider`'s jobs: `Some(n)` when its pacer limits them
    /// (`n` are taken from the bucket now; hand back what is not claimed with
    /// [`Quotas::refund`]), `None` when nothing limits them.
    pub async fn reserve(&self, provider: &str, want: u32) -> Option<u32> {
        let known = self.limits.get(provider);
        self.step(provider, move |p, now| {
            let granted = p.allowance(now, known.as_ref())?.min(want);
            p.claimed(granted, now);
            Some(granted)
        })
        .await
    }

    /// Hands back `n` reserved claims that were not made.
    pub async fn refund(&self, provider: &str, n: u32) {
        if n > 0 {
            self.step(provider, move |p, _| p.refund(n)).await;
        }
    }

    /// Records `n` claims of an unpaced provider's jobs (they start its counting window).
    pub async fn claimed(&self, provider: &str, n: u32, at: Instant) {
        if n > 0 {
            self.step(provider, move |p, _| p.claimed(n, at)).await;
        }
    }

    /// Learns from what `provider` answered a job claimed at `claimed_at`.
    pub async fn observe(&self, provider: &str, answer: Answer, claimed_at: Instant) {
        let rate = match answer {
            Answer::Other => return,
            Answer::Succeeded => {
                self.step(provider, move |p, _| {
                    p.succeeded(claimed_at);
                    p.rate()
                })
                .await;
                return;
            }
            Answer::RateLimited(retry_after) => {
                self.step(provider, move |p, now| {
                    p.rate_limited(now, retry_after);
                    p.rate()
                })
                .await
            }
        };
        if let Some(rate) = rate {
            tracing::info!(%provider, jobs_per_s = rate, "pacing background jobs to the provider's rate limit");
        }
    }

    /// Spends the requests interactive calls sent since the last flush from their providers'
    /// buckets.
    pub async fn flush_interactive(&self) {
        for (provider, n) in self.limits.take_interactive() {
            self.step(&provider, move |p, _| p.spent(n)).await;
        }
    }

    fn pacers(&self) -> MutexGuard<'_, HashMap<String, Pacer>> {
        // A poisoned lock only means a panic elsewhere; the map is still usable.
        self.local.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies `step` to the pacer of `provider`'s bucket (its name, or its account with
    /// `[quota] bucket_key = "provider_and_credential"`): the shared one when it answers in
    /// time, else the local copy.
    async fn step<R>(&self, provider: &str, step: impl Fn(&mut Pacer, Instant) -> R) -> R {
        let bucket = self.limits.bucket(provider);
        let provider = bucket.as_str();
        if let Some(shared) = &self.shared
            && self.store_worth_trying()
        {
            match bounded(self.shared_step(shared, provider, &step)).await {
                Ok(r) => {
                    if self.degraded.swap(false, Ordering::Relaxed) {
                        tracing::info!(
                            "the database answers again: background pacing is shared by the fleet again"
                        );
                    }
                    return r;
                }
                Err(e) => self.went_local(&e),
            }
        }
        let now = clock::now();
        step(self.pacers().entry(provider.to_string()).or_default(), now)
    }

    async fn shared_step<R>(
        &self,
        shared: &SharedPacers,
        provider: &str,
        step: &impl Fn(&mut Pacer, Instant) -> R,
    ) -> Result<R, StoreError> {
        for _ in 0..SWAP_TRIES {
            let (now, now_ms) = (clock::now(), clock::epoch_ms());
            let (mut pacer, version) = match shared.read(provider).await? {
                Some(stored) => (
                    Pacer::from_record(&stored.record, now, now_ms),
                    stored.version,
                ),
                None => (Pacer::new(), 0),
            };
            let r = step(&mut pacer, now);
            if version == 0 && pacer == Pacer::new() {
                // Nothing to keep: no row until there is something to share.
                return Ok(r);
            }
            if shared
                .swap(provider, &pacer.to_record(now, now_ms), version, now_ms)
                .await?
            {
                self.pacers().insert(provider.to_string(), pacer);
                return Ok(r);
            }
        }
        Err(StoreError(format!(
            "{provider}'s pacer was written by other replicas {SWAP_TRIES} times in a row"
        )))
    }

    fn store_worth_trying(&self) -> bool {
        if !self.is_degraded() {
            return true;
        }
        let mut retry_at = self.retry_at.lock().unwrap_or_else(|e| e.into_inner());
        match *retry_at {
            Some(at) if clock::now() < at => false,
            _ => {
                *retry_at = Some(clock::now() + RETRY_STORE_AFTER);
                true
            }
        }
    }

    fn went_local(&self, e: &StoreError) {
        *self.retry_at.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(clock::now() + RETRY_STORE_AFTER);
        if !self.degraded.swap(true, Ordering::Relaxed) {
            tracing::warn!(error = %e, "the database does not answer: background pacing goes on with this replica's own copy until it does");
        }
    }
}

/// `work`, given at most [`STORE_WAIT`].
async fn bounded<R>(work: impl Future<Output = Result<R, StoreError>>) -> Result<R, StoreError> {
    crate::store::within(STORE_WAIT, work).await
}

#[cfg(test)]
mod tests;
