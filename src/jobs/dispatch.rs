//! Dispatch: which due jobs this process claims now, and how many.
//!
//! A pass never claims more jobs than there are free workers, never claims for a tool whose
//! breakers are all open (its jobs would only be requeued), never more jobs of a tool whose
//! breakers are half-open than they have probes to start now (one per probe gap: the rest would
//! only be refused and requeued, a row write each, over and over while the probes decide), nor
//! for a tool this replica does not
//! serve until its jobs are past `max_age` (see [`Dispatcher::claim`]), and claims the tools of a
//! provider whose limit is known ([`Pacing`]) on their own, at most what that provider's pacer
//! allows now, so a backlog stays under the limit instead of finding it once per window. A
//! provider's limit is one allowance for every tool it serves: its tools share one pacer. Every
//! claimed job takes a worker permit at once, so the next claim of the same pass sees the workers
//! it left.
//!
//! Time comes from [`crate::clock`] (epoch milliseconds for the store, tokio instants for the
//! pacers), so the whole pass runs on a paused clock in tests. The pacers are the quota room's
//! ([`Quotas`]): a paced provider's claims are reserved from its bucket before they are made,
//! and what was not claimed is handed back, so replicas sharing the bucket never claim the
//! same tokens.
//!
//! Each claim leases its jobs under a name of its own, so a claim whose answer was lost is
//! handed back by that name at the next pass (`dispatch/lost.rs`) rather than left to its lease.
//!
//! While clients are held to a share of each tool, a pass claims no job of a client that holds
//! its whole share of the job's tool on this replica, and no more of a client's jobs than the
//! slots it has left (`dispatch/shares.rs`): those would only be refused and written back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::store::{Job, JobStore, Overdue, ShareRoom, StoreError, Which, claim_lease};
use crate::call::{ServedTool, Verdict};
use crate::clients::ToolShare;
use crate::clock;
use crate::quota::{Answer, Quotas};

pub(super) mod lost;
mod shares;

use lost::LostClaims;
use shares::PassShares;
pub(super) use shares::ShareNow;

/// A served tool as a dispatch pass sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolState {
    /// The tool's name.
    pub(super) name: String,
    /// How many of the tool's jobs its breakers would admit now ([`ServedTool::background_room`]):
    /// `None` as many as come; `Some(0)` none (all open, forced open, or half-open with no probe
    /// due); `Some(n)` that many half-open probes.
    pub(super) room: Option<u32>,
    /// The provider whose rate limit paces the tool's jobs: the first of its chain, which a
    /// background call reaches unless its breaker is open.
    pub(super) provider: String,
    /// The clients' share of the tool on this replica now, when they are held to one
    /// ([`ServedTool::share_now`]).
    pub(super) share: Option<ShareNow>,
}

impl ToolState {
    /// `tool` as a pass sees it at `now`, its clients held to `share` (the gateway's
    /// `client_share`).
    pub(super) fn of(tool: &ServedTool, share: Option<ToolShare>, now: Instant) -> Self {
        let name = tool.spec.name;
        ToolState {
            name: name.to_string(),
            room: tool.background_room(now),
            provider: tool
                .provider_names()
                .first()
                .map_or_else(|| name.to_string(), |p| p.to_string()),
            share: tool
                .share_now(share)
                .map(|(slots, held)| ShareNow { slots, held }),
        }
    }
}

/// A job this process claimed, with the worker that will run it.
#[derive(Debug)]
pub(super) struct Claimed {
    /// The job, leased to this process.
    pub(super) job: Job,
    /// The lease it was claimed under (this claim's own, `store::claim_lease`): the run's end
    /// names it.
    pub(super) lease: String,
    /// When it was claimed (the pacer counts successes of jobs claimed in its window).
    pub(super) claimed_at: Instant,
    /// The provider whose pacer it was claimed under.
    pub(super) provider: String,
    /// The worker slot; dropping it frees the worker.
    pub(super) worker: OwnedSemaphorePermit,
}

/// What a background verdict teaches a provider's pacer.
pub(super) fn answer(verdict: &Verdict) -> Answer {
    match verdict {
        Verdict::Done(_) => Answer::Succeeded,
        Verdict::Later {
            rate_limited: Some(hit),
            ..
        } => Answer::RateLimited(hit.retry_after),
        _ => Answer::Other,
    }
}

/// How long past `max_age`, and how long after it became due, a job of a tool not served here
/// waits before this replica claims it to end it. A replica that serves the tool asks a job
/// again at least every 5 minutes (6 with the requeue's jitter) unless the provider asked for
/// longer (`Retry-After`), and claims it as soon as it is due, so it makes the job's last
/// attempt, which may still succeed, first.
pub(super) const UNSERVED_GRACE: Duration = Duration::from_secs(600);

