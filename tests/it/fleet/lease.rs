//! The half-open probe lease goes to a replica with callers: a replica with none (drained from
//! its balancer) that took the lease when the half-open period began lets it lapse, and a
//! replica whose callers wait takes it and probes, so the fleet leaves half-open. Held by the
//! idle replica for good, the lease would keep the fleet half-open for good: a half-open period
//! with no probe never ends, and the others refuse every call meanwhile.

use std::time::Duration;

use faregate::store::Db;
use faregate_sim::{Fault, RouteGroup};

use super::{
    FLIGHTS, breaker, drop_schema, one_probe_config, postgres_url, replica, replica_name, schema,
    search_flights, server_of, through, trip, wait_connected, wait_for_state,
};
use crate::support::{self, CutProxy, wait_until};

/// The owners of the probe leases in `schema`.
async fn lease_owners(url: &str, schema: &str) -> Vec<String> {
    let db = Db::open_postgres(url, Some(schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let owners = db
        .fetch("SELECT owner FROM faregate_probe_leases", &[], |r| {
            r.text("owner")
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    owners.into_iter().flatten().collect()
}

#[tokio::test]
async fn an_idle_replica_hands_the_probe_lease_to_one_with_callers() {
    let Some(url) = postgres_url("an_idle_replica_hands_the_probe_lease_to_one_with_callers")
    else {
        return;
    };
    let schema = schema("fg_fleet_lease");
    let sim = support::start_sim(29).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    let config = || one_probe_config(&sim.url());
    let idle = replica(&url, &schema, config()).await;
    let busy = replica(&through(&url, proxy.addr), &schema, config()).await;
    let idle_name = replica_name(&idle).await;
    // The busy replica is away while both open and the half-open period begins, so the idle
    // one takes the lease.
    proxy.cut();
    wait_connected(&busy, false).await;
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    trip(&busy).await;
    trip(&idle).await;
    sim.sim
        .set_fault(RouteGroup::DuffelAirSearch, Fault::default());
    wait_until(
        Duration::from_secs(10),
        "the idle replica to take the lease",
        || async {
            let owners = lease_owners(&url, &schema).await;
            if owners == [idle_name.as_str()] {
                Ok(())
            } else {
                Err(format!("{owners:?}"))
            }
        },
    )
    .await;
    proxy.restore();
    wait_connected(&busy, true).await;
    // The busy replica's callers get the probe, and the fleet recovers with it.
    wait_until(
        Duration::from_secs(20),
        "the busy replica to probe and recover",
        || async {
            search_flights(&busy).await;
            let b = breaker(&busy, FLIGHTS).await;
            if b["state"] == "closed" {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;
    // A ramp is published as `closed` (its detail says `ramp`).
    wait_for_state(&idle, FLIGHTS, "closed").await;
    drop((idle, busy));
    drop_schema(&url, &schema).await;
}

/// After a half-open period's first lease has lapsed with no caller (a quiet night), the first
/// caller on either replica waits a moment for the lease nobody holds and probes: it is
/// answered by the provider, not told the provider is not answering when nobody asked it.
#[tokio::test]
async fn the_first_caller_after_a_quiet_half_open_spell_probes_instead_of_a_fallback() {
    let Some(url) =
        postgres_url("the_first_caller_after_a_quiet_half_open_spell_probes_instead_of_a_fallback")
    else {
        return;
    };
    let schema = schema("fg_fleet_lease_first");
    let sim = support::start_sim(31).await;
    let config = || one_probe_config(&sim.url());
    let a = replica(&url, &schema, config()).await;
    let b = replica(&url, &schema, config()).await;
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    trip(&a).await;
    wait_for_state(&b, FLIGHTS, "open").await;
    sim.sim
        .set_fault(RouteGroup::DuffelAirSearch, Fault::default());
    wait_for_state(&a, FLIGHTS, "half_open").await;
    wait_for_state(&b, FLIGHTS, "half_open").await;
    // The period's first lease, taken at once by one of them, lapses unused (3 s).
    tokio::time::sleep(Duration::from_secs(4)).await;
    for (name, replica) in [("b", &b), ("a", &a)] {
        let (status, envelope) = search_flights(replica).await;
        assert_eq!(
            (status, &envelope["status"]),
            (200, &serde_json::json!("ok")),
            "replica {name}'s first caller: {envelope:#}"
        );
    }
    drop((a, b));
    drop_schema(&url, &schema).await;
}
