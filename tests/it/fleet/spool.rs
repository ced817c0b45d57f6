//! PostgreSQL away from one replica of two while background jobs arrive and run: no caller sees
//! an error, no job is lost, and none is run twice.
//!
//! The cut-off replica starts alone, takes a first batch of jobs and is asking the provider for
//! them (each stays search takes 3 s) when PostgreSQL is cut: their results must wait and
//! land, not be lost and run again. The second replica starts during the cut, on the same
//! schema, and must not take those jobs either. Submissions during the cut answer `202` at once
//! from the spool, and their ids read back (`queued`, "spooled on replica …"); a repeated
//! idempotency key answers the same spooled job. Jobs read during the cut answer as the replica
//! last saw them (the first batch's results while they wait to land), and the listing holds
//! every job it knows, marked partial. After PostgreSQL returns, more jobs arrive.
//! In the end every job has succeeded after one attempt, and the simulator saw exactly one
//! stays search per job: as every succeeded job asked the provider at least once, equal totals
//! mean each job's provider call was made exactly once.
//!
//! Needs `FAREGATE_TEST_POSTGRES_URL`; without it the test says so on stderr and checks nothing.

use std::time::Duration;

use faregate::jobs::{JobFilter, JobStatus, JobStore, Store};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{
    drop_schema, fleet_config, metrics, postgres_url, replica, schema, server_of, through,
};
use crate::support::{self, CutProxy, TestGateway, in_days, requests, send, wait_until};

/// Jobs submitted before, during and after the cut.
const PER_PHASE: usize = 6;

/// Submits search `n` in the background to `gateway` with idempotency key `key-{n}`; the HTTP
/// status and the answer.
async fn submit(gateway: &TestGateway, n: usize) -> (u16, Value) {
    let body = json!({
        "arguments": {"city_code": "PAR", "check_in_date": in_days(30 + n as i64),
                      "check_out_date": in_days(32 + n as i64)},
        "mode": "background",
        "idempotency_key": format!("key-{n}"),
    });
    let url = gateway.url("/v1/tools/search_hotels/call");
    let (status, _, answer) = send(reqwest::Client::new().post(url).json(&body)).await;
    (status, answer)
}

/// Submits search `n` and returns its job id, asserting the `202`.
async fn accepted(gateway: &TestGateway, n: usize) -> String {
    let (status, answer) = submit(gateway, n).await;
    assert_eq!(status, 202, "job {n}: {answer:#}");
    answer["job_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer:#}"))
        .to_string()
}

/// `GET /v1/jobs/{id}` on `gateway`: the status and the job.
async fn job(gateway: &TestGateway, id: &str) -> (u16, Value) {
    let url = gateway.url(&format!("/v1/jobs/{id}"));
    let (status, _, job) = send(reqwest::Client::new().get(url)).await;
    (status, job)
}

