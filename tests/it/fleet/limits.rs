//! A client's rate in a fleet: calls spread over two replicas of one PostgreSQL store are
//! admitted at the client's rate once, not once per replica.

use std::time::Duration;

use faregate::config::Rate;
use serde_json::json;
use tokio::time::{Instant, MissedTickBehavior};

use super::{drop_schema, fleet_config, postgres_url, replica, schema};
use crate::support::{self, TestGateway};

/// Two replicas of one store (`url`, `schema`) in front of the simulator at `sim_url`, every
/// client held to `count` calls `per` period, `burst` at once.
async fn two_replicas(
    url: &str,
    schema: &str,
    sim_url: &str,
    (count, per): (u32, Duration),
    burst: u32,
) -> [TestGateway; 2] {
    let config = || {
        let mut config = fleet_config(sim_url, |_| {});
        config.limits.client_rate = Some(Rate { count, per });
        config.limits.client_burst = burst;
        config
    };
    [
        replica(url, schema, config()).await,
        replica(url, schema, config()).await,
    ]
}

#[tokio::test]
async fn a_client_spreading_its_calls_over_replicas_gets_its_rate_once() {
    let Some(url) = postgres_url("a_client_spreading_its_calls_over_replicas_gets_its_rate_once")
    else {
        return;
    };
    let schema = schema("fg_fleet_limits");
    let sim = support::start_sim(29).await;
    let replicas = two_replicas(&url, &schema, &sim.url(), (10, Duration::from_secs(1)), 2).await;

    // 40 calls a second for 4 s, every other one on the other replica: four times the rate.
    // A call with arguments the tool refuses is admitted or refused like any other (the limit
    // comes first) and costs no provider request.
    let client = reqwest::Client::new();
    let body = json!({"arguments": {"origin": "nowhere"}});
    let mut tick = tokio::time::interval(Duration::from_millis(25));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let started = Instant::now();
    let (mut admitted, mut refused, mut sent) = (0u32, 0u32, 0usize);
    while started.elapsed() < Duration::from_secs(4) {
        tick.tick().await;
        let gateway = &replicas[sent % 2];
        sent += 1;
        let res = client
            .post(gateway.url("/v1/tools/search_flights/call"))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        match res.status().as_u16() {
            422 => admitted += 1,
            429 => refused += 1,
            other => panic!("call {sent}: HTTP {other}"),
        }
    }
    let took = started.elapsed().as_secs_f64();
    // The fleet's rate over the run, plus each replica's burst and what each may admit between
    // two exchanges (100 ms, longer on a loaded machine) before it hears of the other's calls.
    // Counted per replica, the two would admit about twice the rate (each its own 10/s).
    let most = (10.0 * took) as u32 + 2 * 2 + 6;
    assert!(
        admitted <= most,
        "{admitted} of {sent} calls admitted in {took:.1} s at 10/s for the fleet (at most {most})"
    );
    assert!(
        f64::from(admitted) >= 10.0 * took * 0.7,
        "the fleet still admits about its rate: {admitted} of {sent} in {took:.1} s"
    );
    assert!(refused > 0, "{refused}");
    drop(replicas);
    drop_schema(&url, &schema).await;
}

/// A slow rate (one call in ten seconds, no burst) spread over two replicas: a replica that has
/// not served the client yet hears the other's call before the client's next one lands there,
/// and refuses it until the fleet's bucket is full again, with the same wait the other says.
#[tokio::test]
async fn a_slow_rate_holds_for_the_fleet_when_no_replica_sees_a_second_call() {
    let Some(url) =
        postgres_url("a_slow_rate_holds_for_the_fleet_when_no_replica_sees_a_second_call")
    else {
        return;
    };
    let schema = schema("fg_fleet_slow_rate");
    let sim = support::start_sim(31).await;
    let replicas = two_replicas(&url, &schema, &sim.url(), (6, Duration::from_secs(60)), 1).await;
    let client = reqwest::Client::new();
    let body = json!({"arguments": {"origin": "nowhere"}});
    let mut outcomes = Vec::new();
    // One call on the first replica, then one every half second alternating, the first on the
    // second replica a second later (time enough for both to have heard: each reads at least
    // every 250 ms).
    for (i, wait) in [0u64, 1000, 500, 500, 500].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let res = client
            .post(replicas[i % 2].url("/v1/tools/search_flights/call"))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let retry_after: Option<u64> = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        outcomes.push((res.status().as_u16(), retry_after));
    }
    assert_eq!(
        outcomes[0].0, 422,
        "the first call is admitted: {outcomes:?}"
    );
    for (i, (status, retry_after)) in outcomes.iter().enumerate().skip(1) {
        assert_eq!(
            *status,
            429,
            "call {i}, on replica {}: refused, one call in 10 s for the fleet: {outcomes:?}",
            i % 2
        );
        assert!(
            retry_after.is_some_and(|s| (5..=10).contains(&s)),
            "call {i}: the wait until the fleet's bucket has room: {outcomes:?}"
        );
    }
    drop(replicas);
    drop_schema(&url, &schema).await;
}
