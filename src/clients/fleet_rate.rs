//! The replicas of a fleet on PostgreSQL tell each other how many calls of each client they
//! admitted, so that a client's rate holds for the fleet, not per replica ([`rate`](super::rate)
//! charges the buckets).
//!
//! One row per client and replica holds the replica's running count of that client's admitted
//! calls in its current stretch of calls (from the client's first call there after a quiet
//! spell), and when that stretch began. Every [`SHARE_EVERY`](super::rate::SHARE_EVERY), a replica that admitted calls of
//! some client lately ([`TOLD_FOR`](super::rate::TOLD_FOR)) writes its counts and reads the
//! other replicas' rows of the same clients in one statement ([`SharedRates::exchange`]);
//! [`Heard`] turns the others' running counts into the calls they admitted since the last
//! exchange. An idle replica runs no statement. Rows not written for [`FORGET_AFTER`] (a replica
//! gone, a client gone quiet) are deleted by whichever replica exchanges next.
//!
//! A client is named in the table by [`ClientKey`]: `key:` and the hex SHA-256 digest of its
//! key (never the key), or `peer:` and its address when auth is off.

use std::collections::HashMap;

use serde::Serialize;

use crate::store::{Arg, Db, Migration, Schema, StoreError, StoreRow};

/// The room's schema changes, oldest first (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[Migration {
    name: "clients_1_rates",
    statements: &["CREATE TABLE IF NOT EXISTS faregate_client_rates (
            client TEXT NOT NULL,
            replica TEXT NOT NULL,
            admitted BIGINT NOT NULL,
            since BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (client, replica)
        )"],
}];

/// Writes this replica's counts ($1: JSON `[{"client", "admitted", "since"}]`, $2: the replica,
/// $3: now)
/// and reads the other replicas' counts of the same clients written since $4. A data-changing
/// `WITH` runs exactly once whether or not the query reads it (PostgreSQL's rule), and the
/// outer `SELECT` sees the table as it was before it, which holds no row of this replica that
/// it reads anyway.
const EXCHANGE: &str = "WITH mine AS (
        INSERT INTO faregate_client_rates (client, replica, admitted, since, updated_at)
        SELECT t.client, $2, t.admitted, t.since, $3
        FROM json_to_recordset($1::json) AS t(client text, admitted bigint, since bigint)
        ON CONFLICT (client, replica)
        DO UPDATE SET admitted = EXCLUDED.admitted, since = EXCLUDED.since,
            updated_at = EXCLUDED.updated_at
        RETURNING 1
    )
    SELECT r.client, r.replica, r.admitted, r.since FROM faregate_client_rates r
    WHERE r.replica <> $2 AND r.updated_at > $4
      AND r.client IN (SELECT t.client FROM json_to_recordset($1::json) AS t(client text))";

const FORGET: &str = "DELETE FROM faregate_client_rates WHERE updated_at < $1";

/// Rows older than this are deleted, and not read: a replica that wrote none for this long is
/// gone or no longer sees the client.
const FORGET_AFTER_MS: i64 = 60_000;

/// A client as the table names it.
pub type ClientKey = String;

/// How far back a stretch that another replica began is charged whole when it is first heard
/// of: it began after this replica's last exchange, or about then, so its calls are recent. An
/// older stretch first heard of (this replica just began to serve the client, or just started)
/// is a baseline: its calls may be from long ago.
const FRESH_STRETCH_MS: i64 = 2_000;

/// One client's running count, as written.
#[derive(Debug, Serialize)]
struct Count<'a> {
    client: &'a str,
    admitted: i64,
    since: i64,
}

/// What this replica tells of one client: its running count in the client's current stretch,
/// and when (epoch milliseconds) that stretch began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    /// The client.
    pub client: ClientKey,
    /// Calls admitted in the stretch.
    pub admitted: u64,
    /// When the stretch began.
    pub since_ms: i64,
}

/// Another replica's running count of a client's admitted calls, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherCount {
    /// The client.
    pub client: ClientKey,
    /// The replica that admitted them.
    pub replica: String,
    /// Its running count.
    pub admitted: u64,
    /// When (epoch milliseconds) the stretch it counts began.
    pub since_ms: i64,
}

/// The client rates of a fleet's database.
#[derive(Debug, Clone)]
pub struct SharedRates {
    schema: Schema,
    replica: String,
}

impl SharedRates {
    /// The rates shared in `db` (PostgreSQL), as `replica` writes them.
    pub fn new(db: Db, replica: String) -> Self {
        SharedRates {
            schema: Schema::new(db, MIGRATIONS, crate::clock::epoch_ms),
            replica,
        }
    }

