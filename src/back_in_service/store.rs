//! Back-in-service notices in the shared database (migration `back_in_service_1_notices`), every
//! statement once for SQLite and PostgreSQL.
//!
//! The step that must happen once in a fleet is a conditional update: a notice fires only from
//! `waiting` (`fire`), so of two replicas that both see its tool answer again, one changes the
//! row and the other changes nothing; its callback waits in the same row (the outbox's columns,
//! set by that one update), where the outbox leases each delivery to one replica.
//!
//! A client's cap on waiting notices is counted in the same statement that inserts one, run
//! under the client's lock (`BEGIN IMMEDIATE` on SQLite, a transaction-scoped advisory lock on
//! PostgreSQL, as a booking's budget reservation is), so concurrent requests never pass it.

use super::reads::UnansweredReads;
use crate::clients::ClientName;
use crate::outbox::{KeyColumn, Outbox, Spec};
use crate::store::{Arg, Db, Migration, Owned, Schema, StoreError, StoreRow};

const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "back_in_service_1_notices",
        statements: &[
            "CREATE TABLE IF NOT EXISTS faregate_back_in_service (
            id TEXT PRIMARY KEY,
            client TEXT NOT NULL,
            tool TEXT NOT NULL,
            callback_url TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            fired_at BIGINT,
            callback_state TEXT,
            callback_attempts BIGINT NOT NULL,
            next_callback_at BIGINT,
            updated_at BIGINT NOT NULL
        )",
            "CREATE INDEX IF NOT EXISTS faregate_back_in_service_waiting
             ON faregate_back_in_service (state, tool)",
            "CREATE INDEX IF NOT EXISTS faregate_back_in_service_client
             ON faregate_back_in_service (client, created_at)",
            "CREATE INDEX IF NOT EXISTS faregate_back_in_service_callbacks
             ON faregate_back_in_service (callback_state, next_callback_at)",
        ],
    },
    // Why the callback's last delivery failed, for the client to read on the notice.
    Migration {
        name: "back_in_service_2_callback_error",
        statements: &["ALTER TABLE faregate_back_in_service ADD COLUMN callback_error TEXT"],
    },
];

/// Every column, by name (a macro, so the outbox's select can be made of it).
macro_rules! columns {
    () => {
        "id, client, tool, callback_url, state, created_at, expires_at, fired_at,
         callback_state, callback_attempts, next_callback_at, callback_error, updated_at"
    };
}

/// The notices, as a table of client-owned rows.
const NOTICES: Owned<Notice> = Owned {
    table: "faregate_back_in_service",
    columns: columns!(),
    decode: notice_from_row,
};

/// A fired notice's callback lives in its own row.
static CALLBACKS: Spec<Notice> = Spec {
    table: "faregate_back_in_service",
    key: &[KeyColumn::Text("id")],
    touched: Some("updated_at"),
    select: concat!("SELECT ", columns!(), " FROM faregate_back_in_service "),
    alias: "",
    also: "",
    decode: notice_from_row,
};

/// Where a notice stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeState {
    /// Its tool has not answered again yet.
    Waiting,
    /// Its tool answered again; its callback is sent (or being sent).
    Fired,
    /// It waited until its expiry without the tool coming back; it sends nothing.
    Expired,
}

impl NoticeState {
    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeState::Waiting => "waiting",
            NoticeState::Fired => "fired",
            NoticeState::Expired => "expired",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "waiting" => NoticeState::Waiting,
            "fired" => NoticeState::Fired,
            "expired" => NoticeState::Expired,
            _ => return None,
        })
    }
}

/// A client's request to be told when a tool answers again, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// UUID v7.
    pub id: String,
    /// Whose it is: only that client (and the admin) sees it.
    pub client: ClientName,
    /// The tool it waits for.
    pub tool: String,
    /// Where it is POSTed, signed, when it fires.
    pub callback_url: String,
    /// Where it stands.
    pub state: NoticeState,
    /// When it was asked for (epoch ms).
    pub created_at_ms: i64,
    /// When it stops waiting (epoch ms).
    pub expires_at_ms: i64,
    /// When the tool was seen answering again (epoch ms).
    pub fired_at_ms: Option<i64>,
    /// Its callback: `pending`, `sent` or `failed`; `None` until it fires.
    pub callback: Option<String>,
    /// Deliveries tried so far.
    pub callback_attempts: u32,
    /// When the next delivery is due, or until when a replica holds it (epoch ms).
    pub next_callback_at_ms: Option<i64>,
    /// Why the last delivery failed (`None` once one succeeds, or before any).
    pub callback_error: Option<String>,
    /// Last change (epoch ms).
    pub updated_at_ms: i64,
}

fn notice_from_row(r: &dyn StoreRow) -> Result<Notice, StoreError> {
    let text = |c: &str| -> Result<String, StoreError> {
        r.text(c)?
            .ok_or_else(|| StoreError(format!("back-in-service column {c} is NULL")))
    };
    let int = |c: &str| -> Result<i64, StoreError> {
        r.int(c)?
            .ok_or_else(|| StoreError(format!("back-in-service column {c} is NULL")))
    };
    let state = text("state")?;
    Ok(Notice {
        id: text("id")?,
        client: ClientName::stored(&text("client")?),
        tool: text("tool")?,
        callback_url: text("callback_url")?,
        state: NoticeState::parse(&state)
            .ok_or_else(|| StoreError(format!("unknown back-in-service state {state}")))?,
        created_at_ms: int("created_at")?,
        expires_at_ms: int("expires_at")?,
        fired_at_ms: r.int("fired_at")?,
        callback: r.text("callback_state")?,
        callback_attempts: u32::try_from(int("callback_attempts")?).unwrap_or(0),
        next_callback_at_ms: r.int("next_callback_at")?,
        callback_error: r.text("callback_error")?,
        updated_at_ms: int("updated_at")?,
    })
}

