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
//! After a pause with no rate known, one probe job goes first fleet-wide (the pacer's rule): the
//! replica whose reservation draws it writes that into the shared row, so the others reserve
//! nothing until it is answered.
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
/// The wait before trying a step again after another replica wrote the row first; it doubles
/// per conflict, up to [`MAX_SWAP_BACKOFF`] (the whole step stays within [`STORE_WAIT`]).
const FIRST_SWAP_BACKOFF: Duration = Duration::from_millis(2);
const MAX_SWAP_BACKOFF: Duration = Duration::from_millis(50);

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
    /// Per bucket, this process's turn at the shared row and the successes waiting for it.
    turns: Mutex<HashMap<String, Arc<Turn>>>,
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
            turns: Mutex::default(),
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
            // Teaches nothing of the limit, but answers a probe after a pause (no 429), which
            // only this replica's copy can be waiting for: it claimed the probe.
            Answer::Other if self.probing(provider) => {
                self.step(provider, move |p, _| p.answered(claimed_at))
                    .await;
                return;
            }
            Answer::Other => return,
            Answer::Succeeded if self.shared.is_some() => {
                // Counted by the next write of this bucket, whichever step makes it: a burst
                // of successes is one write, not one compare-and-swap race each.
                let bucket = self.limits.bucket(provider);
                self.turn(&bucket).wait(claimed_at);
                self.shared_or_local(provider, Write::IfWaiting, |_, _| ())
                    .await;
                return;
            }
            Answer::Succeeded => {
                self.step(provider, move |p, _| p.succeeded(claimed_at))
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

    /// Whether this process's copy of `provider`'s pacer has a probe out.
    fn probing(&self, provider: &str) -> bool {
        let bucket = self.limits.bucket(provider);
        self.pacers().get(&bucket).is_some_and(Pacer::probing)
    }

    fn pacers(&self) -> MutexGuard<'_, HashMap<String, Pacer>> {
        // A poisoned lock only means a panic elsewhere; the map is still usable.
        self.local.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies `step` to the pacer of `provider`'s bucket (its name, or its account with
    /// `[quota] bucket_key = "provider_and_credential"`): the shared one when it answers in
    /// time, else the local copy.
    async fn step<R>(&self, provider: &str, step: impl Fn(&mut Pacer, Instant) -> R) -> R {
        self.shared_or_local(provider, Write::Always, step).await
    }

    /// [`Quotas::step`], with this process's waiting successes counted first. With
    /// [`Write::IfWaiting`], nothing is written when another step has counted them already.
    ///
    /// Steps of one bucket take turns in this process (its dispatcher and workers do not race
    /// each other's compare-and-swap; only other replicas' writes make a step read again), and
    /// successes wait for the next turn, so a burst of them costs one write. Waiting successes
    /// a step could not write (the store did not answer in time) wait for the next one; while
    /// the replica paces locally they are counted by its local copy.
    async fn shared_or_local<R>(
        &self,
        provider: &str,
        write: Write,
        step: impl Fn(&mut Pacer, Instant) -> R,
    ) -> R {
        let bucket = self.limits.bucket(provider);
        let provider = bucket.as_str();
        let turn = self.turn(provider);
        if let Some(shared) = &self.shared
            && self.store_worth_trying()
        {
            let stepped = bounded(async {
                let _turn = turn.at_row.lock().await;
                let waiting = Waiting::take(&turn);
                if write == Write::IfWaiting && waiting.at.is_empty() {
                    return Ok(None);
                }
                let r = self
                    .shared_step(shared, provider, &|p: &mut Pacer, now| {
                        waiting.at.iter().for_each(|at| p.succeeded(*at));
                        step(p, now)
                    })
                    .await?;
                waiting.counted();
                Ok(Some(r))
            });
            match stepped.await {
                Ok(r) => {
                    if self.degraded.swap(false, Ordering::Relaxed) {
                        tracing::info!(
                            "the database answers again: background pacing is shared by the fleet again"
                        );
                    }
                    if let Some(r) = r {
                        return r;
                    }
                    // Only with `Write::IfWaiting`, whose step is a no-op kept for its value.
                    let now = clock::now();
                    return step(&mut Pacer::new(), now);
                }
                Err(e) => self.went_local(&e),
            }
        }
        let now = clock::now();
        let waiting = Waiting::take(&turn);
        let mut pacers = self.pacers();
        let pacer = pacers.entry(provider.to_string()).or_default();
        waiting.at.iter().for_each(|at| pacer.succeeded(*at));
        waiting.counted();
        step(pacer, now)
    }

    /// This process's turn at `bucket`'s shared row.
    fn turn(&self, bucket: &str) -> Arc<Turn> {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(turns.entry(bucket.to_string()).or_default())
    }

    /// Reads the shared pacer, applies `step`, and writes it back if no other replica wrote
    /// it meanwhile; else tries again, after a short doubling wait, until it lands (the caller
    /// bounds the whole by [`STORE_WAIT`]). A conflict is not an absent database: giving up on
    /// it would apply the step to the local copy only and lose it from the fleet's count (a
    /// success not counted makes the fleet learn a lower allowance than the provider's).
    async fn shared_step<R>(
        &self,
        shared: &SharedPacers,
        provider: &str,
        step: &impl Fn(&mut Pacer, Instant) -> R,
    ) -> Result<R, StoreError> {
        let mut backoff = FIRST_SWAP_BACKOFF;
        loop {
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
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_SWAP_BACKOFF);
        }
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

/// Whether a step writes the bucket when it has nothing of its own to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// Always (its step changes the pacer).
    Always,
    /// Only to count successes still waiting.
    IfWaiting,
}

/// One bucket's turn in this process: held across one shared step, and the claim times of the
/// successes the next step counts.
#[derive(Debug, Default)]
struct Turn {
    at_row: tokio::sync::Mutex<()>,
    successes: Mutex<Vec<Instant>>,
}

impl Turn {
    /// A success of a job claimed at `claimed_at`, for the next step to count.
    fn wait(&self, claimed_at: Instant) {
        self.successes().push(claimed_at);
    }

    fn successes(&self) -> MutexGuard<'_, Vec<Instant>> {
        self.successes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Successes taken for one step: handed back to their turn unless the step counted them (a
/// step cut off by its time bound drops this, and they wait for the next one).
struct Waiting<'a> {
    turn: &'a Turn,
    at: Vec<Instant>,
}

impl<'a> Waiting<'a> {
    fn take(turn: &'a Turn) -> Self {
        let at = std::mem::take(&mut *turn.successes());
        Waiting { turn, at }
    }

    /// The step counted them.
    fn counted(mut self) {
        self.at.clear();
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.at.is_empty() {
            self.turn.successes().append(&mut self.at);
        }
    }
}

/// `work`, given at most [`STORE_WAIT`].
async fn bounded<R>(work: impl Future<Output = Result<R, StoreError>>) -> Result<R, StoreError> {
    crate::store::within(STORE_WAIT, work).await
}

#[cfg(test)]
mod tests;
