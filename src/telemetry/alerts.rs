//! The alerts the gateway raises itself, so that an operator hears of a sick provider before
//! its callers do.
//!
//! A pure state machine: inputs are breaker transitions, whether this replica's store answers,
//! and ticks, each with its instant; outputs are [`AlertChange`]s. No clock reads, no I/O, so
//! every rule is tested on a paused clock.
//!
//! | alert | fires when | resolves when |
//! |---|---|---|
//! | `breaker_open_too_long` (P2) | a breaker has been rejecting (open, or half-open between failed probes) for 5 min | it reaches the ramp, closes or is forced, or sits half-open idle for the grace |
//! | `breaker_flapping` (P2) | a breaker tripped (opened from closed or ramp) 3 times within 10 min | fewer than 3 such openings remain in the last 10 min |
//! | `breaker_trip_storm` (P2) | 3 trips across all breakers within 1 min | fewer than 3 trips remain in the last minute |
//! | `shared_dependency` (P1) | 3 different breakers tripped within 30 s: a shared cause (DNS, network, one provider) is likelier than 3 separate ones | fewer than 3 of the breakers it names are still rejecting |
//! | `store_unreachable` (P1) | this replica's store (the fleet's shared state, the job queue, the booking ledger) has not answered for 10 s | it answers again |
//! | `config_drift` (P3) | the live replicas of a PostgreSQL fleet have run different configurations (fingerprints) for 5 min | they agree again |
//!
//! A **trip** is a breaker that admitted traffic (closed, or ramping back) opening. A failed
//! probe (half-open → open) is the same outage going on, not a new trip: one breaker of a
//! provider that stays down re-opens every `open_for`, and counting that would make two down
//! breakers a "storm". An open → open extension (`Retry-After`) is no trip either.
//!
//! **Rejecting.** An open breaker rejects every call. A half-open one admits the next call as a
//! probe and rejects nothing while nobody calls: the backup provider of a chain whose primary
//! recovered may sit half-open for hours without a call. So a breaker counts as rejecting while
//! open, and while half-open for less than [`AlertRules::half_open_grace`] (1 min) since it
//! last was open; the clock runs on across open → half-open → open (an outage whose probes
//! keep failing does not flicker), and ends when the breaker has sat half-open through the
//! grace with no failed probe. A probe failing after that starts a new clock.
//!
//! **The store.** While the store does not answer, a replica serves reads on its own breakers
//! and spools background submissions, but refuses every booking before its provider is asked
//! (a booking needs its ledger entry in the store): so the outage is an alert, not only a
//! readiness field. Ten seconds of grace keep a single slow statement from paging; the
//! Prometheus rule waits a minute of scrapes (`faregate_fleet_connected`, `faregate_jobs_spooled`).
//!
//! **Drift.** A rolling change of configuration, or a reload that reaches the replicas one after
//! another, leaves them running different files for a while; five minutes is longer than either
//! takes, so what remains is a replica whose reload failed (it keeps its running configuration
//! and said why at ERROR) or files that differ between replicas. Every replica sees the same
//! listing, so each raises it; the Prometheus rule counts `faregate_config_info`'s fingerprints.
//!
//! **A fleet.** A replica's clock would start when it learnt of an open: a replica started (or
//! restarted) during a long outage would time it from its own start, and hear of a 20-minute
//! outage late, or, with the open restored before anything listened, not at all. So a breaker
//! found rejecting when the rules start is followed from then ([`AlertEngine::on_found`]), and
//! the fleet's shared record of when the outage began moves the clock back to it
//! ([`AlertEngine::on_fleet_open`]); the record ends an outage by the same grace, so every
//! replica times one outage alike.
//!
//! Forced states are an operator's decision: forcing open does not count as a trip and resets
//! the "open too long" clock. `ops/prometheus/faregate.rules.yml` has the same rules over the
//! metrics (at scrape resolution: its shared-dependency window is 1 min).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use crate::breaker::{BreakerKey, BreakerState, TransitionEvent};

