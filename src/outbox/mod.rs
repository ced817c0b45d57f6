//! The callback outbox of the rooms that keep notices (watches, back-in-service): a notice's
//! callback waits in its own row until a replica leases it, delivers it and records how it went,
//! and a failed delivery is tried again after a doubling wait, up to [`ATTEMPTS`] times.
//!
//! # Why
//! Both rooms deliver their notices the same way, and each had written the loop out again: find
//! the due callbacks, lease each by a conditional update on its due time (so of two replicas
//! that both see it due, one sends it), deliver it on a task of its own, then record it sent,
//! pending with its next due time, or given up. This room is that loop, once; a room says where
//! its callbacks live ([`Spec`]), what a due row is to it, and how to deliver one (the signed
//! post of `jobs::callbacks::notice`, which this room does not import, so it stands low).
//!
//! # Its table
//! A callback lives in the row of the notice it delivers, in three columns every outbox table
//! has: `callback_state` (`pending`, `sent` or `failed`; NULL when there is nothing to send),
//! `callback_attempts` (deliveries tried), `next_callback_at` (epoch ms: when the next
//! delivery is due, or until when a replica holds it) and `callback_error` (why the last
//! delivery failed; NULL once one succeeds). Keeping it there rather than in a table
//! of its own means a notice and its callback are written by one statement (a watch's notice
//! insert, a back-in-service notice's firing update), so no crash between two writes can leave a
//! notice without its callback; the API reads a notice's callback state from its own row.

use std::future::Future;
use std::time::Duration;

use crate::clock;
use crate::policy::Backoff;
use crate::store::{Arg, Db, Decoder, StoreError, StoreRow};

/// Deliveries before a callback is given up (the notice stays readable through the API).
pub const ATTEMPTS: u32 = 8;
/// The wait after the first failed delivery, doubling up to about 4 minutes.
const BACKOFF: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(256));
/// How long a replica holds a callback while it delivers it (longer than the callback client's
/// 10 s timeout); after that another replica may try.
pub const LEASE: Duration = Duration::from_secs(30);

/// The wait before the next delivery after `failed` failed ones; `None` to give up.
pub fn next_delivery_in(failed: u32) -> Option<Duration> {
    (failed < ATTEMPTS).then(|| BACKOFF.ceiling(failed.saturating_sub(1)))
}

/// What one delivery came to, for whoever counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// The receiver took it (2xx).
    Sent,
    /// It failed, and is tried again after a doubling wait.
    Retry,
    /// It failed for the last time.
    Failed,
}

/// A column of a row's key, as the outbox reads it from a due row and binds it again.
#[derive(Debug, Clone, Copy)]
pub enum KeyColumn {
    /// A text column.
    Text(&'static str),
    /// An integer column.
    Int(&'static str),
}

/// One value of a row's key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyValue {
    Text(String),
    Int(i64),
}

/// Where a room keeps its callbacks, and what a due one is to it.
#[derive(Debug)]
pub struct Spec<T> {
    /// The table whose rows carry the callback columns.
    pub table: &'static str,
    /// The columns that name one row of `table`, in order; a due row has them under these names.
    pub key: &'static [KeyColumn],
    /// A column of `table` set to the time of each record, when it keeps one.
    pub touched: Option<&'static str>,
    /// What a due row is read from: `SELECT <columns> FROM <table, joined as needed> ` (the
    /// outbox adds the `WHERE`); the select has the key columns and `callback_attempts` and
    /// `next_callback_at` by those names.
    pub select: &'static str,
    /// How the select names `table`'s callback columns: `""`, or an alias and a dot.
    pub alias: &'static str,
    /// More a due row must satisfy (`AND …`), or `""`.
    pub also: &'static str,
    /// A due row into what the room delivers.
    pub decode: Decoder<T>,
}

/// A callback due for delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Due<T> {
    /// What the room delivers.
    pub item: T,
    /// Deliveries tried so far.
    pub attempts: u32,
    slot: Slot,
}

