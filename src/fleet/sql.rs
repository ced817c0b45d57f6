//! The fleet's tables and statements, for SQLite and PostgreSQL alike, each bounded in time.
//!
//! - `faregate_breakers`: one row per breaker that was ever forced or changed state in a way the
//!   fleet follows (an open with its open-until, a recovery), with a version that grows on every
//!   write, so each replica applies each change once; and the fleet's own history of the
//!   breaker's opens ([`OPENS`]): how many, and when the outage in course began, which no
//!   replica's memory can say (it counts what it saw since it started).
//! - `faregate_breaker_events`: every transition a replica decided itself, with the replica's
//!   name: the history `/v1/breakers` and the dashboard show on every replica, across restarts.
//!   Only the newest [`KEEP_EVENTS`] are kept ([`TRIM_EVENTS`]): far more than is ever read.
//! - `faregate_probe_leases`: which replica probes a half-open breaker now (PostgreSQL fleets).
//!
//! A force is kept only over an older one ([`FORCE`]): it carries the time the operator asked
//! for it, since a replica away from the store writes it on its return, maybe after a later
//! force of another replica.
//!
//! Every statement runs under [`DB_TIMEOUT`]: a replica whose database went away finds out in a
//! second and goes on with its local breakers, instead of waiting on a pool for ten.

use std::future::Future;
use std::time::Duration;

use super::record::{AutoState, Payload, SharedBreaker, StoredTransition, force_name};
use crate::breaker::{BreakerKey, ForceMode};
use crate::store::{Arg, Db, Migration, StoreError, StoreRow};

/// The longest any statement of the fleet may take.
pub(crate) const DB_TIMEOUT: Duration = Duration::from_secs(1);

/// The fleet's schema changes, oldest first.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "breakers_1_state",
        statements: STATE,
    },
    Migration {
        name: "breakers_2_force_time",
        statements: FORCE_TIME,
    },
    Migration {
        name: "breakers_3_opens",
        statements: OPENS,
    },
];

const STATE: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS faregate_breakers (
        tool TEXT NOT NULL,
        provider TEXT NOT NULL,
        forced TEXT,
        auto_state TEXT NOT NULL,
        open_until BIGINT,
        ramp BIGINT NOT NULL,
        version BIGINT NOT NULL,
        replica TEXT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (tool, provider)
    )",
    "CREATE TABLE IF NOT EXISTS faregate_breaker_events (
        id TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        provider TEXT NOT NULL,
        from_state TEXT NOT NULL,
        to_state TEXT NOT NULL,
        reason TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        failure_rate_ppm BIGINT NOT NULL,
        slow_rate_ppm BIGINT NOT NULL,
        calls BIGINT NOT NULL,
        replica TEXT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS faregate_probe_leases (
        tool TEXT NOT NULL,
        provider TEXT NOT NULL,
        owner TEXT NOT NULL,
        until_ms BIGINT NOT NULL,
        PRIMARY KEY (tool, provider)
    )",
];

/// When the stored force was asked for (`forced_at`, epoch ms) and on which replica
/// (`forced_by`); and `kept_version`, the version of the row's last write by a replica that keeps
/// those two (every write of this version sets it to the row's new version). A replica of an
/// older version writes neither: its write leaves `kept_version` behind `version`, and the row
/// then counts as forced at its `updated_at` by its `replica` (`stored_force_at!`), since that
/// write may have been a force.
const FORCE_TIME: &[&str] = &[
    "ALTER TABLE faregate_breakers ADD COLUMN forced_at BIGINT",
    "ALTER TABLE faregate_breakers ADD COLUMN forced_by TEXT",
    "ALTER TABLE faregate_breakers ADD COLUMN kept_version BIGINT",
];

