//! A stampede scaled down for CI: a backlog of background jobs against a provider that allows N
//! requests per (shortened) window and answers 429 with `Retry-After` beyond it. Every job must
//! succeed exactly once, and the 429s must be the one-time cost of learning the limit: the
//! dispatcher paces the rest of the backlog under it instead of hitting it once per window.
//!
//! A provider that announces its limit on every answer (Duffel's `ratelimit-*` headers) is paced
//! from its first answer: its backlog drains without a single 429.
//!
//! Real sockets (the simulator and the gateway on `127.0.0.1:0`), so real time with a 4 s window;
//! the drain rate itself is a benchmark (`benches/load/backlog.sh`, figures in BENCHMARKS.md),
//! not asserted here.

use std::time::Duration;

use faregate::jobs::{JobStore, Store};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::support::{Stack, in_days, sqlite_store, status_by_amadeus_alone, wait_until};

/// Requests the provider allows per window.
const LIMIT: u32 = 8;
/// The window (the simulator's "minute", shortened).
const WINDOW_MS: u64 = 4_000;
/// Jobs in the backlog: five windows' worth.
const JOBS: usize = 40;
/// Workers: every one of them may have a request in flight when the limit is first hit.
const WORKERS: u32 = 4;

fn status_args(n: usize) -> Value {
    json!({"carrier_code": "BA", "flight_number": format!("{}", 100 + n), "departure_date": in_days(3)})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_drains_under_the_rate_limit_with_429s_only_while_learning_it_sqlite() {
    let (store, _dir) = sqlite_store().await;
    drain_backlog(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_drains_under_the_rate_limit_with_429s_only_while_learning_it_postgres() {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: backlog PostgreSQL run skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_backlog_{}", uuid::Uuid::now_v7().simple());
    let store = Store::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    drain_backlog(store).await;
}

/// Submits the backlog to a gateway over `store` and checks how it drained.
async fn drain_backlog(store: Store) {
    let s = Stack::builder(1)
        .config(|mut config| {
            config.jobs.workers = WORKERS;
            // The backlog is submitted at once from one address: this test is about the queue,
            // not the per-client limits (the security tests), so they are off.
            config.limits.client_rate = None;
            config.limits.client_max_concurrent_calls = None;
            // The backlog drains against Amadeus's rate limit, not past it to flightaware.
            status_by_amadeus_alone(config)
        })
        .jobs_in(store)
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            requests_per_minute: Some(LIMIT),
            window_ms: Some(WINDOW_MS),
            ..Fault::default()
        },
    );

    let mut ids = Vec::new();
    for n in 0..JOBS {
        let (status, body) = s
            .submit("get_flight_status", json!({"arguments": status_args(n)}))
            .await;
        assert_eq!(status, 202, "{body:#}");
        ids.push(body["job_id"].as_str().unwrap_or_default().to_string());
    }

    // Wait for the backlog to end (a generous bound, only so that a regression fails instead of
    // hanging: the ideal drain is JOBS / LIMIT windows = 20 s).
    let started = Instant::now();
    let jobs = wait_until(Duration::from_secs(120), "the backlog to drain", || async {
        let (_, list) = s
            .get_json("/v1/jobs?tool=get_flight_status&limit=1000")
            .await;
        let jobs = list["jobs"].as_array().cloned().unwrap_or_default();
        let open = jobs
            .iter()
            .filter(|j| !matches!(j["status"].as_str(), Some("succeeded" | "dead")))
            .count();
        match open {
            0 => Ok(jobs),
            _ => Err(format!("{open} of {JOBS} jobs still open")),
        }
    })
    .await;

    assert_eq!(jobs.len(), JOBS);
    let succeeded = jobs.iter().filter(|j| j["status"] == "succeeded").count();
    assert_eq!(succeeded, JOBS, "every job succeeds, none dies: {jobs:#?}");
    for id in &ids {
        assert!(
            jobs.iter().any(|j| j["job_id"] == id.as_str()),
            "job {id} lost"
        );
    }

    let stats = s.sim.stats();
    let group = &stats.groups[&RouteGroup::AmadeusStatus];
    let ok = group.statuses.get(&200).copied().unwrap_or(0);
    let too_many = group.statuses.get(&429).copied().unwrap_or(0);
    // Exactly one successful provider call per job: nothing ran twice.
    assert_eq!(ok, JOBS as u64, "statuses: {:?}", group.statuses);
    eprintln!(
        "{JOBS} jobs, {ok} provider calls answered 200 and {too_many} answered 429, drained in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Five windows' worth of backlog, but 429s only from the requests in flight when the limit
    // was first hit (at most one per worker), not a burst of them at the end of every window.
    // (+1: `Retry-After` is whole seconds, so one paced request may straddle a window's edge.)
    assert!(
        too_many >= 1 && too_many <= u64::from(WORKERS) + 1,
        "429s: {too_many} (statuses {:?})",
        group.statuses
    );
}

/// Duffel's limit, announced on every answer: requests per window, the window, and the jobs
/// (more than a window's worth, so that an unpaced backlog would run into the limit).
const ANNOUNCED_LIMIT: u32 = 12;
const ANNOUNCED_WINDOW_MS: u64 = 6_000;
const ANNOUNCED_JOBS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_is_paced_from_the_announced_limit_before_any_429() {
    let (store, _dir) = sqlite_store().await;
    let s = Stack::builder(1)
        .config(|mut config| {
            config.jobs.workers = WORKERS;
            config.limits.client_rate = None;
            config.limits.client_max_concurrent_calls = None;
            // Duffel only: a 429 must not be hidden by a failover to Amadeus.
            for t in &mut config.tools {
                if t.name == "search_flights" {
                    t.providers = vec!["duffel".into()];
                }
            }
            config
        })
        .jobs_in(store)
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            requests_per_minute: Some(ANNOUNCED_LIMIT),
            window_ms: Some(ANNOUNCED_WINDOW_MS),
            ..Fault::default()
        },
    );
    for n in 0..ANNOUNCED_JOBS {
        let args =
            json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(3 + n as i64)});
        let (status, body) = s.submit("search_flights", json!({"arguments": args})).await;
        assert_eq!(status, 202, "{body:#}");
    }
    let jobs = wait_until(Duration::from_secs(60), "the backlog to drain", || async {
        let (_, list) = s.get_json("/v1/jobs?tool=search_flights&limit=1000").await;
        let jobs = list["jobs"].as_array().cloned().unwrap_or_default();
        let succeeded = jobs.iter().filter(|j| j["status"] == "succeeded").count();
        match succeeded {
            ANNOUNCED_JOBS => Ok(jobs),
            _ => Err(format!(
                "{succeeded} of {ANNOUNCED_JOBS} jobs succeeded: {jobs:?}"
            )),
        }
    })
    .await;
    assert_eq!(jobs.len(), ANNOUNCED_JOBS);
    let stats = s.sim.stats();
    let group = &stats.groups[&RouteGroup::DuffelAirSearch];
    assert_eq!(
        group.statuses.get(&201).copied(),
        Some(ANNOUNCED_JOBS as u64),
        "one offer request created (201) per job: {:?}",
        group.statuses
    );
    assert_eq!(
        group.statuses.get(&429),
        None,
        "the announced limit paces the backlog before any 429: {:?}",
        group.statuses
    );
}
