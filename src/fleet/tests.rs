//! The fleet's rules that one process can check, on a SQLite file: rows written "by another
//! replica" are written straight through the statements, under a name that is not this
//! replica's, and followed by this replica's catch-up read.
//!
//! Scenarios that need a store that goes away, notifications or leases between processes are in
//! `tests/it/fleet/` (PostgreSQL).

use std::collections::HashSet;

use super::handle::Fleet;
use super::record::{AutoState, Payload, Write};
use crate::breaker::{BreakerConfig, BreakerKey, BreakerRegistry, BreakerState, ForceMode};
use crate::clock;
use crate::store::{Db, StoreError};

/// A name no replica of these tests is given.
const PEER: &str = "replica-peer";

/// The rejecting grace the statements are given, in ms (the gateway's).
const GRACE: i64 = 60_000;

fn key() -> BreakerKey {
    BreakerKey::new("search_flights", "duffel")
}

fn config() -> BreakerConfig {
    BreakerConfig::builder()
        .jitter(0.0)
        .build()
        .unwrap_or_else(|e| panic!("{e:?}"))
}

/// This replica's fleet on a fresh SQLite file (kept as long as the directory).
async fn fleet(dir: &tempfile::TempDir) -> std::sync::Arc<Fleet> {
    let db = Db::open_sqlite_file(&dir.path().join("fleet.db"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Fleet::open(db).await.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_recovery_never_ends_an_open_that_still_runs() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let now = clock::epoch_ms();
    let open = AutoState::Open {
        until_ms: now + 40_000,
        ramp: true,
    };
    let store = &fleet.store;
    let opened = store.set_auto(&key(), open, now, PEER, now, GRACE).await;
    let opened = opened.unwrap_or_else(|e| panic!("{e}"));
    assert!(opened.is_some(), "the peer's open is written");
    // This replica recovered while it did not know of that open (it was away from the store).
    let recovered = AutoState::Recovered { ramp: true };
    let refused = store
        .set_auto(&key(), recovered, now + 1, &fleet.replica, now + 1, GRACE)
        .await;
    assert_eq!(
        refused.map(|r| r.is_some()).ok(),
        Some(false),
        "nothing written"
    );
    let rows = store.all().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].auto, rows[0].replica.as_str()), (open, PEER));
    // Once the open has run out, a recovery from it is written.
    let later = store
        .set_auto(
            &key(),
            recovered,
            now + 40_000,
            &fleet.replica,
            now + 40_000,
            GRACE,
        )
        .await;
    let later = later.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(later.map(|r| r.auto_state), Some("recovered".to_string()));
}

#[tokio::test]
async fn a_force_still_to_be_written_is_not_undone_by_a_peers_row() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let breaker = breakers.get_or_insert(key(), config());
    // Forced here while the store was away: the force waits to be written.
    breaker.force(ForceMode::Open, clock::now());
    // Meanwhile a peer opened the breaker, and its row has no force.
    let now = clock::epoch_ms();
    let open = AutoState::Open {
        until_ms: now + 30_000,
        ramp: true,
    };
    let written = fleet
        .store
        .set_auto(&key(), open, now, PEER, now, GRACE)
        .await;
    written.unwrap_or_else(|e| panic!("{e}"));
    let forcing = HashSet::from([key()]);
    let read = fleet.catch_up(&breakers, &forcing).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
    // Once the force is written, the row is this replica's force.
    let forced = fleet
        .store
        .force(&key(), ForceMode::Open, &fleet.replica, now, now)
        .await;
    let forced = forced.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(forced.map(|r| r.forced), Some(Some("open".to_string())));
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
}

#[tokio::test]
async fn a_breaker_a_reload_adds_follows_the_rows_written_before_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let now = clock::epoch_ms();
    let forced = fleet
        .store
        .force(&key(), ForceMode::Open, PEER, now, now - 1)
        .await;
    forced.unwrap_or_else(|e| panic!("{e}"));
    // Read while this replica serves no such breaker.
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    // A reload adds it; the next read has it follow the fleet's force.
    let breaker = breakers.get_or_insert(key(), config());
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
}

