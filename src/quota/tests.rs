//! The quota room on one node and on a shared store: reservations, refunds, interactive
//! spending, and going on locally when the database is away.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::providers::limits::Reading;

fn configured(per_s: u32) -> Arc<RateLimits> {
    let limits = Arc::new(RateLimits::default());
    limits.configure("amadeus", f64::from(per_s));
    limits
}

#[tokio::test(start_paused = true)]
async fn an_unknown_provider_is_not_paced_and_a_configured_one_is() {
    let quotas = Quotas::local(configured(10));
    assert_eq!(quotas.reserve("duffel", 16).await, None);
    // 95 % of 10/s: the bucket fills for a second, then grants what it holds.
    assert_eq!(quotas.reserve("amadeus", 16).await, Some(0));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(quotas.reserve("amadeus", 16).await, Some(9));
    assert_eq!(quotas.reserve("amadeus", 16).await, Some(0), "taken");
}

#[tokio::test(start_paused = true)]
async fn unclaimed_reservations_go_back_and_interactive_calls_make_background_wait() {
    let limits = configured(10);
    let quotas = Quotas::local(Arc::clone(&limits));
    assert_eq!(quotas.reserve("amadeus", 16).await, Some(0));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(quotas.reserve("amadeus", 4).await, Some(4));
    quotas.refund("amadeus", 3).await;
    assert_eq!(
        quotas.reserve("amadeus", 16).await,
        Some(8),
        "5 left + 3 back"
    );
    // Twenty interactive requests in the next second: the bucket goes below empty, and
    // background claims wait until it has refilled past them.
    for _ in 0..20 {
        limits.spent_interactive("amadeus");
    }
    quotas.flush_interactive().await;
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(quotas.reserve("amadeus", 16).await, Some(0));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(quotas.reserve("amadeus", 16).await.is_some_and(|n| n > 0));
}

#[tokio::test(start_paused = true)]
async fn a_429_pauses_every_later_reservation_until_the_reset() {
    let limits = Arc::new(RateLimits::default());
    let quotas = Quotas::local(Arc::clone(&limits));
    let t0 = clock::now();
    assert_eq!(quotas.reserve("amadeus", 4).await, None);
    quotas.claimed("amadeus", 4, t0).await;
    for _ in 0..4 {
        quotas.observe("amadeus", Answer::Succeeded, t0).await;
    }
    quotas
        .observe(
            "amadeus",
            Answer::RateLimited(Some(Duration::from_secs(10))),
            t0,
        )
        .await;
    assert_eq!(quotas.reserve("amadeus", 4).await, Some(0));
    tokio::time::advance(Duration::from_secs(9)).await;
    assert_eq!(quotas.reserve("amadeus", 4).await, Some(0));
}

#[tokio::test(start_paused = true)]
async fn a_probe_answered_with_anything_but_a_429_unpaces_the_provider() {
    let quotas = Quotas::local(Arc::default());
    let t0 = clock::now();
    quotas.claimed("duffel", 4, t0).await;
    let limited = Answer::RateLimited(Some(Duration::from_secs(10)));
    quotas.observe("duffel", limited, t0).await;
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(quotas.reserve("duffel", 4).await, Some(1), "the probe");
    let probe_claimed_at = clock::now();
    // A server error: nothing learned about the limit, but the provider took the request.
    quotas
        .observe("duffel", Answer::Other, probe_claimed_at)
        .await;
    assert_eq!(quotas.reserve("duffel", 4).await, None);
}

#[test]
fn a_pacer_survives_its_record_on_another_clock() {
    let limits = Arc::new(RateLimits::default());
    limits.record(
        "duffel",
        Reading {
            limit: 60,
            remaining: 30,
            reset_in: Duration::from_secs(30),
        },
        tokio::time::Instant::now(),
    );
    let known = limits.get("duffel");
    let t0 = tokio::time::Instant::now();
    let mut p = Pacer::new();
    p.allowance(t0, known.as_ref());
    p.claimed(1, t0);
    p.rate_limited(t0 + Duration::from_secs(1), Some(Duration::from_secs(5)));
    // Written by one replica at wall time 1_000_000 ms …
    let record = p.to_record(t0, 1_000_000);
    // … read by another whose monotonic clock is elsewhere but whose wall clock agrees.
    let t1 = t0 + Duration::from_secs(3600);
    let read = Pacer::from_record(&record, t1, 1_000_000);
    assert_eq!(read.to_record(t1, 1_000_000), record);
    assert_eq!(
        serde_json::from_str::<pacer::PacerRecord>(
            &serde_json::to_string(&record).unwrap_or_default()
        )
        .ok(),
        Some(record)
    );
}

async fn sqlite_db() -> (Db, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("quota.db").display());
    let db = Db::open_sqlite(&url)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (db, dir)
}

