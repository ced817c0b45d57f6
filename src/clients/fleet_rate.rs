//! The replicas of a fleet on PostgreSQL tell each other how many calls of each client they
//! admitted, so that a client's rate holds for the fleet, not per replica ([`rate`](super::rate)
//! charges the buckets).
//!
//! One row per client and replica holds the replica's running count of that client's admitted
//! calls in its current stretch of calls (from the client's first call there after a quiet
//! spell), when that stretch began, and when the client's bucket there is full again. Every
//! [`SHARE_EVERY`](super::rate::SHARE_EVERY), a replica that admitted calls of some client
//! lately ([`TOLD_FOR`](super::rate::TOLD_FOR)) writes its counts and reads the other
//! replicas' rows in one statement ([`SharedRates::exchange`]); [`Heard`] turns the others'
//! running counts into the calls they admitted since the last exchange (charged), and their
//! buckets into the floor under this replica's (a slow rate, one call in ten seconds, is held
//! although no replica counts a second call of its own). A replica with nothing to tell only
//! reads, less often, and faster again while some other replica's bucket is not full. Rows not
//! written for [`FORGET_AFTER_MS`] (a replica gone, a client gone quiet) are deleted by
//! whichever replica exchanges next.
//!
//! A client is named in the table by [`ClientKey`]: `key:` and the hex SHA-256 digest of its
//! key (never the key), or `peer:` and its address when auth is off.

use std::collections::HashMap;

use serde::Serialize;

use crate::store::{Arg, Db, Migration, Schema, StoreError, StoreRow};

/// The room's schema changes, oldest first (see `store::Migration`).
const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "clients_1_rates",
        statements: &["CREATE TABLE IF NOT EXISTS faregate_client_rates (
            client TEXT NOT NULL,
            replica TEXT NOT NULL,
            admitted BIGINT NOT NULL,
            since BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (client, replica)
        )"],
    },
    Migration {
        name: "clients_2_rates_full_at",
        statements: &[
            "ALTER TABLE faregate_client_rates ADD COLUMN IF NOT EXISTS full_at BIGINT NOT NULL DEFAULT 0",
        ],
    },
];

/// Writes this replica's counts ($1: JSON `[{"client", "admitted", "since", "full_at"}]`, $2:
/// the replica, $3: now) and reads every other replica's rows written since $4 (every client's:
/// a client this replica has not served lately may call it next). A data-changing `WITH` runs
/// exactly once whether or not the query reads it (PostgreSQL's rule), and the outer `SELECT`
/// sees the table as it was before it, which holds no row of this replica that it reads anyway.
const EXCHANGE: &str = "WITH mine AS (
        INSERT INTO faregate_client_rates (client, replica, admitted, since, full_at, updated_at)
        SELECT t.client, $2, t.admitted, t.since, t.full_at, $3
        FROM json_to_recordset($1::json)
            AS t(client text, admitted bigint, since bigint, full_at bigint)
        ON CONFLICT (client, replica)
        DO UPDATE SET admitted = EXCLUDED.admitted, since = EXCLUDED.since,
            full_at = EXCLUDED.full_at, updated_at = EXCLUDED.updated_at
        RETURNING 1
    )
    SELECT r.client, r.replica, r.admitted, r.since, r.full_at FROM faregate_client_rates r
    WHERE r.replica <> $2 AND r.updated_at > $4";

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

/// How far the start of a stretch heard again may lie after the one heard last and still be
/// the same stretch (see [`Heard::since_last`]).
const SAME_STRETCH_MS: i64 = 1_000;

/// One client's running count, as written.
#[derive(Debug, Serialize)]
struct Count<'a> {
    client: &'a str,
    admitted: i64,
    since: i64,
    full_at: i64,
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
    /// When (epoch milliseconds) the client's bucket here is full again.
    pub full_at_ms: i64,
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
    /// When (epoch milliseconds) the client's bucket on that replica is full again.
    pub full_at_ms: i64,
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
                full_at: t.full_at_ms,
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
        full_at_ms: row.int("full_at")?.unwrap_or(0),
    })
}

/// What an exchange heard from the other replicas, per client.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct News {
    /// The calls they admitted since the last exchange (to charge).
    pub calls: HashMap<ClientKey, u64>,
    /// The latest instant (epoch milliseconds) at which one of their buckets of the client is
    /// full again, for clients whose bucket somewhere is not full now (the floor).
    pub full_at_ms: HashMap<ClientKey, i64>,
}

