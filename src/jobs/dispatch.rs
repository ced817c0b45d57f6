//! Dispatch: which due jobs this process claims now, and how many.
//!
//! A pass never claims more jobs than there are free workers, never claims for a tool whose
//! breakers are all open (its jobs would only be requeued), and claims the tools of a provider
//! whose limit is known ([`Pacing`]) on their own, at most what that provider's pacer allows
//! now, so a backlog stays under the limit instead of finding it once per window. A provider's
//! limit is one allowance for every tool it serves: its tools share one pacer. Every claimed job takes a
//! worker permit at once, so the next claim of the same pass sees the workers it left.
//!
//! Time comes from [`crate::clock`] (epoch milliseconds for the store, tokio instants for the
//! pacers), so the whole pass runs on a paused clock in tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::pace::Pacer;
use super::store::{Job, JobStore, StoreError};
use crate::call::Verdict;
use crate::clock;
use crate::providers::RateLimits;

/// A served tool as a dispatch pass sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolState {
    /// The tool's name.
    pub(super) name: String,
    /// Every breaker of the tool rejects everything now (open or forced open).
    pub(super) all_open: bool,
    /// The provider whose rate limit paces the tool's jobs: the first of its chain, which a
    /// background call reaches unless its breaker is open.
    pub(super) provider: String,
}

/// A job this process claimed, with the worker that will run it.
#[derive(Debug)]
pub(super) struct Claimed {
    /// The job, leased to this process.
    pub(super) job: Job,
    /// When it was claimed (the pacer counts successes of jobs claimed in its window).
    pub(super) claimed_at: Instant,
    /// The provider whose pacer it was claimed under.
    pub(super) provider: String,
    /// The worker slot; dropping it frees the worker.
    pub(super) worker: OwnedSemaphorePermit,
}

/// Per provider: its pacer, fed by what the provider announces, its configured limit and the
/// 429s of its tools' jobs. Shared by dispatch (which asks how many jobs may be claimed) and
/// the workers (which report what the provider answered).
#[derive(Debug, Default)]
pub(super) struct Pacing {
    /// A short `std::sync::Mutex`: held for a few arithmetic steps, never across an await.
    pacers: Mutex<HashMap<String, Pacer>>,
    /// What the providers' answers and configuration say about their limits.
    pub(super) limits: Arc<RateLimits>,
}

impl Pacing {
    /// Pacing from the limits the providers announce (and are configured with).
    pub(super) fn new(limits: Arc<RateLimits>) -> Self {
        Pacing {
            pacers: Mutex::default(),
            limits,
        }
    }

    fn pacers(&self) -> MutexGuard<'_, HashMap<String, Pacer>> {
        // A poisoned lock only means a panic elsewhere; the map is still usable.
        self.pacers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many jobs of `provider`'s tools may be claimed now; `None` when nothing limits them.
    fn allowance(&self, provider: &str, now: Instant) -> Option<u32> {
        let known = self.limits.get(provider);
        let mut pacers = self.pacers();
        match pacers.get_mut(provider) {
            Some(p) => p.allowance(now, known.as_ref()),
            None if known.is_some() => pacers
                .entry(provider.to_string())
                .or_default()
                .allowance(now, known.as_ref()),
            None => None,
        }
    }

    fn claimed(&self, provider: &str, at: Instant) {
        self.pacers()
            .entry(provider.to_string())
            .or_default()
            .claimed(1, at);
    }

    /// Learns from a background outcome of a job claimed at `claimed_at` under `provider`.
    pub(super) fn observe(&self, provider: &str, outcome: &Verdict, claimed_at: Instant) {
        let mut pacers = self.pacers();
        let Some(pacer) = pacers.get_mut(provider) else {
            return;
        };
        match outcome {
            Verdict::Done(_) => pacer.succeeded(claimed_at),
            Verdict::Later {
                rate_limited: Some(hit),
                ..
            } => {
                pacer.rate_limited(clock::now(), hit.retry_after);
                if let Some(rate) = pacer.rate() {
                    tracing::info!(%provider, jobs_per_s = rate, "pacing background jobs to the provider's rate limit");
                }
            }
            _ => {}
        }
    }
}

/// Claims due jobs for this process.
#[derive(Debug)]
pub(super) struct Dispatcher {
    /// This process's lease owner name.
    pub(super) owner: String,
    /// What each claimed job's lease lasts (the longest tool deadline plus a margin).
    pub(super) lease_ms: i64,
    pub(super) pacing: Arc<Pacing>,
}

impl Dispatcher {
    /// One pass: claims what may run now among `due` (the tools with due jobs), at most one job
    /// per free permit of `workers`.
    pub(super) async fn claim<S: JobStore>(
        &self,
        store: &S,
        tools: &[ToolState],
        due: &[String],
        workers: &Arc<Semaphore>,
    ) -> Result<Vec<Claimed>, StoreError> {
        let now = clock::now();
        let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        let mut skip: Vec<String> = tools
            .iter()
            .filter(|t| t.all_open)
            .map(|t| t.name.clone())
            .collect();
        // The tools of a provider whose limit is known are claimed on their own, at most what
        // its pacer allows now; the rest together, as many as there are free workers.
        let mut providers: Vec<&str> = tools.iter().map(|t| t.provider.as_str()).collect();
        providers.sort_unstable();
        providers.dedup();
        let mut paced = Vec::new();
        for provider in providers {
            let Some(allowed) = self.pacing.allowance(provider, now) else {
                continue;
            };
            let mine: Vec<&ToolState> = tools.iter().filter(|t| t.provider == provider).collect();
            let due_here = mine
                .iter()
                .any(|t| !skip.contains(&t.name) && due.contains(&t.name));
            if allowed > 0 && due_here {
                let others: Vec<String> = names
                    .iter()
                    .filter(|n| skip.contains(n) || !mine.iter().any(|t| &t.name == *n))
                    .cloned()
                    .collect();
                paced.push((allowed, others));
            }
            skip.extend(mine.iter().map(|t| t.name.clone()));
        }
        let mut claimed = Vec::new();
        for (allowed, others) in paced {
            self.claim_some(store, workers, allowed, &others, tools, &mut claimed)
                .await?;
        }
        self.claim_some(store, workers, u32::MAX, &skip, tools, &mut claimed)
            .await?;
        Ok(claimed)
    }

    /// Claims up to `max` due jobs (never more than there are free workers) of the tools not in
    /// `skip`.
    async fn claim_some<S: JobStore>(
        &self,
        store: &S,
        workers: &Arc<Semaphore>,
        max: u32,
        skip: &[String],
        tools: &[ToolState],
        claimed: &mut Vec<Claimed>,
    ) -> Result<(), StoreError> {
        let free = u32::try_from(workers.available_permits())
            .unwrap_or(u32::MAX)
            .min(max);
        if free == 0 {
            return Ok(());
        }
        let jobs = store
            .claim(&self.owner, clock::epoch_ms(), self.lease_ms, free, skip)
            .await?;
        let claimed_at = clock::now();
        for job in jobs {
            let provider = tools
                .iter()
                .find(|t| t.name == job.tool)
                .map_or_else(|| job.tool.clone(), |t| t.provider.clone());
            self.pacing.claimed(&provider, claimed_at);
            // Only this pass takes permits, and it claimed no more than were free.
            let Ok(worker) = Arc::clone(workers).try_acquire_owned() else {
                break;
            };
            claimed.push(Claimed {
                job,
                claimed_at,
                provider,
                worker,
            });
        }
        Ok(())
    }
}