async fn postgres_db(test: &str) -> Option<Db> {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: {test}: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return None;
    };
    let schema = format!("fg_quota_{}", uuid::Uuid::now_v7().simple());
    let db = Db::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Some(db)
}

/// Two replicas on one database: a 429 one of them got pauses the other (which has seen
/// nothing itself), one bucket is drawn by both, and when the database goes away each goes on
/// with its last copy, at once.
async fn two_replicas(db: Db) {
    let a = Quotas::shared(configured(10), db.clone());
    let b = Quotas::shared(configured(10), db.clone());
    a.prepare().await;
    b.prepare().await;
    assert!(a.is_shared() && !a.is_degraded() && !b.is_degraded());

    // A 429 with a minute's Retry-After on replica a.
    let t0 = clock::now();
    assert_eq!(a.reserve("duffel", 4).await, None, "nothing known yet");
    a.claimed("duffel", 4, t0).await;
    for _ in 0..4 {
        a.observe("duffel", Answer::Succeeded, t0).await;
    }
    a.observe(
        "duffel",
        Answer::RateLimited(Some(Duration::from_secs(60))),
        t0,
    )
    .await;
    assert_eq!(
        b.reserve("duffel", 4).await,
        Some(0),
        "replica b pauses too, though it never saw the 429"
    );

    // One bucket of 95 % of 10/s: let it fill, then a takes what it holds and b, right after,
    // only what refilled in between.
    assert_eq!(a.reserve("amadeus", 100).await, Some(0));
    // The refill allowed to b is measured from before a's reservation (which reads the clock
    // inside), so a loaded machine that stalls between the two calls cannot fail this.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let before_a = tokio::time::Instant::now();
    let first = a.reserve("amadeus", 100).await.unwrap_or(0);
    let second = b.reserve("amadeus", 100).await.unwrap_or(0);
    let refilled = 9.5 * before_a.elapsed().as_secs_f64();
    assert!(first >= 9, "a full bucket: {first}");
    assert!(
        f64::from(second) <= refilled + 1.0,
        "b draws the same bucket: {second} after a took {first}"
    );

    // The database goes away: both go on locally at once, still paused by the 429.
    match &db {
        Db::Postgres { pool, .. } => pool.close().await,
        Db::Sqlite(pool) => pool.close().await,
    }
    assert_eq!(b.reserve("duffel", 4).await, Some(0));
    assert!(b.is_degraded());
}

/// Three replicas at the end of a pause whose provider's limit is not known (its first
/// requests were refused): one probe fleet-wide, and every replica unpaced once it succeeded.
async fn one_probe_fleet_wide(db: Db) {
    let replicas = [(); 3].map(|()| Quotas::shared(Arc::default(), db.clone()));
    for q in &replicas {
        q.prepare().await;
    }
    let t0 = clock::now();
    assert_eq!(replicas[0].reserve("duffel", 16).await, None);
    replicas[0].claimed("duffel", 16, t0).await;
    let limited = Answer::RateLimited(Some(Duration::from_millis(300)));
    replicas[0].observe("duffel", limited, t0).await;
    // Real time: a SQL driver answers on its own threads.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut granted = Vec::new();
    for q in &replicas {
        granted.push(q.reserve("duffel", 16).await);
    }
    assert_eq!(
        granted,
        [Some(1), Some(0), Some(0)],
        "one probe job in the fleet, not 16 per replica"
    );
    replicas[0]
        .observe("duffel", Answer::Succeeded, clock::now())
        .await;
    for q in &replicas {
        assert_eq!(q.reserve("duffel", 16).await, None, "answered: unpaced");
    }
}

#[tokio::test]
async fn one_probe_fleet_wide_on_sqlite() {
    let (db, _dir) = sqlite_db().await;
    one_probe_fleet_wide(db).await;
}

#[tokio::test]
async fn one_probe_fleet_wide_on_postgres() {
    if let Some(db) = postgres_db("one_probe_fleet_wide_on_postgres").await {
        one_probe_fleet_wide(db).await;
    }
}

#[tokio::test]
async fn replicas_share_pacers_on_sqlite() {
    let (db, _dir) = sqlite_db().await;
    two_replicas(db).await;
}

#[tokio::test]
async fn replicas_share_pacers_on_postgres() {
    if let Some(db) = postgres_db("replicas_share_pacers_on_postgres").await {
        two_replicas(db).await;
    }
}