/// The fleet's opens of a breaker: `times_opened`, how many automatic opens the fleet's replicas
/// wrote (an open is counted when the row's own open had run out, or the row was not open: two
/// replicas opening together, or a `Retry-After` extending an open, are one open, as on one
/// replica); `opened_at` (epoch ms), when the outage in course began: the first open of it, kept
/// by every open written within the rejecting grace of the row's open-until (a failed probe of
/// an outage that goes on), so a replica that starts during a long outage times it from there;
/// and `opens_version`, the version of the row's last write by a replica that keeps the other
/// two (as `kept_version` for the force). A replica of an older version counts no open and
/// moves no `opened_at`: a row it wrote last has no known `opened_at` (read as `NULL`), and the
/// next open starts the clock again rather than keep a time from an earlier outage.
const OPENS: &[&str] = &[
    "ALTER TABLE faregate_breakers ADD COLUMN opened_at BIGINT",
    "ALTER TABLE faregate_breakers ADD COLUMN times_opened BIGINT",
    "ALTER TABLE faregate_breakers ADD COLUMN opens_version BIGINT",
];

/// When the force a row holds was asked for, in the `DO UPDATE` of an upsert: `forced_at` (0
/// for a row never forced) when a replica of this version wrote it last, else the time of that
/// last write ([`FORCE_TIME`]).
macro_rules! stored_force_at {
    () => {
        "CASE WHEN faregate_breakers.kept_version = faregate_breakers.version
              THEN COALESCE(faregate_breakers.forced_at, 0)
              ELSE faregate_breakers.updated_at END"
    };
}

/// On which replica the force a row holds was asked for, as `stored_force_at!` reads it.
macro_rules! stored_force_by {
    () => {
        "CASE WHEN faregate_breakers.kept_version = faregate_breakers.version
              THEN COALESCE(faregate_breakers.forced_by, '')
              ELSE faregate_breakers.replica END"
    };
}

/// `$1` tool, `$2` provider, `$3` forced (NULL = auto), `$4` replica, `$5` now, `$6` when the
/// operator asked for the force (epoch ms). A force (or its end) also resets the automatic
/// state: after it, every replica starts from closed.
///
/// The newest force wins: a force is written only over one asked for earlier, or at the same
/// millisecond on a replica whose name sorts before (or on the same replica: its own writes
/// arrive in order). Otherwise nothing is written, and no row comes back: the force is stale (a
/// replica away from the store writes it on its return, after a later force of another one).
const FORCE: &str = concat!(
    "INSERT INTO faregate_breakers
        (tool, provider, forced, auto_state, open_until, ramp, version, replica, updated_at,
         forced_at, forced_by, kept_version, opened_at, times_opened, opens_version)
     VALUES ($1, $2, $3, 'closed', NULL, 0, 1, $4, $5, $6, $4, 1, NULL, 0, 1)
     ON CONFLICT (tool, provider) DO UPDATE SET forced = excluded.forced,
         auto_state = 'closed', open_until = NULL, ramp = 0,
         version = faregate_breakers.version + 1, replica = excluded.replica,
         updated_at = excluded.updated_at, forced_at = excluded.forced_at,
         forced_by = excluded.forced_by, kept_version = faregate_breakers.version + 1,
         times_opened = COALESCE(faregate_breakers.times_opened, 0),
         opens_version = faregate_breakers.version + 1
     WHERE excluded.forced_at > ",
    stored_force_at!(),
    "
        OR (excluded.forced_at = ",
    stored_force_at!(),
    " AND excluded.forced_by >= ",
    stored_force_by!(),
    ")
     RETURNING *"
);

/// One breaker's row.
const ONE: &str = "SELECT * FROM faregate_breakers WHERE tool = $1 AND provider = $2";

/// `$1` tool, `$2` provider, `$3` state, `$4` open-until, `$5` ramp, `$6` replica, `$7` now, `$8`
/// when an open happened (epoch ms; `NULL` for the other states), `$9` the rejecting grace (ms).
/// Two replicas opening together keep the later open-until.
///
/// An open is counted in `times_opened` unless the row's open still ran when it happened, and
/// keeps the row's `opened_at` (the earlier of the two) when the row was open, by a writer that
/// keeps it, until less than the grace before ([`OPENS`]); otherwise the outage starts at `$8`.
///
/// A recovery never ends an open that still runs: a replica recovers only after the opens it
/// knew of elapsed, so such an open is one it did not know of (it was away from the store
/// while another replica opened, and writes its recovery on its return). Nothing is written
/// then, and no row comes back.
///
/// The stored force is left as it is, and its time carried over as `stored_force_at!` reads
/// it (so a force an older replica may have written keeps its time once this write is the last).
const AUTO: &str = concat!(
    "INSERT INTO faregate_breakers
        (tool, provider, forced, auto_state, open_until, ramp, version, replica, updated_at,
         forced_at, forced_by, kept_version, opened_at, times_opened, opens_version)
     VALUES ($1, $2, NULL, $3, $4, $5, 1, $6, $7, NULL, NULL, 1, $8,
             CASE WHEN $3 = 'open' THEN 1 ELSE 0 END, 1)
     ON CONFLICT (tool, provider) DO UPDATE SET auto_state = excluded.auto_state,
         times_opened = COALESCE(faregate_breakers.times_opened, 0) + CASE
             WHEN excluded.auto_state = 'open' AND faregate_breakers.auto_state = 'open'
                  AND COALESCE(faregate_breakers.open_until, 0) > excluded.opened_at THEN 0
             WHEN excluded.auto_state = 'open' THEN 1 ELSE 0 END,
         opened_at = CASE
             WHEN excluded.auto_state <> 'open' THEN faregate_breakers.opened_at
             WHEN faregate_breakers.auto_state = 'open'
                  AND faregate_breakers.opens_version = faregate_breakers.version
                  AND faregate_breakers.opened_at IS NOT NULL
                  AND COALESCE(faregate_breakers.open_until, 0) + $9 >= excluded.opened_at
             THEN CASE WHEN faregate_breakers.opened_at < excluded.opened_at
                       THEN faregate_breakers.opened_at ELSE excluded.opened_at END
             ELSE excluded.opened_at END,
         opens_version = faregate_breakers.version + 1,
         open_until = CASE
             WHEN excluded.auto_state = 'open' AND faregate_breakers.auto_state = 'open'
                  AND faregate_breakers.open_until > excluded.open_until
             THEN faregate_breakers.open_until ELSE excluded.open_until END,
         ramp = excluded.ramp, version = faregate_breakers.version + 1,
         replica = excluded.replica, updated_at = excluded.updated_at,
         forced_at = ",
    stored_force_at!(),
    ", forced_by = ",
    stored_force_by!(),
    ", kept_version = faregate_breakers.version + 1
     WHERE excluded.auto_state <> 'recovered' OR faregate_breakers.auto_state <> 'open'
         OR COALESCE(faregate_breakers.open_until, 0) <= excluded.updated_at
     RETURNING *"
);

const ALL: &str = "SELECT * FROM faregate_breakers";

const RECORD_EVENT: &str = "INSERT INTO faregate_breaker_events (id, tool, provider, from_state,
        to_state, reason, at_ms, failure_rate_ppm, slow_rate_ppm, calls, replica)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

