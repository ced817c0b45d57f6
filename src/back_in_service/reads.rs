//! The arguments of each tool's last unanswered read in the shared database (migration
//! `back_in_service_reads_1_unanswered`), one row per tool, so that any replica can ask a tool
//! again for its notices, not only the one that saw the read fail.
//!
//! Why in the database: a replica keeps what it could not answer in its memory only
//! (`call/unanswered.rs`). In a fleet the failing calls may all have gone to one replica, which
//! may then be stopped; the replica left holding the probe lease has nothing to ask with, nobody
//! calls, and its half-open breakers never close: the notices would wait forever. On one node,
//! a restart loses them likewise. One row per tool is enough: any read a traveller could not get
//! answered shows that the tool answers again.
//!
//! What the row holds is a client's tool arguments (a route and dates, say), kept as a job's
//! arguments are, in the gateway's own store: only the back-in-service loop reads them, as the
//! request of its own probe; no API shows them to anyone. A row is written seldom (when a
//! replica's kept arguments change while the tool is down, at most every few seconds, and again
//! every few minutes to say they are still wanted), deleted when the replica that wrote or used
//! it sees the tool answer again or its arguments can no longer be asked, and a row nobody
//! renewed for a day (`asking.rs`, `KEEP`) is neither used nor kept.

use crate::store::{Arg, Db, Migration, Schema, StoreError};

const MIGRATIONS: &[Migration] = &[Migration {
    name: "back_in_service_reads_1_unanswered",
    statements: &["CREATE TABLE IF NOT EXISTS faregate_unanswered_reads (
            tool TEXT PRIMARY KEY,
            arguments TEXT NOT NULL,
            seen_at BIGINT NOT NULL
        )"],
}];

/// The last unanswered read of each tool, shared by the replicas. Cheap to clone.
#[derive(Debug, Clone)]
pub struct UnansweredReads {
    schema: Schema,
}

impl UnansweredReads {
    /// The rows in `db` (the notices' database); the table is made on first use.
    pub fn new(db: Db) -> Self {
        UnansweredReads {
            schema: Schema::new(db, MIGRATIONS, crate::clock::epoch_ms),
        }
    }

    /// Keeps `arguments` (canonical JSON) as `tool`'s last unanswered read, seen at `now_ms`,
    /// replacing what was kept.
    pub async fn put(&self, tool: &str, arguments: &str, now_ms: i64) -> Result<(), StoreError> {
        let db = self.schema.ready().await?;
        db.execute(
            "INSERT INTO faregate_unanswered_reads (tool, arguments, seen_at) VALUES ($1, $2, $3)
             ON CONFLICT (tool) DO UPDATE SET arguments = excluded.arguments,
                 seen_at = excluded.seen_at",
            &[
                Arg::Text(Some(tool)),
                Arg::Text(Some(arguments)),
                Arg::Int(Some(now_ms)),
            ],
        )
        .await?;
        Ok(())
    }

    /// `tool`'s last unanswered read, unless it was last seen at or before `oldest_ms`.
    pub async fn get(&self, tool: &str, oldest_ms: i64) -> Result<Option<String>, StoreError> {
        let db = self.schema.ready().await?;
        let rows = db
            .fetch(
                "SELECT arguments FROM faregate_unanswered_reads WHERE tool = $1 AND seen_at > $2",
                &[Arg::Text(Some(tool)), Arg::Int(Some(oldest_ms))],
                |r| {
                    r.text("arguments")?
                        .ok_or_else(|| StoreError("unanswered read without arguments".into()))
                },
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// Deletes `tool`'s row if it still holds `arguments` (another replica may have kept a
    /// newer read since); whether it did.
    pub async fn forget(&self, tool: &str, arguments: &str) -> Result<bool, StoreError> {
        let db = self.schema.ready().await?;
        let deleted = db
            .execute(
                "DELETE FROM faregate_unanswered_reads WHERE tool = $1 AND arguments = $2",
                &[Arg::Text(Some(tool)), Arg::Text(Some(arguments))],
            )
            .await?;
        Ok(deleted == 1)
    }

    /// Deletes the rows last seen at or before `oldest_ms`; how many.
    pub async fn purge(&self, oldest_ms: i64) -> Result<u64, StoreError> {
        let db = self.schema.ready().await?;
        db.execute(
            "DELETE FROM faregate_unanswered_reads WHERE seen_at <= $1",
            &[Arg::Int(Some(oldest_ms))],
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::UnansweredReads;
    use crate::store::Db;

    const TOOL: &str = "search_flights";
    const LHR: &str = r#"{"destination":"JFK","origin":"LHR"}"#;
    const CDG: &str = r#"{"destination":"JFK","origin":"CDG"}"#;

    async fn check(db: Db) {
        let reads = UnansweredReads::new(db);
        let got = |oldest| {
            let reads = reads.clone();
            async move {
                reads
                    .get(TOOL, oldest)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
            }
        };
        assert_eq!(got(0).await, None, "nothing kept yet");

        reads.put(TOOL, LHR, 1_000).await.expect("kept");
        assert_eq!(got(0).await.as_deref(), Some(LHR));
        assert_eq!(got(999).await.as_deref(), Some(LHR));
        assert_eq!(got(1_000).await, None, "seen too long ago: not used");
        assert_eq!(
            reads.get("search_hotels", 0).await.expect("read"),
            None,
            "one row per tool"
        );

        reads.put(TOOL, CDG, 2_000).await.expect("replaced");
        assert_eq!(
            got(1_500).await.as_deref(),
            Some(CDG),
            "the newest replaces"
        );
        assert!(
            !reads.forget(TOOL, LHR).await.expect("deleted"),
            "arguments no longer kept delete nothing"
        );
        assert_eq!(got(0).await.as_deref(), Some(CDG));
        assert!(reads.forget(TOOL, CDG).await.expect("deleted"));
        assert_eq!(got(0).await, None);

        reads.put(TOOL, LHR, 3_000).await.expect("kept");
        reads.put("search_hotels", CDG, 5_000).await.expect("kept");
        assert_eq!(reads.purge(3_000).await.expect("purged"), 1);
        assert_eq!(got(0).await, None, "the old row is gone");
        assert_eq!(
            reads
                .get("search_hotels", 0)
                .await
                .expect("read")
                .as_deref(),
            Some(CDG),
            "the newer one stays"
        );
    }

    #[tokio::test]
    async fn a_tool_keeps_its_newest_unanswered_read_until_forgotten_or_too_old() {
        crate::store::both::on_both("unanswered_reads", check).await;
    }
}
