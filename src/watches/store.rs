//! Watches and their notices in the shared database (migration `watches_1_watches`), every
//! statement once for SQLite and PostgreSQL.
//!
//! The steps that must happen once in a fleet are conditional updates: a run starts only on a
//! watch that has none (`job_id IS NULL`) at the instant it is due, and ends only on the watch
//! still waiting for that job, so of two replicas that both see a watch due or a job ended,
//! one changes the row and the other changes nothing. A notice is keyed by (watch, instant), so
//! writing it twice keeps one; its callback waits in the notice's row (the outbox's columns,
//! written by the same insert), where the outbox leases each delivery to one replica.
//!
//! A client's cap on active watches is counted in the same statement that inserts a watch or
//! resumes one, run under the client's lock (`BEGIN IMMEDIATE` on SQLite, a transaction-scoped
//! advisory lock on PostgreSQL, as a booking's budget reservation is): of concurrent creates and
//! resumes, on one replica or many, only as many as the cap leaves room for take effect.

use std::time::Duration;

use serde_json::Value;

use super::condition::Condition;
use super::schedule::{End, Schedule};
use crate::clients::ClientName;
use crate::outbox::{KeyColumn, Outbox, Spec};
use crate::store::{Arg, Db, Migration, Owned, Schema, StoreError, StoreRow};

const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "watches_1_watches",
        statements: &[
            "CREATE TABLE IF NOT EXISTS faregate_watches (
            id TEXT PRIMARY KEY,
            client TEXT NOT NULL,
            tool TEXT NOT NULL,
            arguments TEXT NOT NULL,
            condition TEXT NOT NULL,
            interval_ms BIGINT NOT NULL,
            end_at BIGINT,
            max_runs BIGINT,
            until_departure BIGINT NOT NULL,
            callback_url TEXT,
            state TEXT NOT NULL,
            runs BIGINT NOT NULL,
            next_run_at BIGINT NOT NULL,
            job_id TEXT,
            job_instant BIGINT,
            last_result TEXT,
            last_run_at BIGINT,
            last_error TEXT,
            departure_at BIGINT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )",
            "CREATE INDEX IF NOT EXISTS faregate_watches_due ON faregate_watches (state, next_run_at)",
            "CREATE INDEX IF NOT EXISTS faregate_watches_client ON faregate_watches (client, state)",
            "CREATE TABLE IF NOT EXISTS faregate_watch_notices (
            watch_id TEXT NOT NULL,
            instant BIGINT NOT NULL,
            text TEXT NOT NULL,
            result TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (watch_id, instant)
        )",
        ],
    },
    Migration {
        name: "watches_2_notice_callbacks",
        statements: &[
            "ALTER TABLE faregate_watch_notices ADD COLUMN callback_state TEXT",
            "ALTER TABLE faregate_watch_notices ADD COLUMN callback_attempts BIGINT",
            "ALTER TABLE faregate_watch_notices ADD COLUMN next_callback_at BIGINT",
        ],
    },
    Migration {
        name: "watches_3_notice_callback_error",
        statements: &["ALTER TABLE faregate_watch_notices ADD COLUMN callback_error TEXT"],
    },
    Migration {
        name: "watches_4_ended_retention",
        statements: &[
            "CREATE INDEX IF NOT EXISTS faregate_watches_ended ON faregate_watches (state, updated_at)",
        ],
    },
];

/// Ended watches whose last change is before `$1`, a batch of `$2`, oldest first; never one
/// with a notice whose callback is still to be sent (it goes after retention counted from the
/// delivery's end, as a job's does). An ended watch changes no more, so `updated_at` is when it
/// ended.
const PURGE_ENDED: &str = "DELETE FROM faregate_watches WHERE id IN (
         SELECT w.id FROM faregate_watches w
         WHERE w.state = 'ended' AND w.job_id IS NULL AND w.updated_at < $1
           AND NOT EXISTS (SELECT 1 FROM faregate_watch_notices n
                           WHERE n.watch_id = w.id AND n.callback_state = 'pending')
         ORDER BY w.updated_at LIMIT CAST($2 AS BIGINT))";

