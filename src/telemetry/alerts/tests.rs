//! One paused-clock test (or more) per alert rule: fire at the threshold, not before, and resolve.

use std::time::Duration;

use tokio::time::{Instant, advance};

use super::*;
use crate::breaker::{ForceMode, Origin, TransitionReason};

fn key(tool: &str) -> BreakerKey {
    BreakerKey::new(tool, "duffel")
}

fn event(k: &BreakerKey, from: BreakerState, to: BreakerState) -> TransitionEvent {
    let reason = match (from, to) {
        (_, BreakerState::ForcedOpen) => TransitionReason::Forced(ForceMode::Open),
        (BreakerState::Closed, BreakerState::Open) => TransitionReason::ConsecutiveFailures,
        (BreakerState::Ramp, BreakerState::Open) => TransitionReason::RampFailureRate,
        (BreakerState::HalfOpen, BreakerState::Open) => TransitionReason::ProbeFailed,
        (BreakerState::Open, BreakerState::HalfOpen) => TransitionReason::OpenElapsed,
        (BreakerState::HalfOpen, BreakerState::Ramp) => TransitionReason::ProbesSucceeded,
        (BreakerState::Ramp, BreakerState::Closed) => TransitionReason::RampCompleted,
        _ => TransitionReason::Forced(ForceMode::Auto),
    };
    TransitionEvent {
        key: k.clone(),
        from,
        to,
        reason,
        at: Instant::now(),
        failure_rate: 1.0,
        slow_rate: 0.0,
        calls: 5,
        origin: Origin::Local,
    }
}

fn fired(changes: &[AlertChange]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            AlertChange::Fired(a) => Some(a.id.clone()),
            AlertChange::Resolved(..) => None,
        })
        .collect()
}

fn resolved(changes: &[AlertChange]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            AlertChange::Resolved(a, _) => Some(a.id.clone()),
            AlertChange::Fired(_) => None,
        })
        .collect()
}

use BreakerState::{Closed, ForcedOpen, HalfOpen, Open, Ramp};

#[tokio::test(start_paused = true)]
async fn open_too_long_fires_at_five_minutes_across_failed_probes_and_resolves_on_recovery() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = key("search_flights");
    assert!(e.on_transition(&event(&k, Closed, Open)).is_empty());
    advance(Duration::from_secs(30)).await;
    e.on_transition(&event(&k, Open, HalfOpen));
    advance(Duration::from_secs(5)).await;
    e.on_transition(&event(&k, HalfOpen, Open));
    advance(Duration::from_secs(264)).await;
    assert!(
        e.tick(Instant::now()).is_empty(),
        "4 min 59 s is not yet too long"
    );
    advance(Duration::from_secs(1)).await;
    let changes = e.tick(Instant::now());
    assert_eq!(
        fired(&changes),
        ["breaker_open_too_long:search_flights/duffel"]
    );
    let alert = &e.active()[0];
    assert_eq!(alert.kind.severity(), "P2");
    assert!(alert.summary.contains("5 min"), "{}", alert.summary);
    assert!(e.tick(Instant::now()).is_empty(), "fires once");

    e.on_transition(&event(&k, Open, HalfOpen));
    assert!(
        e.tick(Instant::now()).is_empty(),
        "half-open is still not recovered"
    );
    let changes = e.on_transition(&event(&k, HalfOpen, Ramp));
    assert_eq!(
        resolved(&changes),
        ["breaker_open_too_long:search_flights/duffel"]
    );
    assert!(e.active().is_empty());
}

#[tokio::test(start_paused = true)]
async fn forcing_open_is_not_an_outage() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = key("search_hotels");
    e.on_transition(&event(&k, Closed, ForcedOpen));
    advance(Duration::from_secs(3600)).await;
    assert!(e.tick(Instant::now()).is_empty());
    assert!(e.active().is_empty());
}