#[tokio::test]
async fn a_breaker_a_reload_removes_and_adds_again_keeps_the_force_this_replica_wrote() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let breaker = breakers.get_or_insert(key(), config());
    breaker.force(ForceMode::Open, clock::now());
    // The run task writes the operator's force.
    let written = fleet
        .write(
            &Write::Force(key(), ForceMode::Open, clock::epoch_ms()),
            &breakers,
        )
        .await;
    written.unwrap_or_else(|e| panic!("{e}"));
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    // A reload takes the tool away and a later one brings it back: a new breaker, closed.
    breakers.retain(|_| false);
    let again = breakers.get_or_insert(key(), config());
    assert_eq!(again.state(clock::now()), BreakerState::Closed);
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        again.state(clock::now()),
        BreakerState::ForcedOpen,
        "the force in the store holds, as it would after a restart"
    );
}

#[tokio::test]
async fn auto_on_a_breaker_not_forced_here_ends_the_force_the_store_holds() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let breaker = breakers.get_or_insert(key(), config());
    // A peer's force this replica has not followed yet.
    let now = clock::epoch_ms();
    let forced = fleet
        .store
        .force(&key(), ForceMode::Open, PEER, now, now - 1)
        .await;
    forced.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !breaker.force(ForceMode::Auto, clock::now()),
        "nothing changes here"
    );
    let recorded = fleet.record_force(&key(), ForceMode::Auto, &breakers).await;
    recorded.unwrap_or_else(|e| panic!("{e}"));
    let rows = fleet.store.all().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        rows.iter().map(|r| r.forced).collect::<Vec<_>>(),
        [None],
        "the store agrees with the operator"
    );
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::Closed);
}

#[tokio::test]
async fn a_replica_writing_its_state_on_return_follows_a_force_made_meanwhile() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let breaker = breakers.get_or_insert(key(), config());
    // While this replica was away from the store, an operator forced the breaker open on a peer.
    let now = clock::epoch_ms();
    let forced = fleet
        .store
        .force(&key(), ForceMode::Open, PEER, now, now - 1)
        .await;
    forced.unwrap_or_else(|e| panic!("{e}"));
    // Back, this replica writes what it queued meanwhile (its breaker opened on its own), before
    // it reads: the row keeps the peer's force, and is now this replica's.
    let open = AutoState::Open {
        until_ms: now + 30_000,
        ramp: true,
    };
    let queued = Write::Auto(key(), open, clock::epoch_ms());
    let written = fleet.write(&queued, &breakers).await;
    written.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
}

/// The shared row's force, as stored.
async fn stored_force(fleet: &Fleet) -> Option<ForceMode> {
    let rows = fleet.store.all().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].forced
}

#[tokio::test]
async fn a_force_older_than_the_stored_one_is_dropped_and_the_stored_one_followed() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let breaker = breakers.get_or_insert(key(), config());
    // Forced closed here while the store was away, three seconds ago...
    breaker.force(ForceMode::Closed, clock::now());
    let now = clock::epoch_ms();
    let held = Write::Force(key(), ForceMode::Closed, now - 3_000);
    // ...and forced open on a peer since.
    let forced = fleet
        .store
        .force(&key(), ForceMode::Open, PEER, now, now)
        .await;
    forced.unwrap_or_else(|e| panic!("{e}"));
    // Back, this replica writes its force: the store keeps the newer one, which it follows.
    let written = fleet.write(&held, &breakers).await;
    written.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored_force(&fleet).await, Some(ForceMode::Open));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::ForcedOpen);
    // A force newer than the stored one is written, `auto` too.
    let newer = Write::Force(key(), ForceMode::Auto, now + 1);
    breaker.force(ForceMode::Auto, clock::now());
    let written = fleet.write(&newer, &breakers).await;
    written.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored_force(&fleet).await, None);
}

