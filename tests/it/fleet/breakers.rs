//! Replicas on one PostgreSQL act as one gateway's breakers: an open propagates with its
//! open-until, half-open probes are leased fleet-wide, and a forced state survives restarts
//! and shows on every replica (on SQLite, for one node, across its restart).

use std::time::Duration;

use faregate::jobs::Store;
use faregate_sim::{Fault, RateLimitFault, RouteGroup};

use super::{
    breaker, drop_schema, epoch_ms, fleet_config, force, postgres_url, replica, replica_name,
    schema, search_flights, wait_for_state,
};
use crate::support::{self, NoEnv, TestGateway, requests, send, wait_until};

const FLIGHTS: &str = "search_flights.duffel";

fn outage() -> Fault {
    Fault {
        outage: true,
        ..Fault::default()
    }
}

#[tokio::test]
async fn an_open_propagates_with_its_open_until_and_shows_in_every_history() {
    let Some(url) = postgres_url("an_open_propagates") else {
        return;
    };
    let schema = schema("fg_fleet_open");
    let sim = support::start_sim(21).await;
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    let mut gateways = Vec::new();
    for _ in 0..3 {
        let config = fleet_config(&sim.url(), |_| {});
        gateways.push(replica(&url, &schema, config).await);
    }
    // Trip the first replica's breaker with its own calls.
    let first = wait_until(
        Duration::from_secs(10),
        "the first replica to open",
        || async {
            search_flights(&gateways[0]).await;
            let b = breaker(&gateways[0], FLIGHTS).await;
            if b["state"] == "open" {
                Ok(b)
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;
    let open_until = epoch_ms(&first["open_until"]);
    let before = requests(&sim.sim, RouteGroup::DuffelAirSearch);
    for gateway in &gateways[1..] {
        let followed = wait_for_state(gateway, FLIGHTS, "open").await;
        let until = epoch_ms(&followed["open_until"]);
        assert!(
            (until - open_until).abs() <= 20,
            "the same open-until: {until} vs {open_until}"
        );
        // A followed open counts nothing of this replica's own traffic.
        assert_eq!(followed["calls_in_window"], 0, "{followed:#}");
        let (status, envelope) = search_flights(gateway).await;
        assert_eq!(status, 200);
        assert_eq!(envelope["status"], "unavailable", "{envelope:#}");
    }
    assert_eq!(
        requests(&sim.sim, RouteGroup::DuffelAirSearch),
        before,
        "the replicas that followed sent the provider nothing"
    );
    // Every replica shows the fleet's history: the first replica's own open, by its name.
    let name = replica_name(&gateways[0]).await;
    wait_until(
        Duration::from_secs(10),
        "the open in the last replica's history",
        || async {
            let b = breaker(&gateways[2], FLIGHTS).await;
            let transitions = b["transitions"].as_array().cloned().unwrap_or_default();
            let found = transitions.iter().any(|t| {
                t["to"] == "open"
                    && t["reason"] == "consecutive_failures"
                    && t["replica"] == name.as_str()
            });
            if found { Ok(()) } else { Err(format!("{b:#}")) }
        },
    )
    .await;
    drop(gateways);
    drop_schema(&url, &schema).await;
}

/// Flight searches spread over the replicas, as a balancer does, until every replica's flight
/// breaker is open.
async fn open_by_spread_calls(gateways: &[TestGateway]) {
    let mut next = 0;
    wait_until(Duration::from_secs(20), "every replica to open", || {
        next += 1;
        let gateway = &gateways[next % gateways.len()];
        async move {
            search_flights(gateway).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut states = Vec::new();
            for g in gateways {
                states.push(breaker(g, FLIGHTS).await["state"].clone());
            }
            if states.iter().all(|s| s == "open") {
                Ok(())
            } else {
                Err(format!("{states:?}"))
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_fleet_opens_on_its_failures_together_not_on_each_replicas() {
    let Some(url) = postgres_url("a_fleet_opens_on_its_failures_together") else {
        return;
    };
    let schema = schema("fg_fleet_run");
    let sim = support::start_sim(26).await;
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    let mut gateways = Vec::new();
    for _ in 0..3 {
        gateways.push(replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await);
    }
    open_by_spread_calls(&gateways).await;
    let sent = requests(&sim.sim, RouteGroup::DuffelAirSearch);
    // Alone, each replica would send its own 5 failures in a row (15 in all); the fleet counts
    // its failures together.
    assert!(
        sent <= 10,
        "the fleet sent {sent} requests before it opened"
    );
    drop(gateways);
    drop_schema(&url, &schema).await;
}

/// The same run of failures, each a 429 `Retry-After: 20`: the replicas tell each other the
/// wait with each failure, so the replica whose run reaches five (most of it its peers') opens
/// as the provider's rate-limit pause, with reason `retry_after` and for those 20 s, and every
/// replica follows that open.
#[tokio::test]
async fn a_fleets_run_of_429s_with_retry_after_opens_as_a_rate_limit_pause() {
    let Some(url) = postgres_url("a_fleets_run_of_429s_with_retry_after") else {
        return;
    };
    let schema = schema("fg_fleet_pause");
    let sim = support::start_sim(27).await;
    let limited = Fault {
        rate_limited: Some(RateLimitFault { retry_after_s: 20 }),
        ..Fault::default()
    };
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, limited);
    let mut gateways = Vec::new();
    for _ in 0..3 {
        gateways.push(replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await);
    }
    open_by_spread_calls(&gateways).await;
    for gateway in &gateways {
        let b = breaker(gateway, FLIGHTS).await;
        let remaining = b["open_remaining_s"].as_f64().unwrap_or(f64::MAX);
        assert!(remaining <= 20.0, "the provider's 20 s, not 30: {b:#}");
        // The fleet's history reaches each replica through the store.
        let opening = wait_until(
            Duration::from_secs(10),
            "the opening in the history",
            || async move {
                let b = breaker(gateway, FLIGHTS).await;
                let transitions = b["transitions"].as_array().cloned().unwrap_or_default();
                transitions
                    .into_iter()
                    .find(|t| t["from"] == "closed" && t["to"] == "open")
                    .ok_or_else(|| format!("{b:#}"))
            },
        )
        .await;
        assert_eq!(opening["reason"], "retry_after", "{opening:#}");
    }
    drop(gateways);
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn half_open_probes_are_leased_fleet_wide() {
    let Some(url) = postgres_url("half_open_probes_are_leased_fleet_wide") else {
        return;
    };
    let schema = schema("fg_fleet_probes");
    let sim = support::start_sim(22).await;
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    let probes = 1;
    let mut gateways = Vec::new();
    for _ in 0..3 {
        let config = fleet_config(&sim.url(), |b| {
            b.open_for(Duration::from_secs(1))
                .open_for_max(Duration::from_secs(60))
                .half_open_probes(probes)
                .half_open_successes(1);
        });
        gateways.push(replica(&url, &schema, config).await);
    }
    wait_until(
        Duration::from_secs(10),
        "the first replica to open",
        || async {
            search_flights(&gateways[0]).await;
            let b = breaker(&gateways[0], FLIGHTS).await;
            if b["state"] == "open" {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;
    for gateway in &gateways[1..] {
        wait_for_state(gateway, FLIGHTS, "open").await;
    }
    let opened = requests(&sim.sim, RouteGroup::DuffelAirSearch);
    // Every replica keeps calling through the half-open period, until the probe's failure has
    // reopened the breaker (the next open lasts twice as long, so no second period starts).
    wait_until(
        Duration::from_secs(20),
        "a probe to fail and reopen the breaker",
        || async {
            for gateway in &gateways {
                search_flights(gateway).await;
            }
            let b = breaker(&gateways[0], FLIGHTS).await;
            let reopened = b["transitions"].as_array().is_some_and(|ts| {
                ts.iter()
                    .any(|t| t["from"] == "half_open" && t["to"] == "open")
            });
            if reopened {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;
    // Counted at once, before anything else waits: a second half-open period starts 2 s after
    // the reopen, and its probe would be another (rightful) one on a slow machine.
    let probed = requests(&sim.sim, RouteGroup::DuffelAirSearch) - opened;
    // Every replica learns of the reopen. Not "is open now": the reopen lasts 2 s, and on a busy
    // machine a replica read after that is half-open again, idle, with the reopen behind it.
    for gateway in &gateways {
        wait_until(Duration::from_secs(10), "the reopen", || async {
            let b = breaker(gateway, FLIGHTS).await;
            let reopened = b["transitions"].as_array().is_some_and(|ts| {
                ts.iter()
                    .any(|t| t["from"] == "half_open" && t["to"] == "open")
            });
            if b["state"] == "open" || reopened {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        })
        .await;
    }
    assert!(
        probed >= 1 && probed <= u64::from(probes),
        "the fleet sent {probed} half-open probes; at most {probes} may go, one replica probing"
    );
    drop(gateways);
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_forced_state_shows_on_every_replica_and_survives_a_restart() {
    let Some(url) = postgres_url("a_forced_state_survives_a_restart") else {
        return;
    };
    let schema = schema("fg_fleet_forced");
    let sim = support::start_sim(23).await;
    let hotels = "search_hotels.duffel";
    let first = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    let second = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    force(&first, hotels, "open").await;
    wait_for_state(&second, hotels, "forced_open").await;
    drop((first, second));
    // A replica started after all of them stopped is forced open before its first call.
    let later = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    let b = breaker(&later, hotels).await;
    assert_eq!(b["state"], "forced_open", "{b:#}");
    let forced = b["transitions"].as_array().cloned().unwrap_or_default();
    assert!(
        forced.iter().any(|t| t["to"] == "forced_open"),
        "the history came back with the state: {b:#}"
    );
    // And handing it back to the policy is shared too.
    let another = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    force(&later, hotels, "auto").await;
    wait_for_state(&another, hotels, "closed").await;
    drop((later, another));
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_single_node_keeps_its_forced_state_across_a_restart() {
    let sim = support::start_sim(24).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store_url = format!("sqlite://{}", dir.path().join("faregate.db").display());
    let start = || async {
        let store = Store::open(&store_url)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        TestGateway::start_in_fleet(fleet_config(&sim.url(), |_| {}), &NoEnv, store).await
    };
    let mut gateway = start().await;
    force(&gateway, FLIGHTS, "closed").await;
    let _ = gateway.begin_shutdown().await;
    let restarted = start().await;
    let b = breaker(&restarted, FLIGHTS).await;
    assert_eq!(b["state"], "forced_closed", "{b:#}");
    let ready = send(reqwest::Client::new().get(restarted.url("/readyz")))
        .await
        .2;
    assert_eq!(ready["fleet"]["shared"], false, "{ready:#}");
}

#[tokio::test]
async fn a_node_restarted_after_an_unrecovered_open_elapsed_probes_before_it_serves() {
    // The open's time passed while the node was down, and no probe has succeeded since: it
    // comes back half-open (one probe to the provider), not closed (every call to a provider
    // that is still down, and back-in-service notices told "available again").
    let sim = support::start_sim(25).await;
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store_url = format!("sqlite://{}", dir.path().join("faregate.db").display());
    let start = || async {
        let store = Store::open(&store_url)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let config = fleet_config(&sim.url(), |b| {
            b.open_for(Duration::from_millis(400))
                .open_for_max(Duration::from_millis(400));
        });
        TestGateway::start_in_fleet(config, &NoEnv, store).await
    };
    let mut gateway = start().await;
    wait_until(Duration::from_secs(10), "the breaker to open", || async {
        search_flights(&gateway).await;
        let b = breaker(&gateway, FLIGHTS).await;
        if b["state"] == "open" {
            Ok(())
        } else {
            Err(format!("{b:#}"))
        }
    })
    .await;
    let _ = gateway.begin_shutdown().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let restarted = start().await;
    let b = breaker(&restarted, FLIGHTS).await;
    assert_eq!(b["state"], "half_open", "{b:#}");
    // Its first call is the probe, which the provider still fails: open again.
    search_flights(&restarted).await;
    wait_for_state(&restarted, FLIGHTS, "open").await;
}
