//! The job store conformance suite: every rule runs against SQLite, PostgreSQL and the in-memory
//! store the paused-clock tests use.
//!
//! PostgreSQL runs when `FAREGATE_TEST_POSTGRES_URL` is set (`.ci/run` sets it); each test gets
//! its own schema. Without it the PostgreSQL half says so on stderr and checks nothing.
//!
//! Here: what a store keeps (enqueue, trace context, idempotency keys, counts); `claims.rs`:
//! which jobs a claim takes, and retries; `shares.rs`: claims within the clients' shares;
//! `ends.rs`: how runs end (dead, callbacks, cancel, purge, shutdown); `sql_store.rs`: what
//! only the SQL store does (migrations, aliases, rows it cannot read).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;

use super::memory::MemoryStore;
use super::*;
use crate::clients::ClientName;

const T0: i64 = 1_800_000_000_000;

fn new_job(tool: &str, key: Option<&str>) -> NewJob {
    NewJob {
        tool: tool.into(),
        arguments: json!({"origin": "JFK", "destination": "LHR", "departure_date": "2030-01-01"}),
        call_id: Some("call_1".into()),
        client: ClientName::local(),
        idempotency_key: key.map(str::to_string),
        callback_url: None,
        trace: None,
    }
}

fn succeeded(result: serde_json::Value) -> Transition {
    Transition::Succeeded { result }
}

fn retry(next_attempt_at_ms: i64, error: &str, attempted: bool) -> Transition {
    Transition::Retry {
        next_attempt_at_ms,
        error: error.into(),
        attempted,
    }
}

fn dead(error: &str, result: Option<serde_json::Value>, attempted: bool) -> Transition {
    Transition::Dead {
        error: error.into(),
        result,
        attempted,
    }
}

/// The job as stored now (the test fails if it is not).
async fn stored<S: JobStore>(s: &S, id: &str) -> Job {
    s.get(id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("stored"))
}

async fn sqlite() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
    let store = Store::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
    (store, dir)
}

/// A store in a fresh schema, or `None` (with a note) when no PostgreSQL URL is configured.
pub(crate) async fn postgres(test: &str) -> Option<Store> {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: {test}: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return None;
    };
    let schema = format!("fg_{}", uuid::Uuid::now_v7().simple());
    let store = Store::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    Some(store)
}

/// Runs `check` against the in-memory store and SQLite, then PostgreSQL when available.
macro_rules! conformance {
    ($name:ident, $check:ident) => {
        #[tokio::test]
        async fn $name() {
            $check(Arc::new(MemoryStore::default())).await;
            let (store, _dir) = sqlite().await;
            $check(Arc::new(store)).await;
            if let Some(store) = postgres(stringify!($name)).await {
                $check(Arc::new(store)).await;
            }
        }
    };
}

// The rules by subject; each file uses the helpers and `conformance!` above.
mod claims;
mod ends;
mod shares;
mod sql_store;

conformance!(
    a_listing_tells_a_clients_calls_from_its_watches_runs,
    check_a_listing_tells_a_clients_calls_from_its_watches_runs
);
async fn check_a_listing_tells_a_clients_calls_from_its_watches_runs<S: JobStore>(s: Arc<S>) {
    let run_key = format!("{WATCH_RUN_KEY_PREFIX}0199-watch:{T0}");
    let mut ids = Vec::new();
    for (i, key) in [
        None,
        Some("trip-1"),
        Some(run_key.as_str()),
        Some("watchful"),
    ]
    .into_iter()
    .enumerate()
    {
        let (job, _) = s
            .enqueue(new_job("search_flights", key), T0 + i as i64)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // Only the watch's run names a watch (its traces carry it).
        let watch = (i == 2).then_some("0199-watch");
        assert_eq!(job.watch_id(), watch, "{key:?}");
        ids.push(job.id);
    }
    let listed = |origin| {
        let s = Arc::clone(&s);
        async move {
            let filter = JobFilter {
                origin,
                ..JobFilter::default()
            };
            let jobs = s.list(filter, 10).await.unwrap_or_else(|e| panic!("{e}"));
            jobs.into_iter().map(|j| j.id).collect::<Vec<_>>()
        }
    };
    // Newest first; a key that merely starts with "watch" is a call.
    let [call, keyed, run, watchful] = [0, 1, 2, 3].map(|i| ids[i].clone());
    assert_eq!(listed(Origin::Calls).await, [watchful, keyed, call]);
    assert_eq!(listed(Origin::WatchRuns).await, [run]);
    assert_eq!(listed(Origin::Any).await.len(), 4);
}