const LATEST_EVENTS: &str =
    "SELECT * FROM faregate_breaker_events ORDER BY id DESC LIMIT CAST($1 AS BIGINT)";

/// The transitions kept: the newest this many (the history reads the newest 256).
pub(crate) const KEEP_EVENTS: i64 = 4096;

/// Transitions deleted at most per trim.
pub(crate) const TRIM_BATCH: i64 = 1000;

/// Deletes the transitions after the newest `$1` (ids are time-ordered), a batch of `$2`, the
/// newest of them first. Every replica may run it at once: a row deleted twice is deleted once,
/// and a backlog goes over the next trims.
const TRIM_EVENTS: &str = "DELETE FROM faregate_breaker_events WHERE id IN (
         SELECT id FROM faregate_breaker_events ORDER BY id DESC
         LIMIT CAST($2 AS BIGINT) OFFSET CAST($1 AS BIGINT))";

/// `$1` tool, `$2` provider, `$3` owner, `$4` until, `$5` now. Taken when free, expired or
/// already ours, and never while the shared row says another replica has just reopened it.
const TAKE_LEASE: &str = "INSERT INTO faregate_probe_leases (tool, provider, owner, until_ms)
     SELECT $1, $2, $3, $4
     WHERE NOT EXISTS (SELECT 1 FROM faregate_breakers
                       WHERE tool = $1 AND provider = $2 AND forced IS NULL
                         AND auto_state = 'open' AND open_until > $5)
     ON CONFLICT (tool, provider) DO UPDATE SET owner = excluded.owner,
         until_ms = excluded.until_ms
     WHERE faregate_probe_leases.until_ms < $5 OR faregate_probe_leases.owner = excluded.owner
     RETURNING owner";