#[tokio::test(start_paused = true)]
async fn flapping_needs_three_openings_after_recovery_within_ten_minutes() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = key("search_hotels");
    // Two open → recover cycles, 4 min apart; the probe failure in between is no recovery.
    for _ in 0..2 {
        e.on_transition(&event(&k, Closed, Open));
        advance(Duration::from_secs(30)).await;
        e.on_transition(&event(&k, Open, HalfOpen));
        e.on_transition(&event(&k, HalfOpen, Open));
        advance(Duration::from_secs(30)).await;
        e.on_transition(&event(&k, Open, HalfOpen));
        e.on_transition(&event(&k, HalfOpen, Ramp));
        advance(Duration::from_secs(60)).await;
        e.on_transition(&event(&k, Ramp, Closed));
        advance(Duration::from_secs(120)).await;
    }
    assert!(
        !e.active()
            .iter()
            .any(|a| a.kind == AlertKind::BreakerFlapping),
        "two openings from closed are not flapping"
    );
    // The third, 8 minutes after the first, fires it.
    let changes = e.on_transition(&event(&k, Closed, Open));
    assert_eq!(fired(&changes), ["breaker_flapping:search_hotels/duffel"]);
    advance(Duration::from_secs(30)).await;
    e.on_transition(&event(&k, Open, HalfOpen));
    e.on_transition(&event(&k, HalfOpen, Ramp));
    e.on_transition(&event(&k, Ramp, Closed));
    // It resolves when the first opening is 10 min old and only two remain in the window.
    advance(Duration::from_secs(600 - 480 - 30 - 1)).await;
    assert!(resolved(&e.tick(Instant::now())).is_empty());
    advance(Duration::from_secs(1)).await;
    assert_eq!(
        resolved(&e.tick(Instant::now())),
        ["breaker_flapping:search_hotels/duffel"]
    );
}

#[tokio::test(start_paused = true)]
async fn an_opening_from_the_ramp_counts_as_flapping_too() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = key("check_hotel_availability");
    e.on_transition(&event(&k, Closed, Open));
    for _ in 0..2 {
        advance(Duration::from_secs(30)).await;
        e.on_transition(&event(&k, Open, HalfOpen));
        e.on_transition(&event(&k, HalfOpen, Ramp));
        advance(Duration::from_secs(20)).await;
        let changes = e.on_transition(&event(&k, Ramp, Open));
        let flapping = fired(&changes).contains(&format!("breaker_flapping:{k}"));
        assert_eq!(
            flapping,
            e.active()
                .iter()
                .filter(|a| a.kind == AlertKind::BreakerFlapping)
                .count()
                == 1
        );
    }
    assert!(
        e.active()
            .iter()
            .any(|a| a.id == format!("breaker_flapping:{k}"))
    );
}

#[tokio::test(start_paused = true)]
async fn three_trips_in_a_minute_across_breakers_is_a_storm() {
    let rules = AlertRules {
        // Keep the shared-dependency rule out of this test.
        shared_breakers: 10,
        ..AlertRules::spec()
    };
    let mut e = AlertEngine::new(rules);
    let (a, b, c) = (
        key("search_flights"),
        key("price_flight_offer"),
        key("search_hotels"),
    );
    // search_hotels tripped long before and is ramping back.
    e.on_transition(&event(&c, Closed, Open));
    e.on_transition(&event(&c, Open, HalfOpen));
    e.on_transition(&event(&c, HalfOpen, Ramp));
    advance(Duration::from_secs(70)).await;
    e.on_transition(&event(&a, Closed, Open));
    advance(Duration::from_secs(25)).await;
    e.on_transition(&event(&b, Closed, Open));
    advance(Duration::from_secs(25)).await;
    // An opening from the ramp is a trip: the breaker was admitting traffic again.
    let changes = e.on_transition(&event(&c, Ramp, Open));
    assert_eq!(fired(&changes), ["breaker_trip_storm"]);
    let storm = &e.active()[0];
    assert_eq!(storm.breakers, vec![b.clone(), a.clone(), c.clone()]);
    assert!(
        storm
            .summary
            .starts_with("3 breaker trips in the last 1 min")
    );
    // The first trip leaves the minute 10 s later.
    advance(Duration::from_secs(9)).await;
    assert!(e.tick(Instant::now()).is_empty());
    advance(Duration::from_secs(1)).await;
    assert_eq!(resolved(&e.tick(Instant::now())), ["breaker_trip_storm"]);
}