/// Which rule an alert comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlertKind {
    /// One breaker rejecting for too long.
    BreakerOpenTooLong,
    /// One breaker opening and recovering repeatedly.
    BreakerFlapping,
    /// Many trips across breakers in a short time.
    BreakerTripStorm,
    /// Several breakers opening together.
    SharedDependency,
    /// This replica's store does not answer.
    StoreUnreachable,
    /// The fleet's live replicas run different configurations.
    ConfigDrift,
}

impl AlertKind {
    /// Every kind, in report order.
    pub const ALL: [AlertKind; 6] = [
        AlertKind::BreakerOpenTooLong,
        AlertKind::BreakerFlapping,
        AlertKind::BreakerTripStorm,
        AlertKind::SharedDependency,
        AlertKind::StoreUnreachable,
        AlertKind::ConfigDrift,
    ];

    /// The stable snake_case name (also the metric label and the SSE `alert` field).
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::BreakerOpenTooLong => "breaker_open_too_long",
            AlertKind::BreakerFlapping => "breaker_flapping",
            AlertKind::BreakerTripStorm => "breaker_trip_storm",
            AlertKind::SharedDependency => "shared_dependency",
            AlertKind::StoreUnreachable => "store_unreachable",
            AlertKind::ConfigDrift => "config_drift",
        }
    }

    /// The incident priority (P1 is the most urgent).
    pub fn severity(self) -> &'static str {
        match self {
            AlertKind::SharedDependency | AlertKind::StoreUnreachable => "P1",
            AlertKind::ConfigDrift => "P3",
            _ => "P2",
        }
    }
}

/// One alert, firing or just resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// Stable identity: the kind, plus the breaker for per-breaker alerts.
    pub id: String,
    /// The rule.
    pub kind: AlertKind,
    /// The breakers it is about, sorted (none for `store_unreachable`).
    pub breakers: Vec<BreakerKey>,
    /// One sentence for a human.
    pub summary: String,
    /// When it started firing.
    pub fired_at: Instant,
}

/// A change in the set of firing alerts.
#[derive(Debug, Clone, PartialEq)]
pub enum AlertChange {
    /// The alert started firing.
    Fired(Alert),
    /// The alert stopped firing, at the instant given.
    Resolved(Alert, Instant),
}

/// The thresholds. [`AlertRules::spec`] gives the gateway's own; tests may tighten them.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertRules {
    /// How long a breaker may reject before `breaker_open_too_long`.
    pub open_too_long: Duration,
    /// How long a breaker may sit half-open without a failed probe and still count as
    /// rejecting: longer than a probe takes to fail under traffic, so an outage does not
    /// flicker, short enough that an idle half-open breaker soon stops alerting.
    pub half_open_grace: Duration,
    /// Openings from closed or ramp that make a breaker flap…
    pub flapping_opens: usize,
    /// … within this span.
    pub flapping_window: Duration,
    /// Trips across breakers that make a storm…
    pub storm_trips: usize,
    /// … within this span.
    pub storm_window: Duration,
    /// Distinct breakers opening together that point at a shared dependency…
    pub shared_breakers: usize,
    /// … within this span.
    pub shared_window: Duration,
    /// How long the store may not answer before `store_unreachable`.
    pub store_grace: Duration,
    /// How long the live replicas may run different configurations before `config_drift`.
    pub drift_grace: Duration,
}

impl AlertRules {
    /// The thresholds the gateway runs with (the same as `ops/prometheus/faregate.rules.yml`):
    /// open > 5 min (half-open counting for 1 min); ≥ 3 opens in 10 min; ≥ 3 trips per minute;
    /// 3 breakers in 30 s; a store that has not answered for 10 s (Prometheus: 1 min); replicas
    /// running different configurations for 5 min.
    pub fn spec() -> Self {
        AlertRules {
            open_too_long: Duration::from_secs(5 * 60),
            half_open_grace: Duration::from_secs(60),
            flapping_opens: 3,
            flapping_window: Duration::from_secs(10 * 60),
            storm_trips: 3,
            storm_window: Duration::from_secs(60),
            shared_breakers: 3,
            shared_window: Duration::from_secs(30),
            store_grace: Duration::from_secs(10),
            drift_grace: Duration::from_secs(5 * 60),
        }
    }
}

