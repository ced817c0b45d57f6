//! [`Ledger`]: the booking ledger on SQL, every statement once for SQLite and PostgreSQL.
//!
//! The table is keyed by (client, idempotency key), so two replicas beginning the same booking
//! at once race on one primary key and exactly one inserts; the other reads the entry. Every
//! time is an epoch-millisecond argument, so the tests control time without a clock.

use std::time::Duration;

use tokio::sync::OnceCell;

use super::entry::{Begin, Entry, NewEntry, Outcome, State};
use crate::store::{Arg, Db, Migration, StoreError, StoreRow};

/// The ledger's schema changes, oldest first (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[Migration {
    name: "ledger_1_bookings",
    statements: BOOKINGS,
}];

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

const INSERT: &str = "INSERT INTO faregate_bookings
        (client, idempotency_key, tool, digest, state, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'pending', $5, $5)
     ON CONFLICT DO NOTHING";

/// A `failed` entry tried again with the same arguments becomes `pending` again.
const RETRY: &str = "UPDATE faregate_bookings
     SET state = 'pending', provider = NULL, reason = NULL, updated_at = $4
     WHERE client = $1 AND idempotency_key = $2 AND digest = $3 AND state = 'failed'";

const ONE: &str = "SELECT * FROM faregate_bookings WHERE client = $1 AND idempotency_key = $2";

/// `$3` state, `$4`–`$9` the outcome's fields, `$10` now. Only an entry without a final
/// outcome changes: a booking's end never overwrites another's.
const FINISH: &str = "UPDATE faregate_bookings
     SET state = CAST($3 AS TEXT), provider = COALESCE($4, provider), order_id = $5,
         booking_reference = $6, amount = $7, currency = $8, reason = $9, updated_at = $10,
         booked_at = CASE WHEN CAST($3 AS TEXT) = 'booked' THEN $10 END
     WHERE client = $1 AND idempotency_key = $2 AND state IN ('pending', 'unknown')";

/// `$1` the settle cutoff, `$2` limit: unknown entries, and pending ones nobody finished.
const UNRESOLVED: &str = "SELECT * FROM faregate_bookings
     WHERE state = 'unknown' OR (state = 'pending' AND updated_at <= $1)
     ORDER BY updated_at LIMIT $2";

const LIST: &str = "SELECT * FROM faregate_bookings
     WHERE (CAST($1 AS TEXT) IS NULL OR client = CAST($1 AS TEXT))
     ORDER BY created_at DESC, idempotency_key LIMIT $2";

/// `$1` client, `$2`–`$3` the window of confirmation times.
const BOOKED_BETWEEN: &str = "SELECT * FROM faregate_bookings
     WHERE client = $1 AND state = 'booked' AND booked_at >= $2 AND booked_at < $3";

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

    /// The entry of `client`'s `key`, if there is one.
    pub async fn get(
        &self,
        client: &str,
        key: &str,
        now_ms: i64,
    ) -> Result<Option<Entry>, StoreError> {
        let db = self.ready().await?;
        let rows = db
            .fetch(
                ONE,
                &[Arg::Text(Some(client)), Arg::Text(Some(key))],
                entry_from_row,
            )
            .await?;
        Ok(rows.into_iter().next().map(|e| self.settled(e, now_ms)))
    }

    /// Records what came of a booking (or what reconciliation learned). False when the entry
    /// already had a final outcome, which is then kept.
    pub async fn finish(
        &self,
        client: &str,
        key: &str,
        outcome: &Outcome,
        now_ms: i64,
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
                UNRESOLVED,
                &[Arg::Int(Some(cutoff)), Arg::Int(Some(i64::from(limit)))],
                entry_from_row,
            )
            .await?;
        Ok(rows.into_iter().map(|e| self.settled(e, now_ms)).collect())
    }

    /// The newest entries, of one client or of all, at most `limit`.
    pub async fn list(
        &self,
        client: Option<&str>,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<Entry>, StoreError> {
        let db = self.ready().await?;
        let rows = db
            .fetch(
                LIST,
                &[Arg::Text(client), Arg::Int(Some(i64::from(limit)))],
                entry_from_row,
            )
            .await?;
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
            BOOKED_BETWEEN,
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
