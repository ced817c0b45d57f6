//! Named migrations: each room of the gateway (the job queue, and any other room that keeps
//! state in the database) lists its own schema changes, in order, under names that are unique
//! across the gateway; a migration runs once per database, and its name is recorded in
//! `faregate_migrations`.
//!
//! Names rather than one global version number, so rooms add migrations without touching a
//! shared counter. A run takes the database's writer lock first (PostgreSQL: a transaction-scoped
//! advisory lock; SQLite: `BEGIN IMMEDIATE`), so replicas starting together apply each migration
//! once; a migration and its record commit together, so a crash halfway leaves it unapplied.
//!
//! The first migrations use `CREATE … IF NOT EXISTS`, so databases made before migrations were
//! recorded by name pick them up without change.

use std::sync::Arc;

use sqlx::{Database, Encode, Executor, IntoArguments, Postgres, Sqlite, Type};
use tokio::sync::OnceCell;

use super::{Db, StoreError};

/// One schema change: its statements run in order, in one transaction.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Unique across the gateway; prefixed with the room (`jobs_1_queue`).
    pub name: &'static str,
    /// The statements, in order.
    pub statements: &'static [&'static str],
}

/// The advisory lock PostgreSQL replicas hold while migrating (any constant works, as long as
/// every replica uses the same one).
const MIGRATION_LOCK: i64 = 7_305_727_871;

const LEDGER: &str = "CREATE TABLE IF NOT EXISTS faregate_migrations (
        name TEXT PRIMARY KEY,
        applied_at BIGINT NOT NULL
    )";

const APPLIED: &str = "SELECT name FROM faregate_migrations WHERE name = $1";

const RECORD: &str = "INSERT INTO faregate_migrations (name, applied_at) VALUES ($1, $2)";

impl Db {
    /// Applies those of `migrations` this database has not recorded yet, in order, one replica
    /// at a time; `now_ms` is recorded with each.
    pub async fn migrate(&self, migrations: &[Migration], now_ms: i64) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                apply::<Sqlite>(&mut tx, migrations, now_ms).await?;
                tx.commit().await?;
            }
            Db::Postgres { pool, schema, .. } => {
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(MIGRATION_LOCK)
                    .execute(&mut *tx)
                    .await?;
                if let Some(schema) = schema {
                    // Checked to be [A-Za-z0-9_] when the pool was opened.
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "CREATE SCHEMA IF NOT EXISTS {schema}"
                    )))
                    .execute(&mut *tx)
                    .await?;
                }
                apply::<Postgres>(&mut tx, migrations, now_ms).await?;
                tx.commit().await?;
            }
        }
        Ok(())
    }
}

/// A room's tables in the shared database, migrated on first use: the room's store holds one and
/// asks it for the database before each statement, so attaching a store needs no wait and
/// replicas that never use a room never make its tables. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Schema {
    db: Db,
    migrations: &'static [Migration],
    /// Where the time recorded with each migration comes from (the clock module's, which this
    /// room does not import).
    now_ms: fn() -> i64,
    migrated: Arc<OnceCell<()>>,
}

impl Schema {
    /// `migrations` in `db`, applied the first time [`Schema::ready`] is called.
    pub fn new(db: Db, migrations: &'static [Migration], now_ms: fn() -> i64) -> Self {
        Schema {
            db,
            migrations,
            now_ms,
            migrated: Arc::new(OnceCell::new()),
        }
    }

    /// The database, once the migrations are applied (a failure is tried again next call).
    pub async fn ready(&self) -> Result<&Db, StoreError> {
        self.migrated
            .get_or_try_init(|| self.db.migrate(self.migrations, (self.now_ms)()))
            .await?;
        Ok(&self.db)
    }
}

/// Inside the caller's locked transaction: creates the record table, then runs and records each
/// migration not recorded yet.
async fn apply<DB>(
    conn: &mut DB::Connection,
    migrations: &[Migration],
    now_ms: i64,
) -> Result<(), StoreError>
where
    DB: Database,
    for<'e> &'e mut DB::Connection: Executor<'e, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
{
    sqlx::query::<DB>(LEDGER).execute(&mut *conn).await?;
    for migration in migrations {
        let applied = sqlx::query::<DB>(APPLIED)
            .bind(migration.name)
            .fetch_optional(&mut *conn)
            .await?;
        if applied.is_some() {
            continue;
        }
        for statement in migration.statements {
            sqlx::query::<DB>(*statement).execute(&mut *conn).await?;
        }
        sqlx::query::<DB>(RECORD)
            .bind(migration.name)
            .bind(now_ms)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Arg;

    const FIRST: &[&str] = &["CREATE TABLE IF NOT EXISTS t (n BIGINT)"];
    const INSERT: &[&str] = &["INSERT INTO t (n) VALUES (1)"];

    async fn rows(db: &Db) -> Vec<i64> {
        db.fetch("SELECT n FROM t", &[], |row| Ok(row.int("n")?.unwrap_or(0)))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Each migration runs once per database, in order, however often the list is applied (every
    /// replica applies it at start), and a migration added later runs on its own.
    async fn runs_each_migration_once(db: &Db) {
        let first = [Migration {
            name: "test_1_table",
            statements: FIRST,
        }];
        let both = [
            first[0],
            Migration {
                name: "test_2_row",
                statements: INSERT,
            },
        ];
        db.migrate(&first, 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows(db).await, Vec::<i64>::new());
        db.migrate(&both, 2).await.unwrap_or_else(|e| panic!("{e}"));
        db.migrate(&both, 3).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rows(db).await,
            vec![1],
            "the second migration ran exactly once"
        );
        let recorded = db
            .fetch(
                "SELECT applied_at FROM faregate_migrations WHERE name = $1",
                &[Arg::Text(Some("test_2_row"))],
                |row| Ok(row.int("applied_at")?.unwrap_or(0)),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(recorded, vec![2]);
    }

    #[tokio::test]
    async fn sqlite_runs_each_migration_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let url = format!("sqlite://{}", dir.path().join("m.db").display());
        let db = Db::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
        runs_each_migration_once(&db).await;
    }

    #[tokio::test]
    async fn postgres_runs_each_migration_once() {
        let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
            eprintln!(
                "FAREGATE_TEST_POSTGRES_URL is not set: the PostgreSQL migration test did not run"
            );
            return;
        };
        let schema = format!("fg_migrate_{}", uuid::Uuid::now_v7().simple());
        let db = Db::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        runs_each_migration_once(&db).await;
        db.execute(
            sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }
}
