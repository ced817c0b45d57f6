//! The replicas' configurations, shared through a PostgreSQL fleet's store: each replica says
//! which configuration it runs (its fingerprint) and when it loaded it, and any replica can ask
//! all the others to read their configuration files again.
//!
//! Why: behind a balancer an operator reaches one replica at a time, so a reload asked through
//! it reached one replica, and replicas that run different configurations (a reload that
//! reached one, a rolling change stuck halfway) looked alike. Now every replica writes its row
//! every few seconds and at once after a reload, so any replica lists the live ones and says
//! whether they agree; and a reload asked of one is stored as a new *generation* of the one
//! reload request, announced with a notification: the others reload at once, and one that
//! missed the notification (or was away from the store) sees the newer generation on its next
//! write, within seconds.
//!
//! Only PostgreSQL: a SQLite store has one replica, which lists itself. The tables are made on
//! first use ([`Schema`]); a row not written for an hour (a replica gone) is deleted by the next
//! write of any replica.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::store::{Arg, Db, Listener, Migration, Schema, StoreError, StoreRow, within};

/// The room's schema changes, oldest first (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[Migration {
    name: "replicas_1_configs",
    statements: &[
        "CREATE TABLE IF NOT EXISTS faregate_replicas (
            replica TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            loaded_at BIGINT NOT NULL,
            seen_at BIGINT NOT NULL
        )",
        // One row (id 1): the newest reload asked of the fleet.
        "CREATE TABLE IF NOT EXISTS faregate_reload_request (
            id INTEGER PRIMARY KEY,
            generation BIGINT NOT NULL,
            asked_by TEXT NOT NULL,
            asked_at BIGINT NOT NULL
        )",
    ],
}];

/// Deletes the rows of replicas gone ($5), writes this replica's row ($1: the replica,
/// $2: its fingerprint, $3: when it loaded it, $4: now) and reads the reload generation asked
/// last (0 when none was). A data-changing `WITH` runs whether or not the query reads it.
const SEEN: &str = "WITH gone AS (
        DELETE FROM faregate_replicas WHERE seen_at < $5
    ), mine AS (
        INSERT INTO faregate_replicas (replica, fingerprint, loaded_at, seen_at)
        VALUES ($1, $2, $3, $4)
        ON CONFLICT (replica) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
            loaded_at = EXCLUDED.loaded_at, seen_at = EXCLUDED.seen_at
        RETURNING 1
    )
    SELECT COALESCE((SELECT generation FROM faregate_reload_request WHERE id = 1), 0)
        AS generation";

/// The replicas seen since $1, by name.
const LIVE: &str = "SELECT replica, fingerprint, loaded_at, seen_at FROM faregate_replicas
    WHERE seen_at >= $1 ORDER BY replica";

/// A new generation of the reload request ($1: who asks, $2: now), returned.
const ASK: &str = "INSERT INTO faregate_reload_request (id, generation, asked_by, asked_at)
    VALUES (1, 1, $1, $2)
    ON CONFLICT (id) DO UPDATE SET generation = faregate_reload_request.generation + 1,
        asked_by = EXCLUDED.asked_by, asked_at = EXCLUDED.asked_at
    RETURNING generation";

/// The notification channel of reload requests (the payload is the generation; the stored
/// one is what counts).
const TOPIC: &str = "faregate_reload";

/// How often each replica writes its row (and looks for a reload asked of it).
pub const PUBLISH_EVERY: Duration = Duration::from_secs(2);

/// A replica is live while its row was written within this long: a few missed writes.
pub const LIVE_FOR: Duration = Duration::from_secs(10);

/// Rows not written for this long are deleted.
const FORGET_AFTER_MS: i64 = 3_600_000;

/// The longest one of these statements may take.
const STORE_WAIT: Duration = Duration::from_secs(1);

/// One replica's row: which configuration it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaConfig {
    /// The replica's name.
    pub replica: String,
    /// Its configuration's fingerprint.
    pub fingerprint: String,
    /// When (epoch milliseconds) it loaded that configuration.
    pub loaded_at_ms: i64,
    /// When (epoch milliseconds) it last wrote its row.
    pub seen_at_ms: i64,
}

/// This replica's part in the fleet's configurations. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Replicas {
    schema: Schema,
    replica: String,
    /// The newest reload generation this replica has acted on (asked for itself, reloaded for,
    /// or found when it started, having just read its files); -1 until the first write.
    acted: Arc<AtomicI64>,
    /// Wakes the task that writes the row, to write it now (after a reload).
    wake: Arc<Notify>,
}