/// Which row a due callback is, and when it was due (a lease takes it only while it still is).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    key: Vec<KeyValue>,
    due_at_ms: i64,
}

/// A room's callbacks in the shared database. Cheap to clone.
#[derive(Debug)]
pub struct Outbox<T: 'static> {
    db: Db,
    spec: &'static Spec<T>,
}

impl<T: 'static> Clone for Outbox<T> {
    fn clone(&self) -> Self {
        Outbox {
            db: self.db.clone(),
            spec: self.spec,
        }
    }
}

impl<T: Send + 'static> Outbox<T> {
    /// The callbacks `spec` describes, in `db` (whose tables the room has migrated).
    pub fn new(db: Db, spec: &'static Spec<T>) -> Self {
        Outbox { db, spec }
    }

    /// `key = $first, …` for the key columns, numbered from `first`.
    fn key_clause(&self, first: usize) -> String {
        self.spec
            .key
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let name = match column {
                    KeyColumn::Text(name) | KeyColumn::Int(name) => name,
                };
                format!("{name} = ${}", first + i)
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// The select of the callbacks still to send, `due` (a condition on their columns, or
    /// `""`) added to the room's own.
    fn pending(&self, due: &str) -> String {
        let Spec {
            select,
            alias: a,
            also,
            ..
        } = self.spec;
        format!("{select} WHERE {a}callback_state = 'pending' {due} {also}")
    }

    /// Callbacks due at `now_ms`, oldest due first.
    pub async fn due(&self, now_ms: i64, limit: u32) -> Result<Vec<Due<T>>, StoreError> {
        let a = self.spec.alias;
        let sql = format!(
            "{} ORDER BY {a}next_callback_at LIMIT CAST($2 AS BIGINT)",
            self.pending(&format!("AND {a}next_callback_at <= $1"))
        );
        let spec = self.spec;
        self.db
            .fetch(
                sqlx::AssertSqlSafe(sql),
                &[Arg::Int(Some(now_ms)), Arg::Int(Some(i64::from(limit)))],
                |r| due_from_row(spec, r),
            )
            .await
    }

    /// When a callback is next due (`None`: none waits), from the same rows [`Outbox::due`]
    /// reads, so a loop that sleeps until then finds it due (`store::pace`).
    pub async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        let sql = format!(
            "SELECT MIN(next_callback_at) AS at FROM ({}) AS pending",
            self.pending("")
        );
        let at = self
            .db
            .fetch(sqlx::AssertSqlSafe(sql), &[], |r| r.int("at"))
            .await?;
        Ok(at.into_iter().flatten().next())
    }

    /// Takes `due` for this replica until `until_ms`; false when another replica took it first.
    pub async fn lease(&self, due: &Due<T>, until_ms: i64) -> Result<bool, StoreError> {
        self.lease_slot(&due.slot, until_ms).await
    }

    async fn lease_slot(&self, slot: &Slot, until_ms: i64) -> Result<bool, StoreError> {
        let sql = format!(
            "UPDATE {} SET next_callback_at = $1
             WHERE {} AND callback_state = 'pending' AND next_callback_at = ${}",
            self.spec.table,
            self.key_clause(2),
            slot.key.len() + 2
        );
        let mut args = vec![Arg::Int(Some(until_ms))];
        args.extend(slot.key.iter().map(key_arg));
        args.push(Arg::Int(Some(slot.due_at_ms)));
        let changed = self.db.execute(sqlx::AssertSqlSafe(sql), &args).await?;
        Ok(changed == 1)
    }

    /// Records a delivery at `now_ms`: sent (`failure` is `None`), or failed, with why and the
    /// next try (`None`: given up).
    async fn record(
        &self,
        slot: &Slot,
        failure: Option<&str>,
        next_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let state = match (failure, next_at_ms) {
            (None, _) => "sent",
            (Some(_), Some(_)) => "pending",
            (Some(_), None) => "failed",
        };
        let touched = self
            .spec
            .touched
            .map(|column| format!(", {column} = ${}", slot.key.len() + 4))
            .unwrap_or_default();
        let sql = format!(
            "UPDATE {} SET callback_state = $1, callback_attempts = callback_attempts + 1,
                 next_callback_at = COALESCE($2, next_callback_at), callback_error = $3{touched}
             WHERE {} AND callback_state = 'pending'",
            self.spec.table,
            self.key_clause(4),
        );
        let mut args = vec![
            Arg::Text(Some(state)),
            Arg::Int(next_at_ms),
            Arg::Text(failure),
        ];
        args.extend(slot.key.iter().map(key_arg));
        if self.spec.touched.is_some() {
            args.push(Arg::Int(Some(now_ms)));
        }
        self.db.execute(sqlx::AssertSqlSafe(sql), &args).await?;
        Ok(())
    }

    /// Leases the callbacks due at `now_ms` (at most `limit`) and delivers each on a task of its
    /// own with `deliver` (`Ok`: the receiver took it; `Err`: why not), tells `heard` what it
    /// came to, then records how it went; a delivery that cannot be recorded is tried again
    /// when its lease runs out. How many were due (taken here or by another replica).
    pub async fn send_due<F, Fut, H>(
        &self,
        now_ms: i64,
        limit: u32,
        deliver: F,
        heard: H,
    ) -> Result<usize, StoreError>
    where
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
        H: Fn(Delivered) + Clone + Send + 'static,
    {
        let due = self.due(now_ms, limit).await?;
        let found = due.len();
        for due in due {
            if !self
                .lease_slot(&due.slot, clock::ms_after(now_ms, LEASE))
                .await?
            {
                continue;
            }
            let Due {
                item,
                attempts,
                slot,
            } = due;
            let sending = deliver(item);
            let outbox = self.clone();
            let heard = heard.clone();
            tokio::spawn(async move {
                let failure = sending.await.err();
                let now = clock::epoch_ms();
                let again = failure
                    .as_ref()
                    .and_then(|_| next_delivery_in(attempts + 1));
                heard(match (&failure, again) {
                    (None, _) => Delivered::Sent,
                    (Some(_), Some(_)) => Delivered::Retry,
                    (Some(_), None) => Delivered::Failed,
                });
                let next = again.map(|wait| clock::ms_after(now, wait));
                if let Err(e) = outbox.record(&slot, failure.as_deref(), next, now).await {
                    tracing::warn!(error = %e, table = outbox.spec.table, "cannot record a callback; it is tried again when its lease runs out");
                }
            });
        }
        Ok(found)
    }
}

fn key_arg(value: &KeyValue) -> Arg<'_> {
    match value {
        KeyValue::Text(text) => Arg::Text(Some(text)),
        KeyValue::Int(int) => Arg::Int(Some(*int)),
    }
}

fn due_from_row<T>(spec: &Spec<T>, r: &dyn StoreRow) -> Result<Due<T>, StoreError> {
    let missing = |c: &str| StoreError(format!("{} column {c} is NULL", spec.table));
    let key = spec
        .key
        .iter()
        .map(|column| match *column {
            KeyColumn::Text(name) => {
                Ok(KeyValue::Text(r.text(name)?.ok_or_else(|| missing(name))?))
            }
            KeyColumn::Int(name) => Ok(KeyValue::Int(r.int(name)?.ok_or_else(|| missing(name))?)),
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(Due {
        item: (spec.decode)(r)?,
        attempts: u32::try_from(r.int("callback_attempts")?.unwrap_or(0)).unwrap_or(0),
        slot: Slot {
            key,
            due_at_ms: r
                .int("next_callback_at")?
                .ok_or_else(|| missing("next_callback_at"))?,
        },
    })
}

#[cfg(test)]
mod tests;
