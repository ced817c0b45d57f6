//! The pacers in the database: one row per bucket (a provider, or a provider account with
//! `[quota] bucket_key = "provider_and_credential"`; the `provider` column holds the bucket key,
//! never a credential), read and written whole, so every replica of a fleet paces from one
//! allowance and one token bucket.
//!
//! A row holds a [`PacerRecord`] as JSON and a version. An update reads the row, applies one
//! pure step to the pacer it holds, and writes it back only if the version is still the one it
//! read (compare-and-swap); a replica that lost the race reads again. Compare-and-swap rather
//! than a row lock, because the statements stay the same on SQLite and PostgreSQL and a
//! dispatcher pass costs one read and one write, with no transaction held across a
//! network round trip.

use super::pacer::PacerRecord;
use crate::store::{Arg, Db, Migration, StoreError, StoreRow};

/// The quota room's schema changes, oldest first (see `store::Migration`).
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    name: "quota_1_pacers",
    statements: &["CREATE TABLE IF NOT EXISTS faregate_quota_pacers (
            provider TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            version BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )"],
}];

const READ: &str = "SELECT state, version FROM faregate_quota_pacers WHERE provider = $1";
const INSERT: &str = "INSERT INTO faregate_quota_pacers (provider, state, version, updated_at)
    VALUES ($1, $2, 1, $3) ON CONFLICT (provider) DO NOTHING";
const SWAP: &str = "UPDATE faregate_quota_pacers SET state = $2, version = version + 1,
    updated_at = $4 WHERE provider = $1 AND version = $3";

/// A provider's shared pacer as read, with the version a write must match.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stored {
    /// The pacer.
    pub(crate) record: PacerRecord,
    /// Its version; `0` when there is no row yet.
    pub(crate) version: i64,
}

/// The shared pacers of one database.
#[derive(Debug, Clone)]
pub(crate) struct SharedPacers {
    db: Db,
}

impl SharedPacers {
    /// The pacers kept in `db`.
    pub(crate) fn new(db: Db) -> Self {
        SharedPacers { db }
    }

    /// Creates the table when missing (once per database, like every room's migrations).
    pub(crate) async fn migrate(&self, now_ms: i64) -> Result<(), StoreError> {
        self.db.migrate(MIGRATIONS, now_ms).await
    }

    /// `provider`'s pacer, or `None` when no replica has written one yet.
    pub(crate) async fn read(&self, provider: &str) -> Result<Option<Stored>, StoreError> {
        let rows = self
            .db
            .fetch(READ, &[Arg::Text(Some(provider))], decode)
            .await?;
        Ok(rows.into_iter().next())
    }

    /// Writes `record` as `provider`'s pacer if the row is still at `version` (`0`: if there
    /// is still no row). `false` when another replica wrote first.
    pub(crate) async fn swap(
        &self,
        provider: &str,
        record: &PacerRecord,
        version: i64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let state = serde_json::to_string(record)
            .map_err(|e| StoreError(format!("cannot write a pacer: {e}")))?;
        let changed = if version == 0 {
            self.db
                .execute(
                    INSERT,
                    &[
                        Arg::Text(Some(provider)),
                        Arg::Text(Some(&state)),
                        Arg::Int(Some(now_ms)),
                    ],
                )
                .await?
        } else {
            self.db
                .execute(
                    SWAP,
                    &[
                        Arg::Text(Some(provider)),
                        Arg::Text(Some(&state)),
                        Arg::Int(Some(version)),
                        Arg::Int(Some(now_ms)),
                    ],
                )
                .await?
        };
        Ok(changed == 1)
    }
}

fn decode(row: &dyn StoreRow) -> Result<Stored, StoreError> {
    let state = row.text("state")?.unwrap_or_default();
    let version = row.int("version")?.unwrap_or(0);
    serde_json::from_str(&state)
        .map(|record| Stored { record, version })
        .map_err(|e| StoreError(format!("a stored pacer does not parse: {e}")))
}
