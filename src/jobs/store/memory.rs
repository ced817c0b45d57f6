//! A job store in memory, for tests that run the job system on tokio's paused clock.
//!
//! A SQL store cannot serve those tests: its drivers wait on their own threads, and a paused
//! runtime that waits on something outside it advances its clock to the next timer (a pool's
//! acquire timeout among them). This store answers without waiting. The conformance suite holds
//! it to the same rules as the SQL store, so what a test learns from it holds for both databases.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::model::{
    CANCELLED_CALLBACK, CallbackState, Job, JobFilter, JobStatus, JobStore, NewJob, QueueStats,
    StoreError, Transition, Which, leased_by,
};
use crate::clients::ClientName;

/// Jobs in a vector behind a lock (tests hold a few hundred at most).
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    jobs: Mutex<Vec<Job>>,
    /// The next claim is made, and its answer lost.
    claim_answer_lost: AtomicBool,
    /// The next end of a run is stored, and its answer lost.
    finish_answer_lost: AtomicBool,
}

impl MemoryStore {
    fn jobs(&self) -> std::sync::MutexGuard<'_, Vec<Job>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next claim leases its jobs and fails, as one whose connection was cut after
    /// PostgreSQL committed it.
    pub(crate) fn lose_next_claim_answer(&self) {
        self.claim_answer_lost.store(true, Ordering::SeqCst);
    }

    /// The next [`JobStore::finish`] stores its transition and fails, as one whose answer came
    /// later than the caller waited.
    pub(crate) fn lose_next_finish_answer(&self) {
        self.finish_answer_lost.store(true, Ordering::SeqCst);
    }
}

/// What a statement whose answer was lost answers.
fn lost() -> StoreError {
    StoreError("connection reset by peer (the store took the statement)".into())
}

fn is_due(job: &Job, now_ms: i64) -> bool {
    matches!(job.status, JobStatus::Queued | JobStatus::RetryScheduled)
        && job.next_attempt_at_ms <= now_ms
}

/// Due, or running with an expired lease: what a claim may take.
fn claimable(job: &Job, now_ms: i64) -> bool {
    let expired =
        job.status == JobStatus::Running && job.lease_until_ms.is_some_and(|until| until < now_ms);
    is_due(job, now_ms) || expired
}

