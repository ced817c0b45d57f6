//! The job store on SQL: every statement once, for SQLite and PostgreSQL alike.
//!
//! The schema uses only what both databases share (text, `BIGINT` epoch milliseconds, no
//! engine-specific types), and so do the statements; what little differs (claim locking, list
//! binding, the migration lock) is asked of the shared database handle, [`Db`] (`store/db.rs`).

use serde_json::Value;

use super::model::{
    CANCELLED_CALLBACK, CallbackState, Job, JobFilter, JobStatus, JobStore, NewJob, Origin,
    QueueStats, StoreError, Transition, Which,
};
use super::unreadable;
use crate::clients::ClientName;
use crate::store::{Arg, Db, Migration, StoreRow};
use crate::trace_context::TraceContext;

/// The job queue's schema changes, oldest first (see `store::Migration`).
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "jobs_1_queue",
        statements: QUEUE,
    },
    Migration {
        name: "jobs_2_client",
        statements: CLIENT,
    },
    Migration {
        name: "jobs_3_trace",
        statements: TRACE,
    },
    Migration {
        name: "jobs_4_retention",
        statements: RETENTION,
    },
    Migration {
        name: "jobs_5_aliases",
        statements: ALIASES,
    },
    Migration {
        name: "jobs_6_callback_error",
        statements: CALLBACK_ERROR,
    },
];

/// The table and its indexes, created when missing (so databases made before migrations were
/// recorded by name take this one unchanged).
const QUEUE: &[&str] = &[
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

/// Every job belongs to the client that submitted it, and idempotency keys are per client:
/// the same key from two clients is two jobs. Jobs stored before clients were recorded belong
/// to the `local` client (which only auth-off callers and the admin key see).
const CLIENT: &[&str] = &[
    "ALTER TABLE faregate_jobs ADD COLUMN client TEXT NOT NULL DEFAULT 'local'",
    "DROP INDEX IF EXISTS faregate_jobs_idempotency",
    "CREATE UNIQUE INDEX IF NOT EXISTS faregate_jobs_client_idempotency
        ON faregate_jobs (client, tool, idempotency_key) WHERE idempotency_key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS faregate_jobs_client ON faregate_jobs (client, id)",
];

/// The W3C trace context a job was submitted under (`traceparent`, `tracestate`), so its runs
/// link to the submitting trace. Jobs stored before have none.
const TRACE: &[&str] = &[
    "ALTER TABLE faregate_jobs ADD COLUMN trace_parent TEXT",
    "ALTER TABLE faregate_jobs ADD COLUMN trace_state TEXT",
];

/// Finished jobs are purged after `[store] job_retention`, found by status and last change.
const RETENTION: &[&str] =
    &["CREATE INDEX IF NOT EXISTS faregate_jobs_finished ON faregate_jobs (status, updated_at)"];

/// A submission answered with one id that turned out to be another job: a spooled job whose
/// client's idempotency key already named a job in the store when the spool moved it in
/// ([`Store::alias`]). The id the caller was given finds the job the key names.
const ALIASES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS faregate_job_aliases (
        id TEXT PRIMARY KEY,
        job_id TEXT NOT NULL,
        created_at BIGINT NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS faregate_job_aliases_job ON faregate_job_aliases (job_id)",
];

/// Why the last callback delivery failed, so the client reads it on the job (it was only in the
/// server's log). Jobs stored before have none.
const CALLBACK_ERROR: &[&str] = &["ALTER TABLE faregate_jobs ADD COLUMN callback_error TEXT"];

const ALIAS: &str = "INSERT INTO faregate_job_aliases (id, job_id, created_at) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING";

/// Aliases of jobs that are gone (purged), a batch of `$1`.
const PURGE_ALIASES: &str = "DELETE FROM faregate_job_aliases WHERE id IN (
         SELECT a.id FROM faregate_job_aliases a
         WHERE NOT EXISTS (SELECT 1 FROM faregate_jobs j WHERE j.id = a.job_id)
         LIMIT CAST($1 AS BIGINT))";

/// The columns a [`Job`] is read from, named rather than `*`: a SQLite connection that loaded
/// the schema before a migration added a column would otherwise prepare `*` with the old
/// column count and read the new row with it (named columns make SQLite reload its schema).
macro_rules! job_columns {
    () => {
        "id, tool, arguments, call_id, client, idempotency_key, callback_url, status, attempts,
         next_attempt_at, lease_owner, lease_until, created_at, updated_at, result, last_error,
         callback_state, callback_attempts, next_callback_at, callback_error, trace_parent,
         trace_state"
    };
}