/// One rejecting breaker's clock.
#[derive(Debug, Clone, Copy)]
struct Rejecting {
    /// When it started rejecting (its first opening of this outage).
    since: Instant,
    /// When it went half-open, while it is.
    half_open_at: Option<Instant>,
}

/// The alert state machine.
#[derive(Debug)]
pub struct AlertEngine {
    rules: AlertRules,
    /// Breakers rejecting now (open, or half-open within the grace), with their clocks.
    rejecting_since: HashMap<BreakerKey, Rejecting>,
    /// Per breaker, openings from closed or ramp within the flapping window.
    recoveries_lost: HashMap<BreakerKey, VecDeque<Instant>>,
    /// Every trip (opening from closed or ramp) within the longest window.
    trips: VecDeque<(Instant, BreakerKey)>,
    /// Since when this replica's store has not answered, while it does not.
    store_away_since: Option<Instant>,
    /// Since when the live replicas have run different configurations, while they do, and
    /// which (one line).
    drift: Option<(Instant, String)>,
    /// The firing alerts by id.
    active: BTreeMap<String, Alert>,
}

impl AlertEngine {
    /// No breaker tracked, nothing firing.
    pub fn new(rules: AlertRules) -> Self {
        AlertEngine {
            rules,
            rejecting_since: HashMap::new(),
            recoveries_lost: HashMap::new(),
            trips: VecDeque::new(),
            store_away_since: None,
            drift: None,
            active: BTreeMap::new(),
        }
    }

    /// The thresholds.
    pub fn rules(&self) -> &AlertRules {
        &self.rules
    }

    /// Takes `rules` as the thresholds from now on.
    pub fn set_rules(&mut self, rules: AlertRules) {
        self.rules = rules;
    }

    /// Feeds one transition (in the order they happened) and evaluates the rules at its instant.
    pub fn on_transition(&mut self, event: &TransitionEvent) -> Vec<AlertChange> {
        let half_open_at = match event.to {
            BreakerState::Open => None,
            BreakerState::HalfOpen => Some(event.at),
            _ => {
                self.rejecting_since.remove(&event.key);
                None
            }
        };
        if matches!(event.to, BreakerState::Open | BreakerState::HalfOpen) {
            self.rejecting_since
                .entry(event.key.clone())
                .or_insert(Rejecting {
                    since: event.at,
                    half_open_at,
                })
                .half_open_at = half_open_at;
        }
        let tripped = event.to == BreakerState::Open
            && matches!(event.from, BreakerState::Closed | BreakerState::Ramp);
        if tripped {
            self.trips.push_back((event.at, event.key.clone()));
            self.recoveries_lost
                .entry(event.key.clone())
                .or_default()
                .push_back(event.at);
        }
        self.evaluate(event.at)
    }

    /// A breaker found `state` since `since` when the rules start following it: a replica that
    /// starts during an outage restores the open from the store before anything listens for
    /// transitions, so no transition tells the rules of it. Open counts as rejecting since
    /// `since`, half-open as just having been open then (its grace runs from `since`); any other
    /// state is nothing to follow. No trip is counted: none was seen.
    pub fn on_found(
        &mut self,
        key: &BreakerKey,
        state: BreakerState,
        since: Instant,
        now: Instant,
    ) -> Vec<AlertChange> {
        let half_open_at = match state {
            BreakerState::Open => None,
            BreakerState::HalfOpen => Some(since),
            _ => return self.evaluate(now),
        };
        self.rejecting_since
            .entry(key.clone())
            .or_insert(Rejecting {
                since,
                half_open_at,
            });
        self.evaluate(now)
    }

