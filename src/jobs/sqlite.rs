//! The SQLite job store: the embedded default (one file, WAL, nothing to install).
//!
//! SQLite has one writer at a time, so a claim is a single `UPDATE … WHERE id IN (SELECT …)
//! RETURNING *` inside `BEGIN IMMEDIATE`: the write lock is taken before the select, and no two
//! claims can pick the same rows. Across processes on one file the same lock applies.

use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow};
use sqlx::{Row, SqlitePool};

use super::model::*;
use super::row::{SCHEMA, row_to_job};

/// A job store on a SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

/// The condition of a claimable job (`?1` = now).
const DUE: &str = "((status IN ('queued', 'retry_scheduled') AND next_attempt_at <= ?1)
                   OR (status = 'running' AND lease_until < ?1))";

impl SqliteStore {
    /// Opens (creating when missing) the database at a `sqlite://path` or `sqlite::memory:` URL.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError(format!("bad SQLite URL {url}: {e}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        Ok(SqliteStore { pool })
    }
}

fn rows(rows: Vec<SqliteRow>) -> Result<Vec<Job>, StoreError> {
    rows.iter().map(row_to_job).collect()
}

impl JobStore for SqliteStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        for statement in SCHEMA {
            sqlx::query(*statement).execute(&self.pool).await?;
        }
        Ok(())
    }

    async fn enqueue(&self, job: NewJob, now_ms: i64) -> Result<(Job, bool), StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let callback = if job.callback_url.is_some() {
            CallbackState::Pending
        } else {
            CallbackState::None
        };
        let inserted = sqlx::query(
            "INSERT INTO faregate_jobs (id, tool, arguments, call_id, idempotency_key,
                callback_url, status, attempts, next_attempt_at, created_at, updated_at,
                callback_state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', 0, ?7, ?7, ?7, ?8)
             ON CONFLICT DO NOTHING",
        )
        .bind(&id)
        .bind(&job.tool)
        .bind(job.arguments.to_string())
        .bind(&job.call_id)
        .bind(&job.idempotency_key)
        .bind(&job.callback_url)
        .bind(now_ms)
        .bind(callback.as_str())
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1;
        let row = if inserted {
            sqlx::query("SELECT * FROM faregate_jobs WHERE id = ?1")
                .bind(&id)
                .fetch_one(&self.pool)
                .await?
        } else {
            sqlx::query("SELECT * FROM faregate_jobs WHERE tool = ?1 AND idempotency_key = ?2")
                .bind(&job.tool)
                .bind(&job.idempotency_key)
                .fetch_one(&self.pool)
                .await?
        };
        Ok((row_to_job(&row)?, inserted))
    }

    async fn get(&self, id: &str) -> Result<Option<Job>, StoreError> {
        sqlx::query("SELECT * FROM faregate_jobs WHERE id = ?1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(row_to_job)
            .transpose()
    }

    async fn list(
        &self,
        status: Option<JobStatus>,
        tool: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        rows(
            sqlx::query(
                "SELECT * FROM faregate_jobs
                 WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR tool = ?2)
                 ORDER BY id DESC LIMIT ?3",
            )
            .bind(status.map(JobStatus::as_str))
            .bind(tool)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?,
        )
    }

    async fn claim(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
        skip_tools: &[String],
    ) -> Result<Vec<Job>, StoreError> {
        let skip = serde_json::to_string(skip_tools).unwrap_or_else(|_| "[]".into());
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let claimed = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE faregate_jobs
             SET status = 'running', lease_owner = ?2, lease_until = ?1 + ?3, updated_at = ?1
             WHERE id IN (
                 SELECT id FROM faregate_jobs
                 WHERE {DUE} AND tool NOT IN (SELECT value FROM json_each(?4))
                 ORDER BY next_attempt_at, id LIMIT ?5)
             RETURNING *"
        )))
        .bind(now_ms)
        .bind(owner)
        .bind(lease_ms)
        .bind(skip)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        // RETURNING does not keep the subquery's order: oldest due first, as documented.
        let mut jobs = rows(claimed)?;
        jobs.sort_by(|a, b| (a.next_attempt_at_ms, &a.id).cmp(&(b.next_attempt_at_ms, &b.id)));
        Ok(jobs)
    }

    async fn succeed(
        &self,
        id: &str,
        owner: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE faregate_jobs
             SET status = 'succeeded', result = ?3, attempts = attempts + 1, last_error = NULL,
                 lease_owner = NULL, lease_until = NULL, updated_at = ?4,
                 next_callback_at = CASE WHEN callback_state = 'pending' THEN ?4 END
             WHERE id = ?1 AND lease_owner = ?2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .bind(result.to_string())
        .bind(now_ms)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    async fn retry(
        &self,
        id: &str,
        owner: &str,
        next_attempt_at_ms: i64,
        error: &str,
        attempted: bool,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE faregate_jobs
             SET status = 'retry_scheduled', next_attempt_at = ?3, last_error = ?4,
                 attempts = attempts + ?5, lease_owner = NULL, lease_until = NULL, updated_at = ?6
             WHERE id = ?1 AND lease_owner = ?2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .bind(next_attempt_at_ms)
        .bind(error)
        .bind(i64::from(attempted))
        .bind(now_ms)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    async fn kill(
        &self,
        id: &str,
        owner: &str,
        error: &str,
        result: Option<&Value>,
        attempted: bool,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE faregate_jobs
             SET status = 'dead', last_error = ?3, result = ?4, attempts = attempts + ?5,
                 lease_owner = NULL, lease_until = NULL, updated_at = ?6,
                 next_callback_at = CASE WHEN callback_state = 'pending' THEN ?6 END
             WHERE id = ?1 AND lease_owner = ?2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .bind(error)
        .bind(result.map(Value::to_string))
        .bind(i64::from(attempted))
        .bind(now_ms)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    async fn claim_callbacks(
        &self,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let claimed = sqlx::query(
            "UPDATE faregate_jobs SET next_callback_at = ?1 + ?2
             WHERE id IN (
                 SELECT id FROM faregate_jobs
                 WHERE callback_state = 'pending' AND status IN ('succeeded', 'dead')
                   AND next_callback_at <= ?1
                 ORDER BY next_callback_at LIMIT ?3)
             RETURNING *",
        )
        .bind(now_ms)
        .bind(lease_ms)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows(claimed)
    }

    async fn callback_result(
        &self,
        id: &str,
        sent: bool,
        next_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let state = match (sent, next_at_ms) {
            (true, _) => CallbackState::Sent,
            (false, Some(_)) => CallbackState::Pending,
            (false, None) => CallbackState::Failed,
        };
        sqlx::query(
            "UPDATE faregate_jobs
             SET callback_state = ?2, callback_attempts = callback_attempts + 1,
                 next_callback_at = ?3, updated_at = ?4
             WHERE id = ?1",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(next_at_ms)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn release(&self, owner: &str, now_ms: i64) -> Result<u64, StoreError> {
        Ok(sqlx::query(
            "UPDATE faregate_jobs
             SET status = CASE WHEN attempts = 0 THEN 'queued' ELSE 'retry_scheduled' END,
                 lease_owner = NULL, lease_until = NULL, next_attempt_at = ?2, updated_at = ?2
             WHERE lease_owner = ?1 AND status = 'running'",
        )
        .bind(owner)
        .bind(now_ms)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    async fn due_tools(&self, now_ms: i64) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT DISTINCT tool FROM faregate_jobs
             WHERE status IN ('queued', 'retry_scheduled') AND next_attempt_at <= ?1",
        )
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn stats(&self, now_ms: i64) -> Result<QueueStats, StoreError> {
        let depth = sqlx::query(
            "SELECT tool, status, COUNT(*) AS n FROM faregate_jobs GROUP BY tool, status
             ORDER BY tool, status",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| -> Result<(String, JobStatus, u64), StoreError> {
            let status: String = r.try_get("status")?;
            Ok((
                r.try_get("tool")?,
                JobStatus::parse(&status)
                    .ok_or_else(|| StoreError(format!("unknown status {status}")))?,
                r.try_get::<i64, _>("n")?.max(0) as u64,
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
        let oldest = sqlx::query(
            "SELECT tool, MIN(created_at) AS oldest FROM faregate_jobs
             WHERE status IN ('queued', 'retry_scheduled') AND next_attempt_at <= ?1
             GROUP BY tool ORDER BY tool",
        )
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| -> Result<(String, i64), StoreError> {
            Ok((r.try_get("tool")?, now_ms - r.try_get::<i64, _>("oldest")?))
        })
        .collect::<Result<Vec<_>, _>>()?;
        Ok(QueueStats {
            depth,
            oldest_due_age_ms: oldest,
        })
    }
}