/// Three replicas whose workers report successes all at once: every success reaches the
/// shared row. A success lost to a compare-and-swap race would make the fleet learn a lower
/// allowance than the provider's (and drain a backlog that much slower).
async fn concurrent_successes_all_count(db: Db) {
    const PER_REPLICA: u32 = 40;
    let replicas: Vec<Arc<Quotas>> = (0..3)
        .map(|_| Arc::new(Quotas::shared(Arc::new(RateLimits::default()), db.clone())))
        .collect();
    for q in &replicas {
        q.prepare().await;
    }
    replicas[0]
        .claimed("amadeus", 3 * PER_REPLICA, clock::now())
        .await;
    // Claimed after the window began (which the row keeps to the millisecond).
    tokio::time::sleep(Duration::from_millis(5)).await;
    let t0 = clock::now();
    let mut tasks = tokio::task::JoinSet::new();
    for q in &replicas {
        for _ in 0..PER_REPLICA {
            let q = Arc::clone(q);
            tasks.spawn(async move { q.observe("amadeus", Answer::Succeeded, t0).await });
        }
    }
    while tasks.join_next().await.is_some() {}
    assert!(
        replicas.iter().all(|q| !q.is_degraded()),
        "no replica went local"
    );
    let stored = SharedPacers::new(db)
        .read("amadeus")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no shared pacer"));
    let record = serde_json::to_value(&stored.record).unwrap_or_default();
    assert_eq!(
        record["successes"],
        3 * PER_REPLICA,
        "every success counted: {record}"
    );
}

#[tokio::test]
async fn concurrent_successes_of_three_replicas_all_count_on_sqlite() {
    let (db, _dir) = sqlite_db().await;
    concurrent_successes_all_count(db).await;
}

#[tokio::test]
async fn concurrent_successes_of_three_replicas_all_count_on_postgres() {
    if let Some(db) = postgres_db("concurrent_successes_of_three_replicas_all_count").await {
        concurrent_successes_all_count(db).await;
    }
}

/// Only a Duffel access token, as a replica's environment holds it.
struct DuffelToken(&'static str);

impl crate::providers::Env for DuffelToken {
    fn var(&self, name: &str) -> Option<String> {
        (name == "DUFFEL_ACCESS_TOKEN").then(|| self.0.to_string())
    }
}

/// The limits `providers::build` makes for the shipped configuration with `bucket_key`, called
/// with Duffel access token `token`.
fn limits_for(bucket_key: crate::config::BucketKey, token: &'static str) -> Arc<RateLimits> {
    let (mut config, _) = crate::config::load(
        &crate::config::EmbeddedFiles,
        std::path::Path::new(crate::config::EMBEDDED_CONFIG),
        &crate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    config.quota.bucket_key = bucket_key;
    crate::providers::build(&config, &DuffelToken(token)).rate_limits
}

/// What the shared pacer rows of `db` are keyed by.
async fn bucket_rows(db: &Db) -> Vec<String> {
    db.fetch(
        "SELECT provider FROM faregate_quota_pacers ORDER BY provider",
        &[],
        |r| Ok(r.text("provider")?.unwrap_or_default()),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A 429 replica `a` got pauses `others` when they share its bucket, and only then.
async fn paused_by_a_429(a: &Quotas, others: &[&Quotas]) -> Vec<bool> {
    let t0 = clock::now();
    a.claimed("duffel", 2, t0).await;
    a.observe("duffel", Answer::Succeeded, t0).await;
    a.observe(
        "duffel",
        Answer::RateLimited(Some(Duration::from_secs(60))),
        t0,
    )
    .await;
    let mut paused = Vec::new();
    for q in others {
        paused.push(q.reserve("duffel", 4).await == Some(0));
    }
    paused
}

#[tokio::test]
async fn keyed_by_credential_two_accounts_of_a_provider_pace_apart_and_one_account_together() {
    use crate::config::BucketKey;
    let (db, _dir) = sqlite_db().await;
    let key = BucketKey::ProviderAndCredential;
    let a = Quotas::shared(limits_for(key, "duffel_live_account_one"), db.clone());
    let same = Quotas::shared(limits_for(key, "duffel_live_account_one"), db.clone());
    let other = Quotas::shared(limits_for(key, "duffel_live_account_two"), db.clone());
    for q in [&a, &same, &other] {
        q.prepare().await;
    }
    assert_eq!(
        paused_by_a_429(&a, &[&same, &other]).await,
        [true, false],
        "the replica with the same account pauses, the other account does not"
    );
    let rows = bucket_rows(&db).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].starts_with("duffel#"), "{rows:?}");
    assert!(
        !rows[0].contains("account_one"),
        "never the credential itself: {rows:?}"
    );
}

#[tokio::test]
async fn keyed_by_provider_every_account_of_a_provider_draws_one_bucket() {
    use crate::config::BucketKey;
    let (db, _dir) = sqlite_db().await;
    let a = Quotas::shared(
        limits_for(BucketKey::Provider, "duffel_live_account_one"),
        db.clone(),
    );
    let other = Quotas::shared(
        limits_for(BucketKey::Provider, "duffel_live_account_two"),
        db.clone(),
    );
    a.prepare().await;
    other.prepare().await;
    assert_eq!(paused_by_a_429(&a, &[&other]).await, [true]);
    assert_eq!(bucket_rows(&db).await, ["duffel"]);
}
