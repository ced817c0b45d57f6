//! What both stores share: the schema (identical on SQLite and PostgreSQL: text, BIGINT epoch
//! milliseconds, no engine-specific types) and the mapping from a row to a [`Job`].

use serde_json::Value;
use sqlx::{ColumnIndex, Database, Decode, Row, Type};

use super::model::{CallbackState, Job, JobStatus, StoreError};

/// The table and its indexes, created when missing.
pub(super) const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS faregate_jobs (
        id TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        call_id TEXT,
        idempotency_key TEXT,
        callback_url TEXT,
        status TEXT NOT NULL,
        attempts BIGINT NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL,
        lease_owner TEXT,
        lease_until BIGINT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        result TEXT,
        last_error TEXT,
        callback_state TEXT NOT NULL,
        callback_attempts BIGINT NOT NULL DEFAULT 0,
        next_callback_at BIGINT
    )",
    "CREATE UNIQUE INDEX IF NOT EXISTS faregate_jobs_idempotency
        ON faregate_jobs (tool, idempotency_key) WHERE idempotency_key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS faregate_jobs_due ON faregate_jobs (status, next_attempt_at)",
    "CREATE INDEX IF NOT EXISTS faregate_jobs_callbacks
        ON faregate_jobs (callback_state, next_callback_at)",
];

/// A stored row as a [`Job`], for any database whose rows decode text and `BIGINT`.
pub(super) fn row_to_job<'r, R>(r: &'r R) -> Result<Job, StoreError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    R::Database: Database,
{
    let text = |c: &'static str| -> Result<Option<String>, StoreError> { Ok(r.try_get(c)?) };
    let parse_json = |s: Option<String>| -> Result<Option<Value>, StoreError> {
        s.map(|s| serde_json::from_str(&s).map_err(|e| StoreError(format!("stored JSON: {e}"))))
            .transpose()
    };
    let status: String = r.try_get("status")?;
    let callback: String = r.try_get("callback_state")?;
    Ok(Job {
        id: r.try_get("id")?,
        tool: r.try_get("tool")?,
        arguments: parse_json(Some(r.try_get("arguments")?))?.unwrap_or(Value::Null),
        call_id: text("call_id")?,
        idempotency_key: text("idempotency_key")?,
        callback_url: text("callback_url")?,
        status: JobStatus::parse(&status)
            .ok_or_else(|| StoreError(format!("unknown status {status}")))?,
        attempts: r.try_get::<i64, _>("attempts")?.max(0) as u32,
        next_attempt_at_ms: r.try_get("next_attempt_at")?,
        lease_owner: text("lease_owner")?,
        lease_until_ms: r.try_get("lease_until")?,
        created_at_ms: r.try_get("created_at")?,
        updated_at_ms: r.try_get("updated_at")?,
        result: parse_json(text("result")?)?,
        last_error: text("last_error")?,
        callback: CallbackState::parse(&callback)
            .ok_or_else(|| StoreError(format!("unknown callback state {callback}")))?,
        callback_attempts: r.try_get::<i64, _>("callback_attempts")?.max(0) as u32,
        next_callback_at_ms: r.try_get("next_callback_at")?,
    })
}
