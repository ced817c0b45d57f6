//! [`Ledger`]: the booking ledger on SQL, every statement once for SQLite and PostgreSQL.
//!
//! The table is keyed by (client, idempotency key), so two replicas beginning the same booking
//! at once race on one primary key and exactly one inserts; the other reads the entry. Every
//! time is an epoch-millisecond argument, so the tests control time without a clock.

use std::time::Duration;

use tokio::sync::OnceCell;

use super::entry::{Begin, Entry, NewEntry, Outcome, State};
use crate::store::{Arg, Db, Migration, StoreError, StoreRow, within};

/// The ledger's schema changes, oldest first (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "ledger_1_bookings",
        statements: BOOKINGS,
    },
    Migration {
        name: "ledger_2_reservations",
        statements: RESERVATIONS,
    },
];

const BOOKINGS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS faregate_bookings (
        client TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        tool TEXT NOT NULL,
        digest TEXT NOT NULL,
        state TEXT NOT NULL,
        provider TEXT,
        order_id TEXT,
        booking_reference TEXT,
        amount TEXT,
        currency TEXT,
        reason TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        booked_at BIGINT,
        PRIMARY KEY (client, idempotency_key)
    )",
    "CREATE INDEX IF NOT EXISTS faregate_bookings_unresolved
        ON faregate_bookings (state, updated_at)",
    "CREATE INDEX IF NOT EXISTS faregate_bookings_spent
        ON faregate_bookings (client, booked_at)",
];

/// What a booking holds of its client's daily budget: the amount in ten-thousandths (summed
/// exactly in SQL) and when it was reserved (which day it counts on until it is booked).
const RESERVATIONS: &[&str] = &[
    "ALTER TABLE faregate_bookings ADD COLUMN amount_units BIGINT",
    "ALTER TABLE faregate_bookings ADD COLUMN reserved_at BIGINT",
];

/// Every column, by name: a connection that read the schema before `ledger_2_reservations`
/// would read `*` with the old column count.
const COLUMNS: &str = "client, idempotency_key, tool, digest, state, provider, order_id,
     booking_reference, amount, currency, reason, created_at, updated_at";

const INSERT: &str = "INSERT INTO faregate_bookings
        (client, idempotency_key, tool, digest, state, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'pending', $5, $5)
     ON CONFLICT DO NOTHING";

/// A `failed` entry tried again with the same arguments becomes `pending` again.
const RETRY: &str = "UPDATE faregate_bookings
     SET state = 'pending', provider = NULL, reason = NULL, amount = NULL, currency = NULL,
         amount_units = NULL, reserved_at = NULL, updated_at = $4
     WHERE client = $1 AND idempotency_key = $2 AND digest = $3 AND state = 'failed'";

const ONE: &str = "WHERE client = $1 AND idempotency_key = $2";

/// `$3` state, `$4`–`$9` the outcome's fields, `$10` now, `$11` the booked amount in
/// ten-thousandths, `$12` the `updated_at` the entry was read with, or null. Only an entry
/// without a final outcome changes: a booking's end never overwrites another's, except that an
/// order the provider confirmed is `booked` even over a `failed` written while it was on its
/// way. An unknown outcome keeps what was reserved (it may have been spent); nothing booked
/// frees it. With `$12` (reconciliation), only an entry still as it was read changes: another
/// replica may have settled it and the client tried the key again since.
const FINISH: &str = "UPDATE faregate_bookings
     SET state = CAST($3 AS TEXT), provider = COALESCE($4, provider), order_id = $5,
         booking_reference = $6,
         amount = CASE WHEN CAST($3 AS TEXT) = 'failed' THEN NULL ELSE COALESCE($7, amount) END,
         currency = CASE WHEN CAST($3 AS TEXT) = 'failed' THEN NULL
                         ELSE COALESCE($8, currency) END,
         amount_units = CASE WHEN CAST($3 AS TEXT) = 'failed' THEN NULL
                             ELSE COALESCE($11, amount_units) END,
         reason = $9, updated_at = $10,
         booked_at = CASE WHEN CAST($3 AS TEXT) = 'booked' THEN $10 END
     WHERE client = $1 AND idempotency_key = $2
       AND (state IN ('pending', 'unknown') OR (CAST($3 AS TEXT) = 'booked' AND state = 'failed'))
       AND (CAST($12 AS BIGINT) IS NULL OR updated_at = CAST($12 AS BIGINT))";

