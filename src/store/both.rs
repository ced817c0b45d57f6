//! Tests of a room's statements on both databases: `check` runs on a fresh SQLite file, then on
//! PostgreSQL in a schema of its own (dropped after) when `FAREGATE_TEST_POSTGRES_URL` is set;
//! without it the test says on stderr that it left PostgreSQL out, as every PostgreSQL test
//! here does.

use std::future::Future;

use super::Db;

/// Runs `check` on SQLite, then on PostgreSQL when a URL is given; `test` names the test in
/// the note it prints when PostgreSQL is left out and prefixes its schema.
pub(crate) async fn on_both<F, Fut>(test: &str, check: F)
where
    F: Fn(Db) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::open_sqlite_file(&dir.path().join("test.db"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    check(db).await;
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: {test}: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_{test}_{}", uuid::Uuid::now_v7().simple());
    let db = Db::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    check(db.clone()).await;
    db.execute(
        sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}
