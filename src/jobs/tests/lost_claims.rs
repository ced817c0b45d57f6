//! A claim whose answer was lost (the store leased the jobs, the reply never came): its jobs
//! go back to the queue at the next pass that reaches the store, not at their lease's end, and
//! the jobs this replica's workers run under other claims keep their leases.

use std::time::Duration;

use tokio::time::advance;

use super::{FLIGHTS, HOTELS, Queue, ids, succeeded};
use crate::jobs::dispatch::lost::SETTLED_AFTER;
use crate::jobs::store::{JobStatus, JobStore};

#[tokio::test(start_paused = true)]
async fn a_claim_whose_answer_was_lost_is_handed_back_at_the_next_pass_not_after_its_lease() {
    let q = Queue::new(4);
    let running = q.submit(HOTELS).await;
    let mut first = q.pass(&[]).await;
    assert_eq!(ids(&first), [running.as_str()]);
    let lost = q.submit(FLIGHTS).await;
    q.store.lose_next_claim_answer();
    assert!(q.try_pass(&[]).await.is_err(), "the claim's answer is lost");
    let job = q.store.get(&lost).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        job.map(|j| j.status),
        Some(JobStatus::Running),
        "the store took the claim: the job is leased to this replica, which does not run it"
    );

    advance(Duration::from_millis(250)).await;
    let again = q.pass(&[]).await;
    assert_eq!(
        ids(&again),
        [lost.as_str()],
        "handed back and claimed again at the next pass, not 60 s later at its lease's end"
    );
    assert_ne!(again[0].lease, first[0].lease, "each claim leases apart");
    assert_eq!(
        again[0].job.attempts, 0,
        "the lost claim counted no attempt"
    );
    assert!(
        !q.dispatcher.lost.any(),
        "a hand-back that found jobs is done"
    );
    // The job a worker ran all along kept its lease, and ends under it.
    q.finish(first.remove(0), succeeded(HOTELS)).await;
    let job = q
        .store
        .get(&running)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(job.map(|j| j.status), Some(JobStatus::Succeeded));
}

#[tokio::test(start_paused = true)]
async fn a_failed_claim_that_took_nothing_is_asked_again_until_it_has_settled() {
    let q = Queue::new(4);
    q.store.lose_next_claim_answer();
    let _ = q.submit(FLIGHTS).await;
    let none_due = ["search_flights"];
    // A claim of nothing whose answer was lost (the tool's breakers are open: nothing due).
    assert!(q.try_pass(&none_due).await.is_err());
    advance(Duration::from_millis(250)).await;
    assert!(q.pass(&none_due).await.is_empty());
    assert!(
        q.dispatcher.lost.any(),
        "a hand-back soon after the failure may have come before the claim: asked again"
    );
    advance(SETTLED_AFTER).await;
    assert!(q.pass(&none_due).await.is_empty());
    assert!(!q.dispatcher.lost.any(), "settled: not asked again");
}
