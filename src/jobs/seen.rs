//! What this replica last saw of each job, so the job API can still answer while the job store
//! does not.
//!
//! Why: a caller polling `GET /v1/jobs/{id}` must not get a 503 because the shared database is
//! away for a minute, least of all for a job this very replica accepted, ran, or holds the
//! result of (a result that waits to land, see `land.rs`). So every job this replica reads from
//! the store, stores, claims or ends is kept here, as of that moment, and the job API answers
//! from this copy, marked with its age, only when the store fails to answer.
//!
//! What it cannot do: a job this replica never saw (submitted and run elsewhere, never read
//! here) is not known; its read still fails, because "no such job" would be a lie. A copy is at
//! most as new as this replica's last sighting: another replica may have moved the job on.
//!
//! Bounded twice: by [`BUDGET`] bytes (each sighting weighs an estimate of the memory its job
//! holds, its result and arguments above all, never less than [`MIN_WEIGHT`]) and so at most
//! [`CAPACITY`] jobs, each for [`KEPT_FOR`] after its last sighting. Beyond the budget moka
//! evicts the least recently seen (or read) first. Counting jobs alone was not enough: with
//! results of ~25 KB, 10,000 jobs held about 250 MB, and any client could fill it by listing its
//! own jobs. A job weighing more than the whole budget is not kept at all.
//!
//! Of two sightings of one job the later state wins (by `updated_at_ms`), so a read that raced
//! with this replica's own end of the run cannot put the older state back.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::store::{Job, JobFilter};

/// Jobs remembered at most (each weighs at least [`MIN_WEIGHT`]).
const CAPACITY: u64 = 10_000;
/// The estimated bytes the sightings may hold together.
const BUDGET: u64 = 32 * 1024 * 1024;
/// The least a sighting weighs: the budget then holds at most [`CAPACITY`] of them.
const MIN_WEIGHT: u32 = BUDGET.div_ceil(CAPACITY) as u32;
/// How long a sighting is kept.
const KEPT_FOR: Duration = Duration::from_secs(3600);

