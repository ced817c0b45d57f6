//! The client's cap on active watches (`[watches] max_active_per_client`) under concurrency:
//! creates and resumes fired all at once, through one replica and through three sharing the
//! store, leave exactly as many watches active as the cap, on a SQLite file and on PostgreSQL
//! (when `FAREGATE_TEST_POSTGRES_URL` is set; each run in a schema of its own). Every one
//! refused is refused as one over the cap always was: [`WatchError::Full`], with its text.
//!
//! Real time and a multi-threaded runtime: the race is between the store's connections.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use serde_json::json;

use super::{EVERY, Scripted, date};
use crate::call::{Gateway, Upstream};
use crate::clients::ClientName;
use crate::config::{self, EMBEDDED_CONFIG, EmbeddedFiles, JobsConfig, WatchesConfig};
use crate::jobs::{JobSystem, Store};
use crate::store::Db;
use crate::telemetry::{AlertRules, Telemetry};
use crate::texts::watches as texts;
use crate::tools;
use crate::watches::{End, NewWatch, Watch, WatchError, WatchState, WatchStore, WatchSystem};

/// The cap under test.
const CAP: u32 = 3;
/// Requests fired at once.
const AT_ONCE: usize = 20;
/// Paused watches resumed at once.
const PAUSED: usize = 16;

/// One watch system (a replica) over each of `dbs`, all with a cap of [`CAP`] and one gateway;
/// their loops do not run (a create and a resume do not need them).
async fn replicas(dbs: &[Db]) -> Vec<Arc<WatchSystem>> {
    let (config, _) = config::load(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG), &tools::names())
        .unwrap_or_else(|e| panic!("{e}"));
    let upstream = Scripted::new([]) as Arc<dyn Upstream>;
    let upstreams = ["duffel", "amadeus"]
        .into_iter()
        .map(|name| (name.to_string(), Arc::clone(&upstream)))
        .collect();
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Arc::new(
        Gateway::new(&config, &upstreams, Arc::clone(&telemetry))
            .unwrap_or_else(|e| panic!("{e:?}")),
    );
    let mut all = Vec::new();
    for db in dbs {
        let jobs = Arc::new(JobSystem::new(
            Store::new(db.clone()),
            Arc::clone(&gateway),
            Arc::clone(&telemetry),
            JobsConfig {
                max_attempts: 5,
                max_age: Duration::from_secs(3600),
                workers: 1,
                lease_margin: Duration::from_secs(30),
            },
            Vec::new(),
            None,
        ));
        let system = Arc::new(WatchSystem::new(
            WatchStore::new(db.clone()),
            jobs,
            Arc::clone(&gateway),
            WatchesConfig {
                max_active_per_client: CAP,
                min_interval: EVERY,
            },
            crate::jobs::callbacks::notice::NoticeSender::new(Vec::new(), None),
        ));
        // Migrated one after another, before any race.
        system
            .store()
            .list(None, 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        all.push(system);
    }
    all
}

