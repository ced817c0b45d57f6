//! Rows a client owns, read the same way in every room that keeps them (watches,
//! back-in-service notices): one by id, a client's newest first (every client's for the admin),
//! and how many of a client's stand in one state (for its cap).
//!
//! Why one helper: those rooms' APIs answer the same three questions of their own table, and
//! each had the same three statements written out again. A room describes its table once
//! ([`Owned`]) and keeps only the statements that are its own.

use super::{Arg, Db, Decoder, StoreError};

/// A table of rows a client owns: an `id` primary key, a `client` column, a `state` column and
/// a `created_at` time, read by named columns (never `*`, because a SQLite connection that
/// loaded the schema before a column was added would read new rows with the old column count).
#[derive(Debug)]
pub struct Owned<T> {
    /// The table.
    pub table: &'static str,
    /// Every column the decoder reads, by name, comma-separated.
    pub columns: &'static str,
    /// One row into the room's value.
    pub decode: Decoder<T>,
}

impl<T> Owned<T> {
    /// Row `id`, if there is one.
    pub async fn get(&self, db: &Db, id: &str) -> Result<Option<T>, StoreError> {
        let sql = format!("SELECT {} FROM {} WHERE id = $1", self.columns, self.table);
        let rows = db
            .fetch(
                sqlx::AssertSqlSafe(sql),
                &[Arg::Text(Some(id))],
                self.decode,
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// At most `limit` rows, newest first: `client`'s, or every client's for `None`.
    pub async fn list(
        &self,
        db: &Db,
        client: Option<&str>,
        limit: u32,
    ) -> Result<Vec<T>, StoreError> {
        let sql = format!(
            "SELECT {} FROM {} WHERE (CAST($1 AS TEXT) IS NULL OR client = CAST($1 AS TEXT))
             ORDER BY created_at DESC, id DESC LIMIT CAST($2 AS BIGINT)",
            self.columns, self.table
        );
        db.fetch(
            sqlx::AssertSqlSafe(sql),
            &[Arg::Text(client), Arg::Int(Some(i64::from(limit)))],
            self.decode,
        )
        .await
    }

    /// How many of `client`'s rows are in `state`.
    pub async fn count(&self, db: &Db, client: &str, state: &str) -> Result<u32, StoreError> {
        let sql = format!(
            "SELECT COUNT(*) AS n FROM {} WHERE client = $1 AND state = $2",
            self.table
        );
        let rows = db
            .fetch(
                sqlx::AssertSqlSafe(sql),
                &[Arg::Text(Some(client)), Arg::Text(Some(state))],
                |r| Ok(r.int("n")?.unwrap_or(0)),
            )
            .await?;
        Ok(u32::try_from(rows.into_iter().next().unwrap_or(0)).unwrap_or(u32::MAX))
    }
}