const DROP_LEASE: &str =
    "DELETE FROM faregate_probe_leases WHERE tool = $1 AND provider = $2 AND owner = $3";

/// The fleet's tables in the shared database.
#[derive(Debug, Clone)]
pub(crate) struct SharedStore {
    pub(crate) db: Db,
}

/// Runs `work` within [`DB_TIMEOUT`].
async fn bounded<T>(work: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    crate::store::within(DB_TIMEOUT, work).await
}

impl SharedStore {
    /// Creates the fleet's tables when missing.
    pub(crate) async fn migrate(&self, now_ms: i64) -> Result<(), StoreError> {
        self.db.migrate(MIGRATIONS, now_ms).await
    }

    /// Every shared row.
    pub(crate) async fn all(&self) -> Result<Vec<SharedBreaker>, StoreError> {
        let rows = bounded(self.db.fetch(ALL, &[], payload_from_row)).await?;
        Ok(rows.into_iter().filter_map(Payload::into_record).collect())
    }

    /// The row of `key`, if any.
    pub(crate) async fn one(&self, key: &BreakerKey) -> Result<Option<Payload>, StoreError> {
        let args = [Arg::Text(Some(&key.tool)), Arg::Text(Some(&key.provider))];
        Ok(bounded(self.db.fetch(ONE, &args, payload_from_row))
            .await?
            .pop())
    }

    /// Records an operator's force of `key` (`Auto` ends it), asked for at `forced_at_ms`; the
    /// row as written, or `None` when the row holds a newer force ([`FORCE`]).
    pub(crate) async fn force(
        &self,
        key: &BreakerKey,
        mode: ForceMode,
        replica: &str,
        now_ms: i64,
        forced_at_ms: i64,
    ) -> Result<Option<Payload>, StoreError> {
        let args = [
            Arg::Text(Some(&key.tool)),
            Arg::Text(Some(&key.provider)),
            Arg::Text(force_name(mode)),
            Arg::Text(Some(replica)),
            Arg::Int(Some(now_ms)),
            Arg::Int(Some(forced_at_ms)),
        ];
        Ok(bounded(self.db.fetch(FORCE, &args, payload_from_row))
            .await?
            .pop())
    }

    /// Records the automatic state of `key` that the others follow, decided at `at_ms` (the
    /// open's time, for an open; see [`AUTO`] for `grace_ms`); the row as written, or `None`
    /// for a recovery refused because the row holds an open that still runs.
    pub(crate) async fn set_auto(
        &self,
        key: &BreakerKey,
        auto: AutoState,
        at_ms: i64,
        replica: &str,
        now_ms: i64,
        grace_ms: i64,
    ) -> Result<Option<Payload>, StoreError> {
        let (state, until, ramp) = match auto {
            AutoState::Closed => ("closed", None, false),
            AutoState::Open { until_ms, ramp } => ("open", Some(until_ms), ramp),
            AutoState::Recovered { ramp } => ("recovered", None, ramp),
        };
        // An open's time; a write of another state has none.
        let opened = until.map(|_| at_ms);
        let args = [
            Arg::Text(Some(&key.tool)),
            Arg::Text(Some(&key.provider)),
            Arg::Text(Some(state)),
            Arg::Int(until),
            Arg::Int(Some(i64::from(ramp))),
            Arg::Text(Some(replica)),
            Arg::Int(Some(now_ms)),
            Arg::Int(opened),
            Arg::Int(Some(grace_ms)),
        ];
        Ok(bounded(self.db.fetch(AUTO, &args, payload_from_row))
            .await?
            .pop())
    }

    /// Stores one transition.
    pub(crate) async fn record(&self, t: &StoredTransition) -> Result<(), StoreError> {
        let args = [
            Arg::Text(Some(&t.id)),
            Arg::Text(Some(&t.key.tool)),
            Arg::Text(Some(&t.key.provider)),
            Arg::Text(Some(&t.from)),
            Arg::Text(Some(&t.to)),
            Arg::Text(Some(&t.reason)),
            Arg::Int(Some(t.at_ms)),
            Arg::Int(Some(ppm(t.failure_rate))),
            Arg::Int(Some(ppm(t.slow_rate))),
            Arg::Int(Some(i64::from(t.calls))),
            Arg::Text(Some(&t.replica)),
        ];
        bounded(self.db.execute(RECORD_EVENT, &args)).await?;
        Ok(())
    }