/// The memory `job` holds, estimated: its fixed part, its strings and its JSON (each value as
/// `serde_json` holds it, plus its text), at least [`MIN_WEIGHT`].
fn weight(job: &Job) -> u32 {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let mut bytes = std::mem::size_of::<Job>()
        + job.id.len()
        + job.tool.len()
        + job.client.as_str().len()
        + text(&job.call_id)
        + text(&job.idempotency_key)
        + text(&job.callback_url)
        + text(&job.lease_owner)
        + text(&job.last_error)
        + text(&job.callback_error);
    let mut values: Vec<&Value> = vec![&job.arguments];
    values.extend(job.result.as_ref());
    while let Some(value) = values.pop() {
        bytes += std::mem::size_of::<Value>();
        match value {
            Value::String(s) => bytes += s.len(),
            Value::Array(items) => values.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    bytes += std::mem::size_of::<String>() + key.len();
                    values.push(item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    u32::try_from(bytes).unwrap_or(u32::MAX).max(MIN_WEIGHT)
}

/// One job as this replica last saw it.
#[derive(Debug, Clone)]
pub(super) struct Sighting {
    /// The job's state then.
    pub(super) job: Arc<Job>,
    /// When (epoch ms).
    pub(super) at_ms: i64,
}

/// This replica's sightings of jobs.
#[derive(Debug)]
pub(super) struct Seen(moka::sync::Cache<String, Sighting>);

impl Default for Seen {
    fn default() -> Self {
        Seen(
            moka::sync::Cache::builder()
                .max_capacity(BUDGET)
                .weigher(|_, sighting: &Sighting| weight(&sighting.job))
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .time_to_idle(KEPT_FOR)
                .build(),
        )
    }
}

impl Seen {
    /// Remembers `job` as seen at `at_ms`, unless a later state of it is already known.
    pub(super) fn note(&self, job: &Job, at_ms: i64) {
        self.0
            .entry_by_ref(&job.id)
            .and_compute_with(|known| match known {
                Some(known) if known.value().job.updated_at_ms > job.updated_at_ms => {
                    moka::ops::compute::Op::Nop
                }
                _ => moka::ops::compute::Op::Put(Sighting {
                    job: Arc::new(job.clone()),
                    at_ms,
                }),
            });
    }

    /// The last sighting of job `id`.
    pub(super) fn get(&self, id: &str) -> Option<Sighting> {
        self.0.get(id)
    }

    /// Sightings of jobs matching the filters (as [`JobStore::list`](super::JobStore::list)),
    /// newest job first, at most `limit`.
    pub(super) fn list(&self, filter: JobFilter<'_>, limit: u32) -> Vec<Sighting> {
        let mut found: Vec<Sighting> = self
            .0
            .iter()
            .map(|(_, sighting)| sighting)
            .filter(|s| filter.holds(&s.job))
            .collect();
        // Job ids are UUIDv7: by id is by creation time.
        found.sort_by(|a, b| b.job.id.cmp(&a.job.id));
        found.truncate(limit as usize);
        found
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clients::ClientName;
    use crate::jobs::store::{CallbackState, JobStatus};

    fn filter<'a>(
        status: Option<JobStatus>,
        tool: Option<&'a str>,
        client: Option<&'a ClientName>,
    ) -> JobFilter<'a> {
        JobFilter {
            status,
            tool,
            client,
            ..JobFilter::default()
        }
    }

    fn name(client: &str) -> ClientName {
        ClientName::configured(client).unwrap_or_else(|e| panic!("{e}"))
    }

    fn job(id: &str, client: &str, status: JobStatus, updated_at_ms: i64) -> Job {
        Job {
            id: id.to_string(),
            tool: "search_flights".to_string(),
            arguments: json!({}),
            call_id: None,
            client: name(client),
            idempotency_key: None,
            callback_url: None,
            status,
            attempts: 0,
            next_attempt_at_ms: 0,
            lease_owner: None,
            lease_until_ms: None,
            created_at_ms: 0,
            updated_at_ms,
            result: None,
            last_error: None,
            callback: CallbackState::None,
            callback_attempts: 0,
            next_callback_at_ms: None,
            callback_error: None,
            trace: None,
        }
    }

    /// A succeeded job whose result holds `bytes` of text.
    fn with_result(id: &str, bytes: usize) -> Job {
        let mut job = job(id, "acme", JobStatus::Succeeded, 1);
        job.result = Some(json!({"offers": ["x".repeat(bytes)]}));
        job
    }

    #[test]
    fn sightings_are_held_to_a_byte_budget_the_least_recently_seen_going_first() {
        let seen = Seen::default();
        let big = 1024 * 1024;
        // Twice the budget in results of 1 MiB.
        let jobs = 2 * BUDGET / 1024 / 1024;
        for i in 0..jobs {
            seen.note(&with_result(&format!("{i:04}"), big), 1);
            seen.0.run_pending_tasks();
        }
        assert!(
            seen.0.weighted_size() <= BUDGET,
            "{} bytes held",
            seen.0.weighted_size()
        );
        assert!(
            seen.0.entry_count() < jobs / 2 + 1,
            "about the budget's worth kept"
        );
        assert!(seen.get("0000").is_none(), "the first seen went first");
        let last = format!("{:04}", jobs - 1);
        assert!(seen.get(&last).is_some(), "the last seen is kept");
        let weighed = weight(&with_result("x", big));
        assert!(weighed > 1024 * 1024, "a result weighs its size: {weighed}");
    }

    #[test]
    fn small_sightings_are_held_to_a_count() {
        let seen = Seen::default();
        let jobs = CAPACITY + 100;
        for i in 0..jobs {
            seen.note(&job(&format!("{i:06}"), "acme", JobStatus::Queued, 1), 1);
        }
        seen.0.run_pending_tasks();
        assert!(seen.0.entry_count() <= CAPACITY, "{}", seen.0.entry_count());
        assert!(seen.get(&format!("{:06}", jobs - 1)).is_some());
    }

    #[test]
    fn an_older_state_read_later_does_not_replace_a_newer_one() {
        let seen = Seen::default();
        seen.note(&job("a", "acme", JobStatus::Succeeded, 20), 1_000);
        // A read of the store that began before the run's end arrives after it.
        seen.note(&job("a", "acme", JobStatus::Running, 10), 1_001);
        let last = seen.get("a").unwrap_or_else(|| panic!("a was seen"));
        assert_eq!(last.job.status, JobStatus::Succeeded);
        assert_eq!(last.at_ms, 1_000);
        // A newer state does replace it.
        seen.note(&job("a", "acme", JobStatus::Dead, 30), 1_002);
        let last = seen.get("a").unwrap_or_else(|| panic!("a was seen"));
        assert_eq!((last.job.status, last.at_ms), (JobStatus::Dead, 1_002));
        assert!(seen.get("b").is_none(), "a job never seen is not known");
    }

    #[test]
    fn a_listing_keeps_to_its_client_and_filters_newest_first() {
        let seen = Seen::default();
        seen.note(&job("01", "acme", JobStatus::Queued, 1), 1);
        seen.note(&job("02", "globex", JobStatus::Queued, 1), 1);
        seen.note(&job("03", "acme", JobStatus::Succeeded, 1), 1);
        seen.note(&job("04", "acme", JobStatus::Queued, 1), 1);
        let ids = |list: Vec<Sighting>| list.iter().map(|s| s.job.id.clone()).collect::<Vec<_>>();
        let acme = name("acme");
        assert_eq!(
            ids(seen.list(filter(None, None, Some(&acme)), 10)),
            ["04", "03", "01"]
        );
        assert_eq!(
            ids(seen.list(filter(Some(JobStatus::Queued), None, Some(&acme)), 10)),
            ["04", "01"]
        );
        assert_eq!(ids(seen.list(filter(None, None, Some(&acme)), 1)), ["04"]);
        assert_eq!(
            ids(seen.list(filter(None, None, None), 10)),
            ["04", "03", "02", "01"]
        );
        assert!(
            seen.list(filter(None, Some("book_flight"), None), 10)
                .is_empty()
        );
    }
}