    /// Writes this replica's running counts and reads the other replicas' of the same
    /// clients (rows written within [`FORGET_AFTER_MS`] of `now_ms`).
    pub async fn exchange(
        &self,
        told: &[Told],
        now_ms: i64,
    ) -> Result<Vec<OtherCount>, StoreError> {
        let rows: Vec<Count<'_>> = told
            .iter()
            .map(|t| Count {
                client: &t.client,
                admitted: i64::try_from(t.admitted).unwrap_or(i64::MAX),
                since: t.since_ms,
            })
            .collect();
        let json = serde_json::to_string(&rows)
            .map_err(|e| StoreError(format!("cannot write client counts: {e}")))?;
        let db = self.schema.ready().await?;
        db.fetch(
            EXCHANGE,
            &[
                Arg::Text(Some(&json)),
                Arg::Text(Some(&self.replica)),
                Arg::Int(Some(now_ms)),
                Arg::Int(Some(now_ms - FORGET_AFTER_MS)),
            ],
            decode,
        )
        .await
    }

    /// Deletes the rows nobody wrote within [`FORGET_AFTER_MS`] of `now_ms`.
    pub async fn forget_old(&self, now_ms: i64) -> Result<u64, StoreError> {
        let db = self.schema.ready().await?;
        db.execute(FORGET, &[Arg::Int(Some(now_ms - FORGET_AFTER_MS))])
            .await
    }
}

fn decode(row: &dyn StoreRow) -> Result<OtherCount, StoreError> {
    Ok(OtherCount {
        client: row.text("client")?.unwrap_or_default(),
        replica: row.text("replica")?.unwrap_or_default(),
        admitted: u64::try_from(row.int("admitted")?.unwrap_or(0)).unwrap_or(0),
        since_ms: row.int("since")?.unwrap_or(0),
    })
}

/// The running counts heard from each other replica, to tell what each admitted since.
#[derive(Debug, Default)]
pub struct Heard {
    /// (client, replica) → the count heard last, and the exchange it was heard at.
    last: HashMap<(ClientKey, String), (u64, u64)>,
    /// Exchanges so far.
    exchanges: u64,
}

impl Heard {
    /// The calls other replicas admitted per client since the last exchange, from what this
    /// one read at `now_ms`. A (client, replica) heard for the first time counts its whole
    /// stretch when the stretch began within [`FRESH_STRETCH_MS`], else nothing (its calls may
    /// be from before this replica served the client); a running count lower than the last one
    /// heard (the replica began a new stretch) counts what it holds now.
    pub fn since_last(&mut self, read: Vec<OtherCount>, now_ms: i64) -> HashMap<ClientKey, u64> {
        self.exchanges += 1;
        let mut calls: HashMap<ClientKey, u64> = HashMap::new();
        for other in read {
            let key = (other.client, other.replica);
            let new = match self.last.get(&key) {
                None if other.since_ms >= now_ms - FRESH_STRETCH_MS => other.admitted,
                None => 0,
                Some(&(before, _)) if other.admitted >= before => other.admitted - before,
                Some(_) => other.admitted,
            };
            if new > 0 {
                *calls.entry(key.0.clone()).or_default() += new;
            }
            self.last.insert(key, (other.admitted, self.exchanges));
        }
        // A pair not read for many exchanges (its rows were forgotten, or this replica stopped
        // asking about the client) starts again from nothing when it is read again.
        let now = self.exchanges;
        self.last.retain(|_, (_, at)| now - *at < 600);
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stretch that began long before the exchanges below.
    const OLD: i64 = 0;
    const NOW: i64 = 1_000_000;

    fn count(client: &str, replica: &str, admitted: u64, since_ms: i64) -> OtherCount {
        OtherCount {
            client: client.into(),
            replica: replica.into(),
            admitted,
            since_ms,
        }
    }

    #[test]
    fn what_other_replicas_admitted_since_the_last_exchange() {
        let mut heard = Heard::default();
        assert!(
            heard
                .since_last(
                    vec![count("a", "r2", 40, OLD), count("a", "r3", 7, OLD)],
                    NOW
                )
                .is_empty(),
            "first heard, of old stretches: a baseline, nothing charged"
        );
        let calls = heard.since_last(
            vec![
                count("a", "r2", 45, OLD),
                count("a", "r3", 9, OLD),
                count("b", "r2", 3, NOW - 1_500),
            ],
            NOW,
        );
        assert_eq!(calls.get("a"), Some(&7), "5 on r2 and 2 on r3");
        assert_eq!(
            calls.get("b"),
            Some(&3),
            "b on r2: first heard, but its stretch began 1.5 s ago, so all of it is recent"
        );
        let calls = heard.since_last(
            vec![count("a", "r2", 4, NOW), count("b", "r2", 5, NOW - 1_500)],
            NOW + 100,
        );
        assert_eq!(
            calls.get("a"),
            Some(&4),
            "r2's count of a went down (it began a new stretch): its 4 are new"
        );
        assert_eq!(calls.get("b"), Some(&2));
    }
}