/// A failed probe re-opens a breaker that was already out of service: the same outage, not a
/// new trip. Counting it made two breakers of one tool (one re-failing a probe) a "storm" and,
/// with a third breaker failing probes, a "shared dependency".
#[tokio::test(start_paused = true)]
async fn failed_probes_are_not_trips() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let (a, b, c) = (
        key("search_flights"),
        key("price_flight_offer"),
        key("search_hotels"),
    );
    e.on_transition(&event(&c, Closed, Open));
    advance(Duration::from_secs(90)).await;
    e.on_transition(&event(&a, Closed, Open));
    advance(Duration::from_secs(5)).await;
    e.on_transition(&event(&b, Closed, Open));
    for k in [&a, &c, &a, &c] {
        advance(Duration::from_secs(5)).await;
        e.on_transition(&event(k, Open, HalfOpen));
        let changes = e.on_transition(&event(k, HalfOpen, Open));
        assert!(fired(&changes).is_empty(), "{changes:?}");
    }
    assert!(e.active().is_empty(), "{:?}", e.active());
}

#[tokio::test(start_paused = true)]
async fn two_trips_in_a_minute_are_not_a_storm() {
    let mut e = AlertEngine::new(AlertRules::spec());
    e.on_transition(&event(&key("a"), Closed, Open));
    advance(Duration::from_secs(61)).await;
    e.on_transition(&event(&key("b"), Closed, Open));
    e.on_transition(&event(&key("c"), Closed, Open));
    assert!(e.active().is_empty(), "{:?}", e.active());
}

#[tokio::test(start_paused = true)]
async fn several_breakers_opening_together_name_a_shared_dependency() {
    let rules = AlertRules {
        storm_trips: 100,
        ..AlertRules::spec()
    };
    let mut e = AlertEngine::new(rules);
    let keys = [
        key("search_flights"),
        key("search_hotels"),
        key("book_flight"),
    ];
    e.on_transition(&event(&keys[0], Closed, Open));
    advance(Duration::from_secs(10)).await;
    e.on_transition(&event(&keys[1], Closed, Open));
    advance(Duration::from_secs(19)).await;
    let changes = e.on_transition(&event(&keys[2], Closed, Open));
    assert_eq!(fired(&changes), ["shared_dependency"]);
    let alert = &e.active()[0];
    assert_eq!(alert.kind.severity(), "P1");
    for k in &keys {
        assert!(alert.summary.contains(&k.to_string()), "{}", alert.summary);
        assert!(alert.breakers.contains(k));
    }
    // Still firing while the three are rejecting, long after the 30 s span.
    advance(Duration::from_secs(120)).await;
    assert!(e.tick(Instant::now()).is_empty());
    // One recovers: fewer than three remain, it resolves.
    let changes = e.on_transition(&event(&keys[0], HalfOpen, Ramp));
    assert_eq!(resolved(&changes), ["shared_dependency"]);
}

#[tokio::test(start_paused = true)]
async fn breakers_opening_apart_are_not_a_shared_dependency() {
    let mut e = AlertEngine::new(AlertRules::spec());
    e.on_transition(&event(&key("a"), Closed, Open));
    advance(Duration::from_secs(20)).await;
    e.on_transition(&event(&key("b"), Closed, Open));
    advance(Duration::from_secs(11)).await;
    let changes = e.on_transition(&event(&key("c"), Closed, Open));
    assert!(!fired(&changes).contains(&"shared_dependency".to_string()));
}