    /// The fleet's shared record says breaker `key` has been rejecting since `since`: its
    /// outage's first open, on whichever replica decided it, kept across its failed probes.
    /// A breaker this replica counts as rejecting is timed from there when that is earlier
    /// than when this replica learnt of the open (it started during the outage, or followed the
    /// open from another replica after its own half-open grace ran out). Nothing for a breaker
    /// this replica does not count as rejecting.
    pub fn on_fleet_open(
        &mut self,
        key: &BreakerKey,
        since: Instant,
        now: Instant,
    ) -> Vec<AlertChange> {
        if let Some(rejecting) = self.rejecting_since.get_mut(key) {
            rejecting.since = rejecting.since.min(since);
        }
        self.evaluate(now)
    }

    /// Stops following the breakers of `keys` (a reload removed them): one left open no longer
    /// counts as rejecting, so its alerts resolve on the next evaluation. Their trips stay in
    /// the storm and shared-dependency windows, which they age out of.
    pub fn forget(&mut self, keys: &[BreakerKey]) {
        for key in keys {
            self.rejecting_since.remove(key);
            self.recoveries_lost.remove(key);
        }
    }

    /// Whether this replica's store answers, as of `now` (call it as often as it is known; only
    /// a change moves the clock).
    pub fn on_store(&mut self, answers: bool, now: Instant) -> Vec<AlertChange> {
        if answers {
            self.store_away_since = None;
        } else {
            self.store_away_since.get_or_insert(now);
        }
        self.evaluate(now)
    }

    /// Whether the fleet's live replicas run different configurations as of `now` (`Some`: which,
    /// in one line); only a change from agreeing to not moves the clock.
    pub fn on_config_drift(&mut self, drift: Option<String>, now: Instant) -> Vec<AlertChange> {
        self.drift = match (self.drift.take(), drift) {
            (_, None) => None,
            (Some((since, _)), Some(which)) => Some((since, which)),
            (None, Some(which)) => Some((now, which)),
        };
        self.evaluate(now)
    }

    /// Evaluates the time-based rules at `now` (call it every few hundred milliseconds).
    pub fn tick(&mut self, now: Instant) -> Vec<AlertChange> {
        self.evaluate(now)
    }

    /// The firing alerts, sorted by id.
    pub fn active(&self) -> Vec<Alert> {
        self.active.values().cloned().collect()
    }

