//! The spool on real SQLite files: the store is a second SQLite file, and "the store does not
//! answer" is another connection holding its write lock, so every write waits out the one
//! second bound as it would on a PostgreSQL that went away.

use std::sync::Arc;

use serde_json::json;
use sqlx::pool::PoolConnection;

use super::{Kept, Spool};
use crate::clients::ClientName;
use crate::jobs::store::JobFilter;
use crate::jobs::store::{Job, JobStatus, JobStore, NewJob, Store};
use crate::store::Db;
use crate::telemetry::{AlertRules, Telemetry};

struct Setup {
    store: Store,
    spool: Spool,
    dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    let store = Store::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
    let spool = spool_at(&dir);
    Setup { store, spool, dir }
}

fn spool_at(dir: &tempfile::TempDir) -> Spool {
    Spool::new(
        dir.path().join("spool.db"),
        "replica-test".into(),
        Arc::new(Telemetry::new(AlertRules::spec())),
    )
}

fn job(client: &str, key: Option<&str>) -> NewJob {
    NewJob {
        tool: "search_hotels".into(),
        arguments: json!({"city_code": "PAR"}),
        call_id: Some("call-1".into()),
        client: ClientName::stored(client),
        idempotency_key: key.map(str::to_string),
        callback_url: None,
        trace: None,
    }
}

/// Takes `store`'s write lock until the connection is handed to [`unlock`].
async fn lock(store: &Store) -> PoolConnection<sqlx::Sqlite> {
    let Db::Sqlite(pool) = store.db() else {
        panic!("a SQLite store")
    };
    let mut conn = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    conn
}

