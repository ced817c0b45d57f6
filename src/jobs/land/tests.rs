//! Writes that must land, on tokio's paused clock: a write the store refuses is tried again
//! until it lands, and while it waits the dispatcher is held.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{Unstored, until_stored};
use crate::jobs::store::StoreError;

/// A write that fails its first `failures` tries, then lands with the number of tries.
fn flaky(
    failures: u32,
) -> (
    Arc<AtomicU32>,
    impl FnMut() -> std::future::Ready<Result<u32, StoreError>>,
) {
    let tries = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&tries);
    let write = move || {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(if n > failures {
            Ok(n)
        } else {
            Err(StoreError("connection refused".into()))
        })
    };
    (tries, write)
}

#[tokio::test(start_paused = true)]
async fn a_write_the_store_refuses_is_tried_again_until_it_lands() {
    let unstored = Unstored::default();
    let (tries, write) = flaky(5);
    let landed = until_stored(&unstored, "result", "job-1", write).await;
    assert_eq!(landed.value, 6, "the write that landed is the sixth try");
    assert!(landed.retried, "tries failed before it");
    assert_eq!(tries.load(Ordering::SeqCst), 6, "and no try after it");
    assert!(!unstored.any(), "nothing waits once it landed");
}

#[tokio::test(start_paused = true)]
async fn a_write_that_lands_at_once_never_holds_the_dispatcher() {
    let unstored = Unstored::default();
    let (_, write) = flaky(0);
    let landed = until_stored(&unstored, "result", "job-1", write).await;
    assert_eq!((landed.value, landed.retried), (1, false));
    assert!(!unstored.any());
}

#[tokio::test(start_paused = true)]
async fn the_dispatcher_is_held_while_a_write_waits_and_freed_when_its_worker_stops() {
    let unstored = Unstored::default();
    let (tries, write) = flaky(u32::MAX);
    let waiting = {
        let unstored = unstored.clone();
        tokio::spawn(async move { until_stored(&unstored, "result", "job-1", write).await })
    };
    // A minute of a store that does not answer: the write is still tried, and still counted.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(unstored.any(), "a waiting write holds the dispatcher");
    let so_far = tries.load(Ordering::SeqCst);
    assert!(
        so_far >= 30,
        "tried about once a second while the store was away, not given up: {so_far} tries"
    );
    // A shutdown aborts the worker: its write no longer holds anything.
    waiting.abort();
    let _ = waiting.await;
    assert!(!unstored.any(), "an aborted worker's write is not counted");
}