// After `job_columns!`, which the claim's statement uses.
mod claim;

const ENQUEUE: &str = "INSERT INTO faregate_jobs (id, tool, arguments, call_id, idempotency_key,
        callback_url, status, attempts, next_attempt_at, created_at, updated_at, callback_state,
        client, trace_parent, trace_state)
     VALUES ($1, $2, $3, $4, $5, $6, 'queued', 0, $7, $7, $7, $8, $9, $10, $11)
     ON CONFLICT DO NOTHING";

const ALIASED: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM faregate_jobs WHERE id = (SELECT job_id FROM faregate_job_aliases WHERE id = $1)"
);

/// A submission stored as already dead, without its idempotency key (which names another job):
/// `$5` callback URL, `$6` accepted at, `$7` now, `$8` callback state, `$12` the error, `$13`
/// when its callback is due.
const ENQUEUE_REFUSED: &str = "INSERT INTO faregate_jobs (id, tool, arguments, call_id,
        callback_url, status, attempts, next_attempt_at, created_at, updated_at, callback_state,
        client, trace_parent, trace_state, last_error, next_callback_at)
     VALUES ($1, $2, $3, $4, $5, 'dead', 0, $6, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT DO NOTHING";

const COUNT: &str = "SELECT COUNT(*) AS n FROM faregate_jobs";

const OLDEST: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM faregate_jobs ORDER BY id LIMIT CAST($1 AS BIGINT)"
);

const DELETE: &str = "DELETE FROM faregate_jobs WHERE id = $1";

const BY_ID: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM faregate_jobs WHERE id = $1"
);

const BY_IDEMPOTENCY_KEY: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM faregate_jobs WHERE tool = $1 AND idempotency_key = $2 AND client = $3"
);

const LIST: &str = concat!(
    "SELECT ",
    job_columns!(),
    " FROM faregate_jobs
     WHERE (CAST($1 AS TEXT) IS NULL OR status = CAST($1 AS TEXT))
       AND (CAST($2 AS TEXT) IS NULL OR tool = CAST($2 AS TEXT))
       AND (CAST($3 AS TEXT) IS NULL OR client = CAST($3 AS TEXT))
       AND (CAST($5 AS TEXT) IS NULL
            OR (CAST($5 AS TEXT) = 'watch_runs') = (SUBSTR(COALESCE(idempotency_key, ''), 1, 6) = 'watch:'))
     ORDER BY id DESC LIMIT CAST($4 AS BIGINT)"
);

/// Every end of a run, in one statement: `$3` the new status, `$4` the result, `$5` the error,
/// `$6` whether the attempt counts, `$7` the next due time (kept when NULL), `$8` now. A final
/// status makes a pending callback due now; a requeue leaves it waiting. The lease ends, and
/// its name `$2` stays on the row until the next claim: a run whose answer was lost reads it
/// back to know that its own end landed.
const FINISH: &str = "UPDATE faregate_jobs
     SET status = $3, result = $4, last_error = $5, attempts = attempts + $6,
         next_attempt_at = COALESCE($7, next_attempt_at),
         lease_until = NULL, updated_at = $8,
         next_callback_at = CASE WHEN $3 IN ('succeeded', 'dead') AND callback_state = 'pending'
                                 THEN $8 END
     WHERE id = $1 AND lease_owner = $2 AND status = 'running'";

/// `$1` now, `$2` lease, `$3` limit; `{lock}` as for claims.
const CLAIM_CALLBACKS: &str = concat!(
    "UPDATE faregate_jobs SET next_callback_at = $1 + $2
     WHERE id IN (
         SELECT id FROM faregate_jobs
         WHERE callback_state = 'pending' AND status IN ('succeeded', 'dead')
           AND next_callback_at <= $1
         ORDER BY next_callback_at LIMIT CAST($3 AS BIGINT)
         {lock})
     RETURNING ",
    job_columns!()
);

const CALLBACK_RESULT: &str = "UPDATE faregate_jobs
     SET callback_state = $2, callback_attempts = callback_attempts + 1,
         next_callback_at = $3, updated_at = $4, callback_error = $5
     WHERE id = $1";

