//! How a watch ends besides its `ends`: a call the provider refuses as it stands ends it with a
//! notice saying why, and deleting it cancels its run still waiting on a provider. On tokio's
//! paused clock over a SQLite file, with the scripted provider of `tests.rs`.

use std::sync::Arc;

use serde_json::json;

use super::{Answer, Bench, EVERY, Scripted, date};
use crate::jobs::JobStatus;
use crate::watches::WatchState;

/// A run the provider refuses as it stands would be refused at every run: the watch ends, with
/// a notice saying why, and the provider is asked no more.
#[tokio::test(start_paused = true)]
async fn a_watch_whose_call_the_provider_refuses_ends_with_a_notice_saying_why() {
    let provider = Scripted::new([Answer::Prices(vec!["500.00"]), Answer::Refused]);
    let bench = Bench::start(Arc::clone(&provider)).await;
    let arguments = json!({"origin": "LHR", "destination": "JFK", "departure_date": date()});
    let watch = bench
        .create("search_flights", arguments, json!({"kind": "any_change"}))
        .await;
    bench.until_runs(&watch.id, 2).await;
    let ended = bench.watch(&watch.id).await;
    assert_eq!(ended.state, WatchState::Ended, "{ended:?}");
    let news = bench.news(&watch.id).await;
    assert_eq!(news.len(), 1, "{news:?}");
    assert!(
        news[0].starts_with("This watch has ended: search_flights refused its call (")
            && news[0].contains("the offer does not exist any more"),
        "{news:?}"
    );
    let calls = provider.calls();
    bench
        .through(&watch.id, EVERY * 3, |w, _| {
            assert_eq!(w.state, WatchState::Ended);
        })
        .await;
    assert_eq!(provider.calls(), calls, "an ended watch asks nothing more");
}

/// Deleting a watch cancels its run waiting on a provider that is down: the provider is not
/// asked again for a watch that is gone.
#[tokio::test(start_paused = true)]
async fn deleting_a_watch_cancels_its_waiting_run() {
    let provider = Scripted::new([Answer::Prices(vec!["500.00"])]);
    provider.set_down(true);
    let bench = Bench::start(Arc::clone(&provider)).await;
    let arguments = json!({"origin": "LHR", "destination": "JFK", "departure_date": date()});
    let watch = bench
        .create("search_flights", arguments, json!({"kind": "any_change"}))
        .await;
    bench
        .until(&watch.id, EVERY * 2, "a run waiting", |w| w.job.is_some())
        .await;
    let (job_id, _) = bench.watch(&watch.id).await.job.expect("a run");
    let status = |bench: &Bench| {
        let jobs = bench.jobs.clone();
        let job_id = job_id.clone();
        async move {
            jobs.find(&job_id)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .expect("the run's job")
                .job
                .status
        }
    };
    // Its run waits to try the provider again.
    for _ in 0..200 {
        if status(&bench).await == JobStatus::RetryScheduled {
            break;
        }
        bench.step().await;
    }
    assert_eq!(status(&bench).await, JobStatus::RetryScheduled);
    bench
        .watches
        .delete(&watch.id, None)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(status(&bench).await, JobStatus::Cancelled);
    let calls = provider.calls();
    let start = tokio::time::Instant::now();
    while start.elapsed() < EVERY * 3 {
        bench.step().await;
    }
    assert_eq!(provider.calls(), calls, "nothing more is asked");
}
