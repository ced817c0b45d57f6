//! A client's rate in a fleet: calls spread over two replicas of one PostgreSQL store are
//! admitted at the client's rate once, not once per replica.

use std::time::Duration;

use faregate::config::Rate;
use serde_json::json;
use tokio::time::{Instant, MissedTickBehavior};

use super::{drop_schema, fleet_config, postgres_url, replica, schema};
use crate::support;

#[tokio::test]
async fn a_client_spreading_its_calls_over_replicas_gets_its_rate_once() {
    let Some(url) = postgres_url("a_client_spreading_its_calls_over_replicas_gets_its_rate_once")
    else {
        return;
    };
    let schema = schema("fg_fleet_limits");
    let sim = support::start_sim(29).await;
    let config = || {
        let mut config = fleet_config(&sim.url(), |_| {});
        config.limits.client_rate = Some(Rate {
            count: 10,
            per: Duration::from_secs(1),
        });
        config.limits.client_burst = 2;
        config
    };
    let replicas = [
        replica(&url, &schema, config()).await,
        replica(&url, &schema, config()).await,
    ];

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