    /// The latest `limit` transitions of the fleet, newest first.
    pub(crate) async fn latest(&self, limit: i64) -> Result<Vec<StoredTransition>, StoreError> {
        let args = [Arg::Int(Some(limit))];
        bounded(self.db.fetch(LATEST_EVENTS, &args, transition_from_row)).await
    }

    /// Deletes up to `limit` transitions beyond the newest `keep` ([`TRIM_EVENTS`]); how many.
    pub(crate) async fn trim_events(&self, keep: i64, limit: i64) -> Result<u64, StoreError> {
        let args = [Arg::Int(Some(keep)), Arg::Int(Some(limit))];
        bounded(self.db.execute(TRIM_EVENTS, &args)).await
    }

    /// Takes (or renews) the probe lease of `key` until `until_ms`; whether this replica holds it.
    pub(crate) async fn take_lease(
        &self,
        key: &BreakerKey,
        owner: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let args = [
            Arg::Text(Some(&key.tool)),
            Arg::Text(Some(&key.provider)),
            Arg::Text(Some(owner)),
            Arg::Int(Some(until_ms)),
            Arg::Int(Some(now_ms)),
        ];
        let taken = bounded(self.db.fetch(TAKE_LEASE, &args, |r| r.text("owner"))).await?;
        Ok(!taken.is_empty())
    }

    /// Gives the probe lease of `key` back, if this replica holds it.
    pub(crate) async fn drop_lease(&self, key: &BreakerKey, owner: &str) -> Result<(), StoreError> {
        let args = [
            Arg::Text(Some(&key.tool)),
            Arg::Text(Some(&key.provider)),
            Arg::Text(Some(owner)),
        ];
        bounded(self.db.execute(DROP_LEASE, &args)).await?;
        Ok(())
    }
}

fn ppm(rate: f64) -> i64 {
    (rate.clamp(0.0, 1.0) * 1e6).round() as i64
}

fn required<T>(value: Option<T>, column: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError(format!("column {column} is NULL")))
}

fn payload_from_row(r: &dyn StoreRow) -> Result<Payload, StoreError> {
    let auto_state = required(r.text("auto_state")?, "auto_state")?;
    let version = required(r.int("version")?, "version")?;
    // Known only when a writer that keeps it wrote the row last, and meant only while it is open.
    let kept = r.int("opens_version")? == Some(version) && auto_state == "open";
    Ok(Payload {
        tool: required(r.text("tool")?, "tool")?,
        provider: required(r.text("provider")?, "provider")?,
        forced: r.text("forced")?,
        auto_state,
        open_until: r.int("open_until")?,
        ramp: r.int("ramp")?.unwrap_or(0) != 0,
        version,
        replica: required(r.text("replica")?, "replica")?,
        opened_at: r.int("opened_at")?.filter(|_| kept),
        times_opened: r.int("times_opened")?,
    })
}

fn transition_from_row(r: &dyn StoreRow) -> Result<StoredTransition, StoreError> {
    let rate =
        |column: &str| -> Result<f64, StoreError> { Ok(r.int(column)?.unwrap_or(0) as f64 / 1e6) };
    Ok(StoredTransition {
        id: required(r.text("id")?, "id")?,
        key: BreakerKey::new(
            required(r.text("tool")?, "tool")?,
            required(r.text("provider")?, "provider")?,
        ),
        from: required(r.text("from_state")?, "from_state")?,
        to: required(r.text("to_state")?, "to_state")?,
        reason: required(r.text("reason")?, "reason")?,
        at_ms: required(r.int("at_ms")?, "at_ms")?,
        failure_rate: rate("failure_rate_ppm")?,
        slow_rate: rate("slow_rate_ppm")?,
        calls: u32::try_from(r.int("calls")?.unwrap_or(0)).unwrap_or(0),
        replica: required(r.text("replica")?, "replica")?,
    })
}