#[tokio::test(start_paused = true)]
async fn a_breaker_a_reload_removed_stops_alerting() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let (gone, stays) = (key("search_hotels"), key("search_flights"));
    e.on_transition(&event(&gone, Closed, Open));
    e.on_transition(&event(&stays, Closed, Open));
    advance(Duration::from_secs(5 * 60)).await;
    assert_eq!(
        fired(&e.tick(Instant::now())),
        [
            "breaker_open_too_long:search_flights/duffel",
            "breaker_open_too_long:search_hotels/duffel"
        ]
    );
    e.forget(std::slice::from_ref(&gone));
    assert_eq!(
        resolved(&e.tick(Instant::now())),
        ["breaker_open_too_long:search_hotels/duffel"]
    );
    assert_eq!(e.active().len(), 1, "the breaker that stays still alerts");
}

/// The incident: the backup provider of a chain whose primary recovered gets no calls and sits
/// half-open with no probe admitted. It rejects nothing, so it must not read as an outage.
#[tokio::test(start_paused = true)]
async fn an_idle_half_open_breaker_is_not_rejecting() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = BreakerKey::new("search_flights", "amadeus");
    e.on_transition(&event(&k, Closed, Open));
    advance(Duration::from_secs(30)).await;
    e.on_transition(&event(&k, Open, HalfOpen));
    let mut changes = Vec::new();
    for _ in 0..13 * 60 {
        advance(Duration::from_secs(1)).await;
        changes.extend(e.tick(Instant::now()));
    }
    assert!(changes.is_empty(), "{changes:?}");
    assert!(e.active().is_empty());

    // A probe failing later starts a new outage clock: 5 min from the failed probe.
    e.on_transition(&event(&k, HalfOpen, Open));
    advance(Duration::from_secs(299)).await;
    assert!(e.tick(Instant::now()).is_empty());
    advance(Duration::from_secs(1)).await;
    assert_eq!(
        fired(&e.tick(Instant::now())),
        ["breaker_open_too_long:search_flights/amadeus"]
    );
}

#[tokio::test(start_paused = true)]
async fn open_too_long_resolves_once_the_breaker_sits_half_open_through_the_grace() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = key("search_flights");
    e.on_transition(&event(&k, Closed, Open));
    advance(Duration::from_secs(5 * 60)).await;
    assert_eq!(
        fired(&e.tick(Instant::now())),
        ["breaker_open_too_long:search_flights/duffel"]
    );
    e.on_transition(&event(&k, Open, HalfOpen));
    advance(Duration::from_secs(59)).await;
    assert!(e.tick(Instant::now()).is_empty(), "within the grace");
    advance(Duration::from_secs(1)).await;
    assert_eq!(
        resolved(&e.tick(Instant::now())),
        ["breaker_open_too_long:search_flights/duffel"]
    );
}

