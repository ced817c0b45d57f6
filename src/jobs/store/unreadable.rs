//! Claimed jobs whose stored row this version cannot read: a hand edit, or a state name a newer
//! version wrote during a rolling upgrade.
//!
//! `Db::claim` commits the `UPDATE` that marks a batch running before its rows are decoded. One
//! row that failed to decode used to fail the whole claim: every job of the batch stayed
//! `running` with no run, and at each lease's end the same rows were claimed and dropped
//! again, never retried for real and never dead. Such a row is now set aside on its own (back
//! to `retry_scheduled`, due again later, the reason in `last_error`), and the rest of its batch
//! runs. A callback claim (`claim_callbacks`) decodes its rows the same way: an unreadable
//! one's callback waits as long, and the other callbacks of its batch go out.

use super::model::Job;
use crate::store::{Arg, Db, StoreError};

/// A claimed row that could not be read: its id, if that could be, and why.
pub(super) type Unreadable = (Option<String>, StoreError);

/// A claim's rows: the jobs, and the rows that could not be read.
pub(super) fn split(rows: Vec<Result<Job, Unreadable>>) -> (Vec<Job>, Vec<Unreadable>) {
    let mut jobs = Vec::with_capacity(rows.len());
    let mut unreadable = Vec::new();
    for row in rows {
        match row {
            Ok(job) => jobs.push(job),
            Err(bad) => unreadable.push(bad),
        }
    }
    (jobs, unreadable)
}

/// `$1` id, `$2` owner, `$3` when it is due again, `$4` why, `$5` now.
const SET_ASIDE: &str = "UPDATE faregate_jobs
     SET status = 'retry_scheduled', lease_owner = NULL, lease_until = NULL,
         next_attempt_at = $3, last_error = $4, updated_at = $5
     WHERE id = $1 AND lease_owner = $2 AND status = 'running'";

/// How long a job whose row cannot be read is set aside: then a replica (perhaps of a newer
/// version, or after the row was fixed) may claim it again.
const SET_ASIDE_FOR_MS: i64 = 10 * 60 * 1000;

/// Sets aside claimed job `id` (`None` when not even the id could be read: its lease then
/// ends), whose row could not be read (`error`), for [`SET_ASIDE_FOR_MS`].
pub(super) async fn set_aside(
    db: &Db,
    id: Option<&str>,
    owner: &str,
    error: &StoreError,
    now_ms: i64,
) {
    let Some(id) = id else {
        tracing::error!(%error, "a claimed job's row cannot be read, not even its id; its lease will end");
        return;
    };
    let why = format!("this gateway cannot read the job's stored row ({error}); set aside");
    let args = [
        Arg::Text(Some(id)),
        Arg::Text(Some(owner)),
        Arg::Int(Some(now_ms.saturating_add(SET_ASIDE_FOR_MS))),
        Arg::Text(Some(&why)),
        Arg::Int(Some(now_ms)),
    ];
    match db.execute(SET_ASIDE, &args).await {
        Ok(_) => {
            tracing::error!(job = id, %error, "a claimed job's row cannot be read; set aside for 10 minutes, the rest of its batch runs");
        }
        Err(e) => {
            tracing::error!(job = id, %error, store_error = %e, "a claimed job's row cannot be read and could not be set aside; its lease will end");
        }
    }
}

/// `$1` id, `$2` when its callback is due again.
const SET_CALLBACK_ASIDE: &str = "UPDATE faregate_jobs SET next_callback_at = $2
     WHERE id = $1 AND callback_state = 'pending'";

/// Sets aside the callback of claimed job `id`, whose row could not be read (`error`), for
/// [`SET_ASIDE_FOR_MS`] (its claim's lease would bring it back sooner, to fail again).
pub(super) async fn set_callback_aside(db: &Db, id: Option<&str>, error: &StoreError, now_ms: i64) {
    let Some(id) = id else {
        tracing::error!(%error, "a job row claimed for its callback cannot be read, not even its id");
        return;
    };
    let args = [
        Arg::Text(Some(id)),
        Arg::Int(Some(now_ms.saturating_add(SET_ASIDE_FOR_MS))),
    ];
    match db.execute(SET_CALLBACK_ASIDE, &args).await {
        Ok(_) => {
            tracing::error!(job = id, %error, "a job row claimed for its callback cannot be read; its callback waits 10 minutes, the rest of its batch goes out");
        }
        Err(e) => {
            tracing::error!(job = id, %error, store_error = %e, "a job row claimed for its callback cannot be read and could not be set aside");
        }
    }
}
