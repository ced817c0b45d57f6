//! The client's cap on waiting notices ([`MAX_WAITING_PER_CLIENT`]) under concurrency: with
//! room for three more, twenty requests at once, through one replica and through three sharing
//! the store, leave exactly the cap waiting, on a SQLite file and on PostgreSQL (when
//! `FAREGATE_TEST_POSTGRES_URL` is set; in a schema of its own). Every one refused is refused
//! as one over the cap always was: [`NoticeError::Full`], with its text.
//!
//! Real time and a multi-threaded runtime: the race is between the store's connections.

use std::sync::Arc;

use futures::future::join_all;

use super::{gateway, new_notice, sqlite, system};
use crate::back_in_service::{BackInServiceSystem, MAX_WAITING_PER_CLIENT, NoticeError};
use crate::clients::ClientName;
use crate::clock;
use crate::store::{Arg, Db};
use crate::texts::back_in_service as texts;

/// Room left under the cap when the race starts.
const ROOM: u32 = 3;
/// Requests fired at once.
const AT_ONCE: usize = 20;

/// `n` waiting notices of `client`, written in one statement (the cap is a thousand).
async fn fill(db: &Db, client: &str, n: u32) {
    db.execute(
        "INSERT INTO faregate_back_in_service (id, client, tool, callback_url, state,
             created_at, expires_at, callback_attempts, updated_at)
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2)
         SELECT $1 || '-' || CAST(i AS TEXT), $1, 'search_flights',
                'http://127.0.0.1:9/hooks/back', 'waiting', $3, $4, 0, $3
         FROM n",
        &[
            Arg::Text(Some(client)),
            Arg::Int(Some(i64::from(n))),
            Arg::Int(Some(clock::epoch_ms())),
            Arg::Int(Some(clock::epoch_ms() + 3_600_000)),
        ],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// [`AT_ONCE`] requests of `who` at once, round-robin over `systems`, with [`ROOM`] left.
async fn race(systems: &[Arc<BackInServiceSystem>], db: &Db, who: &str) {
    fill(db, who, MAX_WAITING_PER_CLIENT - ROOM).await;
    let creates = (0..AT_ONCE).map(|n| {
        let system = Arc::clone(&systems[n % systems.len()]);
        let new = new_notice(who, None);
        tokio::spawn(async move { system.create(new).await })
    });
    let mut taken = 0;
    for outcome in join_all(creates).await {
        match outcome.unwrap_or_else(|e| panic!("{e}")) {
            Ok(_) => taken += 1,
            Err(NoticeError::Full(text)) => {
                assert_eq!(text, texts::full(MAX_WAITING_PER_CLIENT));
            }
            Err(other) => panic!("refused other than by the cap: {other:?}"),
        }
    }
    assert_eq!(taken, ROOM, "requests that took effect");
    let client = ClientName::configured(who).unwrap_or_else(|e| panic!("{e}"));
    let waiting = systems[0]
        .store()
        .waiting_count(&client)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(waiting, MAX_WAITING_PER_CLIENT);
}

async fn check(dbs: Vec<Db>) {
    let gateway = gateway(Vec::new());
    let mut systems = Vec::new();
    for db in &dbs {
        let notices = system(db, &gateway);
        // Migrated one after another, before any race.
        notices
            .store()
            .list(None, 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        systems.push(notices);
    }
    race(&systems[..1], &dbs[0], "one_replica").await;
    race(&systems, &dbs[0], "three_replicas").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_keep_a_client_within_its_cap() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut dbs = Vec::new();
    for _ in 0..3 {
        dbs.push(sqlite(&dir).await);
    }
    check(dbs).await;
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: concurrent_requests_keep_a_client_within_its_cap: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_{}", uuid::Uuid::now_v7().simple());
    let mut dbs = Vec::new();
    for _ in 0..3 {
        let db = Db::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        dbs.push(db);
    }
    check(dbs).await;
}