/// `$1` the cutoff, `$2` the batch: finished jobs last changed before the cutoff, except those
/// whose callback is still to be sent.
const PURGE: &str = "DELETE FROM faregate_jobs WHERE id IN (
         SELECT id FROM faregate_jobs
         WHERE status IN ('succeeded', 'dead', 'cancelled') AND updated_at < $1
           AND NOT (callback_state = 'pending' AND status IN ('succeeded', 'dead'))
         LIMIT CAST($2 AS BIGINT))";

/// Only a job that has not started is cancelled: a running one may be booking at the provider.
/// `$1` may be an alias ([`ALIASES`]).
const CANCEL: &str = "UPDATE faregate_jobs
     SET status = 'cancelled', next_callback_at = NULL, updated_at = $3,
         callback_state = CASE WHEN callback_state = 'pending' THEN 'failed' ELSE callback_state END,
         callback_error = CASE WHEN callback_state = 'pending' THEN $4 ELSE callback_error END
     WHERE id = COALESCE((SELECT job_id FROM faregate_job_aliases WHERE id = $1), $1)
       AND client = $2 AND status IN ('queued', 'retry_scheduled')";

/// `$1` the owner: its own leases and its claims' (`<owner>/<n>`, `model::leased_by`).
const RELEASE: &str = "UPDATE faregate_jobs
     SET status = CASE WHEN attempts = 0 THEN 'queued' ELSE 'retry_scheduled' END,
         lease_owner = NULL, lease_until = NULL, next_attempt_at = $2, updated_at = $2
     WHERE (lease_owner = $1
            OR substr(lease_owner, 1, length(CAST($1 AS TEXT)) + 1) = CAST($1 AS TEXT) || '/')
       AND status = 'running'";

/// `$1` now: the tools a claim could take a job of now ([`claim::DUE`]: due, or with an expired lease).
const DUE_TOOLS: &str = "SELECT DISTINCT tool FROM faregate_jobs
     WHERE (status IN ('queued', 'retry_scheduled') AND next_attempt_at <= $1)
        OR (status = 'running' AND lease_until < $1)";

/// When a claim could next take a job ([`JobStore::next_due`]): two index reads, the running
/// jobs being at most the fleet's workers.
const NEXT_DUE: &str = "SELECT MIN(at) AS at FROM (
         SELECT MIN(next_attempt_at) AS at FROM faregate_jobs
         WHERE status IN ('queued', 'retry_scheduled')
         UNION ALL
         SELECT MIN(lease_until) AS at FROM faregate_jobs WHERE status = 'running') AS next_due";

/// When a callback is next due ([`JobStore::next_callback_due`]): one read of the callbacks' index.
const NEXT_CALLBACK_DUE: &str = "SELECT MIN(next_callback_at) AS at FROM faregate_jobs
     WHERE callback_state = 'pending' AND status IN ('succeeded', 'dead')";

const DEPTH: &str = "SELECT tool, status, COUNT(*) AS n FROM faregate_jobs
     GROUP BY tool, status ORDER BY tool, status";

const OLDEST_DUE: &str = "SELECT tool, MIN(created_at) AS oldest FROM faregate_jobs
     WHERE status IN ('queued', 'retry_scheduled') AND next_attempt_at <= $1
     GROUP BY tool ORDER BY tool";

/// The job store: SQLite or PostgreSQL, by the URL it was opened with.
#[derive(Debug, Clone)]
pub struct Store {
    db: Db,
}