impl JobStore for MemoryStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn enqueue(&self, job: NewJob, now_ms: i64) -> Result<(Job, bool), StoreError> {
        let mut jobs = self.jobs();
        if let Some(key) = &job.idempotency_key {
            let existing = jobs.iter().find(|j| {
                j.client == job.client
                    && j.tool == job.tool
                    && j.idempotency_key.as_ref() == Some(key)
            });
            if let Some(existing) = existing {
                return Ok((existing.clone(), false));
            }
        }
        let stored = Job {
            id: uuid::Uuid::now_v7().to_string(),
            callback: if job.callback_url.is_some() {
                CallbackState::Pending
            } else {
                CallbackState::None
            },
            tool: job.tool,
            arguments: job.arguments,
            call_id: job.call_id,
            client: job.client,
            idempotency_key: job.idempotency_key,
            callback_url: job.callback_url,
            status: JobStatus::Queued,
            attempts: 0,
            next_attempt_at_ms: now_ms,
            lease_owner: None,
            lease_until_ms: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            result: None,
            last_error: None,
            callback_attempts: 0,
            next_callback_at_ms: None,
            callback_error: None,
            trace: job.trace,
        };
        jobs.push(stored.clone());
        Ok((stored, true))
    }

    async fn get(&self, id: &str) -> Result<Option<Job>, StoreError> {
        Ok(self.jobs().iter().find(|j| j.id == id).cloned())
    }

    async fn list(&self, filter: JobFilter<'_>, limit: u32) -> Result<Vec<Job>, StoreError> {
        let mut found: Vec<Job> = self
            .jobs()
            .iter()
            .filter(|j| filter.holds(j))
            .cloned()
            .collect();
        found.sort_by(|a, b| b.id.cmp(&a.id));
        found.truncate(limit as usize);
        Ok(found)
    }

    async fn claim_which(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
        which: Which<'_>,
    ) -> Result<Vec<Job>, StoreError> {
        let mut jobs = self.jobs();
        let (overdue, shares) = (which.overdue, which.shares);
        let mut claimable: Vec<&mut Job> = jobs
            .iter_mut()
            .filter(|j| {
                claimable(j, now_ms)
                    && !which.skip_tools.contains(&j.tool)
                    && j.created_at_ms < overdue.created_before_ms
                    && j.lease_until_ms.unwrap_or(j.next_attempt_at_ms) <= overdue.due_by_ms
                    && shares.room(&j.client, &j.tool) != Some(0)
            })
            .collect();
        claimable.sort_by(|a, b| (a.next_attempt_at_ms, &a.id).cmp(&(b.next_attempt_at_ms, &b.id)));
        // Clients take turns, as the SQL store's `turn` ranks them.
        let mut turns: HashMap<ClientName, u32> = HashMap::new();
        let mut ranked: Vec<(u32, &mut Job)> = claimable
            .into_iter()
            .map(|job| {
                let turn = turns.entry(job.client.clone()).or_default();
                *turn += 1;
                (*turn, job)
            })
            .collect();
        ranked.sort_by_key(|(turn, _)| *turn);
        // The candidates, as the SQL store ranks them before it locks, and of them no more of a
        // client's jobs of a tool than its share has room for, oldest due first (a client's
        // jobs are in due order among the candidates, its turns being).
        let mut in_share: HashMap<(ClientName, String), u32> = HashMap::new();
        let mut claimed: Vec<Job> = ranked
            .into_iter()
            .map(|(_, job)| job)
            .take(4 * limit as usize)
            .filter(|job| {
                let Some(room) = shares.room(&job.client, &job.tool) else {
                    return true;
                };
                let taken = in_share
                    .entry((job.client.clone(), job.tool.clone()))
                    .or_default();
                *taken += 1;
                *taken <= room
            })
            .take(limit as usize)
            .map(|job| {
                job.status = JobStatus::Running;
                job.lease_owner = Some(owner.to_string());
                job.lease_until_ms = Some(now_ms + lease_ms);
                job.updated_at_ms = now_ms;
                job.clone()
            })
            .collect();
        claimed.sort_by(|a, b| (a.next_attempt_at_ms, &a.id).cmp(&(b.next_attempt_at_ms, &b.id)));
        if self.claim_answer_lost.swap(false, Ordering::SeqCst) {
            return Err(lost());
        }
        Ok(claimed)
    }

    async fn finish(
        &self,
        id: &str,
        owner: &str,
        transition: Transition,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut jobs = self.jobs();
        let Some(job) = jobs.iter_mut().find(|j| {
            j.id == id && j.status == JobStatus::Running && j.lease_owner.as_deref() == Some(owner)
        }) else {
            return Ok(false);
        };
        job.apply(transition, now_ms);
        if self.finish_answer_lost.swap(false, Ordering::SeqCst) {
            return Err(lost());
        }
        Ok(true)
    }

    async fn claim_callbacks(
        &self,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        let mut jobs = self.jobs();
        let mut due: Vec<&mut Job> = jobs
            .iter_mut()
            .filter(|j| {
                j.callback == CallbackState::Pending
                    && matches!(j.status, JobStatus::Succeeded | JobStatus::Dead)
                    && j.next_callback_at_ms.is_some_and(|at| at <= now_ms)
            })
            .collect();
        due.sort_by_key(|j| j.next_callback_at_ms);
        Ok(due
            .into_iter()
            .take(limit as usize)
            .map(|job| {
                job.next_callback_at_ms = Some(now_ms + lease_ms);
                job.clone()
            })
            .collect())
    }

    async fn callback_result(
        &self,
        id: &str,
        failure: Option<&str>,
        next_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        if let Some(job) = self.jobs().iter_mut().find(|j| j.id == id) {
            job.callback = CallbackState::after(failure, next_at_ms);
            job.callback_error = failure.map(str::to_string);
            job.callback_attempts += 1;
            (job.next_callback_at_ms, job.updated_at_ms) = (next_at_ms, now_ms);
        }
        Ok(())
    }

    async fn cancel(&self, id: &str, client: &ClientName, now_ms: i64) -> Result<bool, StoreError> {
        let mut jobs = self.jobs();
        let Some(job) = jobs.iter_mut().find(|j| {
            j.id == id
                && j.client == *client
                && matches!(j.status, JobStatus::Queued | JobStatus::RetryScheduled)
        }) else {
            return Ok(false);
        };
        (job.status, job.next_callback_at_ms, job.updated_at_ms) =
            (JobStatus::Cancelled, None, now_ms);
        if job.callback == CallbackState::Pending {
            job.callback = CallbackState::Failed;
            job.callback_error = Some(CANCELLED_CALLBACK.to_string());
        }
        Ok(true)
    }

    async fn purge(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError> {
        let mut jobs = self.jobs();
        let mut left = limit;
        let before = jobs.len();
        jobs.retain(|j| {
            let purged = left > 0
                && j.status.is_final()
                && j.updated_at_ms < before_ms
                && !(j.callback == CallbackState::Pending && j.status != JobStatus::Cancelled);
            left -= u32::from(purged);
            !purged
        });
        Ok((before - jobs.len()) as u64)
    }

    async fn release(&self, owner: &str, now_ms: i64) -> Result<u64, StoreError> {
        let mut released = 0;
        for job in self.jobs().iter_mut().filter(|j| {
            j.status == JobStatus::Running
                && j.lease_owner
                    .as_deref()
                    .is_some_and(|l| leased_by(l, owner))
        }) {
            job.status = if job.attempts == 0 {
                JobStatus::Queued
            } else {
                JobStatus::RetryScheduled
            };
            (job.lease_owner, job.lease_until_ms) = (None, None);
            (job.next_attempt_at_ms, job.updated_at_ms) = (now_ms, now_ms);
            released += 1;
        }
        Ok(released)
    }

    async fn due_tools(&self, now_ms: i64) -> Result<Vec<String>, StoreError> {
        let mut tools: Vec<String> = self
            .jobs()
            .iter()
            .filter(|j| claimable(j, now_ms))
            .map(|j| j.tool.clone())
            .collect();
        tools.sort();
        tools.dedup();
        Ok(tools)
    }

    async fn next_callback_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .jobs()
            .iter()
            .filter(|j| {
                j.callback == CallbackState::Pending
                    && matches!(j.status, JobStatus::Succeeded | JobStatus::Dead)
            })
            .filter_map(|j| j.next_callback_at_ms)
            .min())
    }

    async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .jobs()
            .iter()
            .filter_map(|j| match j.status {
                JobStatus::Queued | JobStatus::RetryScheduled => Some(j.next_attempt_at_ms),
                JobStatus::Running => j.lease_until_ms,
                _ => None,
            })
            .min())
    }

    async fn stats(&self, now_ms: i64) -> Result<QueueStats, StoreError> {
        let jobs = self.jobs();
        let mut stats = QueueStats::default();
        for job in jobs.iter() {
            let key = (job.tool.clone(), job.status);
            match stats
                .depth
                .iter_mut()
                .find(|(t, s, _)| (t, s) == (&key.0, &key.1))
            {
                Some((_, _, n)) => *n += 1,
                None => stats.depth.push((key.0, key.1, 1)),
            }
            if is_due(job, now_ms) {
                let age = now_ms - job.created_at_ms;
                match stats
                    .oldest_due_age_ms
                    .iter_mut()
                    .find(|(t, _)| *t == job.tool)
                {
                    Some((_, oldest)) => *oldest = (*oldest).max(age),
                    None => stats.oldest_due_age_ms.push((job.tool.clone(), age)),
                }
            }
        }
        // The SQL store orders by tool, then status name.
        stats
            .depth
            .sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
        stats.oldest_due_age_ms.sort();
        Ok(stats)
    }
}
