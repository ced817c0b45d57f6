//! The job store conformance suite: every rule runs against SQLite, PostgreSQL and the in-memory
//! store the paused-clock tests use.
//!
//! PostgreSQL runs when `FAREGATE_TEST_POSTGRES_URL` is set (`.ci/run` sets it); each test gets
//! its own schema. Without it the PostgreSQL half says so on stderr and checks nothing.

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
        .list(None, None, Some(&travel_app), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed, [f], "a client's listing holds its jobs only");
    let everyone = s
        .list(None, None, None, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(everyone.len(), 5);
}

/// Jobs stored before jobs recorded their client belong to the `local` client after the
/// migration, and keep their idempotency keys (now in `local`'s namespace).
#[tokio::test]
async fn jobs_stored_before_clients_belong_to_the_local_client() {
    let (sqlite, _dir) = sqlite_unmigrated().await;
    check_client_migration(sqlite).await;
    if let Some(store) = postgres_unmigrated("jobs_stored_before_clients").await {
        check_client_migration(store).await;
    }
}

/// What the spool leaves when it moves in a resubmission whose key names a stored job: an
/// alias that finds (and cancels) that job, or a dead job that never ran, saying why; both on
/// each engine's SQL.
#[tokio::test]
async fn an_alias_finds_its_job_and_a_refused_submission_is_stored_dead() {
    let (sqlite, _dir) = sqlite().await;
    check_aliases(sqlite).await;
    if let Some(store) = postgres("an_alias_finds_its_job").await {
        check_aliases(store).await;
    }
}

