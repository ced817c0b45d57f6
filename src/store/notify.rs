//! Notifications between replicas: PostgreSQL's `LISTEN`/`NOTIFY`, so a replica learns of a
//! shared change within milliseconds instead of at its next read. SQLite has no other process
//! to tell, so there a notification goes nowhere and nothing is listened to.
//!
//! A channel is one database-wide name (of at most 63 bytes), while tests (and any deployment
//! that wants it) keep each fleet in its own schema: a payload is sent with its schema's name in
//! front, and a listener drops the payloads of other schemas, so fleets in different schemas of
//! one database never hear each other.
//!
//! Notifications are transient: one sent while a listener's connection is down is lost. A
//! [`Listener`] says so (`Ok(None)`), and whoever listens must then read the shared state again.

use sqlx::postgres::PgListener;

use super::{Db, StoreError};

/// A subscription to one channel (PostgreSQL only).
#[derive(Debug)]
pub struct Listener {
    inner: PgListener,
    /// Payloads of other schemas are dropped.
    schema: String,
}

impl Db {
    /// The schema this database's statements run in, as payloads name it.
    fn schema_name(&self) -> &str {
        match self {
            Db::Postgres {
                schema: Some(schema),
                ..
            } => schema,
            _ => "",
        }
    }

    /// Sends `payload` (under 7,900 bytes: PostgreSQL's limit is 8,000 with the schema's name)
    /// to every listener of `topic` in this schema; nothing on SQLite.
    pub async fn notify(&self, topic: &str, payload: &str) -> Result<(), StoreError> {
        if let Db::Postgres { pool, .. } = self {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(topic)
                .bind(format!("{}\n{payload}", self.schema_name()))
                .execute(pool)
                .await?;
        }
        Ok(())
    }

    /// Listens to `topic` on a connection of its own; `None` on SQLite.
    pub async fn listen(&self, topic: &str) -> Result<Option<Listener>, StoreError> {
        let Db::Postgres { pool, .. } = self else {
            return Ok(None);
        };
        let mut inner = PgListener::connect_with(pool).await?;
        inner.listen(topic).await?;
        Ok(Some(Listener {
            inner,
            schema: self.schema_name().to_string(),
        }))
    }
}

impl Listener {
    /// The next payload; `Ok(None)` when the connection was lost (and re-established, so the
    /// caller reads what it may have missed and calls again).
    pub async fn next(&mut self) -> Result<Option<String>, StoreError> {
        loop {
            let Some(notification) = self.inner.try_recv().await? else {
                return Ok(None);
            };
            if let Some((schema, payload)) = notification.payload().split_once('\n')
                && schema == self.schema
            {
                return Ok(Some(payload.to_string()));
            }
        }
    }
}
