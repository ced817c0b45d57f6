//! What a replica cut off from PostgreSQL writes on its return never undoes what the fleet did
//! meanwhile, nor what the replica itself did: a recovery it made alone does not end a newer
//! open of another replica, a force it took while away holds on it as on the others, and a
//! force it took while away does not undo a later force the others took meanwhile (the newest
//! force wins, and the returning replica follows it).
//!
//! PostgreSQL is taken away from one replica through a proxy the test cuts (the server is
//! shared with every other test). That the returning replica's writes are all in is known from
//! a later write of its own reaching the other replica: it writes in order.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};

use super::{
    FLIGHTS, breaker, drop_schema, epoch_ms, fleet_config, force, one_probe_config, postgres_url,
    replica, schema, search_flights, server_of, through, trip, wait_connected, wait_for_state,
};
use crate::support::{self, CutProxy, wait_until};

const HOTELS: &str = "search_hotels.duffel";

/// A breaker the tests force only to know that a replica's earlier writes are all in.
const MARKER: &str = "price_flight_offer.duffel";

fn outage() -> Fault {
    Fault {
        outage: true,
        ..Fault::default()
    }
}

#[tokio::test]
async fn a_recovery_made_alone_does_not_end_a_newer_open_of_the_fleet() {
    let Some(url) = postgres_url("a_recovery_made_alone_does_not_end_a_newer_open") else {
        return;
    };
    let schema = schema("fg_fleet_rejoin_recovery");
    let sim = support::start_sim(27).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    // The replica that goes away opens for a second and recovers on one probe; the other opens
    // for a minute, longer than the test.
    let away = one_probe_config(&sim.url());
    let away = replica(&through(&url, proxy.addr), &schema, away).await;
    let other = fleet_config(&sim.url(), |b| {
        b.open_for(Duration::from_secs(60))
            .open_for_max(Duration::from_secs(120));
    });
    let other = replica(&url, &schema, other).await;
    proxy.cut();
    wait_connected(&away, false).await;
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    trip(&away).await;
    trip(&other).await;
    // The provider is back; the replica away probes it alone and recovers.
    sim.sim
        .set_fault(RouteGroup::DuffelAirSearch, Fault::default());
    wait_until(
        Duration::from_secs(10),
        "the replica away to recover",
        || async {
            search_flights(&away).await;
            let b = breaker(&away, FLIGHTS).await;
            if b["state"] == "closed" {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;
    proxy.restore();
    wait_connected(&away, true).await;
    force(&away, HOTELS, "open").await;
    wait_for_state(&other, HOTELS, "forced_open").await;
    let b = breaker(&other, FLIGHTS).await;
    assert_eq!(
        b["state"], "open",
        "a recovery from an open the replica knew does not end the newer one: {b:#}"
    );
    // And the replica that was away holds the fleet's open too, until the same instant.
    let followed = wait_for_state(&away, FLIGHTS, "open").await;
    let (until, fleets) = (
        epoch_ms(&followed["open_until"]),
        epoch_ms(&b["open_until"]),
    );
    assert!((until - fleets).abs() <= 20, "{until} vs {fleets}");
    drop((away, other));
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_force_made_while_away_holds_on_its_replica_after_the_return() {
    let Some(url) = postgres_url("a_force_made_while_away_holds_on_its_replica") else {
        return;
    };
    let schema = schema("fg_fleet_rejoin_force");
    let sim = support::start_sim(28).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    let away = fleet_config(&sim.url(), |_| {});
    let away = replica(&through(&url, proxy.addr), &schema, away).await;
    let other = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    proxy.cut();
    wait_connected(&away, false).await;
    force(&away, FLIGHTS, "open").await;
    // Meanwhile the other replica writes the breaker's row: it opens on its own failures.
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    trip(&other).await;
    proxy.restore();
    wait_connected(&away, true).await;
    // The force reaches the fleet...
    wait_for_state(&other, FLIGHTS, "forced_open").await;
    // ...and still holds where it was made.
    let b = breaker(&away, FLIGHTS).await;
    assert_eq!(b["state"], "forced_open", "{b:#}");
    drop((away, other));
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_force_replayed_on_return_does_not_undo_a_later_force_of_the_fleet() {
    let Some(url) = postgres_url("a_force_replayed_on_return_does_not_undo_a_later_force") else {
        return;
    };
    let schema = schema("fg_fleet_rejoin_newest_force");
    let sim = support::start_sim(29).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    let away = fleet_config(&sim.url(), |_| {});
    let away = replica(&through(&url, proxy.addr), &schema, away).await;
    let other = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    // Hotel search is forced open on the whole fleet; flight search runs on its own.
    force(&away, HOTELS, "open").await;
    wait_for_state(&other, HOTELS, "forced_open").await;
    proxy.cut();
    wait_connected(&away, false).await;
    // While away: the operator hands hotel search back to the policy, and forces flight search
    // open, on the replica away (each held there)...
    force(&away, HOTELS, "auto").await;
    force(&away, FLIGHTS, "open").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // ...and later, on the rest of the fleet, the opposite of each.
    force(&other, HOTELS, "open").await;
    force(&other, FLIGHTS, "auto").await;
    proxy.restore();
    wait_connected(&away, true).await;
    // A later write of the replica away reaching the other means all its writes are in.
    force(&away, MARKER, "open").await;
    wait_for_state(&other, MARKER, "forced_open").await;
    let (hotels, flights) = (
        breaker(&other, HOTELS).await,
        breaker(&other, FLIGHTS).await,
    );
    assert_eq!(
        hotels["state"], "forced_open",
        "the later force-open stands: {hotels:#}"
    );
    assert_eq!(
        flights["state"], "closed",
        "the later auto stands: {flights:#}"
    );
    // The replica away gives up its older forces for the fleet's newer ones.
    wait_for_state(&away, HOTELS, "forced_open").await;
    wait_for_state(&away, FLIGHTS, "closed").await;
    drop((away, other));
    drop_schema(&url, &schema).await;
}