/// What a client's bookings hold of its budget in one currency and one window: pending,
/// booked and unknown ones (a failed one holds nothing), counted on the day they were booked,
/// or reserved while not yet booked. `$1` client, `$2` currency, `$3`–`$4` the window, `$5` a
/// key left out (the booking asking).
const HELD: &str = "SELECT CAST(COALESCE(SUM(amount_units), 0) AS BIGINT) AS held
     FROM faregate_bookings
     WHERE client = $1 AND currency = $2 AND idempotency_key <> $5
       AND state IN ('pending', 'booked', 'unknown')
       AND COALESCE(booked_at, reserved_at) >= $3 AND COALESCE(booked_at, reserved_at) < $4";

/// Reserves `$5` ten-thousandths (`$3` as written, currency `$4`) of the budget `$9` for the
/// pending booking `$1`/`$2`, only if what the client's other bookings hold in the window
/// `$6`–`$7` leaves room; `$8` now. Run serialized per client (`Db::execute_serialized`), so
/// two bookings of one client never both take the last of the budget.
const RESERVE: &str = "UPDATE faregate_bookings
     SET amount = $3, currency = $4, amount_units = $5, reserved_at = $8, updated_at = $8
     WHERE client = $1 AND idempotency_key = $2 AND state = 'pending'
       AND $5 + (SELECT CAST(COALESCE(SUM(o.amount_units), 0) AS BIGINT)
                 FROM faregate_bookings o
                 WHERE o.client = $1 AND o.currency = $4 AND o.idempotency_key <> $2
                   AND o.state IN ('pending', 'booked', 'unknown')
                   AND COALESCE(o.booked_at, o.reserved_at) >= $6
                   AND COALESCE(o.booked_at, o.reserved_at) < $7) <= $9";

/// `$1` the settle cutoff, `$2` limit: unknown entries, and pending ones nobody finished.
const UNRESOLVED: &str = "WHERE state = 'unknown' OR (state = 'pending' AND updated_at <= $1)
     ORDER BY updated_at LIMIT CAST($2 AS BIGINT)";

const LIST: &str = "WHERE (CAST($1 AS TEXT) IS NULL OR client = CAST($1 AS TEXT))
     ORDER BY created_at DESC, idempotency_key LIMIT CAST($2 AS BIGINT)";

/// `$1` client, `$2`–`$3` the window of confirmation times.
const BOOKED_BETWEEN: &str =
    "WHERE client = $1 AND state = 'booked' AND booked_at >= $2 AND booked_at < $3";

/// What one booking asks to hold of its client's daily budget ([`Ledger::reserve`]).
#[derive(Debug, Clone, Copy)]
pub struct Hold<'a> {
    /// The price as the provider wrote it.
    pub amount: &'a str,
    /// The price in ten-thousandths of the currency.
    pub units: i64,
    /// Its ISO 4217 currency (the budget's).
    pub currency: &'a str,
    /// The whole daily budget, in ten-thousandths.
    pub budget_units: i64,
    /// The day it counts on, `[from_ms, until_ms)`.
    pub window: (i64, i64),
}

/// How long a read that answers someone (a job's booking, a replayed key, the bookings list)
/// waits for the store: a read dropped is harmless, and a caller told "not answering" in a
/// second can try again, where one held for the pool's 10 s connection wait, or for as long as
/// a lock on the table lasts, cannot. The jobs' reads wait as long (`jobs::store`).
/// Writes are bounded by their callers, who know what a late write means.
const READ_WAIT: Duration = Duration::from_secs(1);

/// The ledger in the shared database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Ledger {
    db: Db,
    /// How long a `pending` entry may wait for its outcome before it is read as unknown.
    settle: Duration,
    /// Set once the migration has run in this process (run lazily, so the ledger can be
    /// attached where nothing can wait, and a database that is down at start only refuses
    /// bookings until it is back).
    migrated: std::sync::Arc<OnceCell<()>>,
}

impl Ledger {
    /// The ledger in `db`, reading a `pending` entry older than `settle` as unknown.
    pub fn new(db: Db, settle: Duration) -> Self {
        Ledger {
            db,
            settle,
            migrated: std::sync::Arc::new(OnceCell::new()),
        }
    }

    /// The settle time.
    pub fn settle(&self) -> Duration {
        self.settle
    }

    async fn ready(&self) -> Result<&Db, StoreError> {
        self.migrated
            .get_or_try_init(|| self.db.migrate(MIGRATIONS, crate::clock::epoch_ms()))
            .await?;
        Ok(&self.db)
    }