conformance!(enqueue_then_get, check_enqueue_then_get);
async fn check_enqueue_then_get<S: JobStore>(s: Arc<S>) {
    let (job, created) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(created);
    assert_eq!(job.status, JobStatus::Queued);
    assert_eq!(job.attempts, 0);
    assert_eq!(job.next_attempt_at_ms, T0);
    assert_eq!(job.callback, CallbackState::None);
    let got = s.get(&job.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, Some(job));
    assert_eq!(s.get("nope").await.unwrap_or_else(|e| panic!("{e}")), None);
}

conformance!(
    a_job_keeps_the_trace_context_it_was_submitted_under,
    check_trace
);
async fn check_trace<S: JobStore>(s: Arc<S>) {
    let trace = crate::trace_context::TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("agent=planner"),
    );
    assert!(trace.is_some());
    let traced = NewJob {
        trace: trace.clone(),
        ..new_job("search_flights", None)
    };
    let (job, _) = s
        .enqueue(traced, T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(job.trace, trace);
    assert_eq!(stored(&*s, &job.id).await.trace, trace);
    let (untraced, _) = s
        .enqueue(new_job("search_hotels", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored(&*s, &untraced.id).await.trace, None);
}

conformance!(
    an_idempotency_key_returns_the_existing_job,
    check_idempotency
);
async fn check_idempotency<S: JobStore>(s: Arc<S>) {
    let (a, created_a) = s
        .enqueue(new_job("book_flight", Some("k1")), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (b, created_b) = s
        .enqueue(new_job("book_flight", Some("k1")), T0 + 5)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(created_a && !created_b);
    assert_eq!(a.id, b.id);
    let (c, created_c) = s
        .enqueue(new_job("search_flights", Some("k1")), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(created_c, "keys are per tool");
    assert_ne!(c.id, a.id);
    let (d, _) = s
        .enqueue(new_job("book_flight", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (e, _) = s
        .enqueue(new_job("book_flight", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(d.id, e.id, "no key, no dedup");
    let other_client = NewJob {
        client: ClientName::stored("travel-app"),
        ..new_job("book_flight", Some("k1"))
    };
    let (f, created_f) = s
        .enqueue(other_client, T0 + 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        created_f,
        "keys are per client: another client's k1 is a new job"
    );
    assert_ne!(f.id, a.id);
    assert_eq!(f.client.as_str(), "travel-app");
    assert_eq!(stored(&*s, &a.id).await.client, ClientName::local());
    let travel_app = ClientName::stored("travel-app");
    let listed = s
        .list(
            JobFilter {
                client: Some(&travel_app),
                ..JobFilter::default()
            },
            10,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed, [f], "a client's listing holds its jobs only");
    let everyone = s
        .list(JobFilter::default(), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(everyone.len(), 5);
}

conformance!(stats_count_by_tool_and_status, check_stats);
async fn check_stats<S: JobStore>(s: Arc<S>) {
    s.enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.enqueue(new_job("search_flights", None), T0 + 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.enqueue(new_job("search_hotels", None), T0 + 200)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w", T0 + 200, 1000, 1, &["search_flights".into()])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let stats = s.stats(T0 + 1000).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        stats.depth,
        [
            ("search_flights".to_string(), JobStatus::Queued, 2),
            ("search_hotels".to_string(), JobStatus::Running, 1)
        ]
    );
    assert_eq!(
        stats.oldest_due_age_ms,
        [("search_flights".to_string(), 1000)]
    );
}
