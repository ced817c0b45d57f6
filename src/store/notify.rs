//! Notifications between replicas: PostgreSQL's `LISTEN`/`NOTIFY`, so a replica learns of a
//! shared change within milliseconds instead of at its next read. SQLite has no other process
//! to tell, so there a notification goes nowhere and nothing is listened to.
//!
//! A channel is one database-wide name (of at most 63 bytes), while tests (and any deployment
//! that wants it) keep each fleet in its own schema: a payload is sent with its schema's name in
//! front, and a listener drops the payloads of other schemas, so fleets in different schemas of
//! one database never hear each other. The schema is the one the server says the statements run
//! in, read at open, so a schema chosen in the URL (`?options=-c%20search_path%3Dfleet2`) counts
//! as much as one set by the gateway.
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
            Db::Postgres { scope, .. } => scope,
            Db::Sqlite(_) => "",
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// `url` with the search path set to `schema` by the URL, as an operator writes it.
    fn in_schema(url: &str, schema: &str) -> String {
        let join = if url.contains('?') { '&' } else { '?' };
        format!("{url}{join}options=-c%20search_path%3D{schema}")
    }

    async fn next(listener: &mut Listener) -> Option<String> {
        tokio::time::timeout(Duration::from_secs(2), listener.next())
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
    }

    #[tokio::test]
    async fn fleets_in_schemas_named_by_the_url_never_hear_each_other() {
        let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
            eprintln!(
                "note: fleets_in_schemas_named_by_the_url_never_hear_each_other skipped, FAREGATE_TEST_POSTGRES_URL is not set"
            );
            return;
        };
        let id = uuid::Uuid::now_v7().simple().to_string();
        let (a, b) = (format!("fg_notify_a_{id}"), format!("fg_notify_b_{id}"));
        for schema in [&a, &b] {
            // Made by a migration run of a gateway that names the schema itself.
            let db = Db::open_postgres(&url, Some(schema))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            db.migrate(&[], 0).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let here = Db::open(&in_schema(&url, &a))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let peer = Db::open(&in_schema(&url, &a))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let other_fleet = Db::open(&in_schema(&url, &b))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let topic = format!("fg_notify_{id}");
        let mut listener = here
            .listen(&topic)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("PostgreSQL listens"));
        other_fleet
            .notify(&topic, "from the other fleet")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        peer.notify(&topic, "from a peer")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            next(&mut listener).await.as_deref(),
            Some("from a peer"),
            "the other schema's payload is dropped, the peer's heard"
        );
        for schema in [&a, &b] {
            here.execute(
                sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")),
                &[],
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