#[tokio::test]
async fn at_the_same_millisecond_the_replica_whose_name_sorts_last_wins() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let store = &fleet.store;
    let (key, at) = (key(), clock::epoch_ms());
    let force =
        |mode: ForceMode, replica: &'static str| store.force(&key, mode, replica, at + 5, at);
    let landed =
        |row: Result<Option<Payload>, StoreError>| row.unwrap_or_else(|e| panic!("{e}")).is_some();
    assert!(landed(force(ForceMode::Open, "replica-a").await));
    assert!(landed(force(ForceMode::Auto, "replica-b").await), "b > a");
    assert!(!landed(force(ForceMode::Open, "replica-a").await), "a < b");
    assert_eq!(stored_force(&fleet).await, None);
    // A replica's own writes arrive in order: its later one at the same millisecond lands.
    assert!(landed(force(ForceMode::Closed, "replica-b").await));
    assert_eq!(stored_force(&fleet).await, Some(ForceMode::Closed));
    // An automatic write keeps the force and its time.
    let open = AutoState::Open {
        until_ms: at + 30_000,
        ramp: true,
    };
    let auto = store
        .set_auto(&key, open, at + 10, "replica-c", at + 10, GRACE)
        .await;
    assert!(landed(auto));
    assert!(!landed(force(ForceMode::Open, "replica-a").await));
    assert!(landed(force(ForceMode::Open, "replica-c").await), "c > b");
}

/// `FORCE` as replicas before force times wrote it: over whatever was stored, without the time.
const FORCE_OF_AN_OLDER_VERSION: &str = "INSERT INTO faregate_breakers
        (tool, provider, forced, auto_state, open_until, ramp, version, replica, updated_at)
     VALUES ($1, $2, $3, 'closed', NULL, 0, 1, $4, $5)
     ON CONFLICT (tool, provider) DO UPDATE SET forced = excluded.forced,
         auto_state = 'closed', open_until = NULL, ramp = 0,
         version = faregate_breakers.version + 1, replica = excluded.replica,
         updated_at = excluded.updated_at
     RETURNING *";

#[tokio::test]
async fn a_row_a_replica_of_an_older_version_wrote_last_counts_as_forced_when_written() {
    use crate::store::Arg;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let store = &fleet.store;
    let (key, t) = (key(), clock::epoch_ms());
    let landed =
        |row: Result<Option<Payload>, StoreError>| row.unwrap_or_else(|e| panic!("{e}")).is_some();
    // This version forces it closed, at t; a replica of the older version forces it open at
    // t + 10, leaving the time of the force before it.
    assert!(landed(
        store
            .force(&key, ForceMode::Closed, "replica-new", t, t)
            .await
    ));
    let old = [
        Arg::Text(Some("search_flights")),
        Arg::Text(Some("duffel")),
        Arg::Text(Some("open")),
        Arg::Text(Some("replica-old")),
        Arg::Int(Some(t + 10)),
    ];
    let written = store.db.execute(FORCE_OF_AN_OLDER_VERSION, &old).await;
    assert_eq!(written.unwrap_or_else(|e| panic!("{e}")), 1);
    // A force asked for between the two does not undo the older replica's later one...
    let between = store.force(&key, ForceMode::Auto, "replica-new", t + 20, t + 5);
    assert!(!landed(between.await));
    assert_eq!(stored_force(&fleet).await, Some(ForceMode::Open));
    // ...nor once an automatic write of this version carried its time over.
    let open = AutoState::Open {
        until_ms: t + 30_000,
        ramp: true,
    };
    assert!(landed(
        store
            .set_auto(&key, open, t + 30, PEER, t + 30, GRACE)
            .await
    ));
    let between = store.force(&key, ForceMode::Auto, "replica-new", t + 40, t + 5);
    assert!(!landed(between.await));
    // A force asked for after it is written.
    let after = store.force(&key, ForceMode::Auto, "replica-new", t + 40, t + 11);
    assert!(landed(after.await));
    assert_eq!(stored_force(&fleet).await, None);
}

#[tokio::test]
async fn a_force_that_changed_nothing_here_while_the_store_is_away_is_held() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    breakers.get_or_insert(key(), config());
    fleet.set_connected(false, &breakers);
    let asked_at = clock::epoch_ms();
    let recorded = fleet.record_force(&key(), ForceMode::Auto, &breakers).await;
    assert!(recorded.is_err(), "the operator's log says it was held");
    let held = fleet.take_held();
    assert!(
        matches!(held.as_slice(), [Write::Force(k, ForceMode::Auto, at)] if *k == key() && *at >= asked_at),
        "{held:?}"
    );
}