/// Notices whose watch is gone (purged above, or deleted by the API while a notice was being
/// written), a batch of `$1`.
const PURGE_ORPHAN_NOTICES: &str = "DELETE FROM faregate_watch_notices WHERE watch_id IN (
         SELECT n.watch_id FROM faregate_watch_notices n
         WHERE NOT EXISTS (SELECT 1 FROM faregate_watches w WHERE w.id = n.watch_id)
         LIMIT CAST($1 AS BIGINT))";

/// Every column, by name (never `*`: see the job store).
const COLUMNS: &str = "id, client, tool, arguments, condition, interval_ms, end_at, max_runs,
     until_departure, callback_url, state, runs, next_run_at, job_id, job_instant, last_result,
     last_run_at, last_error, departure_at, created_at, updated_at";

/// The watches, as a table of client-owned rows.
const WATCHES: Owned<Watch> = Owned {
    table: "faregate_watches",
    columns: COLUMNS,
    decode: watch_from_row,
};

/// A notice's callback lives in the notice's row; it goes to its watch's URL.
static CALLBACKS: Spec<DueCallback> = Spec {
    table: "faregate_watch_notices",
    key: &[KeyColumn::Text("watch_id"), KeyColumn::Int("instant")],
    touched: None,
    select: "SELECT n.watch_id, n.instant, n.text, n.result, n.created_at, n.callback_state,
             n.callback_error, n.callback_attempts, n.next_callback_at, w.tool, w.client, w.callback_url
         FROM faregate_watch_notices n JOIN faregate_watches w ON w.id = n.watch_id ",
    alias: "n.",
    also: "AND w.callback_url IS NOT NULL",
    decode: due_callback_from_row,
};

/// Where a watch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchState {
    /// Runs on its schedule.
    Active,
    /// Starts no run until resumed (a run already queued still ends and is recorded).
    Paused,
    /// Its schedule is over; kept for its last result and notices.
    Ended,
}

impl WatchState {
    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchState::Active => "active",
            WatchState::Paused => "paused",
            WatchState::Ended => "ended",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => WatchState::Active,
            "paused" => WatchState::Paused,
            "ended" => WatchState::Ended,
            _ => return None,
        })
    }
}

/// A watch as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// UUID v7.
    pub id: String,
    /// Whose it is: only that client (and the admin) sees it.
    pub client: ClientName,
    /// The read-only tool it calls.
    pub tool: String,
    /// The checked arguments of each call.
    pub arguments: Value,
    /// What counts as news.
    pub condition: Condition,
    /// When it runs.
    pub schedule: Schedule,
    /// Where notices are posted (signed), when given.
    pub callback_url: Option<String>,
    /// Where it stands.
    pub state: WatchState,
    /// Runs ended so far.
    pub runs: u32,
    /// The next instant (epoch ms); while a run waits, the instant of that run.
    pub next_run_at_ms: i64,
    /// The job of the run under way, and its instant.
    pub job: Option<(String, i64)>,
    /// The last run's result envelope.
    pub last_result: Option<Value>,
    /// When the last run ended (epoch ms).
    pub last_run_at_ms: Option<i64>,
    /// Why the last run gave no result, in words.
    pub last_error: Option<String>,
    /// The watched flight's departure, as the last result said (epoch ms).
    pub departure_at_ms: Option<i64>,
    /// When it was created (epoch ms).
    pub created_at_ms: i64,
    /// Last change (epoch ms).
    pub updated_at_ms: i64,
}

/// A notice: a run whose result was news.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The watch.
    pub watch_id: String,
    /// The instant of the run (epoch ms).
    pub instant_ms: i64,
    /// What the news is, in words.
    pub text: String,
    /// The run's result envelope.
    pub result: Value,
    /// When it was written (epoch ms).
    pub created_at_ms: i64,
    /// Its callback: `pending`, `sent` or `failed`; `None` without a callback URL.
    pub callback: Option<String>,
    /// Why its callback's last delivery failed.
    pub callback_error: Option<String>,
}

