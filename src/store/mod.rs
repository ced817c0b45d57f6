//! The one database the gateway keeps its state in: SQLite (one file, the embedded default) or
//! PostgreSQL (shared by a fleet of replicas).
//!
//! This room holds what every stateful room shares and nothing of theirs: the connection pool
//! and the few places SQLite and PostgreSQL differ ([`Db`], `db.rs`), named migrations
//! (`migrate.rs`, with [`Schema`], a room's tables migrated on first use), notifications between
//! replicas (`notify.rs`), how long a loop that looks in the store for work waits between looks
//! (`pace.rs`), and the reads every table of client-owned rows answers alike
//! (`owned.rs`). Each room keeps its own statements and migrations next to its own types (the
//! job queue in `jobs/store/`, the fleet's shared breaker state in `fleet/`), so a room's SQL
//! reads beside the rules it implements, and rooms never see each other's tables through this
//! one.
//!
//! Every time a room stores is an epoch-millisecond argument taken from the clock module, so
//! their conformance suites control time without a clock.

#[cfg(test)]
pub(crate) mod both;
mod db;
mod migrate;
mod notify;
mod owned;
pub mod pace;

use std::fmt;

pub use db::{Arg, Db, Decoder, StoreRow};
pub use migrate::{Migration, Schema};
pub use notify::Listener;
pub use owned::Owned;

/// A database failure, as text: the driver's errors stay inside this room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// `work`, given at most `limit`: a statement a replica must not wait on longer (the fleet's
/// breaker state, the shared pacers, kept offers) fails with a [`StoreError`] instead.
pub async fn within<T>(
    limit: std::time::Duration,
    work: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| Err(StoreError(format!("no answer within {limit:?}"))))
}

impl Db {
    /// Opens the database named by a `sqlite://…` or `postgres://…` URL.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Db::open_postgres(url, None).await
        } else if url.starts_with("sqlite:") {
            Db::open_sqlite(url).await
        } else {
            Err(StoreError(format!(
                "unknown store URL {url:?}; use sqlite://FILE or postgres://USER@HOST/DB"
            )))
        }
    }

    /// Whether this is PostgreSQL (what a fleet shares) rather than a SQLite file.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres { .. })
    }
}
