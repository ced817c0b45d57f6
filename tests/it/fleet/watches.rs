//! Watches across gateways: a watch outlives a restart on its SQLite file, and two replicas on
//! one PostgreSQL run each of its instants once (one job per instant, one provider request per
//! job, one recorded run per job).
//!
//! The PostgreSQL test needs `FAREGATE_TEST_POSTGRES_URL` (`.ci/run` sets it); without it the
//! test says so on stderr and checks nothing.

use std::time::Duration;

use faregate::config::Config;
use faregate::jobs::{JobFilter, JobStatus, JobStore, Store};
use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use super::{drop_schema, postgres_url, replica, schema};
use crate::support::{self, NoEnv, TestGateway, in_days, requests, send, wait_until};

/// The shipped configuration against `sim_url`, watches allowed every 200 ms.
fn config(sim_url: &str) -> Config {
    let mut config = support::config_for(sim_url);
    config.limits.client_rate = None;
    for t in &mut config.tools {
        t.watch_min_interval = Some(Duration::from_millis(200));
    }
    config
}

async fn create(gateway: &TestGateway, ends: Value) -> String {
    let body = json!({"tool": "get_flight_status", "every": "200ms", "ends": ends,
        "arguments": {"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(2)}});
    let (status, _, created) = send(
        reqwest::Client::new()
            .post(gateway.url("/v1/watches"))
            .json(&body),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    created["watch_id"].as_str().unwrap_or_default().to_string()
}

async fn watch_on(gateway: &TestGateway, id: &str) -> Value {
    send(reqwest::Client::new().get(gateway.url(&format!("/v1/watches/{id}"))))
        .await
        .2
}

/// Waits until `gateway` shows the watch matching `done`.
async fn wait_for(
    gateway: &TestGateway,
    id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(Duration::from_secs(30), what, || async {
        let w = watch_on(gateway, id).await;
        if done(&w) {
            Ok(w)
        } else {
            Err(format!("{w:#}"))
        }
    })
    .await
}

fn runs(w: &Value) -> u64 {
    w["runs"].as_u64().unwrap_or(0)
}

/// The jobs of watch `id` in `store`, by status.
async fn jobs_of(store: &Store, id: &str) -> Vec<(String, JobStatus)> {
    let prefix = format!("watch:{id}:");
    store
        .list(
            JobFilter {
                tool: Some("get_flight_status"),
                ..JobFilter::default()
            },
            1000,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter_map(|j| {
            let key = j.idempotency_key?;
            key.starts_with(&prefix).then_some((key, j.status))
        })
        .collect()
}

#[tokio::test]
async fn a_watch_survives_a_restart_on_its_sqlite_file() {
    let sim = support::start_sim(31).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
    let open = || async {
        let store = Store::open(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
        store
    };
    let mut first = TestGateway::start_with_jobs(config(&sim.url()), &NoEnv, open().await).await;
    let id = create(&first, json!({})).await;
    wait_for(&first, &id, "two runs", |w| runs(w) >= 2).await;
    let _ = first.begin_shutdown().await;

    let second = TestGateway::start_with_jobs(config(&sim.url()), &NoEnv, open().await).await;
    let before = runs(&watch_on(&second, &id).await);
    assert!(before >= 2, "the runs before the restart are kept");
    let after = wait_for(&second, &id, "runs after the restart", |w| {
        runs(w) >= before + 2
    })
    .await;
    assert_eq!(after["state"], "active");
    assert_eq!(after["last_result"]["status"], "ok", "{after:#}");
    let keys = jobs_of(&open().await, &id).await;
    let distinct: std::collections::BTreeSet<&String> = keys.iter().map(|(k, _)| k).collect();
    assert_eq!(distinct.len(), keys.len(), "one job per instant: {keys:?}");
}

#[tokio::test]
async fn two_replicas_on_postgres_run_each_instant_of_a_watch_once() {
    let Some(url) = postgres_url("watches fleet test") else {
        return;
    };
    let schema = schema("fg_watches");
    let sim = support::start_sim(32).await;
    let a = replica(&url, &schema, config(&sim.url())).await;
    let b = replica(&url, &schema, config(&sim.url())).await;
    let id = create(&a, json!({"after_runs": 10})).await;
    // Both replicas look for due instants every 250 ms: over ten runs, they race on most.
    let ended = wait_for(&b, &id, "ten runs, read on the other replica", |w| {
        w["state"] == "ended"
    })
    .await;
    assert_eq!(runs(&ended), 10, "{ended:#}");

    let store = Store::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let jobs = jobs_of(&store, &id).await;
    let succeeded = jobs
        .iter()
        .filter(|(_, s)| *s == JobStatus::Succeeded)
        .count() as u64;
    assert_eq!(
        (succeeded, jobs.len() as u64),
        (10, 10),
        "one succeeded job per recorded run, and no other: {jobs:?}"
    );
    assert_eq!(
        requests(&sim.sim, RouteGroup::AmadeusStatus),
        succeeded,
        "one provider request per run"
    );
    drop((a, b));
    drop_schema(&url, &schema).await;
}
