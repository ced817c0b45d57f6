//! What only the SQL store does, on SQLite and PostgreSQL: the client migration, the spool's aliases, and rows it cannot read.

use super::*;

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
    let first = &super::super::sql::MIGRATIONS[..1];
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