impl Replicas {
    /// The configurations shared in `db`, as `replica` writes them; `None` unless `db` is
    /// PostgreSQL.
    pub fn new(db: Db, replica: String) -> Option<Self> {
        db.is_postgres().then(|| Replicas {
            schema: Schema::new(db, MIGRATIONS, crate::clock::epoch_ms),
            replica,
            acted: Arc::new(AtomicI64::new(-1)),
            wake: Arc::new(Notify::new()),
        })
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Writes this replica's row (it runs `fingerprint`, loaded at `loaded_at_ms`) at
    /// `now_ms`; the reload generation it has yet to act on, if one was asked since it last
    /// looked (marked acted on: the caller reloads).
    pub async fn seen(
        &self,
        fingerprint: &str,
        loaded_at_ms: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let db = within(STORE_WAIT, self.schema.ready()).await?;
        let generation = within(
            STORE_WAIT,
            db.fetch(
                SEEN,
                &[
                    Arg::Text(Some(&self.replica)),
                    Arg::Text(Some(fingerprint)),
                    Arg::Int(Some(loaded_at_ms)),
                    Arg::Int(Some(now_ms)),
                    Arg::Int(Some(now_ms - FORGET_AFTER_MS)),
                ],
                |row| Ok(row.int("generation")?.unwrap_or(0)),
            ),
        )
        .await?
        .into_iter()
        .next()
        .unwrap_or(0);
        let before = self.acted.fetch_max(generation, Ordering::AcqRel);
        // The first write only learns where the fleet stands: this replica just read its files.
        Ok((before >= 0 && generation > before).then_some(generation))
    }

    /// The replicas whose rows were written within [`LIVE_FOR`] of `now_ms`, by name.
    pub async fn live(&self, now_ms: i64) -> Result<Vec<ReplicaConfig>, StoreError> {
        let db = within(STORE_WAIT, self.schema.ready()).await?;
        let since = now_ms - i64::try_from(LIVE_FOR.as_millis()).unwrap_or(i64::MAX);
        within(STORE_WAIT, db.fetch(LIVE, &[Arg::Int(Some(since))], decode)).await
    }

    /// Asks every other replica to reload its configuration (this one has just done so): a
    /// new generation of the reload request, announced. The generation is returned.
    pub async fn ask_reload(&self, now_ms: i64) -> Result<i64, StoreError> {
        let db = within(STORE_WAIT, self.schema.ready()).await?;
        let generation = within(
            STORE_WAIT,
            db.fetch(
                ASK,
                &[Arg::Text(Some(&self.replica)), Arg::Int(Some(now_ms))],
                |row| Ok(row.int("generation")?.unwrap_or(0)),
            ),
        )
        .await?
        .into_iter()
        .next()
        .unwrap_or(0);
        self.acted.fetch_max(generation, Ordering::AcqRel);
        // A replica that misses the notification finds the generation on its next write.
        if let Err(e) = within(STORE_WAIT, db.notify(TOPIC, &generation.to_string())).await {
            tracing::debug!(error = %e, "fleet: the reload request was stored but not announced");
        }
        Ok(generation)
    }

    /// Listens for reload requests on a connection of its own.
    pub async fn listen(&self) -> Result<Option<Listener>, StoreError> {
        let db = within(STORE_WAIT, self.schema.ready()).await?;
        within(STORE_WAIT, db.listen(TOPIC)).await
    }

    /// Asks the task that writes this replica's row to write it now (its configuration
    /// changed).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Completes when [`Replicas::wake`] was called (since the last time it completed).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

fn decode(row: &dyn StoreRow) -> Result<ReplicaConfig, StoreError> {
    Ok(ReplicaConfig {
        replica: row.text("replica")?.unwrap_or_default(),
        fingerprint: row.text("fingerprint")?.unwrap_or_default(),
        loaded_at_ms: row.int("loaded_at")?.unwrap_or(0),
        seen_at_ms: row.int("seen_at")?.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reload_asked_by_one_replica_is_found_by_the_other_once() {
        let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
            eprintln!(
                "note: a_reload_asked_by_one_replica_is_found_by_the_other_once skipped, FAREGATE_TEST_POSTGRES_URL is not set"
            );
            return;
        };
        let schema = format!("fg_replicas_{}", uuid::Uuid::now_v7().simple());
        let db = Db::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let a = Replicas::new(db.clone(), "replica-a".into()).unwrap_or_else(|| panic!("pg"));
        let b = Replicas::new(db.clone(), "replica-b".into()).unwrap_or_else(|| panic!("pg"));
        let now = 10_000_000;
        let seen = |r: &Replicas, fp: &'static str, at: i64| {
            let r = r.clone();
            async move { r.seen(fp, 1, at).await.unwrap_or_else(|e| panic!("{e}")) }
        };
        assert_eq!(
            seen(&a, "aaaaaaaaaaaa", now).await,
            None,
            "the first write learns"
        );
        assert_eq!(seen(&b, "aaaaaaaaaaaa", now).await, None);
        let generation = a.ask_reload(now).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(generation, 1);
        assert_eq!(
            seen(&a, "bbbbbbbbbbbb", now + 1).await,
            None,
            "the asker has acted already"
        );
        assert_eq!(seen(&b, "aaaaaaaaaaaa", now + 1).await, Some(1));
        assert_eq!(seen(&b, "bbbbbbbbbbbb", now + 2).await, None, "once");
        let live = a.live(now + 2).await.unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<(&str, &str)> = live
            .iter()
            .map(|r| (r.replica.as_str(), r.fingerprint.as_str()))
            .collect();
        assert_eq!(
            names,
            [("replica-a", "bbbbbbbbbbbb"), ("replica-b", "bbbbbbbbbbbb")]
        );
        let later = now + 2 + i64::try_from(LIVE_FOR.as_millis()).unwrap_or(0) + 1;
        seen(&a, "bbbbbbbbbbbb", later).await;
        let live = a.live(later).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(live.len(), 1, "b is no longer live: {live:?}");
        db.execute(
            sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }
}