fn client(name: &str) -> ClientName {
    ClientName::configured(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A flight status watch of `client` (flight `n`).
fn new_watch(client: &ClientName, n: usize) -> NewWatch {
    NewWatch {
        client: client.clone(),
        tool: "get_flight_status".into(),
        arguments: json!({
            "carrier_code": "BA",
            "flight_number": (100 + n).to_string(),
            "departure_date": date(),
        }),
        every: EVERY,
        condition: None,
        end: End {
            at_ms: None,
            runs: None,
            departure: false,
        },
        callback_url: None,
    }
}

/// How many of the outcomes succeeded; every other must be the cap's refusal, word for word.
fn taken(outcomes: Vec<Result<Watch, WatchError>>) -> usize {
    let mut taken = 0;
    for outcome in outcomes {
        match outcome {
            Ok(_) => taken += 1,
            Err(WatchError::Full(text)) => assert_eq!(text, texts::full(CAP)),
            Err(other) => panic!("refused other than by the cap: {other:?}"),
        }
    }
    taken
}

async fn active(system: &WatchSystem, client: &ClientName) -> u32 {
    system
        .store()
        .active_count(client)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// [`AT_ONCE`] creates of one client at once, round-robin over `systems`: [`CAP`] are kept.
async fn check_creates(systems: &[Arc<WatchSystem>], who: &ClientName) {
    let creates = (0..AT_ONCE).map(|n| {
        let system = Arc::clone(&systems[n % systems.len()]);
        let new = new_watch(who, n);
        tokio::spawn(async move { system.create(new).await })
    });
    let outcomes = join_all(creates)
        .await
        .into_iter()
        .map(|t| t.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(taken(outcomes), CAP as usize, "creates that took effect");
    assert_eq!(active(&systems[0], who).await, CAP);
    let kept = systems[0]
        .store()
        .list(Some(who), 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kept.len(), CAP as usize, "nothing refused is kept");
}

/// Paused watches resumed at once, with creates among them, while one watch is active: only as
/// many take effect as the cap leaves room for, and a resume refused leaves its watch paused.
async fn check_resumes(systems: &[Arc<WatchSystem>], who: &ClientName) {
    let first = &systems[0];
    let mut paused = Vec::new();
    for n in 0..PAUSED {
        let watch = first
            .create(new_watch(who, n))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        first
            .pause(&watch.id, Some(who))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        paused.push(watch.id);
    }
    first
        .create(new_watch(who, PAUSED))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    // One after another first: a resume over the cap is refused as a create over it is.
    let full = (0..CAP - 1).map(|n| new_watch(who, PAUSED + 1 + n as usize));
    for new in full {
        first.create(new).await.unwrap_or_else(|e| panic!("{e:?}"));
    }
    match first.resume(&paused[0], Some(who)).await {
        Err(WatchError::Full(text)) => assert_eq!(text, texts::full(CAP)),
        other => panic!("a resume over the cap: {other:?}"),
    }
    // Back to one active, then everything at once.
    for watch in first
        .store()
        .list(Some(who), 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|w| w.state == WatchState::Active)
        .skip(1)
    {
        first
            .pause(&watch.id, Some(who))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    assert_eq!(active(first, who).await, 1);
    let resumes = paused.iter().enumerate().map(|(n, id)| {
        let system = Arc::clone(&systems[n % systems.len()]);
        let (id, who) = (id.clone(), who.clone());
        tokio::spawn(async move { system.resume(&id, Some(&who)).await })
    });
    let creates = (0..4).map(|n| {
        let system = Arc::clone(&systems[(n + 1) % systems.len()]);
        let new = new_watch(who, 2 * PAUSED + n);
        tokio::spawn(async move { system.create(new).await })
    });
    let (resumed, created) = futures::join!(join_all(resumes), join_all(creates));
    let outcomes = resumed
        .into_iter()
        .chain(created)
        .map(|t| t.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(
        taken(outcomes),
        CAP as usize - 1,
        "resumes and creates that took effect"
    );
    assert_eq!(active(first, who).await, CAP);
}

async fn check(dbs: Vec<Db>) {
    let systems = replicas(&dbs).await;
    check_creates(&systems[..1], &client("one_replica")).await;
    check_creates(&systems, &client("three_replicas")).await;
    check_resumes(&systems, &client("resumes")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_and_resumes_keep_a_client_within_its_cap() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("watches.db");
    let mut sqlite = Vec::new();
    for _ in 0..3 {
        let db = Db::open_sqlite_file(&file)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        sqlite.push(db);
    }
    check(sqlite).await;
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: concurrent_creates_and_resumes_keep_a_client_within_its_cap: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_{}", uuid::Uuid::now_v7().simple());
    let mut pg = Vec::new();
    for _ in 0..3 {
        let db = Db::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        pg.push(db);
    }
    check(pg).await;
}