/// The running counts heard from each other replica, to tell what each admitted since.
#[derive(Debug, Default)]
pub struct Heard {
    /// (client, replica) → the count heard last, the start of the stretch it counts, and the
    /// exchange it was heard at.
    last: HashMap<(ClientKey, String), (u64, i64, u64)>,
    /// Exchanges so far.
    exchanges: u64,
}

impl Heard {
    /// What other replicas admitted per client since the last exchange, and how full their
    /// buckets are, from what this one read at `now_ms`. A (client, replica) heard for the
    /// first time counts its whole stretch when the stretch began within [`FRESH_STRETCH_MS`],
    /// else nothing (its calls may be from before this replica served the client: its bucket
    /// is the floor instead); a stretch other than the one heard last (the replica began a new
    /// one, whatever its count) counts what it holds now.
    pub fn since_last(&mut self, read: Vec<OtherCount>, now_ms: i64) -> News {
        self.exchanges += 1;
        let mut news = News::default();
        for other in read {
            if other.full_at_ms > now_ms {
                let floor = news.full_at_ms.entry(other.client.clone()).or_default();
                *floor = (*floor).max(other.full_at_ms);
            }
            let key = (other.client, other.replica);
            let new = match self.last.get(&key) {
                None if other.since_ms >= now_ms - FRESH_STRETCH_MS => other.admitted,
                None => 0,
                // The same stretch: its start is written anew at each exchange from an age, so
                // it wobbles by a millisecond or so, and a new stretch begins at least
                // TOLD_FOR (10 s) of quiet after the last one's.
                Some(&(before, since, _)) if other.since_ms <= since + SAME_STRETCH_MS => {
                    other.admitted.saturating_sub(before)
                }
                Some(_) => other.admitted,
            };
            if new > 0 {
                *news.calls.entry(key.0.clone()).or_default() += new;
            }
            self.last
                .insert(key, (other.admitted, other.since_ms, self.exchanges));
        }
        // A pair not read for many exchanges (its rows were forgotten, or this replica stopped
        // asking about the client) starts again from nothing when it is read again.
        let now = self.exchanges;
        self.last.retain(|_, (_, _, at)| now - *at < 600);
        news
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
            full_at_ms: 0,
        }
    }

    /// A replica's count that restarts and reaches the count heard last is a new stretch, all
    /// of it new; and the fullest bucket of a client anywhere is its floor here.
    #[test]
    fn a_new_stretch_counts_whole_and_the_latest_bucket_is_the_floor() {
        let mut heard = Heard::default();
        heard.since_last(vec![count("a", "r2", 1, NOW - 500)], NOW);
        let news = heard.since_last(vec![count("a", "r2", 1, NOW + 11_000)], NOW + 11_100);
        assert_eq!(
            news.calls.get("a"),
            Some(&1),
            "1 → 1 in a stretch that began after the one heard: a call, not nothing"
        );
        let full = |replica: &str, full_at_ms: i64| OtherCount {
            full_at_ms,
            ..count("b", replica, 1, OLD)
        };
        let news = heard.since_last(
            vec![
                full("r2", NOW + 5_000),
                full("r3", NOW + 9_000),
                full("r4", NOW - 1),
            ],
            NOW,
        );
        assert_eq!(news.full_at_ms.get("b"), Some(&(NOW + 9_000)));
        assert_eq!(
            heard
                .since_last(vec![full("r2", NOW - 1)], NOW)
                .full_at_ms
                .get("b"),
            None,
            "a bucket already full is no floor"
        );
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
                .calls
                .is_empty(),
            "first heard, of old stretches: a baseline, nothing charged"
        );
        let calls = heard
            .since_last(
                vec![
                    count("a", "r2", 45, OLD),
                    count("a", "r3", 9, OLD),
                    count("b", "r2", 3, NOW - 1_500),
                ],
                NOW,
            )
            .calls;
        assert_eq!(calls.get("a"), Some(&7), "5 on r2 and 2 on r3");
        assert_eq!(
            calls.get("b"),
            Some(&3),
            "b on r2: first heard, but its stretch began 1.5 s ago, so all of it is recent"
        );
        let calls = heard
            .since_last(
                vec![count("a", "r2", 4, NOW), count("b", "r2", 5, NOW - 1_500)],
                NOW + 100,
            )
            .calls;
        assert_eq!(
            calls.get("a"),
            Some(&4),
            "r2's count of a went down (it began a new stretch): its 4 are new"
        );
        assert_eq!(calls.get("b"), Some(&2));
    }
}
