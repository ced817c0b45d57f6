//! Offers a provider adapter handed out and must find again, kept in the store when there is
//! one, so that pricing works on any replica and after a restart.
//!
//! Amadeus prices an offer only when sent the whole offer as search returned it, so the adapter
//! keeps every offer it hands out under an id it mints. In this process's memory alone, an
//! offer found on one replica could not be priced on another (behind a load balancer the next
//! call may go anywhere) or after a restart. With a store attached, every kept offer is also
//! written there with its expiry (one statement per search, before the search answers, so the
//! next call may reach any replica), and a lookup that misses memory reads it back. Expired rows are
//! deleted with each write. Without a store (the adapter alone, as in its own tests), memory is
//! all there is.
//!
//! Kept by every room that mints ids for a provider; the rows are the provider's raw JSON, which
//! leaves the adapter only as text and comes back to it unchanged.

use std::sync::OnceLock;
use std::time::Duration;

use crate::store::{Arg, Db, Migration, StoreError, StoreRow};

/// This room's schema changes (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[Migration {
    name: "providers_1_kept_offers",
    statements: &["CREATE TABLE IF NOT EXISTS faregate_kept_offers (
            id TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            expires_at BIGINT NOT NULL
        )"],
}];

const READ: &str = "SELECT body FROM faregate_kept_offers WHERE id = $1 AND expires_at > $2";
const PURGE: &str = "DELETE FROM faregate_kept_offers WHERE expires_at <= $1";

/// The longest a read or a write waits for the store.
pub const STORE_WAIT: Duration = Duration::from_secs(1);

/// The store kept offers go to, once one is attached.
#[derive(Debug, Default)]
pub struct KeptOffers {
    db: OnceLock<Db>,
    migrated: tokio::sync::OnceCell<()>,
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
            db.execute(PURGE, &[Arg::Int(Some(crate::clock::epoch_ms()))])
                .await?;
            Ok(())
        })
        .await
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