/// A notice whose callback is due, with where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct DueCallback {
    /// The notice.
    pub notice: Notice,
    /// The watch's tool.
    pub tool: String,
    /// The watch's client (its callback allowlist applies).
    pub client: ClientName,
    /// The watch's callback URL.
    pub url: String,
}

/// How a run ended, as [`WatchStore::finish_run`] records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// The result envelope, when the run produced one.
    pub result: Option<Value>,
    /// Why it did not, in words.
    pub error: Option<String>,
    /// The next instant; `None` ends the watch.
    pub next_run_at_ms: Option<i64>,
    /// The flight's departure, when the result says it.
    pub departure_at_ms: Option<i64>,
}

/// Watches in the shared database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WatchStore {
    schema: Schema,
}

/// The lock under which a client's active watches are counted and added to (its cap): one
/// replica's create or resume at a time for each client, and other clients' side by side.
fn cap_lock(client: &ClientName) -> i64 {
    crate::fingerprint::client_lock("watches", client.as_str())
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn watch_from_row(r: &dyn StoreRow) -> Result<Watch, StoreError> {
    let text = |c: &str| -> Result<String, StoreError> {
        r.text(c)?
            .ok_or_else(|| StoreError(format!("watch column {c} is NULL")))
    };
    let int = |c: &str| -> Result<i64, StoreError> {
        r.int(c)?
            .ok_or_else(|| StoreError(format!("watch column {c} is NULL")))
    };
    let json = |s: String| {
        serde_json::from_str::<Value>(&s).map_err(|e| StoreError(format!("watch JSON: {e}")))
    };
    let condition = serde_json::from_str(&text("condition")?)
        .map_err(|e| StoreError(format!("watch condition: {e}")))?;
    let state = text("state")?;
    Ok(Watch {
        id: text("id")?,
        client: ClientName::stored(&text("client")?),
        tool: text("tool")?,
        arguments: json(text("arguments")?)?,
        condition,
        schedule: Schedule {
            interval: Duration::from_millis(u64::try_from(int("interval_ms")?).unwrap_or(0)),
            end: End {
                at_ms: r.int("end_at")?,
                runs: r
                    .int("max_runs")?
                    .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
                departure: int("until_departure")? != 0,
            },
        },
        callback_url: r.text("callback_url")?,
        state: WatchState::parse(&state)
            .ok_or_else(|| StoreError(format!("unknown watch state {state}")))?,
        runs: u32::try_from(int("runs")?).unwrap_or(0),
        next_run_at_ms: int("next_run_at")?,
        job: match (r.text("job_id")?, r.int("job_instant")?) {
            (Some(id), Some(at)) => Some((id, at)),
            _ => None,
        },
        last_result: r.text("last_result")?.map(json).transpose()?,
        last_run_at_ms: r.int("last_run_at")?,
        last_error: r.text("last_error")?,
        departure_at_ms: r.int("departure_at")?,
        created_at_ms: int("created_at")?,
        updated_at_ms: int("updated_at")?,
    })
}

fn notice_from_row(r: &dyn StoreRow) -> Result<Notice, StoreError> {
    let missing = |c: &str| StoreError(format!("notice column {c} is NULL"));
    Ok(Notice {
        watch_id: r.text("watch_id")?.ok_or_else(|| missing("watch_id"))?,
        instant_ms: r.int("instant")?.ok_or_else(|| missing("instant"))?,
        text: r.text("text")?.ok_or_else(|| missing("text"))?,
        result: serde_json::from_str(&r.text("result")?.ok_or_else(|| missing("result"))?)
            .map_err(|e| StoreError(format!("notice JSON: {e}")))?,
        created_at_ms: r.int("created_at")?.ok_or_else(|| missing("created_at"))?,
        callback: r.text("callback_state").ok().flatten(),
        callback_error: r.text("callback_error")?,
    })
}

fn due_callback_from_row(r: &dyn StoreRow) -> Result<DueCallback, StoreError> {
    let missing = |c: &str| StoreError(format!("notice column {c} is NULL"));
    Ok(DueCallback {
        notice: notice_from_row(r)?,
        tool: r.text("tool")?.ok_or_else(|| missing("tool"))?,
        client: ClientName::stored(&r.text("client")?.ok_or_else(|| missing("client"))?),
        url: r
            .text("callback_url")?
            .ok_or_else(|| missing("callback_url"))?,
    })
}

impl WatchStore {
    /// Watches in `db` (the job store's database); the tables are made on first use.
    pub fn new(db: Db) -> Self {
        WatchStore {
            schema: Schema::new(db, MIGRATIONS, crate::clock::epoch_ms),
        }
    }

    async fn ready(&self) -> Result<&Db, StoreError> {
        self.schema.ready().await
    }

    /// Stores a new watch, unless its client already holds `max_active` active watches: false
    /// then, and nothing is written. The count and the insert are one step
    /// ([`Db::execute_serialized`] under the client's lock), so concurrent creates, on one
    /// replica or many, never take a client past its cap.
    pub async fn insert(&self, w: &Watch, max_active: u32) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let arguments = w.arguments.to_string();
        let condition =
            serde_json::to_string(&w.condition).map_err(|e| StoreError(e.to_string()))?;
        let inserted = db
            .execute_serialized(
                cap_lock(&w.client),
                "INSERT INTO faregate_watches (id, client, tool, arguments, condition, interval_ms,
                     end_at, max_runs, until_departure, callback_url, state, runs, next_run_at,
                     created_at, updated_at)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, $12, $13, $13
                 WHERE (SELECT COUNT(*) FROM faregate_watches
                        WHERE client = $2 AND state = 'active') < $14",
                &[
                    Arg::Text(Some(&w.id)),
                    Arg::Text(Some(w.client.as_str())),
                    Arg::Text(Some(&w.tool)),
                    Arg::Text(Some(&arguments)),
                    Arg::Text(Some(&condition)),
                    Arg::Int(Some(ms(w.schedule.interval))),
                    Arg::Int(w.schedule.end.at_ms),
                    Arg::Int(w.schedule.end.runs.map(i64::from)),
                    Arg::Int(Some(i64::from(w.schedule.end.departure))),
                    Arg::Text(w.callback_url.as_deref()),
                    Arg::Text(Some(w.state.as_str())),
                    Arg::Int(Some(w.next_run_at_ms)),
                    Arg::Int(Some(w.created_at_ms)),
                    Arg::Int(Some(i64::from(max_active))),
                ],
            )
            .await?;
        Ok(inserted == 1)
    }

    /// One watch.
    pub async fn get(&self, id: &str) -> Result<Option<Watch>, StoreError> {
        WATCHES.get(self.ready().await?, id).await
    }

    /// Watches, newest first: `client`'s, or every client's for `None`.
    pub async fn list(
        &self,
        client: Option<&ClientName>,
        limit: u32,
    ) -> Result<Vec<Watch>, StoreError> {
        let client = client.map(ClientName::as_str);
        WATCHES.list(self.ready().await?, client, limit).await
    }

    /// How many of `client`'s watches are active.
    pub async fn active_count(&self, client: &ClientName) -> Result<u32, StoreError> {
        let active = WatchState::Active.as_str();
        WATCHES
            .count(self.ready().await?, client.as_str(), active)
            .await
    }

    /// Active watches due at `now_ms` with no run under way, oldest due first.
    pub async fn due(&self, now_ms: i64, limit: u32) -> Result<Vec<Watch>, StoreError> {
        let db = self.ready().await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM faregate_watches
             WHERE state = 'active' AND job_id IS NULL AND next_run_at <= $1
             ORDER BY next_run_at LIMIT CAST($2 AS BIGINT)"
        );
        db.fetch(
            sqlx::AssertSqlSafe(sql),
            &[Arg::Int(Some(now_ms)), Arg::Int(Some(i64::from(limit)))],
            watch_from_row,
        )
        .await
    }

    /// When the next run falls due (`None`: no active watch waits for one), from the rows
    /// [`WatchStore::due`] reads, so a loop that sleeps until then finds it due.
    pub async fn next_run_due(&self) -> Result<Option<i64>, StoreError> {
        let db = self.ready().await?;
        let at = db
            .fetch(
                "SELECT MIN(next_run_at) AS at FROM faregate_watches
                 WHERE state = 'active' AND job_id IS NULL",
                &[],
                |r| r.int("at"),
            )
            .await?;
        Ok(at.into_iter().flatten().next())
    }

    /// Watches waiting for a run's job to end.
    pub async fn running(&self, limit: u32) -> Result<Vec<Watch>, StoreError> {
        let db = self.ready().await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM faregate_watches
             WHERE job_id IS NOT NULL ORDER BY job_instant LIMIT CAST($1 AS BIGINT)"
        );
        db.fetch(
            sqlx::AssertSqlSafe(sql),
            &[Arg::Int(Some(i64::from(limit)))],
            watch_from_row,
        )
        .await
    }

    /// Records that the run of `instant` is job `job_id`; false when the watch already has a run
    /// under way or is not due at that instant (another replica started it). A watch paused
    /// since it was found due still records the run: its job was submitted, and it runs.
    pub async fn start_run(
        &self,
        id: &str,
        instant: i64,
        job_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute(
                "UPDATE faregate_watches SET job_id = $3, job_instant = $2, updated_at = $4
                 WHERE id = $1 AND job_id IS NULL AND next_run_at = $2",
                &[
                    Arg::Text(Some(id)),
                    Arg::Int(Some(instant)),
                    Arg::Text(Some(job_id)),
                    Arg::Int(Some(now_ms)),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Ends the run whose job is `job_id`: its result (kept as the last one only when there is
    /// one), the next instant or the watch's end. False when the watch no longer waits for that
    /// job (another replica recorded it, or the watch was deleted).
    pub async fn finish_run(
        &self,
        id: &str,
        job_id: &str,
        end: &RunEnd,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let result = end.result.as_ref().map(Value::to_string);
        let changed = db
            .execute(
                "UPDATE faregate_watches SET job_id = NULL, job_instant = NULL,
                     runs = runs + 1,
                     last_result = COALESCE($3, last_result),
                     last_error = $4,
                     last_run_at = $5,
                     next_run_at = COALESCE($6, next_run_at),
                     state = CASE WHEN $6 IS NULL THEN 'ended' ELSE state END,
                     departure_at = COALESCE($7, departure_at),
                     updated_at = $5
                 WHERE id = $1 AND job_id = $2",
                &[
                    Arg::Text(Some(id)),
                    Arg::Text(Some(job_id)),
                    Arg::Text(result.as_deref()),
                    Arg::Text(end.error.as_deref()),
                    Arg::Int(Some(now_ms)),
                    Arg::Int(end.next_run_at_ms),
                    Arg::Int(end.departure_at_ms),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Lets the instant `instant` pass without a run (its client may not call the tool now), with
    /// why: the watch is due again at `next`, or has ended when there is none. False when
    /// another replica started or skipped that instant meanwhile.
    pub async fn skip_run(
        &self,
        id: &str,
        instant: i64,
        next: Option<i64>,
        error: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute(
                "UPDATE faregate_watches SET next_run_at = COALESCE($3, next_run_at),
                     state = CASE WHEN $3 IS NULL THEN 'ended' ELSE state END,
                     last_error = $4, updated_at = $5
                 WHERE id = $1 AND job_id IS NULL AND state = 'active' AND next_run_at = $2",
                &[
                    Arg::Text(Some(id)),
                    Arg::Int(Some(instant)),
                    Arg::Int(next),
                    Arg::Text(Some(error)),
                    Arg::Int(Some(now_ms)),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Ends a watch whose run could not even be submitted (its arguments no longer hold), with
    /// why; false when a run is under way or it was not active.
    pub async fn end_unrun(&self, id: &str, error: &str, now_ms: i64) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute(
                "UPDATE faregate_watches SET state = 'ended', last_error = $2, updated_at = $3
                 WHERE id = $1 AND job_id IS NULL AND state = 'active'",
                &[
                    Arg::Text(Some(id)),
                    Arg::Text(Some(error)),
                    Arg::Int(Some(now_ms)),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Pauses an active watch; false when it was not active.
    pub async fn pause(&self, id: &str, now_ms: i64) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute(
                "UPDATE faregate_watches SET state = 'paused', updated_at = $2
                 WHERE id = $1 AND state = 'active'",
                &[Arg::Text(Some(id)), Arg::Int(Some(now_ms))],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Resumes a paused watch of `client` at its next instant on the grid that is not in the
    /// past, unless the client already holds `max_active` active watches; false when it was not
    /// paused or the client was at its cap (nothing is written then). The count and the change
    /// are one step, under the same lock as [`WatchStore::insert`].
    pub async fn resume(
        &self,
        id: &str,
        client: &ClientName,
        next_run_at_ms: i64,
        now_ms: i64,
        max_active: u32,
    ) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute_serialized(
                cap_lock(client),
                "UPDATE faregate_watches SET state = 'active', updated_at = $3,
                     next_run_at = CASE WHEN job_id IS NULL THEN $2 ELSE next_run_at END
                 WHERE id = $1 AND client = $4 AND state = 'paused'
                   AND (SELECT COUNT(*) FROM faregate_watches
                        WHERE client = $4 AND state = 'active') < $5",
                &[
                    Arg::Text(Some(id)),
                    Arg::Int(Some(next_run_at_ms)),
                    Arg::Int(Some(now_ms)),
                    Arg::Text(Some(client.as_str())),
                    Arg::Int(Some(i64::from(max_active))),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Deletes a watch and its notices; false when there was none.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        db.execute(
            "DELETE FROM faregate_watch_notices WHERE watch_id = $1",
            &[Arg::Text(Some(id))],
        )
        .await?;
        let changed = db
            .execute(
                "DELETE FROM faregate_watches WHERE id = $1",
                &[Arg::Text(Some(id))],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Deletes up to `limit` watches that ended before `before_ms` (none with a notice callback
    /// still to send) and the notices of watches that are gone; the watches deleted. Every
    /// replica may run it at once: a row deleted twice is deleted once.
    pub async fn purge_ended(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError> {
        let db = self.ready().await?;
        let limit = Arg::Int(Some(i64::from(limit)));
        let purged = db
            .execute(PURGE_ENDED, &[Arg::Int(Some(before_ms)), limit])
            .await?;
        db.execute(PURGE_ORPHAN_NOTICES, &[limit]).await?;
        Ok(purged)
    }

    /// Writes a notice, its callback due at once when `callback` (the watch has a URL); false
    /// when the notice of that run was already written.
    pub async fn add_notice(&self, notice: &Notice, callback: bool) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let result = notice.result.to_string();
        let inserted = db
            .execute(
                "INSERT INTO faregate_watch_notices (watch_id, instant, text, result, created_at,
                     callback_state, callback_attempts, next_callback_at)
                 VALUES ($1, $2, $3, $4, $5, $6, 0, $5) ON CONFLICT DO NOTHING",
                &[
                    Arg::Text(Some(&notice.watch_id)),
                    Arg::Int(Some(notice.instant_ms)),
                    Arg::Text(Some(&notice.text)),
                    Arg::Text(Some(&result)),
                    Arg::Int(Some(notice.created_at_ms)),
                    Arg::Text(callback.then_some("pending")),
                ],
            )
            .await?;
        Ok(inserted == 1)
    }

    /// The notices' callbacks.
    pub async fn callbacks(&self) -> Result<Outbox<DueCallback>, StoreError> {
        Ok(Outbox::new(self.ready().await?.clone(), &CALLBACKS))
    }

    /// A watch's notices, newest first.
    pub async fn notices(&self, id: &str, limit: u32) -> Result<Vec<Notice>, StoreError> {
        let db = self.ready().await?;
        db.fetch(
            "SELECT watch_id, instant, text, result, created_at, callback_state, callback_error
             FROM faregate_watch_notices
             WHERE watch_id = $1 ORDER BY instant DESC LIMIT CAST($2 AS BIGINT)",
            &[Arg::Text(Some(id)), Arg::Int(Some(i64::from(limit)))],
            notice_from_row,
        )
        .await
    }
}