async fn check_aliases(store: Store) {
    let (job, _) = store
        .enqueue(new_job("search_flights", Some("k")), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let alias = "0190a000-0000-7000-8000-00000000a11a";
    for _ in 0..2 {
        store
            .alias(alias, &job.id, T0 + 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(stored(&store, alias).await.id, job.id);
    assert!(
        store
            .cancel(alias, &ClientName::local(), T0 + 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(stored(&store, &job.id).await.status, JobStatus::Cancelled);

    let refused_id = "0190a000-0000-7000-8000-00000000dead";
    let mut asked = new_job("search_flights", Some("k"));
    asked.callback_url = Some("https://hooks.example/x".into());
    for _ in 0..2 {
        store
            .enqueue_refused(
                refused_id,
                &asked,
                T0 + 3,
                T0 + 4,
                "key used for other arguments",
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let refused = stored(&store, refused_id).await;
    assert_eq!(refused.status, JobStatus::Dead);
    assert_eq!(refused.idempotency_key, None);
    assert_eq!(refused.created_at_ms, T0 + 3);
    assert_eq!(
        refused.last_error.as_deref(),
        Some("key used for other arguments")
    );
    // Its callback goes out like any dead job's.
    let due = store
        .claim_callbacks(T0 + 5, 1_000, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        due.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [refused_id]
    );

    // Purging the job takes its alias.
    store
        .purge(T0 + 1_000_000_000, 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        store
            .get(alias)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none()
    );
}

#[tokio::test]
async fn a_job_whose_row_cannot_be_read_is_set_aside_and_the_rest_run() {
    let (sqlite, _dir) = sqlite().await;
    check_unreadable_row(sqlite).await;
    if let Some(store) = postgres("a_job_whose_row_cannot_be_read").await {
        check_unreadable_row(store).await;
    }
}

async fn check_unreadable_row(store: Store) {
    let (bad, _) = store
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (good, _) = store
        .enqueue(new_job("search_hotels", None), T0 + 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A state name this version does not know (as a newer one might write).
    store
        .db()
        .execute(
            "UPDATE faregate_jobs SET callback_state = 'postponed' WHERE id = $1",
            &[crate::store::Arg::Text(Some(&bad.id))],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = store
        .claim("w1", T0 + 5, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("the good job is claimed: {e}"));
    let ids: Vec<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [good.id.as_str()]);
    let due_again = T0 + 5 + 10 * 60 * 1000;
    let (status, next, error): (String, i64, String) = {
        let rows = store
            .db()
            .fetch(
                "SELECT status, next_attempt_at, last_error FROM faregate_jobs WHERE id = $1",
                &[crate::store::Arg::Text(Some(&bad.id))],
                |r| {
                    Ok((
                        r.text("status")?.unwrap_or_default(),
                        r.int("next_attempt_at")?.unwrap_or_default(),
                        r.text("last_error")?.unwrap_or_default(),
                    ))
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        rows.into_iter().next().expect("the row is kept")
    };
    assert_eq!((status.as_str(), next), ("retry_scheduled", due_again));
    assert!(error.contains("postponed"), "{error}");
    let before_due = store
        .claim("w2", due_again - 1, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        before_due.iter().all(|j| j.id != bad.id),
        "set aside, not claimed and dropped at each lease's end"
    );
}

#[tokio::test]
async fn a_callback_whose_row_cannot_be_read_waits_and_the_rest_go_out() {
    let (sqlite, _dir) = sqlite().await;
    check_unreadable_callback(sqlite).await;
    if let Some(store) = postgres("a_callback_whose_row_cannot_be_read").await {
        check_unreadable_callback(store).await;
    }
}

async fn check_unreadable_callback(store: Store) {
    let mut ended = Vec::new();
    for tool in ["search_flights", "search_hotels"] {
        let mut nj = new_job(tool, None);
        nj.callback_url = Some("https://chat.example.com/hook".into());
        let (j, _) = store
            .enqueue(nj, T0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        ended.push(j.id);
    }
    store
        .claim("w", T0, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for id in &ended {
        store
            .finish(id, "w", succeeded(json!({"status": "ok"})), T0 + 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let (bad, good) = (&ended[0], &ended[1]);
    // Stored arguments that no longer parse (a hand edit).
    store
        .db()
        .execute(
            "UPDATE faregate_jobs SET arguments = '{not json' WHERE id = $1",
            &[crate::store::Arg::Text(Some(bad))],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let due = store
        .claim_callbacks(T0 + 10, 30_000, 10)
        .await
        .unwrap_or_else(|e| panic!("the good callback is claimed: {e}"));
    let ids: Vec<&str> = due.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [good.as_str()]);
    let waits_until = T0 + 10 + 10 * 60 * 1000;
    let after_lease = store
        .claim_callbacks(T0 + 10 + 30_000, 30_000, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        after_lease.iter().all(|j| j.id != *bad),
        "set aside past the claim's lease"
    );
    let next: Vec<i64> = store
        .db()
        .fetch(
            "SELECT next_callback_at FROM faregate_jobs WHERE id = $1",
            &[crate::store::Arg::Text(Some(bad))],
            |r| Ok(r.int("next_callback_at")?.unwrap_or_default()),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next, [waits_until]);
}

async fn sqlite_unmigrated() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
    let db = crate::store::Db::open(&url)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (Store::new(db), dir)
}

async fn postgres_unmigrated(test: &str) -> Option<Store> {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!("note: {test}: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set");
        return None;
    };
    let schema = format!("fg_{}", uuid::Uuid::now_v7().simple());
    Some(
        Store::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}")),
    )
}

async fn check_client_migration(store: Store) {
    let first = &super::sql::MIGRATIONS[..1];
    assert_eq!(first[0].name, "jobs_1_queue");
    store
        .db()
        .migrate(first, T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .db()
        .execute(
            "INSERT INTO faregate_jobs (id, tool, arguments, idempotency_key, status,
                next_attempt_at, created_at, updated_at, callback_state)
             VALUES ('old-1', 'book_flight', '{}', 'k1', 'queued', $1, $1, $1, 'none')",
            &[crate::store::Arg::Int(Some(T0))],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored(&store, "old-1").await.client, ClientName::local());
    let (same, created) = store
        .enqueue(new_job("book_flight", Some("k1")), T0 + 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!created && same.id == "old-1", "local's k1 is the old job");
    let other = NewJob {
        client: ClientName::stored("key-0abcdef1"),
        ..new_job("book_flight", Some("k1"))
    };
    let (new, created) = store
        .enqueue(other, T0 + 2)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(created && new.id != "old-1");
}

conformance!(
    claims_take_due_jobs_once_until_the_lease_expires,
    check_claims
);
async fn check_claims<S: JobStore>(s: Arc<S>) {
    let (a, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (b, _) = s
        .enqueue(new_job("search_hotels", None), T0 + 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (c, _) = s
        .enqueue(new_job("search_flights", None), T0 + 10_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = s
        .claim("w1", T0 + 5, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        [a.id.as_str(), b.id.as_str()],
        "due ones, oldest first; c is not due"
    );
    assert!(
        claimed
            .iter()
            .all(|j| j.status == JobStatus::Running && j.lease_owner.as_deref() == Some("w1"))
    );
    assert!(
        s.claim("w2", T0 + 6, 1000, 10, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "leased"
    );
    // w1 crashed: after the lease, w2 takes the job.
    let again = s
        .claim("w2", T0 + 1006, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, a.id);
    // The old owner can no longer write it.
    assert!(
        !s.finish(&a.id, "w1", succeeded(json!({"x": 1})), T0 + 1007)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert!(
        s.finish(&a.id, "w2", succeeded(json!({"x": 2})), T0 + 1007)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let done = stored(&*s, &a.id).await;
    assert_eq!(done.status, JobStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"x": 2})));
    assert_eq!(done.attempts, 1);
    assert_eq!(done.lease_owner, None);
    let _ = c;
}

conformance!(claims_skip_tools_whose_breakers_are_open, check_skip);
async fn check_skip<S: JobStore>(s: Arc<S>) {
    s.enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (h, _) = s
        .enqueue(new_job("search_hotels", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = s
        .claim("w", T0, 1000, 10, &["search_flights".into()])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        claimed.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        [h.id]
    );
    let mut due = s.due_tools(T0).await.unwrap_or_else(|e| panic!("{e}"));
    due.sort();
    assert_eq!(due, ["search_flights"], "running jobs are not due");
}

conformance!(
    a_tool_whose_job_lease_ran_out_is_due,
    check_expired_lease_due
);
async fn check_expired_lease_due<S: JobStore>(s: Arc<S>) {
    s.enqueue(new_job("search_trains", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = s
        .claim("w1", T0, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(claimed.len(), 1);
    let due = s
        .due_tools(T0 + 1000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(due.is_empty(), "leased until T0 + 1000: {due:?}");
    let due = s
        .due_tools(T0 + 1001)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        due,
        ["search_trains"],
        "its lease ran out: a claim could take it"
    );
}

conformance!(
    a_claim_can_take_only_jobs_created_and_due_before_an_instant,
    check_overdue
);
async fn check_overdue<S: JobStore>(s: Arc<S>) {
    let enqueue = |tool: &'static str, at: i64| {
        let s = Arc::clone(&s);
        async move {
            let (job, _) = s
                .enqueue(new_job(tool, None), at)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            job.id
        }
    };
    let old = enqueue("search_trains", T0).await;
    let hotels = enqueue("search_hotels", T0 + 1).await;
    // Created early, but requeued to be due late.
    let late = enqueue("search_trains", T0 + 2).await;
    // Created early, claimed, and their leases ran out: one early, one late.
    let lapsed = enqueue("search_trains", T0 + 3).await;
    let lapsed_early = enqueue("search_trains", T0 + 4).await;
    let young = enqueue("search_trains", T0 + 10).await;
    let ids = |jobs: Vec<Job>| {
        let mut ids: Vec<String> = jobs.into_iter().map(|j| j.id).collect();
        ids.sort();
        ids
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let claim = |owner: &'static str, now: i64, lease: i64, limit: u32| {
        let s = Arc::clone(&s);
        async move {
            s.claim(owner, now, lease, limit, &[])
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let first = claim("other", T0 + 3, 1000, 3).await;
    assert_eq!(
        ids(first),
        sorted(vec![old.clone(), hotels.clone(), late.clone()]),
        "oldest due first"
    );
    for (id, due) in [(&old, T0 + 16), (&hotels, T0 + 15), (&late, T0 + 18)] {
        let requeued = s
            .finish(id, "other", retry(due, "429", true), T0 + 4)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(requeued);
    }
    let second = claim("other", T0 + 4, 13, 1).await;
    assert_eq!(ids(second), std::slice::from_ref(&lapsed));
    let third = claim("other", T0 + 4, 1, 1).await;
    assert_eq!(ids(third), std::slice::from_ref(&lapsed_early));
    // Now `lapsed_early`'s lease ran out at T0 + 5 and `lapsed`'s at T0 + 17; `hotels` is due
    // from T0 + 15, `old` from T0 + 16, `late` from T0 + 18, `young` from T0 + 10.

    let served = ["search_hotels".to_string()];
    let overdue = Overdue {
        created_before_ms: T0 + 10,
        due_by_ms: T0 + 16,
    };
    let claimed = s
        .claim_overdue("w", T0 + 20, 1000, 10, &served, overdue)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ids(claimed),
        sorted(vec![old.clone(), lapsed_early.clone()]),
        "created before T0 + 10, due by T0 + 16 (a lease's end counts), not a skipped tool's"
    );
    let rest = claim("w", T0 + 20, 1000, 10).await;
    assert_eq!(
        ids(rest),
        sorted(vec![hotels, late, lapsed, young]),
        "a plain claim takes any age and due time"
    );
}

conformance!(
    retries_count_only_attempts_that_reached_a_provider,
    check_retry
);
async fn check_retry<S: JobStore>(s: Arc<S>) {
    let (j, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w", T0, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.finish(
            &j.id,
            "w",
            retry(T0 + 30_000, "breaker open", false),
            T0 + 1
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    );
    let r = stored(&*s, &j.id).await;
    assert_eq!(
        (r.status, r.attempts, r.next_attempt_at_ms),
        (JobStatus::RetryScheduled, 0, T0 + 30_000)
    );
    assert_eq!(r.last_error.as_deref(), Some("breaker open"));
    assert!(
        s.claim("w", T0 + 29_999, 1000, 1, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "not due yet"
    );
    s.claim("w", T0 + 30_000, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.finish(&j.id, "w", retry(T0 + 60_000, "503", true), T0 + 30_001)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(
        s.get(&j.id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|j| j.attempts),
        Some(1)
    );
    assert!(
        !s.finish(&j.id, "w", retry(T0, "not leased", true), T0)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        "only a leased job"
    );
}

conformance!(dead_jobs_keep_their_error_and_result, check_kill);
async fn check_kill<S: JobStore>(s: Arc<S>) {
    let (j, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w", T0, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let env = json!({"status": "rejected"});
    assert!(
        s.finish(
            &j.id,
            "w",
            dead("unknown airport", Some(env.clone()), true),
            T0 + 1
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    );
    let d = stored(&*s, &j.id).await;
    assert_eq!((d.status, d.attempts), (JobStatus::Dead, 1));
    assert_eq!(d.last_error.as_deref(), Some("unknown airport"));
    assert_eq!(d.result, Some(env));
    assert!(
        s.claim("w", T0 + 10_000_000, 1000, 5, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "dead is final"
    );
}

conformance!(callbacks_are_leased_retried_and_recorded, check_callbacks);
async fn check_callbacks<S: JobStore>(s: Arc<S>) {
    let mut nj = new_job("search_flights", None);
    nj.callback_url = Some("https://chat.example.com/hook".into());
    let (j, _) = s.enqueue(nj, T0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(j.callback, CallbackState::Pending);
    assert!(
        s.claim_callbacks(T0, 30_000, 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "not before the job ends"
    );
    s.claim("w", T0, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.finish(&j.id, "w", succeeded(json!({"status": "ok"})), T0 + 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let due = s
        .claim_callbacks(T0 + 10, 30_000, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.len(), 1);
    assert!(
        s.claim_callbacks(T0 + 11, 30_000, 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "leased to one sender"
    );
    s.callback_result(&j.id, false, Some(T0 + 2_000), T0 + 12)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let again = s
        .claim_callbacks(T0 + 2_000, 30_000, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.len(), 1, "retried when due");
    s.callback_result(&j.id, true, None, T0 + 2_001)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let j = stored(&*s, &j.id).await;
    assert_eq!((j.callback, j.callback_attempts), (CallbackState::Sent, 2));
    assert_eq!(
        j.result,
        Some(json!({"status": "ok"})),
        "the result never depends on the callback"
    );
}

conformance!(
    only_the_owner_cancels_and_only_a_job_not_started,
    check_cancel
);
async fn check_cancel<S: JobStore>(s: Arc<S>) {
    let local = ClientName::local();
    let other = ClientName::stored("globex");
    let (queued, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Another client's cancel changes nothing, exactly as for a job that does not exist.
    assert!(
        !s.cancel(&queued.id, &other, T0 + 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert!(
        !s.cancel("no-such-job", &local, T0 + 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(stored(&*s, &queued.id).await.status, JobStatus::Queued);
    assert!(
        s.cancel(&queued.id, &local, T0 + 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let cancelled = stored(&*s, &queued.id).await;
    assert_eq!(
        (cancelled.status, cancelled.updated_at_ms),
        (JobStatus::Cancelled, T0 + 2)
    );
    // A cancelled job is never claimed, and a second cancel is not a change.
    let claimed = s
        .claim("w1", T0 + 10, 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(claimed.is_empty(), "claimed a cancelled job: {claimed:?}");
    assert!(
        !s.cancel(&queued.id, &local, T0 + 11)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );

    // A job waiting for its retry is cancelled; a running one never is (it may be booking).
    let (waiting, _) = s
        .enqueue(new_job("search_flights", None), T0 + 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w1", T0 + 20, 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !s.cancel(&waiting.id, &local, T0 + 21)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(stored(&*s, &waiting.id).await.status, JobStatus::Running);
    s.finish(
        &waiting.id,
        "w1",
        retry(T0 + 5_000, "provider down", true),
        T0 + 22,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.cancel(&waiting.id, &local, T0 + 23)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let claimed = s
        .claim("w1", T0 + 10_000, 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(claimed.is_empty(), "claimed a cancelled job: {claimed:?}");
}

conformance!(
    finished_jobs_are_purged_after_retention_but_never_with_a_callback_to_send,
    check_purge
);
async fn check_purge<S: JobStore>(s: Arc<S>) {
    let enqueue = |tool: &'static str, callback: bool| {
        let s = Arc::clone(&s);
        async move {
            let job = NewJob {
                callback_url: callback.then(|| "https://example.com/hooks/x".to_string()),
                ..new_job(tool, None)
            };
            s.enqueue(job, T0)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .0
                .id
        }
    };
    let done = enqueue("search_flights", false).await;
    let dead_one = enqueue("search_hotels", false).await;
    let calling_back = enqueue("get_flight_status", true).await;
    let waiting = enqueue("price_flight_offer", false).await;
    let cancelled = enqueue("check_hotel_availability", true).await;
    let claimed = s
        .claim("w", T0, 60_000, 3, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(claimed.len(), 3);
    let end = |id: &str, transition: Transition| {
        let s = Arc::clone(&s);
        let id = id.to_string();
        async move {
            assert!(
                s.finish(&id, "w", transition, T0 + 10)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
            );
        }
    };
    end(&done, succeeded(json!({"status": "ok"}))).await;
    end(&dead_one, dead("refused", None, true)).await;
    end(&calling_back, succeeded(json!({"status": "ok"}))).await;
    let job_client = ClientName::local();
    assert!(
        s.cancel(&cancelled, &job_client, T0 + 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );

    // Nothing ended before the cutoff: nothing goes.
    assert_eq!(
        s.purge(T0 + 10, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        0
    );
    // A batch of one, then the rest: succeeded, dead and cancelled go; the job whose callback
    // is still to be sent and the job still waiting stay.
    assert_eq!(
        s.purge(T0 + 11, 1).await.unwrap_or_else(|e| panic!("{e}")),
        1
    );
    assert_eq!(
        s.purge(T0 + 11, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        2
    );
    for gone in [&done, &dead_one, &cancelled] {
        assert_eq!(s.get(gone).await.unwrap_or_else(|e| panic!("{e}")), None);
    }
    assert_eq!(stored(&*s, &waiting).await.status, JobStatus::Queued);
    assert_eq!(
        stored(&*s, &calling_back).await.callback,
        CallbackState::Pending
    );
    // Once its callback is sent, it goes after retention counted from the delivery.
    s.callback_result(&calling_back, true, None, T0 + 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.purge(T0 + 20, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        0
    );
    assert_eq!(
        s.purge(T0 + 21, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        1
    );
    assert_eq!(stored(&*s, &waiting).await.status, JobStatus::Queued);
}

conformance!(shutdown_returns_leases_to_the_queue, check_release);
async fn check_release<S: JobStore>(s: Arc<S>) {
    for _ in 0..3 {
        s.enqueue(new_job("search_flights", None), T0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        s.claim("w", T0, 60_000, 3, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .len(),
        3
    );
    assert_eq!(
        s.release("w", T0 + 1)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        3
    );
    assert_eq!(
        s.claim("w2", T0 + 1, 60_000, 3, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .len(),
        3,
        "due at once, not after the lease"
    );
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

conformance!(
    concurrent_claims_never_take_a_job_twice,
    check_concurrent_claims
);
async fn check_concurrent_claims<S: JobStore + 'static>(s: Arc<S>) {
    for _ in 0..200 {
        s.enqueue(new_job("search_flights", None), T0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let claimers: Vec<_> = (0..4)
        .map(|w| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let got = s
                        .claim(&format!("w{w}"), T0, 60_000, 7, &[])
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    if got.is_empty() {
                        break mine;
                    }
                    mine.extend(got.into_iter().map(|j| j.id));
                }
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut total = 0;
    for c in claimers {
        for id in c.await.unwrap_or_else(|e| panic!("{e}")) {
            total += 1;
            assert!(seen.insert(id), "a job was claimed twice");
        }
    }
    assert_eq!(total, 200);
}
