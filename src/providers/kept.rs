//! Offers a provider adapter handed out and must find again, kept in the store when there is
//! one, so that pricing works on any replica and after a restart.
//!
//! Amadeus prices an offer only when sent the whole offer as search returned it, so the adapter
//! keeps every offer it hands out under an id it mints. In this process's memory alone, an
//! offer found on one replica could not be priced on another (behind a load balancer the next
//! call may go anywhere) or after a restart. With a store attached, every kept offer is also
//! written there with its expiry (one statement per search, before the search answers, so the
//! next call may reach any replica), and a lookup that misses memory reads it back. Without a store
//! (the adapter alone, as in its own tests), memory is all there is.
//!
//! Expired rows are deleted by a write at most once per [`PURGE_EVERY`] in each process, at most
//! [`PURGE_BATCH`] rows at a time (found through the index on `expires_at`); a write that finds
//! a full batch deleted lets the next write delete again, so a backlog goes within a few
//! searches. A lookup never reads an expired row, deleted or not. (Deleting on every write
//! scanned the whole table once per search.)
//!
//! Kept by every room that mints ids for a provider; the rows are the provider's raw JSON, which
//! leaves the adapter only as text and comes back to it unchanged.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::store::{Arg, Db, Migration, StoreError, StoreRow};

/// This room's schema changes (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "providers_1_kept_offers",
        statements: &["CREATE TABLE IF NOT EXISTS faregate_kept_offers (
            id TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            expires_at BIGINT NOT NULL
        )"],
    },
    Migration {
        name: "providers_2_kept_offers_expiry",
        statements: &["CREATE INDEX IF NOT EXISTS faregate_kept_offers_expires
             ON faregate_kept_offers (expires_at)"],
    },
];

const READ: &str = "SELECT body FROM faregate_kept_offers WHERE id = $1 AND expires_at > $2";
/// Expired rows, a batch of `$2`.
const PURGE: &str = "DELETE FROM faregate_kept_offers WHERE id IN (
         SELECT id FROM faregate_kept_offers WHERE expires_at <= $1
         LIMIT CAST($2 AS BIGINT))";

/// A process deletes expired rows at most this often.
pub const PURGE_EVERY: Duration = Duration::from_secs(60);
/// Expired rows deleted at most per purge.
pub const PURGE_BATCH: u32 = 1000;

/// The longest a read or a write waits for the store.
pub const STORE_WAIT: Duration = Duration::from_secs(1);

/// The store kept offers go to, once one is attached.
#[derive(Debug, Default)]
pub struct KeptOffers {
    db: OnceLock<Db>,
    migrated: tokio::sync::OnceCell<()>,
    /// When this process last deleted expired rows (`None`: not yet, or again at once).
    purged_at: Mutex<Option<Instant>>,
}

impl KeptOffers {
    /// Keeps offers in `db` from now on (the first store attached wins).
    pub fn attach(&self, db: Db) {
        let _ = self.db.set(db);
    }

    async fn db(&self) -> Result<Option<&Db>, StoreError> {
        let Some(db) = self.db.get() else {
            return Ok(None);
        };
        self.migrated
            .get_or_try_init(|| db.migrate(MIGRATIONS, crate::clock::epoch_ms()))
            .await?;
        Ok(Some(db))
    }

    /// Writes `offers` (id, raw JSON) to the store with their expiry; nothing without a store.
    pub async fn put(
        &self,
        offers: &[(String, String)],
        expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        if offers.is_empty() {
            return Ok(());
        }
        bounded(async {
            let Some(db) = self.db().await? else {
                return Ok(());
            };
            let rows: Vec<String> = (0..offers.len())
                .map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3))
                .collect();
            let sql = format!(
                "INSERT INTO faregate_kept_offers (id, body, expires_at) VALUES {} ON CONFLICT (id) DO NOTHING",
                rows.join(", ")
            );
            let mut args = Vec::with_capacity(offers.len() * 3);
            for (id, body) in offers {
                args.push(Arg::Text(Some(id)));
                args.push(Arg::Text(Some(body)));
                args.push(Arg::Int(Some(expires_at_ms)));
            }
            db.execute(sqlx::AssertSqlSafe(sql), &args).await?;
            Ok(())
        })
        .await?;
        self.purge_if_due().await;
        Ok(())
    }

    /// Deletes up to [`PURGE_BATCH`] expired rows when this process did not in the last
    /// [`PURGE_EVERY`]; a full batch lets the next write delete again. A failure is logged and
    /// waits for the next turn: the offers were written.
    async fn purge_if_due(&self) {
        let now = crate::clock::now();
        {
            let mut at = self.purged_at.lock().unwrap_or_else(|e| e.into_inner());
            if at.is_some_and(|at| now - at < PURGE_EVERY) {
                return;
            }
            // Taken before the statement, so writes meanwhile do not purge too.
            *at = Some(now);
        }
        let purged = bounded(async {
            let Some(db) = self.db().await? else {
                return Ok(0);
            };
            let args = [
                Arg::Int(Some(crate::clock::epoch_ms())),
                Arg::Int(Some(i64::from(PURGE_BATCH))),
            ];
            db.execute(PURGE, &args).await
        })
        .await;
        match purged {
            Ok(n) if n >= u64::from(PURGE_BATCH) => {
                *self.purged_at.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "expired kept offers not deleted; trying again later")
            }
        }
    }

    /// The raw JSON kept under `id`, unless unknown or expired; `None` without a store.
    pub async fn get(&self, id: &str) -> Result<Option<String>, StoreError> {
        bounded(async {
            let Some(db) = self.db().await? else {
                return Ok(None);
            };
            let rows = db
                .fetch(
                    READ,
                    &[
                        Arg::Text(Some(id)),
                        Arg::Int(Some(crate::clock::epoch_ms())),
                    ],
                    decode,
                )
                .await?;
            Ok(rows.into_iter().next())
        })
        .await
    }
}