/// Under traffic a down provider's breaker is half-open only until the next call's probe fails
/// (seconds): the alert fires once and holds, without flickering in those gaps.
#[tokio::test(start_paused = true)]
async fn an_outage_with_failing_probes_does_not_flicker() {
    let mut e = AlertEngine::new(AlertRules::spec());
    let k = key("search_flights");
    let mut changes = e.on_transition(&event(&k, Closed, Open));
    for _ in 0..20 {
        advance(Duration::from_secs(30)).await;
        changes.extend(e.on_transition(&event(&k, Open, HalfOpen)));
        advance(Duration::from_secs(8)).await;
        changes.extend(e.tick(Instant::now()));
        changes.extend(e.on_transition(&event(&k, HalfOpen, Open)));
    }
    assert_eq!(changes.len(), 1, "fired once, never resolved: {changes:?}");
    assert_eq!(
        fired(&changes),
        ["breaker_open_too_long:search_flights/duffel"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_shared_dependency_resolves_when_its_breakers_sit_half_open_idle() {
    let mut e = AlertEngine::new(AlertRules {
        storm_trips: 100,
        ..AlertRules::spec()
    });
    let keys = [
        key("search_flights"),
        key("price_flight_offer"),
        key("book_flight"),
    ];
    for k in &keys {
        e.on_transition(&event(k, Closed, Open));
    }
    assert_eq!(e.active()[0].id, "shared_dependency");
    // The provider recovered, and nobody calls these tools: the breakers go half-open and stay.
    advance(Duration::from_secs(30)).await;
    for k in &keys {
        e.on_transition(&event(k, Open, HalfOpen));
    }
    advance(Duration::from_secs(59)).await;
    assert!(e.tick(Instant::now()).is_empty(), "within the grace");
    advance(Duration::from_secs(1)).await;
    assert_eq!(resolved(&e.tick(Instant::now())), ["shared_dependency"]);
    advance(Duration::from_secs(13 * 60)).await;
    assert!(e.tick(Instant::now()).is_empty());
    assert!(e.active().is_empty(), "{:?}", e.active());
}

#[tokio::test(start_paused = true)]
async fn a_store_that_does_not_answer_alerts_after_the_grace_and_resolves_when_it_answers() {
    let mut e = AlertEngine::new(AlertRules::spec());
    assert!(e.on_store(true, Instant::now()).is_empty());
    assert!(e.on_store(false, Instant::now()).is_empty(), "not at once");
    advance(Duration::from_secs(9)).await;
    // Told again while still away: the clock runs from the first time.
    assert!(
        e.on_store(false, Instant::now()).is_empty(),
        "within the grace"
    );
    advance(Duration::from_secs(1)).await;
    let changes = e.tick(Instant::now());
    assert_eq!(fired(&changes), ["store_unreachable"]);
    let alert = &e.active()[0];
    assert_eq!(alert.kind.severity(), "P1");
    assert!(alert.breakers.is_empty());
    for says in ["reads are served", "spooled", "booking is refused"] {
        assert!(alert.summary.contains(says), "{}", alert.summary);
    }
    advance(Duration::from_secs(60)).await;
    assert!(
        e.on_store(false, Instant::now()).is_empty(),
        "still the one alert"
    );
    assert!(
        e.active()[0].summary.contains("1 min"),
        "{}",
        e.active()[0].summary
    );
    assert_eq!(
        resolved(&e.on_store(true, Instant::now())),
        ["store_unreachable"]
    );
    // A blip shorter than the grace says nothing.
    e.on_store(false, Instant::now());
    advance(Duration::from_secs(5)).await;
    assert!(e.on_store(true, Instant::now()).is_empty());
    advance(Duration::from_secs(30)).await;
    assert!(e.tick(Instant::now()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn replicas_running_different_configurations_alert_after_the_grace_and_resolve_when_they_agree()
 {
    let mut e = AlertEngine::new(AlertRules::spec());
    let apart = || Some("replica-a runs 0123456789ab, replica-b runs ba9876543210".to_string());
    assert!(e.on_config_drift(None, Instant::now()).is_empty());
    assert!(
        e.on_config_drift(apart(), Instant::now()).is_empty(),
        "a rolling change takes a while"
    );
    advance(Duration::from_secs(299)).await;
    // Told again while still apart: the clock runs from the first time.
    assert!(e.on_config_drift(apart(), Instant::now()).is_empty());
    advance(Duration::from_secs(1)).await;
    assert_eq!(fired(&e.tick(Instant::now())), ["config_drift"]);
    let alert = &e.active()[0];
    assert_eq!(alert.kind.severity(), "P3");
    assert!(alert.breakers.is_empty());
    for says in [
        "5 min",
        "replica-b runs ba9876543210",
        "POST /v1/admin/reload",
    ] {
        assert!(alert.summary.contains(says), "{}", alert.summary);
    }
    assert_eq!(
        resolved(&e.on_config_drift(None, Instant::now())),
        ["config_drift"]
    );
    // Apart again: a new clock.
    e.on_config_drift(apart(), Instant::now());
    advance(Duration::from_secs(120)).await;
    assert!(e.tick(Instant::now()).is_empty());
}

mod fleet;
