//! A run's end on tokio's paused clock, over the in-memory store: a try whose answer was lost is
//! told as stored, a lease another worker took as lost, and the log says one of the two.

use std::time::Duration;

use serde_json::json;

use super::{Ended, store_end};
use crate::clock;
use crate::jobs::land::Unstored;
use crate::jobs::store::memory::MemoryStore;
use crate::jobs::store::{Job, JobStatus, JobStore, NewJob, Transition};

/// A job in `store`, claimed under `lease` for `lease_ms`.
async fn claimed(store: &MemoryStore, lease: &str, lease_ms: i64) -> Job {
    let job = NewJob {
        tool: "search_flights".into(),
        arguments: json!({}),
        call_id: None,
        client: crate::clients::ClientName::local(),
        idempotency_key: None,
        callback_url: None,
        trace: None,
    };
    let now = clock::epoch_ms();
    store
        .enqueue(job, now)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut claimed = store
        .claim(lease, now, lease_ms, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    claimed.pop().unwrap_or_else(|| panic!("claimed"))
}

fn succeeded() -> Transition {
    Transition::Succeeded {
        result: json!({"status": "ok"}),
    }
}

/// [`store_end`] of `job` under `lease`, with what it logged.
async fn end(store: &MemoryStore, job: &Job, lease: &str) -> (Ended, String) {
    let log = crate::telemetry::captured::capture();
    let unstored = Unstored::default();
    let ended = store_end(
        store,
        &unstored,
        job,
        lease,
        &succeeded(),
        clock::epoch_ms(),
    )
    .await;
    (ended, log.text())
}

const STORED: &str = "result stored after the job store answered again";
const LOST: &str = "lease was lost";

#[tokio::test(start_paused = true)]
async fn a_result_whose_answer_was_lost_is_told_as_stored_not_as_a_lost_lease() {
    let store = MemoryStore::default();
    let job = claimed(&store, "w/0", 60_000).await;
    store.lose_next_finish_answer();
    let (ended, log) = end(&store, &job, "w/0").await;
    assert_eq!(ended, Ended::Stored, "{log}");
    assert!(log.contains(STORED), "{log}");
    assert!(!log.contains(LOST), "only one of the two is true: {log}");
    let stored = store.get(&job.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.map(|j| j.status), Some(JobStatus::Succeeded));
}

#[tokio::test(start_paused = true)]
async fn a_result_whose_answer_was_lost_past_its_lease_is_read_back() {
    let store = MemoryStore::default();
    let job = claimed(&store, "w/0", 1_000).await;
    // The run outlived its lease, and no other replica took the job meanwhile.
    tokio::time::advance(Duration::from_secs(5)).await;
    store.lose_next_finish_answer();
    let (ended, log) = end(&store, &job, "w/0").await;
    assert_eq!(
        ended,
        Ended::Stored,
        "the row names this run's lease: {log}"
    );
    assert!(log.contains(STORED) && !log.contains(LOST), "{log}");
}

#[tokio::test(start_paused = true)]
async fn a_lease_another_worker_took_is_told_as_lost_and_nothing_is_stored() {
    let store = MemoryStore::default();
    let job = claimed(&store, "w/0", 1_000).await;
    tokio::time::advance(Duration::from_secs(2)).await;
    let other = store
        .claim("x/0", clock::epoch_ms(), 60_000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        other.len(),
        1,
        "the lease ran out: another replica took the job"
    );
    let (ended, log) = end(&store, &job, "w/0").await;
    assert_eq!(ended, Ended::NotStored, "{log}");
    assert!(log.contains(LOST) && !log.contains(STORED), "{log}");
    let stored = store.get(&job.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.map(|j| j.status), Some(JobStatus::Running));
}
