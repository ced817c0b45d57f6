//! The outbox on SQLite and on PostgreSQL (when `FAREGATE_TEST_POSTGRES_URL` is set), over a
//! table of its own with a key of two columns (text and integer) and a touched column, as the
//! rooms' tables have: what is due, one lease between two replicas, each record, and the loop
//! delivering and recording.

use std::time::Duration;

use super::*;

const T0: i64 = 1_800_000_000_000;

fn url_of(r: &dyn StoreRow) -> Result<String, StoreError> {
    r.text("url")?
        .ok_or_else(|| StoreError("url is NULL".into()))
}

static SPEC: Spec<String> = Spec {
    table: "outbox_test",
    key: &[KeyColumn::Text("id"), KeyColumn::Int("part")],
    touched: Some("updated_at"),
    select: "SELECT id, part, url, callback_attempts, next_callback_at FROM outbox_test ",
    alias: "",
    also: "",
    decode: url_of,
};

/// A row: `(id, part, url, callback_state, next_callback_at)`.
type Row<'a> = (&'a str, i64, &'a str, Option<&'a str>, Option<i64>);

async fn table(db: &Db, rows: &[Row<'_>]) {
    db.execute(
        "CREATE TABLE outbox_test (id TEXT NOT NULL, part BIGINT NOT NULL, url TEXT NOT NULL,
             callback_state TEXT, callback_attempts BIGINT NOT NULL, next_callback_at BIGINT,
             callback_error TEXT, updated_at BIGINT NOT NULL, PRIMARY KEY (id, part))",
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    for (id, part, url, state, next) in rows {
        db.execute(
            "INSERT INTO outbox_test (id, part, url, callback_state, callback_attempts,
                 next_callback_at, updated_at) VALUES ($1, $2, $3, $4, 0, $5, 0)",
            &[
                Arg::Text(Some(id)),
                Arg::Int(Some(*part)),
                Arg::Text(Some(url)),
                Arg::Text(*state),
                Arg::Int(*next),
            ],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// `(callback_state, callback_attempts, next_callback_at, updated_at)` of row (`id`, `part`).
async fn row(db: &Db, id: &str, part: i64) -> (Option<String>, i64, Option<i64>, i64) {
    let rows = db
        .fetch(
            "SELECT callback_state, callback_attempts, next_callback_at, updated_at
             FROM outbox_test WHERE id = $1 AND part = $2",
            &[Arg::Text(Some(id)), Arg::Int(Some(part))],
            |r| {
                Ok((
                    r.text("callback_state")?,
                    r.int("callback_attempts")?.unwrap_or(-1),
                    r.int("next_callback_at")?,
                    r.int("updated_at")?.unwrap_or(-1),
                ))
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    rows.into_iter()
        .next()
        .unwrap_or_else(|| panic!("no row ({id}, {part})"))
}

/// `callback_error` of row (`id`, `part`): why its last delivery failed.
async fn error_of(db: &Db, id: &str, part: i64) -> Option<String> {
    let rows = db
        .fetch(
            "SELECT callback_error FROM outbox_test WHERE id = $1 AND part = $2",
            &[Arg::Text(Some(id)), Arg::Int(Some(part))],
            |r| r.text("callback_error"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    rows.into_iter().next().flatten()
}

const REFUSED: &str = "the receiver answered 500 Internal Server Error";

async fn due(outbox: &Outbox<String>, now_ms: i64) -> Vec<Due<String>> {
    outbox
        .due(now_ms, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Only pending callbacks due by now are listed, oldest first; two replicas lease one once; a
/// failed delivery is due again at its next time with one attempt more; a sent or given-up one
/// is never due again, and a second record of it changes nothing.
async fn leases_and_records(db: Db) {
    table(
        &db,
        &[
            ("a", 2, "https://x/a2", Some("pending"), Some(T0 - 10)),
            ("a", 1, "https://x/a1", Some("pending"), Some(T0 - 20)),
            ("b", 1, "https://x/b1", Some("pending"), Some(T0 + 5_000)),
            ("c", 1, "https://x/c1", Some("sent"), Some(T0 - 30)),
            ("d", 1, "https://x/d1", None, None),
        ],
    )
    .await;
    let here = Outbox::new(db.clone(), &SPEC);
    let there = Outbox::new(db.clone(), &SPEC);
    let found = due(&here, T0).await;
    let urls: Vec<&str> = found.iter().map(|d| d.item.as_str()).collect();
    assert_eq!(
        urls,
        ["https://x/a1", "https://x/a2"],
        "due by now, oldest first"
    );
    assert_eq!(found[0].attempts, 0);

    let until = T0 + 30_000;
    let leased = (
        here.lease(&found[0], until).await,
        there.lease(&found[0], until).await,
    );
    assert_eq!(leased, (Ok(true), Ok(false)), "one replica takes it");
    assert_eq!(
        due(&here, T0).await.len(),
        1,
        "a leased callback is not due while its lease holds"
    );

    here.record(&found[0].slot, Some(REFUSED), Some(T0 + 1_000), T0 + 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        row(&db, "a", 1).await,
        (Some("pending".into()), 1, Some(T0 + 1_000), T0 + 10)
    );
    assert_eq!(
        error_of(&db, "a", 1).await.as_deref(),
        Some(REFUSED),
        "why it failed is kept for the client"
    );
    let again = due(&here, T0 + 1_000).await;
    let urls: Vec<&str> = again.iter().map(|d| d.item.as_str()).collect();
    assert_eq!(
        urls,
        ["https://x/a2", "https://x/a1"],
        "due again at its time"
    );
    assert_eq!(again[1].attempts, 1, "one attempt more");

    here.record(&again[1].slot, None, None, T0 + 1_010)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        row(&db, "a", 1).await,
        (Some("sent".into()), 2, Some(T0 + 1_000), T0 + 1_010)
    );
    assert_eq!(
        error_of(&db, "a", 1).await,
        None,
        "a sent callback has no error left"
    );
    here.record(&again[1].slot, Some(REFUSED), None, T0 + 1_020)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        row(&db, "a", 1).await.0.as_deref(),
        Some("sent"),
        "a record of a callback no longer pending changes nothing"
    );

    here.record(&found[1].slot, Some(REFUSED), None, T0 + 1_030)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(row(&db, "a", 2).await.0.as_deref(), Some("failed"));
    let left: Vec<String> = due(&here, T0 + 10_000)
        .await
        .into_iter()
        .map(|d| d.item)
        .collect();
    assert_eq!(
        left,
        ["https://x/b1"],
        "sent and given-up callbacks are done"
    );
}

/// The loop delivers each due callback once and records it: sent, or pending again a second
/// after the failed delivery.
async fn send_due_delivers_and_records(db: Db) {
    let now = clock::epoch_ms();
    table(
        &db,
        &[
            ("ok", 1, "https://x/ok", Some("pending"), Some(now)),
            ("down", 1, "https://x/down", Some("pending"), Some(now)),
        ],
    )
    .await;
    let outbox = Outbox::new(db.clone(), &SPEC);
    let delivered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&delivered);
    outbox
        .send_due(
            now,
            10,
            move |url: String| {
                let seen = std::sync::Arc::clone(&seen);
                async move {
                    let taken = url.ends_with("/ok");
                    seen.lock().unwrap_or_else(|e| e.into_inner()).push(url);
                    if taken {
                        Ok(())
                    } else {
                        Err(REFUSED.to_string())
                    }
                }
            },
            |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut waited = Duration::ZERO;
    while row(&db, "down", 1).await.1 == 0 || row(&db, "ok", 1).await.1 == 0 {
        assert!(waited < Duration::from_secs(10), "deliveries not recorded");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += Duration::from_millis(10);
    }
    let mut urls = delivered.lock().unwrap_or_else(|e| e.into_inner()).clone();
    urls.sort();
    assert_eq!(
        urls,
        ["https://x/down", "https://x/ok"],
        "each delivered once"
    );
    assert_eq!(row(&db, "ok", 1).await.0.as_deref(), Some("sent"));
    let (state, attempts, next, recorded_at) = row(&db, "down", 1).await;
    assert_eq!((state.as_deref(), attempts), (Some("pending"), 1));
    assert_eq!(error_of(&db, "down", 1).await.as_deref(), Some(REFUSED));
    assert_eq!(error_of(&db, "ok", 1).await, None);
    assert_eq!(
        next,
        Some(recorded_at + 1_000),
        "tried again a second after the first failure"
    );
}

async fn postgres(test: &str) -> Option<(Db, String)> {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!("note: {test}: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set");
        return None;
    };
    let schema = format!("fg_outbox_{}", uuid::Uuid::now_v7().simple());
    let db = Db::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The schema is made by a migration run; this test's table has none.
    db.migrate(&[], 0).await.unwrap_or_else(|e| panic!("{e}"));
    Some((db, schema))
}

async fn drop_schema(db: &Db, schema: &str) {
    db.execute(
        sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

async fn sqlite(dir: &tempfile::TempDir) -> Db {
    Db::open_sqlite_file(&dir.path().join("outbox.db"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn leases_and_records_on_both_databases() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    leases_and_records(sqlite(&dir).await).await;
    if let Some((db, schema)) = postgres("leases_and_records_on_both_databases").await {
        leases_and_records(db.clone()).await;
        drop_schema(&db, &schema).await;
    }
}

#[tokio::test]
async fn send_due_delivers_and_records_on_both_databases() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    send_due_delivers_and_records(sqlite(&dir).await).await;
    if let Some((db, schema)) = postgres("send_due_delivers_and_records_on_both_databases").await {
        send_due_delivers_and_records(db.clone()).await;
        drop_schema(&db, &schema).await;
    }
}

#[test]
fn deliveries_wait_longer_each_time_then_give_up() {
    let waits: Vec<Option<Duration>> = (1..=ATTEMPTS).map(next_delivery_in).collect();
    assert_eq!(waits[0], Some(Duration::from_secs(1)));
    assert!(waits.windows(2).take(6).all(|w| w[0] < w[1]), "{waits:?}");
    assert_eq!(
        waits[ATTEMPTS as usize - 1],
        None,
        "given up after {ATTEMPTS}"
    );
}