/// How often, at most, the log says that jobs of tools not served here are due.
const UNSERVED_TOLD_EVERY: Duration = Duration::from_secs(60);

/// Every due job but those of `skip`'s tools, whatever its age, within the clients' `shares`.
fn within<'a>(skip: &'a [String], shares: ShareRoom<'a>) -> Which<'a> {
    Which {
        shares,
        ..Which::all_but(skip)
    }
}

/// Claims due jobs for this process.
#[derive(Debug)]
pub(super) struct Dispatcher {
    /// This process's lease owner name; each claim leases under a name of its own made from it
    /// (`store::claim_lease`).
    pub(super) owner: String,
    /// How many claims this process has made (the last part of each claim's lease).
    pub(super) claims: AtomicU64,
    /// The claims that failed, whose leases the next pass hands back.
    pub(super) lost: LostClaims,
    /// What each claimed job's lease lasts (the longest tool deadline plus a margin), set
    /// again on every pass, since a reload may change the deadlines.
    pub(super) lease_ms: std::sync::atomic::AtomicI64,
    /// The providers' allowances (shared by the fleet on PostgreSQL).
    pub(super) quotas: Arc<Quotas>,
    /// `[jobs] max_age`: the age past which a job of a tool this replica does not serve is
    /// claimed, to be ended.
    pub(super) max_age: Duration,
    /// When the log last said that jobs of tools not served here are due (at most once a
    /// minute: the jobs wait in the queue meanwhile, and no gauge of this replica shows them).
    pub(super) unserved_told: std::sync::Mutex<Option<Instant>>,
}

impl Dispatcher {
    /// One pass: claims what may run now among `due` (the tools with due jobs), at most one job
    /// per free permit of `workers`.
    ///
    /// A due tool that is not among `tools` (the ones this replica serves) is left to the
    /// replicas that serve it: in a rolling change of configuration, a replica that has not
    /// loaded a new tool yet would otherwise claim its jobs and hand them back 30 s later, and
    /// a replica that a reload took a tool from would do the same to jobs the others run. Its
    /// jobs are claimed here only once they are older than `max_age` and [`UNSERVED_GRACE`],
    /// and have been due for [`UNSERVED_GRACE`] (a provider's long `Retry-After` may put a job's
    /// last attempt past `max_age`: that attempt is the serving replicas' to make), when running
    /// them ends them (`run::decide`): a tool that no replica serves any more
    /// leaves no job queued for ever.
    pub(super) async fn claim<S: JobStore>(
        &self,
        store: &S,
        tools: &[ToolState],
        due: &[String],
        workers: &Arc<Semaphore>,
    ) -> Result<Vec<Claimed>, StoreError> {
        let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        let unserved: Vec<String> = due.iter().filter(|d| !names.contains(d)).cloned().collect();
        // A tool whose breakers admit only so many (or none) is claimed on its own below, at
        // most that many.
        let limited: Vec<(&str, u32)> = tools
            .iter()
            .filter_map(|t| t.room.map(|n| (t.name.as_str(), n)))
            .collect();
        let mut skip: Vec<String> = limited
            .iter()
            .map(|(name, _)| name.to_string())
            .chain(unserved.iter().cloned())
            .collect();
        // The tools of a provider whose limit is known are claimed on their own, at most what
        // its pacer grants now; the rest together, as many as there are free workers. A
        // provider none of whose tools has due jobs is left out of this pass.
        let mut providers: Vec<&str> = tools.iter().map(|t| t.provider.as_str()).collect();
        providers.sort_unstable();
        providers.dedup();
        let mut paced = Vec::new();
        for provider in providers {
            let mine: Vec<&ToolState> = tools.iter().filter(|t| t.provider == provider).collect();
            let due_here = mine
                .iter()
                .any(|t| !skip.contains(&t.name) && due.contains(&t.name));
            let free = u32::try_from(workers.available_permits()).unwrap_or(u32::MAX);
            if due_here && free > 0 {
                let Some(granted) = self.quotas.reserve(provider, free).await else {
                    continue;
                };
                if granted > 0 {
                    let others: Vec<String> = names
                        .iter()
                        .filter(|n| skip.contains(n) || !mine.iter().any(|t| &t.name == *n))
                        .chain(unserved.iter())
                        .cloned()
                        .collect();
                    paced.push((provider, granted, others));
                }
            }
            skip.extend(mine.iter().map(|t| t.name.clone()));
        }
        // Every claim of a served tool's jobs keeps within the clients' shares. Each tool is
        // claimed by one claim of the pass (its provider's, its probes', or the unpaced one), so
        // no claim takes a slot another claim of the pass counted on.
        let shares = PassShares::of(
            tools
                .iter()
                .filter_map(|t| t.share.as_ref().map(|s| (t.name.as_str(), s))),
        );
        let mut claimed = Vec::new();
        for (provider, granted, others) in paced {
            let which = within(&others, shares.room());
            let got = self
                .claim_some(store, workers, granted, which, tools, &mut claimed)
                .await;
            // What was granted and not claimed goes back to the bucket.
            let unused = granted - got.as_ref().map_or(0, |n| (*n).min(granted));
            self.quotas.refund(provider, unused).await;
            got?;
        }
        // A half-open tool's probes: a few calls that decide whether its provider is back,
        // not worth a pacer's allowance (a probe's 429 still teaches it, `run.rs`).
        for (name, room) in limited {
            if room == 0 || !due.iter().any(|d| d == name) {
                continue;
            }
            let others: Vec<String> = names
                .iter()
                .filter(|n| *n != name)
                .chain(unserved.iter())
                .cloned()
                .collect();
            let which = within(&others, shares.room());
            self.claim_some(store, workers, room, which, tools, &mut claimed)
                .await?;
        }
        let first_unpaced = claimed.len();
        let which = within(&skip, shares.room());
        self.claim_some(store, workers, u32::MAX, which, tools, &mut claimed)
            .await?;
        // Unpaced claims start their provider's counting window (learning from a 429).
        let mut unpaced: Vec<(&str, u32, Instant)> = Vec::new();
        for c in &claimed[first_unpaced..] {
            match unpaced.iter_mut().find(|(p, _, _)| *p == c.provider) {
                Some((_, n, _)) => *n += 1,
                None => unpaced.push((&c.provider, 1, c.claimed_at)),
            }
        }
        for (provider, n, at) in unpaced {
            self.quotas.claimed(provider, n, at).await;
        }
        // Past `max_age`, the jobs of tools not served here are claimed to be ended: nothing is
        // sent for them, so no provider's window counts them, and no client's share (a share
        // counts the calls of the tools served here) holds them back.
        if !unserved.is_empty() {
            self.tell_unserved(&unserved);
            let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
            let now = clock::epoch_ms();
            let past_max_age = Which {
                skip_tools: &names,
                overdue: Overdue {
                    created_before_ms: now
                        .saturating_sub(ms(self.max_age.saturating_add(UNSERVED_GRACE))),
                    due_by_ms: now.saturating_sub(ms(UNSERVED_GRACE)),
                },
                shares: ShareRoom::NONE,
            };
            self.claim_some(store, workers, u32::MAX, past_max_age, tools, &mut claimed)
                .await?;
        }
        Ok(claimed)
    }