#[tokio::test]
async fn no_job_is_lost_nor_run_twice_while_postgres_is_away_from_a_replica() {
    let Some(url) = postgres_url("no_job_is_lost_nor_run_twice_while_postgres_is_away") else {
        return;
    };
    let schema = schema("fg_fleet_spool");
    let sim = support::start_sim(31).await;
    sim.sim.set_fault(
        RouteGroup::DuffelStays,
        Fault {
            latency_ms: 3000,
            ..Fault::default()
        },
    );
    let proxy = CutProxy::start(server_of(&url).await).await;
    let spool_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut config = fleet_config(&sim.url(), |_| {});
    config.store.spool_path = spool_dir.path().join("cut-off.db");
    let cut_off = replica(&through(&url, proxy.addr), &schema, config).await;
    let mut ids = Vec::new();

    // Before: the cut-off replica (alone yet) claims these and asks the provider.
    for n in 0..PER_PHASE {
        ids.push(accepted(&cut_off, n).await);
    }
    wait_until(
        Duration::from_secs(10),
        "the first jobs at the provider",
        || async {
            let n = requests(&sim.sim, RouteGroup::DuffelStays);
            if n as usize == PER_PHASE {
                Ok(())
            } else {
                Err(format!("{n} stays searches so far"))
            }
        },
    )
    .await;
    proxy.cut();
    let other = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;

    // During: every submission is accepted, and reads back from the spool.
    let mut answered_in = Vec::new();
    for n in PER_PHASE..2 * PER_PHASE {
        let asked = Instant::now();
        let id = accepted(&cut_off, n).await;
        answered_in.push(asked.elapsed());
        let (status, found) = job(&cut_off, &id).await;
        assert_eq!(status, 200, "{found:#}");
        assert_eq!(found["status"], "queued", "{found:#}");
        let spooled = found["spooled"].as_str().unwrap_or_default();
        assert!(spooled.contains("spooled on replica"), "{found:#}");
        ids.push(id);
    }
    // Still during: the first batch, claimed before the cut, reads back as this replica last
    // saw it (running, then succeeded with its result while that waits to land), and the
    // listing holds every job this replica knows, marked partial.
    let (status, found) = job(&cut_off, &ids[0]).await;
    assert_eq!(status, 200, "{found:#}");
    assert!(
        found["as_seen"].is_string() && found["as_of"].is_string(),
        "{found:#}"
    );
    wait_until(
        Duration::from_secs(10),
        "the first batch's results to read back during the cut",
        || async {
            for id in &ids[..PER_PHASE] {
                let (status, found) = job(&cut_off, id).await;
                let as_seen = found["as_seen"].as_str().unwrap_or_default();
                if status != 200 || !as_seen.contains("last saw it") {
                    return Err(format!("{status}: {found:#}"));
                }
                if found["status"] != "succeeded" || !found["result"]["data"].is_object() {
                    return Err(format!("job {id} reads {}", found["status"]));
                }
            }
            Ok(())
        },
    )
    .await;
    let list_url = cut_off.url("/v1/jobs");
    let (status, _, listed) = send(reqwest::Client::new().get(list_url)).await;
    assert_eq!(status, 200, "{listed:#}");
    assert!(listed["partial"].is_string(), "{listed:#}");
    let listed_ids: Vec<&str> = listed["jobs"]
        .as_array()
        .map(|jobs| jobs.iter().filter_map(|j| j["job_id"].as_str()).collect())
        .unwrap_or_default();
    for id in &ids {
        assert!(
            listed_ids.contains(&id.as_str()),
            "{id} not listed: {listed:#}"
        );
    }
    let (status, again) = submit(&cut_off, PER_PHASE).await;
    assert_eq!(status, 202, "{again:#}");
    assert_eq!(
        again["job_id"], ids[PER_PHASE],
        "the same key, the same spooled job"
    );
    assert!(
        metrics(&cut_off)
            .await
            .contains(&format!("faregate_jobs_spooled {PER_PHASE}")),
        "the gauge counts the spooled jobs"
    );

    // After: PostgreSQL returns, more jobs arrive.
    proxy.restore();
    let restored = Instant::now();
    for n in 2 * PER_PHASE..3 * PER_PHASE {
        ids.push(accepted(&cut_off, n).await);
    }

    let check = Store::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let all = ids.len();
    wait_until(Duration::from_secs(60), "every job to succeed", || async {
        let jobs = check
            .list(JobFilter::default(), 1000)
            .await
            .map_err(|e| e.to_string())?;
        let done = jobs
            .iter()
            .filter(|j| j.status == JobStatus::Succeeded)
            .count();
        if done == all && jobs.len() == all {
            Ok(())
        } else {
            let states: Vec<_> = jobs.iter().map(|j| (&j.id, j.status)).collect();
            Err(format!("{done} of {all} succeeded: {states:?}"))
        }
    })
    .await;
    // Figures for the reader (not asserted: speed is for benches).
    eprintln!(
        "spool: submissions during the cut answered in {answered_in:?}; every job succeeded {:?} after PostgreSQL returned",
        restored.elapsed()
    );
    for id in &ids {
        let stored = check
            .get(id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("job {id} was lost"));
        assert_eq!(stored.attempts, 1, "{stored:#?}");
    }
    assert_eq!(
        requests(&sim.sim, RouteGroup::DuffelStays) as usize,
        all,
        "one stays search per job: none ran twice"
    );
    // A job accepted into the spool now reads from the store, on any replica.
    let (status, found) = job(&other, &ids[PER_PHASE]).await;
    assert_eq!(status, 200, "{found:#}");
    assert_eq!(found["status"], "succeeded", "{found:#}");
    assert!(found.get("spooled").is_none(), "{found:#}");
    wait_until(Duration::from_secs(5), "the spool to empty", || async {
        let text = metrics(&cut_off).await;
        if text.contains("faregate_jobs_spooled 0") {
            Ok(())
        } else {
            Err("faregate_jobs_spooled is not 0".to_string())
        }
    })
    .await;
    drop((cut_off, other));
    drop_schema(&url, &schema).await;
}
