//! A replica that loses PostgreSQL keeps answering with its own breakers, says so, and rejoins
//! when PostgreSQL returns: what it decided meanwhile reaches the others.
//!
//! PostgreSQL is taken away from one replica only, through a proxy the test cuts: the server
//! itself is shared with every other test and must keep running.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};

use super::{
    breaker, drop_schema, fleet_config, metrics, postgres_url, ready, replica, schema,
    search_flights, server_of, through, wait_connected, wait_for_state,
};
use crate::support::{self, CutProxy, TestGateway, send, wait_until};

const FLIGHTS: &str = "search_flights.duffel";

#[tokio::test]
async fn a_replica_without_postgres_serves_on_its_own_and_rejoins() {
    let Some(url) = postgres_url("a_replica_without_postgres_serves_on_its_own") else {
        return;
    };
    let schema = schema("fg_fleet_degraded");
    let sim = support::start_sim(25).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    let cut_off = replica(
        &through(&url, proxy.addr),
        &schema,
        fleet_config(&sim.url(), |_| {}),
    )
    .await;
    let other = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    assert_eq!(ready(&cut_off).await["fleet"]["connected"], true);

    proxy.cut();
    // Callers see no error while the store is away: the answers are the provider's.
    for _ in 0..20 {
        let (status, envelope) = search_flights(&cut_off).await;
        assert_eq!(status, 200);
        assert_eq!(envelope["status"], "ok", "{envelope:#}");
    }
    wait_connected(&cut_off, false).await;
    let r = ready(&cut_off).await;
    assert_eq!(
        r["status"], "ready",
        "a degraded replica still serves: {r:#}"
    );
    assert_eq!(r["store"]["kind"], "postgres", "{r:#}");
    assert_eq!(
        r["store"]["answers"], false,
        "and says its job store does not answer: {r:#}"
    );
    // What still works, and what does not: bookings need their ledger entry in the store.
    let said = r["store"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("reads are served") && said.contains("every booking is refused"),
        "{r:#}"
    );
    // Agents are told so too: the bookings are not listed among the tools that work now.
    let available = available_tools(&cut_off).await;
    assert!(
        available.contains(&"search_flights".to_string())
            && !available.contains(&"book_flight".to_string()),
        "{available:?}"
    );
    // The gateway raises an alert of its own once the store has been away 10 s.
    let alert = wait_until(
        Duration::from_secs(20),
        "the store_unreachable alert",
        || async {
            let alerts = send(reqwest::Client::new().get(cut_off.url("/v1/alerts")))
                .await
                .2;
            let found = alerts["alerts"].as_array().and_then(|all| {
                all.iter()
                    .find(|a| a["alert"] == "store_unreachable")
                    .cloned()
            });
            found.ok_or_else(|| format!("{alerts:#}"))
        },
    )
    .await;
    assert_eq!(alert["severity"], "P1", "{alert:#}");
    assert!(
        alert["summary"]
            .as_str()
            .is_some_and(|s| s.contains("every booking is refused")),
        "{alert:#}"
    );
    assert!(
        metrics(&cut_off)
            .await
            .contains("faregate_fleet_connected 0"),
        "the gauge says so"
    );

    // Its own breakers still work: the provider fails, and it opens on its own calls.
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    wait_until(
        Duration::from_secs(10),
        "the cut-off replica to open",
        || async {
            let (status, _) = search_flights(&cut_off).await;
            assert_eq!(
                status, 200,
                "an open provider is a tool result, not an error"
            );
            let b = breaker(&cut_off, FLIGHTS).await;
            if b["state"] == "open" {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;
    assert_eq!(
        breaker(&other, FLIGHTS).await["state"],
        "closed",
        "the other replica cannot have heard of it yet"
    );

    // PostgreSQL returns: the replica rejoins and its open reaches the other one.
    proxy.restore();
    wait_connected(&cut_off, true).await;
    assert!(
        available_tools(&cut_off)
            .await
            .contains(&"book_flight".to_string()),
        "bookings are listed again once the store answers"
    );
    wait_until(
        Duration::from_secs(10),
        "the job store to answer again",
        || async {
            let r = ready(&cut_off).await;
            if r["store"]["answers"] == true {
                Ok(())
            } else {
                Err(format!("{r:#}"))
            }
        },
    )
    .await;
    wait_for_state(&other, FLIGHTS, "open").await;
    wait_until(
        Duration::from_secs(10),
        "the store alert to resolve",
        || async {
            let alerts = send(reqwest::Client::new().get(cut_off.url("/v1/alerts")))
                .await
                .2;
            let all = alerts["alerts"].as_array().cloned().unwrap_or_default();
            if !all.iter().any(|a| a["alert"] == "store_unreachable") {
                Ok(())
            } else {
                Err(format!("{alerts:#}"))
            }
        },
    )
    .await;
    assert!(
        metrics(&cut_off)
            .await
            .contains("faregate_fleet_connected 1")
    );
    drop((cut_off, other));
    drop_schema(&url, &schema).await;
}

/// The tools `GET /v1/tools?available=true` lists on `gateway`.
async fn available_tools(gateway: &TestGateway) -> Vec<String> {
    let url = gateway.url("/v1/tools?available=true");
    let (status, _, body) = send(reqwest::Client::new().get(url)).await;
    assert_eq!(status, 200, "{body}");
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}