impl Store {
    /// Opens the store named by a `sqlite://…` or `postgres://…` URL and creates its schema.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let store = Store::new(Db::open(url).await?);
        store.migrate().await?;
        Ok(store)
    }

    /// The job queue in an open database (shared with the other rooms that keep state there);
    /// [`JobStore::migrate`] creates its tables.
    pub fn new(db: Db) -> Self {
        Store { db }
    }

    /// The database this queue lives in, for the other rooms that keep state there.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Connects to PostgreSQL without creating the schema. With `schema`, every statement runs
    /// in that schema (created by [`JobStore::migrate`]): tests use one each, so they never see
    /// each other's rows.
    pub async fn open_postgres(url: &str, schema: Option<&str>) -> Result<Self, StoreError> {
        Ok(Store {
            db: Db::open_postgres(url, schema).await?,
        })
    }

    /// [`JobStore::enqueue`] under an id chosen by the caller, accepted at `now_ms`: a
    /// submission keeps its id from a try that may have landed to its spooled copy, and the
    /// spool moves a job in with the id and time it was answered with. Neither the id nor
    /// (with a key) the client's idempotency key is ever stored twice: when either is taken,
    /// the job that holds it is answered, with `false`.
    pub async fn enqueue_as(
        &self,
        id: &str,
        job: NewJob,
        now_ms: i64,
    ) -> Result<(Job, bool), StoreError> {
        let callback = if job.callback_url.is_some() {
            CallbackState::Pending
        } else {
            CallbackState::None
        };
        let arguments = job.arguments.to_string();
        let inserted = self
            .db
            .execute(
                ENQUEUE,
                &[
                    Arg::Text(Some(id)),
                    Arg::Text(Some(&job.tool)),
                    Arg::Text(Some(&arguments)),
                    Arg::Text(job.call_id.as_deref()),
                    Arg::Text(job.idempotency_key.as_deref()),
                    Arg::Text(job.callback_url.as_deref()),
                    Arg::Int(Some(now_ms)),
                    Arg::Text(Some(callback.as_str())),
                    Arg::Text(Some(job.client.as_str())),
                    Arg::Text(job.trace.as_ref().map(TraceContext::traceparent)),
                    Arg::Text(job.trace.as_ref().and_then(TraceContext::tracestate)),
                ],
            )
            .await?
            == 1;
        let mut stored = self
            .db
            .fetch(BY_ID, &[Arg::Text(Some(id))], job_from_row)
            .await?;
        if !inserted && stored.is_empty() && job.idempotency_key.is_some() {
            let key = [
                Arg::Text(Some(&job.tool)),
                Arg::Text(job.idempotency_key.as_deref()),
                Arg::Text(Some(job.client.as_str())),
            ];
            stored = self
                .db
                .fetch(BY_IDEMPOTENCY_KEY, &key, job_from_row)
                .await?;
        }
        let job = stored
            .into_iter()
            .next()
            .ok_or_else(|| StoreError(format!("job {id} was not stored")))?;
        Ok((job, inserted))
    }

    /// Stores `job`, accepted as `id` at `accepted_ms`, as a dead job whose `last_error` is
    /// `error`, without its idempotency key: the spool moved in a job whose key already named a
    /// job with other arguments in the store, so it was never run, and the caller reads why
    /// (and its callback, if it gave one, says so too). Nothing when `id` is taken.
    pub(in crate::jobs) async fn enqueue_refused(
        &self,
        id: &str,
        job: &NewJob,
        accepted_ms: i64,
        now_ms: i64,
        error: &str,
    ) -> Result<(), StoreError> {
        let (callback, due) = if job.callback_url.is_some() {
            (CallbackState::Pending, Some(now_ms))
        } else {
            (CallbackState::None, None)
        };
        let arguments = job.arguments.to_string();
        self.db
            .execute(
                ENQUEUE_REFUSED,
                &[
                    Arg::Text(Some(id)),
                    Arg::Text(Some(&job.tool)),
                    Arg::Text(Some(&arguments)),
                    Arg::Text(job.call_id.as_deref()),
                    Arg::Text(job.callback_url.as_deref()),
                    Arg::Int(Some(accepted_ms)),
                    Arg::Int(Some(now_ms)),
                    Arg::Text(Some(callback.as_str())),
                    Arg::Text(Some(job.client.as_str())),
                    Arg::Text(job.trace.as_ref().map(TraceContext::traceparent)),
                    Arg::Text(job.trace.as_ref().and_then(TraceContext::tracestate)),
                    Arg::Text(Some(error)),
                    Arg::Int(due),
                ],
            )
            .await
            .map(|_| ())
    }

    /// Lets `id` find job `job_id` from now on (`get`, `cancel`): the spool moved in a job
    /// answered as `id` that the client's idempotency key makes `job_id`.
    pub(in crate::jobs) async fn alias(
        &self,
        id: &str,
        job_id: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let args = [
            Arg::Text(Some(id)),
            Arg::Text(Some(job_id)),
            Arg::Int(Some(now_ms)),
        ];
        self.db.execute(ALIAS, &args).await.map(|_| ())
    }

    /// Deletes job `id`; whether it was there. Only the spool deletes: a job it moved into the
    /// shared store leaves the spool.
    pub(in crate::jobs) async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.db.execute(DELETE, &[Arg::Text(Some(id))]).await? == 1)
    }

    /// The job of `client`'s idempotency `key` for `tool`, if there is one.
    pub(in crate::jobs) async fn by_key(
        &self,
        client: &ClientName,
        tool: &str,
        key: &str,
    ) -> Result<Option<Job>, StoreError> {
        let args = [
            Arg::Text(Some(tool)),
            Arg::Text(Some(key)),
            Arg::Text(Some(client.as_str())),
        ];
        let found = self
            .db
            .fetch(BY_IDEMPOTENCY_KEY, &args, job_from_row)
            .await?;
        Ok(found.into_iter().next())
    }

    /// How many jobs the store holds, whatever their state (the spool's depth).
    pub(in crate::jobs) async fn count(&self) -> Result<u64, StoreError> {
        let n = self
            .db
            .fetch(COUNT, &[], |r| required(r.int("n")?, "n"))
            .await?;
        Ok(n.first().map_or(0, |n| u64::try_from(*n).unwrap_or(0)))
    }

    /// The oldest `limit` jobs, by id (which sorts by creation).
    pub(in crate::jobs) async fn oldest(&self, limit: u32) -> Result<Vec<Job>, StoreError> {
        let args = [Arg::Int(Some(i64::from(limit)))];
        self.db.fetch(OLDEST, &args, job_from_row).await
    }
}