async fn unlock(mut conn: PoolConnection<sqlx::Sqlite>) {
    sqlx::query("ROLLBACK")
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

async fn submit(s: &Setup, job: NewJob) -> (Job, bool, Kept) {
    s.spool
        .submit(&s.store, job)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Puts `job` in the spool as a submission during an outage would.
async fn spool_directly(spool: &Spool, job: NewJob) -> Job {
    let file = spool.file().await.unwrap_or_else(|e| panic!("{e}"));
    let id = uuid::Uuid::now_v7().to_string();
    let (job, _) = file
        .enqueue_as(&id, job, crate::clock::epoch_ms())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    spool.recount(file).await;
    job
}

async fn all(store: &Store) -> Vec<Job> {
    store
        .list(JobFilter::default(), 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn submissions_the_store_does_not_take_are_spooled_answered_and_moved_in_once() {
    let s = setup().await;
    let held = lock(&s.store).await;
    let (a, created, kept) = submit(&s, job("acme", Some("k-a"))).await;
    assert!(created);
    assert_eq!(
        kept,
        Kept::Spool,
        "the store did not answer within a second"
    );
    let (b, _, kept) = submit(&s, job("acme", None)).await;
    assert_eq!(kept, Kept::Spool);
    assert!(s.spool.store_away());
    assert_eq!(s.spool.depth(), 2);

    // While spooled: found by id, and the same key answers the same job.
    let found = s.spool.get(&a.id).await.unwrap_or_else(|e| panic!("{e}"));
    let found = found.unwrap_or_else(|| panic!("job {} is in the spool", a.id));
    assert_eq!(found.status, JobStatus::Queued);
    assert_eq!(found.client, ClientName::stored("acme"));
    let (again, created, kept) = submit(&s, job("acme", Some("k-a"))).await;
    assert_eq!(
        (again.id.as_str(), created, kept),
        (a.id.as_str(), false, Kept::Spool)
    );
    // Another client's same key is another job.
    let (other, created, _) = submit(&s, job("globex", Some("k-a"))).await;
    assert!(created);
    assert_ne!(other.id, a.id);

    // The store still does not answer: nothing moves, nothing is lost.
    assert!(s.spool.flush(&s.store).await.is_err());
    assert_eq!(s.spool.depth(), 3);

    unlock(held).await;
    let moved = s
        .spool
        .flush(&s.store)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(moved, 3);
    assert_eq!(s.spool.depth(), 0);
    assert!(!s.spool.store_away(), "the store answers again");
    let stored = all(&s.store).await;
    assert_eq!(stored.len(), 3, "each spooled job once: {stored:#?}");
    let moved_a = stored
        .iter()
        .find(|j| j.id == a.id)
        .unwrap_or_else(|| panic!("job {} keeps its id", a.id));
    assert_eq!(moved_a.client, ClientName::stored("acme"));
    assert_eq!(moved_a.idempotency_key.as_deref(), Some("k-a"));
    assert_eq!(moved_a.call_id.as_deref(), Some("call-1"));
    assert_eq!(
        moved_a.created_at_ms, a.created_at_ms,
        "and its creation time"
    );
    assert_eq!(moved_a.status, JobStatus::Queued);
    assert!(stored.iter().any(|j| j.id == b.id));

    // From now on the store answers the key, with the same job.
    let (again, created, kept) = submit(&s, job("acme", Some("k-a"))).await;
    assert_eq!(
        (again.id.as_str(), created, kept),
        (a.id.as_str(), false, Kept::Store)
    );
    assert_eq!(
        s.spool.get(&a.id).await.ok().flatten(),
        None,
        "no longer spooled"
    );
}

#[tokio::test]
async fn a_flush_cut_short_between_its_insert_and_its_delete_does_not_double_the_job() {
    let s = setup().await;
    let spooled = spool_directly(&s.spool, job("acme", None)).await;
    // The insert landed, then the replica crashed before deleting the spooled copy.
    let (landed, created) = s
        .store
        .enqueue_as(&spooled.id, job("acme", None), spooled.created_at_ms)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(created);
    assert_eq!(landed.id, spooled.id);

    let moved = s
        .spool
        .flush(&s.store)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(moved, 1, "the spooled copy leaves the spool");
    assert_eq!(s.spool.depth(), 0);
    let stored = all(&s.store).await;
    assert_eq!(
        stored.len(),
        1,
        "and the job is in the store once: {stored:#?}"
    );
}

#[tokio::test]
async fn a_spooled_key_the_store_already_holds_becomes_that_job() {
    let s = setup().await;
    let (first, _) = s
        .store
        .enqueue(job("acme", Some("k-1")), crate::clock::epoch_ms())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Resubmitted while the store was away: the spool did not know the key.
    let spooled = spool_directly(&s.spool, job("acme", Some("k-1"))).await;
    assert_ne!(spooled.id, first.id);

    s.spool
        .flush(&s.store)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.spool.depth(), 0);
    let stored = all(&s.store).await;
    assert_eq!(stored.len(), 1, "one key, one job: {stored:#?}");
    assert_eq!(stored[0].id, first.id);

    // The id the caller was answered with finds that job, and cancels it.
    let found = s
        .store
        .get(&spooled.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the spooled id finds nothing"));
    assert_eq!(found.id, first.id);
    let now = crate::clock::epoch_ms();
    let cancelled = s
        .store
        .cancel(&spooled.id, &ClientName::stored("acme"), now)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(cancelled, "cancelled through the spooled id");
    // Purged with its job: the alias goes too.
    s.store
        .purge(now + 1, 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let Db::Sqlite(pool) = s.store.db() else {
        panic!("a SQLite store")
    };
    let aliases: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM faregate_job_aliases")
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(aliases, 0);
}

#[tokio::test]
async fn a_spooled_key_the_store_holds_for_other_arguments_is_stored_dead_saying_why() {
    let s = setup().await;
    let (first, _) = s
        .store
        .enqueue(job("acme", Some("k-1")), crate::clock::epoch_ms())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut other = job("acme", Some("k-1"));
    other.arguments = json!({"city_code": "LON"});
    other.callback_url = Some("https://hooks.example/x".into());
    let spooled = spool_directly(&s.spool, other).await;

    for _ in 0..2 {
        // A second flush (one cut short before its delete) changes nothing.
        s.spool
            .flush(&s.store)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(s.spool.depth(), 0);
    let refused = s
        .store
        .get(&spooled.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the spooled id finds nothing"));
    assert_eq!(refused.status, JobStatus::Dead, "{refused:#?}");
    assert_eq!(refused.attempts, 0, "never run");
    assert_eq!(refused.arguments, json!({"city_code": "LON"}));
    assert_eq!(refused.idempotency_key, None, "the key is the other job's");
    let why = refused.last_error.clone().unwrap_or_default();
    assert!(
        why.contains("already used for a different search_hotels request")
            && why.contains(&first.id),
        "{why}"
    );
    assert!(
        refused.next_callback_at_ms.is_some(),
        "its callback is due: {refused:#?}"
    );
    let kept = s
        .store
        .get(&first.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the first job is gone"));
    assert_eq!(kept.status, JobStatus::Queued);
    assert_eq!(kept.arguments, json!({"city_code": "PAR"}));
    assert_eq!(all(&s.store).await.len(), 2);
}

#[tokio::test]
async fn a_spool_left_by_an_earlier_run_is_answered_and_moved_in_after_a_restart() {
    let s = setup().await;
    let spooled = spool_directly(&s.spool, job("acme", None)).await;
    drop(s.spool);

    let restarted = spool_at(&s.dir);
    assert_eq!(restarted.depth(), 0, "nothing is read before resume");
    restarted.resume().await;
    assert_eq!(restarted.depth(), 1);
    let found = restarted
        .get(&spooled.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.map(|j| j.id), Some(spooled.id.clone()));
    let moved = restarted
        .flush(&s.store)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(moved, 1);
    assert_eq!(all(&s.store).await.len(), 1);
}

#[tokio::test]
async fn a_replica_whose_store_answers_never_creates_its_spool_file() {
    let s = setup().await;
    let (_, created, kept) = submit(&s, job("acme", Some("k-1"))).await;
    assert!(created);
    assert_eq!(kept, Kept::Store);
    s.spool.resume().await;
    assert_eq!(s.spool.flush(&s.store).await.ok(), Some(0));
    assert!(
        !s.spool.path().exists(),
        "{} was created",
        s.spool.path().display()
    );
}