    /// Logs that jobs of `unserved` tools are due, unless it did in the last minute.
    fn tell_unserved(&self, unserved: &[String]) {
        let now = clock::now();
        let mut told = self.unserved_told.lock().unwrap_or_else(|e| e.into_inner());
        if told.is_some_and(|at| now.saturating_duration_since(at) < UNSERVED_TOLD_EVERY) {
            return;
        }
        *told = Some(now);
        tracing::warn!(
            tools = %unserved.join(", "),
            max_age = %humantime::format_duration(self.max_age),
            "jobs of tools this replica does not serve are due: they are left to replicas that serve them, and ended here once 10 minutes older than max_age and due for 10 minutes"
        );
    }

    /// Claims up to `max` due jobs (never more than there are free workers) of those `which`
    /// allows.
    async fn claim_some<S: JobStore>(
        &self,
        store: &S,
        workers: &Arc<Semaphore>,
        max: u32,
        which: Which<'_>,
        tools: &[ToolState],
        claimed: &mut Vec<Claimed>,
    ) -> Result<u32, StoreError> {
        let free = u32::try_from(workers.available_permits())
            .unwrap_or(u32::MAX)
            .min(max);
        if free == 0 {
            return Ok(0);
        }
        let lease = claim_lease(&self.owner, self.claims.fetch_add(1, Ordering::Relaxed));
        let claim = store.claim_which(
            &lease,
            clock::epoch_ms(),
            self.lease_ms.load(Ordering::Relaxed),
            free,
            which,
        );
        let jobs = match claim.await {
            Ok(jobs) => jobs,
            Err(e) => {
                self.lost.note(lease, &e);
                return Err(e);
            }
        };
        let claimed_at = clock::now();
        let mut n = 0;
        for job in jobs {
            let provider = tools
                .iter()
                .find(|t| t.name == job.tool)
                .map_or_else(|| job.tool.clone(), |t| t.provider.clone());
            // Only this pass takes permits, and it claimed no more than were free.
            let Ok(worker) = Arc::clone(workers).try_acquire_owned() else {
                break;
            };
            claimed.push(Claimed {
                job,
                lease: lease.clone(),
                claimed_at,
                provider,
                worker,
            });
            n += 1;
        }
        Ok(n)
    }
}