impl JobStore for Store {
    async fn migrate(&self) -> Result<(), StoreError> {
        self.db.migrate(MIGRATIONS, crate::clock::epoch_ms()).await
    }

    async fn enqueue(&self, job: NewJob, now_ms: i64) -> Result<(Job, bool), StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        self.enqueue_as(&id, job, now_ms).await
    }

    async fn get(&self, id: &str) -> Result<Option<Job>, StoreError> {
        let args = [Arg::Text(Some(id))];
        let found = self.db.fetch(BY_ID, &args, job_from_row).await?;
        if let Some(job) = found.into_iter().next() {
            return Ok(Some(job));
        }
        // Only a miss looks for an alias: a polled job is found by its own id.
        let found = self.db.fetch(ALIASED, &args, job_from_row).await?;
        Ok(found.into_iter().next())
    }

    async fn list(&self, filter: JobFilter<'_>, limit: u32) -> Result<Vec<Job>, StoreError> {
        // `$5`: NULL for every job, else which side of `WATCH_RUN_KEY_PREFIX` (the statement's
        // `'watch:'`, compared case-sensitively on both engines) to keep.
        let origin = match filter.origin {
            Origin::Any => None,
            Origin::Calls => Some("calls"),
            Origin::WatchRuns => Some("watch_runs"),
        };
        let args = [
            Arg::Text(filter.status.map(JobStatus::as_str)),
            Arg::Text(filter.tool),
            Arg::Text(filter.client.map(ClientName::as_str)),
            Arg::Int(Some(i64::from(limit))),
            Arg::Text(origin),
        ];
        self.db.fetch(LIST, &args, job_from_row).await
    }

    async fn claim_which(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
        which: Which<'_>,
    ) -> Result<Vec<Job>, StoreError> {
        let shares = which.shares;
        let shared_tools: Vec<String> = shares.slots.iter().map(|(t, _)| t.clone()).collect();
        let slots: Vec<i64> = shares.slots.iter().map(|(_, n)| i64::from(*n)).collect();
        let holders: Vec<String> = shares
            .left
            .iter()
            .map(|(c, _, _)| c.as_str().to_string())
            .collect();
        let held_tools: Vec<String> = shares.left.iter().map(|(_, t, _)| t.clone()).collect();
        let left: Vec<i64> = shares.left.iter().map(|(_, _, n)| i64::from(*n)).collect();
        let mut args = vec![
            Arg::Int(Some(now_ms)),
            Arg::Text(Some(owner)),
            Arg::Int(Some(lease_ms)),
            Arg::Names(which.skip_tools),
            Arg::Int(Some(i64::from(limit))),
            Arg::Int(Some(which.overdue.created_before_ms)),
            Arg::Int(Some(which.overdue.due_by_ms)),
        ];
        if !shares.is_none() {
            args.extend([
                Arg::Names(&shared_tools),
                Arg::Ints(&slots),
                Arg::Names(&holders),
                Arg::Names(&held_tools),
                Arg::Ints(&left),
            ]);
        }
        let claimed = self.db.claim(
            claim::statement(&self.db, !shares.is_none()),
            &args,
            |row| Ok(readable(row)),
        );
        let (mut jobs, unreadable) = unreadable::split(claimed.await?);
        for (id, error) in unreadable {
            unreadable::set_aside(&self.db, id.as_deref(), owner, &error, now_ms).await;
        }
        // RETURNING does not keep the subquery's order: oldest due first, as documented (which
        // jobs were taken is the clients' turns').
        jobs.sort_by(|a, b| (a.next_attempt_at_ms, &a.id).cmp(&(b.next_attempt_at_ms, &b.id)));
        Ok(jobs)
    }

    async fn finish(
        &self,
        id: &str,
        owner: &str,
        transition: Transition,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let status = transition.status();
        let (result, error, attempted, next_attempt_at_ms) = match transition {
            Transition::Succeeded { result } => (Some(result), None, true, None),
            Transition::Retry {
                next_attempt_at_ms,
                error,
                attempted,
            } => (None, Some(error), attempted, Some(next_attempt_at_ms)),
            Transition::Dead {
                error,
                result,
                attempted,
            } => (result, Some(error), attempted, None),
        };
        let result = result.as_ref().map(Value::to_string);
        let args = [
            Arg::Text(Some(id)),
            Arg::Text(Some(owner)),
            Arg::Text(Some(status.as_str())),
            Arg::Text(result.as_deref()),
            Arg::Text(error.as_deref()),
            Arg::Int(Some(i64::from(attempted))),
            Arg::Int(next_attempt_at_ms),
            Arg::Int(Some(now_ms)),
        ];
        Ok(self.db.execute(FINISH, &args).await? == 1)
    }

    async fn claim_callbacks(
        &self,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError> {
        let sql = sqlx::AssertSqlSafe(
            CLAIM_CALLBACKS.replace("{lock}", &self.db.claim_lock("faregate_jobs")),
        );
        let args = [
            Arg::Int(Some(now_ms)),
            Arg::Int(Some(lease_ms)),
            Arg::Int(Some(i64::from(limit))),
        ];
        let claimed = self.db.claim(sql, &args, |row| Ok(readable(row)));
        let (jobs, unreadable) = unreadable::split(claimed.await?);
        for (id, error) in unreadable {
            unreadable::set_callback_aside(&self.db, id.as_deref(), &error, now_ms).await;
        }
        Ok(jobs)
    }

    async fn callback_result(
        &self,
        id: &str,
        failure: Option<&str>,
        next_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let args = [
            Arg::Text(Some(id)),
            Arg::Text(Some(CallbackState::after(failure, next_at_ms).as_str())),
            Arg::Int(next_at_ms),
            Arg::Int(Some(now_ms)),
            Arg::Text(failure),
        ];
        self.db.execute(CALLBACK_RESULT, &args).await?;
        Ok(())
    }

    async fn cancel(&self, id: &str, client: &ClientName, now_ms: i64) -> Result<bool, StoreError> {
        let args = [
            Arg::Text(Some(id)),
            Arg::Text(Some(client.as_str())),
            Arg::Int(Some(now_ms)),
            Arg::Text(Some(CANCELLED_CALLBACK)),
        ];
        Ok(self.db.execute(CANCEL, &args).await? == 1)
    }

    async fn purge(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError> {
        let args = [Arg::Int(Some(before_ms)), Arg::Int(Some(i64::from(limit)))];
        let purged = self.db.execute(PURGE, &args).await?;
        self.db
            .execute(PURGE_ALIASES, &[Arg::Int(Some(i64::from(limit)))])
            .await?;
        Ok(purged)
    }

    async fn release(&self, owner: &str, now_ms: i64) -> Result<u64, StoreError> {
        let args = [Arg::Text(Some(owner)), Arg::Int(Some(now_ms))];
        self.db.execute(RELEASE, &args).await
    }

    async fn due_tools(&self, now_ms: i64) -> Result<Vec<String>, StoreError> {
        let args = [Arg::Int(Some(now_ms))];
        self.db.fetch(DUE_TOOLS, &args, tool_from_row).await
    }

    async fn next_callback_due(&self) -> Result<Option<i64>, StoreError> {
        let at = self
            .db
            .fetch(NEXT_CALLBACK_DUE, &[], |r| r.int("at"))
            .await?;
        Ok(at.into_iter().flatten().next())
    }

    async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        let at = self.db.fetch(NEXT_DUE, &[], |r| r.int("at")).await?;
        Ok(at.into_iter().flatten().next())
    }

    async fn stats(&self, now_ms: i64) -> Result<QueueStats, StoreError> {
        let depth = self.db.fetch(DEPTH, &[], depth_from_row).await?;
        let oldest = self
            .db
            .fetch(OLDEST_DUE, &[Arg::Int(Some(now_ms))], oldest_from_row)
            .await?;
        Ok(QueueStats {
            depth,
            oldest_due_age_ms: oldest
                .into_iter()
                .map(|(tool, created_at_ms)| (tool, now_ms - created_at_ms))
                .collect(),
        })
    }
}