    fn evaluate(&mut self, now: Instant) -> Vec<AlertChange> {
        let r = &self.rules;
        let within = |at: Instant, span: Duration| now.saturating_duration_since(at) < span;
        let longest = r.storm_window.max(r.shared_window);
        while self
            .trips
            .front()
            .is_some_and(|(at, _)| !within(*at, longest))
        {
            self.trips.pop_front();
        }
        for opens in self.recoveries_lost.values_mut() {
            while opens
                .front()
                .is_some_and(|at| !within(*at, r.flapping_window))
            {
                opens.pop_front();
            }
        }
        self.recoveries_lost.retain(|_, opens| !opens.is_empty());
        // Half-open through the grace with no failed probe: admitting, not rejecting.
        let grace = r.half_open_grace;
        self.rejecting_since
            .retain(|_, rejecting| rejecting.half_open_at.is_none_or(|at| within(at, grace)));

        let mut wanted: BTreeMap<String, Alert> = BTreeMap::new();
        let mut want = |kind: AlertKind, mut breakers: Vec<BreakerKey>, summary: String| {
            breakers.sort();
            breakers.dedup();
            let id = match kind {
                AlertKind::BreakerOpenTooLong | AlertKind::BreakerFlapping => {
                    format!("{}:{}", kind.as_str(), breakers[0])
                }
                _ => kind.as_str().to_string(),
            };
            wanted.insert(
                id.clone(),
                Alert {
                    id,
                    kind,
                    breakers,
                    summary,
                    fired_at: now,
                },
            );
        };

        for (key, rejecting) in &self.rejecting_since {
            let for_how_long = now.saturating_duration_since(rejecting.since);
            if for_how_long >= r.open_too_long {
                want(
                    AlertKind::BreakerOpenTooLong,
                    vec![key.clone()],
                    format!(
                        "breaker {key} has been rejecting calls for {} (more than {})",
                        minutes(for_how_long),
                        minutes(r.open_too_long)
                    ),
                );
            }
        }
        for (key, opens) in &self.recoveries_lost {
            if opens.len() >= r.flapping_opens {
                want(
                    AlertKind::BreakerFlapping,
                    vec![key.clone()],
                    format!(
                        "breaker {key} opened {} times in {} after closing: the provider is degraded, not down",
                        opens.len(),
                        minutes(r.flapping_window)
                    ),
                );
            }
        }
        let storm: Vec<&(Instant, BreakerKey)> = self
            .trips
            .iter()
            .filter(|(at, _)| within(*at, r.storm_window))
            .collect();
        if storm.len() >= r.storm_trips {
            want(
                AlertKind::BreakerTripStorm,
                storm.iter().map(|(_, k)| k.clone()).collect(),
                format!(
                    "{} breaker trips in the last {}",
                    storm.len(),
                    seconds(r.storm_window)
                ),
            );
        }
        if let Some(since) = self.store_away_since {
            let for_how_long = now.saturating_duration_since(since);
            if for_how_long >= r.store_grace {
                want(
                    AlertKind::StoreUnreachable,
                    Vec::new(),
                    format!(
                        "this replica's store has not answered for {}: reads are served on this replica's own breakers and background calls are spooled here, but every booking is refused before its provider is asked (its ledger entry needs the store)",
                        minutes(for_how_long)
                    ),
                );
            }
        }
        if let Some((since, which)) = &self.drift {
            let for_how_long = now.saturating_duration_since(*since);
            if for_how_long >= r.drift_grace {
                want(
                    AlertKind::ConfigDrift,
                    Vec::new(),
                    format!(
                        "the fleet's live replicas have run different configurations for {}: {which}; reload them (POST /v1/admin/reload reaches every live replica), and look in the log of a replica that stays apart for why its reload failed",
                        minutes(for_how_long)
                    ),
                );
            }
        }
        let together: BTreeSet<&BreakerKey> = self
            .trips
            .iter()
            .filter(|(at, _)| within(*at, r.shared_window))
            .map(|(_, k)| k)
            .collect();
        let shared_id = AlertKind::SharedDependency.as_str();
        if together.len() >= r.shared_breakers {
            let names: Vec<BreakerKey> = together.into_iter().cloned().collect();
            let mut all = names.clone();
            // While firing, the alert keeps naming the breakers it named before.
            if let Some(prev) = self.active.get(shared_id) {
                all.extend(prev.breakers.iter().cloned());
            }
            want(
                AlertKind::SharedDependency,
                all,
                format!(
                    "{} breakers opened within {}: {}; look for a shared cause (DNS, network, the provider itself)",
                    names.len(),
                    seconds(r.shared_window),
                    names
                        .iter()
                        .map(|k| k.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        } else if let Some(prev) = self.active.get(shared_id) {
            let still = prev
                .breakers
                .iter()
                .filter(|k| self.rejecting_since.contains_key(*k))
                .count();
            if still >= r.shared_breakers {
                wanted.insert(shared_id.to_string(), prev.clone());
            }
        }

        let mut changes = Vec::new();
        let gone: Vec<String> = self
            .active
            .keys()
            .filter(|id| !wanted.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            if let Some(alert) = self.active.remove(&id) {
                changes.push(AlertChange::Resolved(alert, now));
            }
        }
        for (id, alert) in wanted {
            match self.active.get_mut(&id) {
                // Still firing: keep the first firing instant, refresh what it says.
                Some(existing) => {
                    existing.breakers = alert.breakers;
                    existing.summary = alert.summary;
                }
                None => {
                    changes.push(AlertChange::Fired(alert.clone()));
                    self.active.insert(id, alert);
                }
            }
        }
        changes
    }
}

fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

fn seconds(d: Duration) -> String {
    if d.as_secs() >= 60 && d.as_secs().is_multiple_of(60) {
        format!("{} min", d.as_secs() / 60)
    } else {
        format!("{} s", d.as_secs())
    }
}

#[cfg(test)]
mod tests;