    /// Writes a `pending` entry for a booking about to be made, or says what the key already
    /// stands for.
    pub async fn begin(&self, new: &NewEntry<'_>, now_ms: i64) -> Result<Begin, StoreError> {
        let db = self.ready().await?;
        let inserted = db
            .execute(
                INSERT,
                &[
                    Arg::Text(Some(new.client)),
                    Arg::Text(Some(new.idempotency_key)),
                    Arg::Text(Some(new.tool)),
                    Arg::Text(Some(new.digest)),
                    Arg::Int(Some(now_ms)),
                ],
            )
            .await?;
        if inserted == 1 {
            return Ok(Begin::Go);
        }
        let retried = db
            .execute(
                RETRY,
                &[
                    Arg::Text(Some(new.client)),
                    Arg::Text(Some(new.idempotency_key)),
                    Arg::Text(Some(new.digest)),
                    Arg::Int(Some(now_ms)),
                ],
            )
            .await?;
        if retried == 1 {
            return Ok(Begin::Go);
        }
        let entry = self
            .get(new.client, new.idempotency_key, now_ms)
            .await?
            .ok_or_else(|| StoreError("a booking entry vanished while it was read".into()))?;
        if entry.digest == new.digest {
            Ok(Begin::Recorded(entry))
        } else {
            Ok(Begin::Conflict(entry))
        }
    }

