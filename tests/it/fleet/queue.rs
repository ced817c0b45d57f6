//! A fleet: three gateway instances sharing one PostgreSQL queue, 1,000 background jobs; each
//! job runs exactly once (the simulator counts one provider request per job, and every job ends
//! `succeeded` after one attempt).
//!
//! Needs `FAREGATE_TEST_POSTGRES_URL` (`.ci/run` sets it); without it the test says so on
//! stderr and checks nothing.

use std::time::Duration;

use faregate::jobs::{JobFilter, JobStatus, JobStore, Store};
use faregate_sim::RouteGroup;
use futures::StreamExt;
use serde_json::json;
use tokio::time::Instant;

use crate::support::{self, NoEnv, TestGateway, in_days, requests, send, wait_until};

const JOBS: usize = 1000;

#[tokio::test]
async fn three_instances_run_each_of_1000_jobs_exactly_once() {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: fleet test skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_fleet_{}", uuid::Uuid::now_v7().simple());
    let test_sim = support::start_sim(5).await;

    let mut gateways = Vec::new();
    for _ in 0..3 {
        let store = Store::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
        let mut config = support::config_for(&test_sim.url());
        for t in &mut config.tools {
            t.providers.retain(|p| p == "duffel");
        }
        // 1000 submissions from one address in seconds: this test is about the queue, not
        // the per-client limits (the security tests), so they are off.
        config.limits.client_rate = None;
        config.limits.client_max_concurrent_calls = None;
        gateways.push(TestGateway::start_with_jobs(config, &NoEnv, store).await);
    }
    let http = reqwest::Client::new();
    let body = json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32)},
                      "mode": "background"});
    // Spread the submissions over the three instances, 32 at a time.
    let ids: Vec<String> = futures::stream::iter(0..JOBS)
        .map(|i| {
            let url = gateways[i % 3].url("/v1/tools/search_hotels/call");
            let http = http.clone();
            let body = body.clone();
            async move {
                let (_, _, res) = send(http.post(url).json(&body)).await;
                res["job_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{res:#}"))
                    .to_string()
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert_eq!(ids.len(), JOBS);

    let check = Store::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    wait_until(Duration::from_secs(120), "the queue to drain", || async {
        let stats = check
            .stats(faregate::clock::epoch_ms())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let succeeded: u64 = stats
            .depth
            .iter()
            .filter(|(_, s, _)| *s == JobStatus::Succeeded)
            .map(|(_, _, n)| n)
            .sum();
        if succeeded as usize == JOBS {
            Ok(())
        } else {
            Err(format!("{stats:?}"))
        }
    })
    .await;
    let all = check
        .list(
            JobFilter {
                status: Some(JobStatus::Succeeded),
                ..JobFilter::default()
            },
            2000,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), JOBS);
    assert!(all.iter().all(|j| j.attempts == 1), "every job ran once");
    assert_eq!(
        requests(&test_sim.sim, RouteGroup::DuffelStays) as usize,
        JOBS,
        "one provider request per job: none ran twice"
    );
    eprintln!(
        "fleet: {JOBS} jobs on 3 instances drained in {:?}",
        started.elapsed()
    );
}