/// Back-in-service notices in the shared database, beside the unanswered reads their probes
/// ask with. Cheap to clone.
#[derive(Debug, Clone)]
pub struct NoticeStore {
    schema: Schema,
    reads: UnansweredReads,
}

impl NoticeStore {
    /// Notices (and the unanswered reads) in `db` (the job store's database); the tables are
    /// made on first use.
    pub fn new(db: Db) -> Self {
        NoticeStore {
            reads: UnansweredReads::new(db.clone()),
            schema: Schema::new(db, MIGRATIONS, crate::clock::epoch_ms),
        }
    }

    /// The arguments of each tool's last unanswered read, shared by the replicas (`reads.rs`).
    pub fn unanswered_reads(&self) -> &UnansweredReads {
        &self.reads
    }

    async fn ready(&self) -> Result<&Db, StoreError> {
        self.schema.ready().await
    }

    /// Stores a new, waiting notice, unless its client already has `max_waiting` notices
    /// waiting: false then, and nothing is written. The count and the insert are one step
    /// ([`Db::execute_serialized`] under the client's lock), so concurrent requests, on one
    /// replica or many, never take a client past its cap.
    pub async fn insert(&self, n: &Notice, max_waiting: u32) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let inserted = db
            .execute_serialized(
                crate::fingerprint::client_lock("back-in-service", n.client.as_str()),
                "INSERT INTO faregate_back_in_service (id, client, tool, callback_url, state,
                     created_at, expires_at, callback_attempts, updated_at)
                 SELECT $1, $2, $3, $4, $5, $6, $7, 0, $6
                 WHERE (SELECT COUNT(*) FROM faregate_back_in_service
                        WHERE client = $2 AND state = 'waiting') < $8",
                &[
                    Arg::Text(Some(&n.id)),
                    Arg::Text(Some(n.client.as_str())),
                    Arg::Text(Some(&n.tool)),
                    Arg::Text(Some(&n.callback_url)),
                    Arg::Text(Some(n.state.as_str())),
                    Arg::Int(Some(n.created_at_ms)),
                    Arg::Int(Some(n.expires_at_ms)),
                    Arg::Int(Some(i64::from(max_waiting))),
                ],
            )
            .await?;
        Ok(inserted == 1)
    }

    /// One notice.
    pub async fn get(&self, id: &str) -> Result<Option<Notice>, StoreError> {
        NOTICES.get(self.ready().await?, id).await
    }

    /// Notices, newest first: `client`'s, or every client's for `None`.
    pub async fn list(
        &self,
        client: Option<&ClientName>,
        limit: u32,
    ) -> Result<Vec<Notice>, StoreError> {
        let client = client.map(ClientName::as_str);
        NOTICES.list(self.ready().await?, client, limit).await
    }

    /// How many of `client`'s notices are waiting.
    pub async fn waiting_count(&self, client: &ClientName) -> Result<u32, StoreError> {
        let waiting = NoticeState::Waiting.as_str();
        NOTICES
            .count(self.ready().await?, client.as_str(), waiting)
            .await
    }

    /// The tools some unexpired notice waits for at `now_ms`.
    pub async fn waited_for(&self, now_ms: i64) -> Result<Vec<String>, StoreError> {
        let db = self.ready().await?;
        db.fetch(
            "SELECT DISTINCT tool FROM faregate_back_in_service
             WHERE state = 'waiting' AND expires_at > $1 ORDER BY tool",
            &[Arg::Int(Some(now_ms))],
            |r| {
                r.text("tool")?
                    .ok_or_else(|| StoreError("back-in-service column tool is NULL".into()))
            },
        )
        .await
    }

    /// Fires every unexpired notice waiting for `tool`, its callback due at once; how many this
    /// call fired (a notice another replica fired first is not counted again).
    pub async fn fire(&self, tool: &str, now_ms: i64) -> Result<u64, StoreError> {
        let db = self.ready().await?;
        db.execute(
            "UPDATE faregate_back_in_service
             SET state = 'fired', fired_at = $2, callback_state = 'pending',
                 next_callback_at = $2, updated_at = $2
             WHERE tool = $1 AND state = 'waiting' AND expires_at > $2",
            &[Arg::Text(Some(tool)), Arg::Int(Some(now_ms))],
        )
        .await
    }

    /// Ends the notices that waited until their expiry; how many.
    pub async fn expire(&self, now_ms: i64) -> Result<u64, StoreError> {
        let db = self.ready().await?;
        db.execute(
            "UPDATE faregate_back_in_service SET state = 'expired', updated_at = $1
             WHERE state = 'waiting' AND expires_at <= $1",
            &[Arg::Int(Some(now_ms))],
        )
        .await
    }

    /// The fired notices' callbacks.
    pub async fn callbacks(&self) -> Result<Outbox<Notice>, StoreError> {
        Ok(Outbox::new(self.ready().await?.clone(), &CALLBACKS))
    }

    /// Deletes a notice; false when there was none.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let db = self.ready().await?;
        let changed = db
            .execute(
                "DELETE FROM faregate_back_in_service WHERE id = $1",
                &[Arg::Text(Some(id))],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Deletes notices that ended (expired, or fired with their callback sent or given up)
    /// before `before_ms`; how many.
    pub async fn purge(&self, before_ms: i64) -> Result<u64, StoreError> {
        let db = self.ready().await?;
        db.execute(
            "DELETE FROM faregate_back_in_service
             WHERE state <> 'waiting' AND updated_at < $1
               AND (callback_state IS NULL OR callback_state <> 'pending')",
            &[Arg::Int(Some(before_ms))],
        )
        .await
    }
}