    /// The entry of `client`'s `key`, if there is one; an error when the store has not
    /// answered within [`READ_WAIT`].
    pub async fn get(
        &self,
        client: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<Entry>, StoreError> {
        let read = async {
            let db = self.ready().await?;
            db.fetch(
                select(ONE),
                &[Arg::Text(Some(client)), Arg::Text(Some(key))],
                entry_from_row,
            )
            .await
        };
        let rows = within(READ_WAIT, read).await?;
        Ok(rows.into_iter().next().map(|e| self.settled(e, now_ms)))
    }

    /// Records what came of a booking. False when the entry already had a final outcome, which
    /// is then kept (a `booked` one always; a `failed` one unless this outcome is `booked`).
    pub async fn finish(
        &self,
        client: &str,
        key: &str,
        outcome: &Outcome,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.finish_where(client, key, outcome, now_ms, None).await
    }

    /// Records what reconciliation learned of `read`, an entry it read before asking the
    /// provider: only if the entry is still as it was read. False otherwise (another replica
    /// settled it, or the client tried the key again and a new attempt is on its way).
    pub async fn settle_read(
        &self,
        read: &Entry,
        outcome: &Outcome,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let (client, key) = (&read.client, &read.idempotency_key);
        self.finish_where(client, key, outcome, now_ms, Some(read.updated_at_ms))
            .await
    }

    async fn finish_where(
        &self,
        client: &str,
        key: &str,
        outcome: &Outcome,
        now_ms: i64,
        read_at_ms: Option<i64>,
    ) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let (state, provider, order_id, reference, amount, currency, reason) = match outcome {
            Outcome::Booked {
                provider,
                order_id,
                booking_reference,
                amount,
                currency,
            } => (
                State::Booked,
                Some(provider.as_str()),
                Some(order_id.as_str()),
                Some(booking_reference.as_str()),
                Some(amount.as_str()),
                Some(currency.as_str()),
                None,
            ),
            Outcome::Failed { provider, reason } => (
                State::Failed,
                provider.as_deref(),
                None,
                None,
                None,
                None,
                Some(reason.as_str()),
            ),
            Outcome::Unknown { provider, reason } => (
                State::Unknown,
                Some(provider.as_str()),
                None,
                None,
                None,
                None,
                Some(reason.as_str()),
            ),
        };
        let changed = db
            .execute(
                FINISH,
                &[
                    Arg::Text(Some(client)),
                    Arg::Text(Some(key)),
                    Arg::Text(Some(state.as_str())),
                    Arg::Text(provider),
                    Arg::Text(order_id),
                    Arg::Text(reference),
                    Arg::Text(amount),
                    Arg::Text(currency),
                    Arg::Text(reason),
                    Arg::Int(Some(now_ms)),
                    Arg::Int(amount.and_then(units)),
                    Arg::Int(read_at_ms),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// What `client`'s bookings other than `except_key` hold in `currency` for the window
    /// `[from_ms, until_ms)`, in ten-thousandths: pending, booked and unknown ones.
    pub async fn held(
        &self,
        client: &str,
        currency: &str,
        (from_ms, until_ms): (i64, i64),
        except_key: &str,
    ) -> Result<i64, StoreError> {
        let db = self.ready().await?;
        let rows = db
            .fetch(
                HELD,
                &[
                    Arg::Text(Some(client)),
                    Arg::Text(Some(currency)),
                    Arg::Int(Some(from_ms)),
                    Arg::Int(Some(until_ms)),
                    Arg::Text(Some(except_key)),
                ],
                |r| Ok(r.int("held")?.unwrap_or(0)),
            )
            .await?;
        Ok(rows.into_iter().next().unwrap_or(0))
    }

    /// Reserves `hold` of `client`'s budget for the pending booking under `key`, in one step
    /// with every other reservation of the client: true when what its other bookings hold in
    /// the window, plus this, stays within `hold.budget_units`; false (nothing written) when
    /// it does not fit, or the entry is no longer pending.
    pub async fn reserve(
        &self,
        client: &str,
        key: &str,
        hold: &Hold<'_>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute_serialized(
                budget_lock(client),
                RESERVE,
                &[
                    Arg::Text(Some(client)),
                    Arg::Text(Some(key)),
                    Arg::Text(Some(hold.amount)),
                    Arg::Text(Some(hold.currency)),
                    Arg::Int(Some(hold.units)),
                    Arg::Int(Some(hold.window.0)),
                    Arg::Int(Some(hold.window.1)),
                    Arg::Int(Some(now_ms)),
                    Arg::Int(Some(hold.budget_units)),
                ],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Entries whose outcome is unknown, oldest first: `unknown` ones, and `pending` ones past
    /// the settle time.
    pub async fn unresolved(&self, now_ms: i64, limit: u32) -> Result<Vec<Entry>, StoreError> {
        let db = self.ready().await?;
        let cutoff = now_ms.saturating_sub(millis(self.settle));
        let rows = db
            .fetch(
                select(UNRESOLVED),
                &[Arg::Int(Some(cutoff)), Arg::Int(Some(i64::from(limit)))],
                entry_from_row,
            )
            .await?;
        Ok(rows.into_iter().map(|e| self.settled(e, now_ms)).collect())
    }

    /// The newest entries, of one client or of all, at most `limit`; an error when the store
    /// has not answered within [`READ_WAIT`].
    pub async fn list(
        &self,
        client: Option<&str>,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<Entry>, StoreError> {
        let read = async {
            let db = self.ready().await?;
            db.fetch(
                select(LIST),
                &[Arg::Text(client), Arg::Int(Some(i64::from(limit)))],
                entry_from_row,
            )
            .await
        };
        let rows = within(READ_WAIT, read).await?;
        Ok(rows.into_iter().map(|e| self.settled(e, now_ms)).collect())
    }

    /// `client`'s bookings confirmed in `[from_ms, until_ms)`.
    pub async fn booked_between(
        &self,
        client: &str,
        from_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<Entry>, StoreError> {
        let db = self.ready().await?;
        db.fetch(
            select(BOOKED_BETWEEN),
            &[
                Arg::Text(Some(client)),
                Arg::Int(Some(from_ms)),
                Arg::Int(Some(until_ms)),
            ],
            entry_from_row,
        )
        .await
    }

    /// A `pending` entry past the settle time is shown as unknown: its call ended without
    /// writing an outcome.
    fn settled(&self, mut entry: Entry, now_ms: i64) -> Entry {
        if entry.state == State::Pending
            && now_ms.saturating_sub(entry.updated_at_ms) >= millis(self.settle)
        {
            entry.state = State::Unknown;
        }
        entry
    }
}

/// A statement over every column, for the condition `clause`.
fn select(clause: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM faregate_bookings {clause}"))
}

/// The advisory lock a client's budget reservations are serialized under on PostgreSQL.
fn budget_lock(client: &str) -> i64 {
    crate::fingerprint::client_lock("budget", client)
}

/// A booked amount in ten-thousandths, for the budget's sums (`None` if the provider wrote
/// something that is not a decimal amount: it is then not counted).
fn units(amount: &str) -> Option<i64> {
    crate::tools::spend::Amount::parse(amount).map(crate::tools::spend::Amount::units)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn required<T>(value: Option<T>, column: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError(format!("faregate_bookings.{column} is NULL")))
}

fn entry_from_row(r: &dyn StoreRow) -> Result<Entry, StoreError> {
    let text = |column: &str| required(r.text(column)?, column);
    Ok(Entry {
        client: text("client")?,
        idempotency_key: text("idempotency_key")?,
        tool: text("tool")?,
        digest: text("digest")?,
        state: State::parse(&text("state")?),
        provider: r.text("provider")?,
        order_id: r.text("order_id")?,
        booking_reference: r.text("booking_reference")?,
        amount: r.text("amount")?,
        currency: r.text("currency")?,
        reason: r.text("reason")?,
        created_at_ms: required(r.int("created_at")?, "created_at")?,
        updated_at_ms: required(r.int("updated_at")?, "updated_at")?,
    })
}