fn required<T>(value: Option<T>, column: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError(format!("column {column} is NULL")))
}

fn status(text: &str) -> Result<JobStatus, StoreError> {
    JobStatus::parse(text).ok_or_else(|| StoreError(format!("unknown status {text}")))
}

fn json(text: Option<String>) -> Result<Option<Value>, StoreError> {
    text.map(|s| serde_json::from_str(&s).map_err(|e| StoreError(format!("stored JSON: {e}"))))
        .transpose()
}

/// A stored row as a [`Job`].
fn job_from_row(r: &dyn StoreRow) -> Result<Job, StoreError> {
    let text = |column: &str| r.text(column);
    let required_text = |column: &str| required(r.text(column)?, column);
    let required_int = |column: &str| required(r.int(column)?, column);
    let count = |column: &str| -> Result<u32, StoreError> {
        Ok(u32::try_from(required_int(column)?.max(0)).unwrap_or(u32::MAX))
    };
    let callback = required_text("callback_state")?;
    let trace_state = text("trace_state")?;
    Ok(Job {
        id: required_text("id")?,
        tool: required_text("tool")?,
        arguments: json(Some(required_text("arguments")?))?.unwrap_or(Value::Null),
        call_id: text("call_id")?,
        client: ClientName::stored(&required_text("client")?),
        idempotency_key: text("idempotency_key")?,
        callback_url: text("callback_url")?,
        status: status(&required_text("status")?)?,
        attempts: count("attempts")?,
        next_attempt_at_ms: required_int("next_attempt_at")?,
        lease_owner: text("lease_owner")?,
        lease_until_ms: r.int("lease_until")?,
        created_at_ms: required_int("created_at")?,
        updated_at_ms: required_int("updated_at")?,
        result: json(text("result")?)?,
        last_error: text("last_error")?,
        callback: CallbackState::parse(&callback)
            .ok_or_else(|| StoreError(format!("unknown callback state {callback}")))?,
        callback_attempts: count("callback_attempts")?,
        next_callback_at_ms: r.int("next_callback_at")?,
        callback_error: text("callback_error")?,
        // A stored context was valid when stored; one that no longer parses links nothing.
        trace: text("trace_parent")?
            .and_then(|parent| TraceContext::parse(&parent, trace_state.as_deref())),
    })
}

/// A claimed row as a [`Job`], or, when it cannot be read, its id (if that can be) and why.
fn readable(r: &dyn StoreRow) -> Result<Job, unreadable::Unreadable> {
    job_from_row(r).map_err(|e| (r.text("id").ok().flatten(), e))
}

fn tool_from_row(r: &dyn StoreRow) -> Result<String, StoreError> {
    required(r.text("tool")?, "tool")
}

fn depth_from_row(r: &dyn StoreRow) -> Result<(String, JobStatus, u64), StoreError> {
    Ok((
        required(r.text("tool")?, "tool")?,
        status(&required(r.text("status")?, "status")?)?,
        u64::try_from(required(r.int("n")?, "n")?).unwrap_or(0),
    ))
}

fn oldest_from_row(r: &dyn StoreRow) -> Result<(String, i64), StoreError> {
    Ok((
        required(r.text("tool")?, "tool")?,
        required(r.int("oldest")?, "oldest")?,
    ))
}
