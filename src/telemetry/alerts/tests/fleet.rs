//! `breaker_open_too_long` in a fleet: a replica that starts during an outage, or follows an open
//! from another replica, times it from the fleet's open (its shared record), not from when it
//! learnt of it; and on one node, a breaker found open at start is followed at all.

use std::time::Duration;

use tokio::time::{Instant, advance};

use super::{event, fired, key};
use crate::breaker::{BreakerState, Origin};
use crate::telemetry::alerts::{AlertEngine, AlertRules};

use BreakerState::{Closed, HalfOpen, Open};

const TOO_LONG: &str = "breaker_open_too_long:search_flights/duffel";

#[tokio::test(start_paused = true)]
async fn a_replica_started_during_an_outage_times_it_from_the_fleets_open() {
    let k = key("search_flights");
    let fleet_opened = Instant::now();
    // The fleet's breaker opened 4 min ago; this replica starts now and restores the open.
    advance(Duration::from_secs(240)).await;
    let mut e = AlertEngine::new(AlertRules::spec());
    let started = Instant::now();
    assert!(e.on_found(&k, Open, started, started).is_empty());
    assert!(e.on_fleet_open(&k, fleet_opened, started).is_empty());
    advance(Duration::from_secs(59)).await;
    assert!(
        e.tick(Instant::now()).is_empty(),
        "4 min 59 s since the fleet's open"
    );
    advance(Duration::from_secs(1)).await;
    assert_eq!(
        fired(&e.tick(Instant::now())),
        [TOO_LONG],
        "5 min since the fleet's open, 1 min since this replica's start"
    );
    let alert = &e.active()[0];
    assert!(alert.summary.contains("5 min"), "{}", alert.summary);
}

#[tokio::test(start_paused = true)]
async fn a_breaker_found_open_at_start_is_followed_from_then_without_the_fleets_time() {
    // One node restarted during an outage (or a fleet row of an older replica, with no time):
    // the open it restored is followed from its start, where no transition would tell of it.
    let k = key("search_flights");
    let mut e = AlertEngine::new(AlertRules::spec());
    let started = Instant::now();
    e.on_found(&k, Open, started, started);
    advance(Duration::from_secs(299)).await;
    assert!(e.tick(Instant::now()).is_empty());
    advance(Duration::from_secs(1)).await;
    assert_eq!(fired(&e.tick(Instant::now())), [TOO_LONG]);
}

#[tokio::test(start_paused = true)]
async fn a_breaker_found_half_open_counts_as_rejecting_for_the_grace_only() {
    let k = key("search_flights");
    let fleet_opened = Instant::now();
    advance(Duration::from_secs(290)).await;
    let mut e = AlertEngine::new(AlertRules::spec());
    let now = Instant::now();
    // The fleet's open ran out just now: half-open, its probes not yet answered.
    e.on_found(&k, HalfOpen, now, now);
    e.on_fleet_open(&k, fleet_opened, now);
    advance(Duration::from_secs(10)).await;
    assert_eq!(
        fired(&e.tick(Instant::now())),
        [TOO_LONG],
        "rejecting within the grace"
    );
    // Half-open through the grace with no failed probe: admitting, the alert resolves.
    advance(Duration::from_secs(51)).await;
    e.tick(Instant::now());
    assert!(e.active().is_empty(), "{:?}", e.active());
}

#[tokio::test(start_paused = true)]
async fn a_followed_open_is_timed_from_the_fleets_outage_not_from_when_it_was_heard() {
    // This replica had no callers: its breaker sat half-open past the grace (not rejecting,
    // as far as it knew), while the replica with callers kept failing probes. Its next failed
    // probe, followed here, is the same outage the fleet has had for 5 min.
    let k = key("search_flights");
    let mut e = AlertEngine::new(AlertRules::spec());
    let fleet_opened = Instant::now();
    let mut followed = event(&k, Closed, Open);
    followed.origin = Origin::Fleet;
    e.on_transition(&followed);
    advance(Duration::from_secs(30)).await;
    e.on_transition(&event(&k, Open, HalfOpen));
    advance(Duration::from_secs(270)).await;
    assert!(
        e.tick(Instant::now()).is_empty(),
        "half-open past the grace here"
    );
    let mut reopened = event(&k, HalfOpen, Open);
    reopened.origin = Origin::Fleet;
    assert!(
        e.on_transition(&reopened).is_empty(),
        "a new clock, by this replica's own account"
    );
    assert_eq!(
        fired(&e.on_fleet_open(&k, fleet_opened, Instant::now())),
        [TOO_LONG]
    );
}

#[tokio::test(start_paused = true)]
async fn the_fleets_open_times_only_a_breaker_that_rejects_here() {
    let k = key("search_flights");
    let fleet_opened = Instant::now();
    advance(Duration::from_secs(600)).await;
    let mut e = AlertEngine::new(AlertRules::spec());
    let now = Instant::now();
    // Closed here (recovered, or a row read before this replica followed it): nothing to time.
    e.on_found(&k, Closed, now, now);
    assert!(e.on_fleet_open(&k, fleet_opened, now).is_empty());
    advance(Duration::from_secs(600)).await;
    assert!(e.tick(Instant::now()).is_empty());
    // A later time than this replica's own clock moves nothing.
    e.on_transition(&event(&k, Closed, Open));
    advance(Duration::from_secs(200)).await;
    e.on_fleet_open(&k, Instant::now(), Instant::now());
    advance(Duration::from_secs(100)).await;
    assert_eq!(fired(&e.tick(Instant::now())), [TOO_LONG]);
}