fn decode(row: &dyn StoreRow) -> Result<String, StoreError> {
    Ok(row.text("body")?.unwrap_or_default())
}

/// `work`, given at most [`STORE_WAIT`].
async fn bounded<R>(work: impl Future<Output = Result<R, StoreError>>) -> Result<R, StoreError> {
    crate::store::within(STORE_WAIT, work).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{KeptOffers, PURGE_BATCH, PURGE_EVERY};
    use crate::clock;
    use crate::store::Db;

    /// A blocking task that runs until dropped: tokio's paused clock then does not jump ahead
    /// while a statement runs on the driver's threads; only the test moves it.
    fn hold() -> std::sync::mpsc::Sender<()> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        tokio::task::spawn_blocking(move || {
            let _ = rx.recv();
        });
        tx
    }

    async fn rows(db: &Db) -> i64 {
        let n = db
            .fetch("SELECT COUNT(*) AS n FROM faregate_kept_offers", &[], |r| {
                r.int("n")
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        n.into_iter().flatten().next().unwrap_or(0)
    }

    fn offers(prefix: &str, n: u32) -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                (
                    format!("{prefix}{i}"),
                    format!("{{\"id\":\"{prefix}{i}\"}}"),
                )
            })
            .collect()
    }

    async fn check(db: Db) {
        let kept = KeptOffers::default();
        kept.attach(db.clone());
        let put = |offers: Vec<(String, String)>, lasts_ms: i64| {
            let kept = &kept;
            async move {
                kept.put(&offers, clock::epoch_ms() + lasts_ms)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        };
        let many = PURGE_BATCH + PURGE_BATCH / 2;
        put(offers("a", many), 1_000).await;
        assert_eq!(rows(&db).await, i64::from(many));

        // Expired, but the next writes within a minute do not delete: no scan per search.
        tokio::time::advance(Duration::from_secs(2)).await;
        put(offers("b", 1), 3_600_000).await;
        put(offers("c", 1), 3_600_000).await;
        assert_eq!(rows(&db).await, i64::from(many) + 2);
        assert_eq!(
            kept.get("a0").await.unwrap_or_else(|e| panic!("{e}")),
            None,
            "an expired row is never read"
        );
        assert!(kept.get("b0").await.expect("read").is_some());

        // A minute on, a write deletes one batch; it was full, so the next write deletes the rest.
        tokio::time::advance(PURGE_EVERY).await;
        put(offers("d", 1), 3_600_000).await;
        assert_eq!(
            rows(&db).await,
            i64::from(many) + 3 - i64::from(PURGE_BATCH)
        );
        put(offers("e", 1), 3_600_000).await;
        assert_eq!(rows(&db).await, 4, "b, c, d and e are left");

        let index = if db.is_postgres() {
            "SELECT indexname AS name FROM pg_indexes
             WHERE schemaname = current_schema() AND indexname = 'faregate_kept_offers_expires'"
        } else {
            "SELECT name FROM sqlite_master
             WHERE type = 'index' AND name = 'faregate_kept_offers_expires'"
        };
        let found = db
            .fetch(index, &[], |r| r.text("name"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found.len(), 1, "expired rows are found through an index");
    }

    #[tokio::test(start_paused = true)]
    async fn expired_offers_are_deleted_at_most_once_a_minute_a_batch_at_a_time() {
        let _hold = hold();
        crate::store::both::on_both("kept_offers", check).await;
    }
}