/// Stores transitions `from..=to` of a peer at once, with ids that sort as their numbers.
async fn stored_events(db: &Db, from: u32, to: u32) {
    let id = if db.is_postgres() {
        "'e' || lpad(CAST(i AS TEXT), 8, '0')"
    } else {
        "printf('e%08d', i)"
    };
    let sql = format!(
        "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to})
         INSERT INTO faregate_breaker_events (id, tool, provider, from_state, to_state, reason,
             at_ms, failure_rate_ppm, slow_rate_ppm, calls, replica)
         SELECT {id}, 'search_flights', 'duffel', 'closed', 'open', 'failure_rate', i, 0, 0, 0,
             '{PEER}' FROM n"
    );
    db.execute(sqlx::AssertSqlSafe(sql), &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

async fn event_rows(db: &Db) -> i64 {
    let n = db
        .fetch(
            "SELECT COUNT(*) AS n FROM faregate_breaker_events",
            &[],
            |r| r.int("n"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    n.into_iter().flatten().next().unwrap_or(0)
}

async fn check_trim(fleet: &std::sync::Arc<Fleet>) {
    let store = &fleet.store;
    stored_events(&store.db, 1, 10).await;
    let trim = || async {
        store
            .trim_events(3, 4)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(trim().await, 4, "one batch beyond the newest three");
    assert_eq!(event_rows(&store.db).await, 6);
    assert_eq!(trim().await, 3, "the rest on the next trim");
    assert_eq!(trim().await, 0);
    let latest = store.latest(10).await.unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = latest.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["e00000010", "e00000009", "e00000008"],
        "the newest stay"
    );
}

#[tokio::test]
async fn the_stored_history_keeps_its_newest_transitions() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    check_trim(&fleet(&dir).await).await;
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: the_stored_history_keeps_its_newest_transitions: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_fleet_trim_{}", uuid::Uuid::now_v7().simple());
    let db = Db::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let shared = Fleet::open(db.clone()).await;
    check_trim(&shared.unwrap_or_else(|e| panic!("{e}"))).await;
    db.execute(
        sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Gives the store's threads real time (the paused clock stays where it is) until `done` holds
/// of the number of stored transitions, for at most `tries` times 10 ms; whether it did.
async fn rows_become(db: &Db, tries: u32, done: impl Fn(i64) -> bool) -> bool {
    for _ in 0..tries {
        if done(event_rows(db).await) {
            return true;
        }
        tokio::task::spawn_blocking(|| std::thread::sleep(std::time::Duration::from_millis(10)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    false
}

#[tokio::test(start_paused = true)]
async fn a_replica_trims_the_stored_history_once_a_minute() {
    use super::run::TRIM_EVERY;
    use super::sql::KEEP_EVENTS;
    // While this blocking task runs, the paused clock moves only when the test moves it.
    let (hold, held) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = held.recv();
    });
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let db = fleet.store.db.clone();
    let keep = u32::try_from(KEEP_EVENTS).unwrap_or(u32::MAX);
    stored_events(&db, 1, keep + 10).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let task = {
        let (fleet, stop) = (std::sync::Arc::clone(&fleet), stop.clone());
        tokio::spawn(async move { fleet.run(&BreakerRegistry::new(16), stop).await })
    };
    assert!(
        rows_become(&db, 500, |n| n == KEEP_EVENTS).await,
        "trimmed when the replica starts"
    );
    stored_events(&db, keep + 11, keep + 20).await;
    tokio::time::advance(TRIM_EVERY / 2).await;
    assert!(
        !rows_become(&db, 50, |n| n < KEEP_EVENTS + 10).await,
        "not again within the minute"
    );
    tokio::time::advance(TRIM_EVERY / 2).await;
    assert!(
        rows_become(&db, 500, |n| n == KEEP_EVENTS).await,
        "trimmed again a minute later"
    );
    stop.cancel();
    task.await.unwrap_or_else(|e| panic!("{e}"));
    drop(hold);
}

mod opens;
