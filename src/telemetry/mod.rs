//! Observability: Prometheus metrics, the gateway's own alerts, and tracing set-up (text or JSON
//! logs, optional OTLP trace export).
//!
//! **Architecture invariant:** this is the only module that knows the metrics library
//! (`prometheus`) and the OpenTelemetry SDK. The rest of the gateway calls typed methods of
//! [`Metrics`] and creates ordinary `tracing` spans whose field names follow the OpenTelemetry
//! GenAI conventions (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//! `error.type`); `init` turns them into OTel spans when an exporter is configured.
//!
//! [`Telemetry`] is the hub the gateway owns: the metrics, the [`alerts::AlertEngine`] behind a
//! short `std::sync::Mutex` (a few arithmetic steps per transition, never held across an
//! `.await`), the broadcast channel of alert changes for `/v1/events`, and a token that ends
//! those event streams at shutdown.

pub mod alerts;
#[cfg(test)]
pub(crate) mod captured;
mod init;
mod metrics;

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use alerts::{Alert, AlertChange, AlertEngine, AlertKind, AlertRules};
pub use init::{InitError, TracingGuard, init, init_default};
pub use metrics::{
    AttemptOutcome, BREAKER_STATES, CallbackOutcome, FallbackKind, Metrics, reject_reason,
};

use crate::breaker::TransitionEvent;

/// Metrics, alerts and event streams of one gateway.
#[derive(Debug)]
pub struct Telemetry {
    metrics: Metrics,
    alerts: Mutex<AlertEngine>,
    alert_events: broadcast::Sender<AlertChange>,
    streams: CancellationToken,
    /// The last [`RECENT_TRANSITIONS`] transitions of all breakers, oldest first.
    recent: Mutex<VecDeque<TransitionEvent>>,
}

/// How many transitions [`Telemetry::recent_transitions`] remembers across all breakers.
pub const RECENT_TRANSITIONS: usize = 256;

impl Telemetry {
    /// Fresh metrics and an alert engine with `rules`.
    pub fn new(rules: AlertRules) -> Self {
        let (alert_events, _) = broadcast::channel(256);
        let t = Telemetry {
            metrics: Metrics::new(),
            alerts: Mutex::new(AlertEngine::new(rules)),
            alert_events,
            streams: CancellationToken::new(),
            recent: Mutex::new(VecDeque::with_capacity(RECENT_TRANSITIONS)),
        };
        for kind in AlertKind::ALL {
            t.metrics.register_alert(kind.as_str(), kind.severity());
        }
        t.update_firing_gauges(&[]);
        t
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// A breaker transition: counted, and fed to the alert rules.
    pub fn on_transition(&self, event: &TransitionEvent) {
        self.metrics.record_transition(event);
        {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.len() == RECENT_TRANSITIONS {
                recent.pop_front();
            }
            recent.push_back(event.clone());
        }
        let changes = self.engine().on_transition(event);
        self.publish(changes);
    }

    /// The alert rules' thresholds.
    pub fn alert_rules(&self) -> AlertRules {
        self.engine().rules().clone()
    }

    /// Takes `rules` as the thresholds from now on (a test's tighter ones; the gateway runs
    /// [`AlertRules::spec`]). Call it before the gateway serves: what the engine follows stays,
    /// judged by the new thresholds at the next evaluation.
    pub fn set_alert_rules(&self, rules: AlertRules) {
        self.engine().set_rules(rules);
    }

    /// A breaker found rejecting (or not) when the gateway starts serving: the open a replica
    /// restored from the store before anything listened for transitions
    /// ([`AlertEngine::on_found`]), timed from `fleet_since` when the fleet's record knows when
    /// its outage began ([`AlertEngine::on_fleet_open`]).
    pub fn on_breaker_found(
        &self,
        snapshot: &crate::breaker::BreakerSnapshot,
        fleet_since: Option<Instant>,
        now: Instant,
    ) {
        let mut engine = self.engine();
        let mut changes = engine.on_found(&snapshot.key, snapshot.state, snapshot.since, now);
        if let Some(since) = fleet_since {
            changes.extend(engine.on_fleet_open(&snapshot.key, since, now));
        }
        drop(engine);
        self.publish(changes);
    }

    /// The fleet's record says breaker `key` has been rejecting since `since`
    /// ([`AlertEngine::on_fleet_open`]).
    pub fn on_fleet_open(&self, key: &crate::breaker::BreakerKey, since: Instant, now: Instant) {
        let changes = self.engine().on_fleet_open(key, since, now);
        self.publish(changes);
    }

    /// Forgets the breakers of `keys`, which a reload removed: their gauges go, and their alerts
    /// resolve at the next tick.
    pub fn forget_breakers(&self, keys: &[crate::breaker::BreakerKey]) {
        for key in keys {
            self.metrics.forget_breaker(&key.tool, &key.provider);
        }
        self.engine().forget(keys);
    }

    /// Whether this replica's store answers now (the fleet's connection and the job spool say
    /// so), for the `store_unreachable` alert.
    pub fn on_store(&self, answers: bool, now: Instant) {
        let changes = self.engine().on_store(answers, now);
        self.publish(changes);
    }

    /// Whether the fleet's live replicas run different configurations (`Some`: which, in one
    /// line), for the `config_drift` alert.
    pub fn on_config_drift(&self, drift: Option<String>, now: Instant) {
        let changes = self.engine().on_config_drift(drift, now);
        self.publish(changes);
    }

    /// Evaluates the time-based alert rules at `now`.
    pub fn tick(&self, now: Instant) {
        let changes = self.engine().tick(now);
        self.publish(changes);
    }

    /// The remembered transitions of `key` (every breaker when `None`), newest first, at most
    /// `limit`.
    pub fn recent_transitions(
        &self,
        key: Option<&crate::breaker::BreakerKey>,
        limit: usize,
    ) -> Vec<TransitionEvent> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent
            .iter()
            .rev()
            .filter(|e| key.is_none_or(|k| &e.key == k))
            .take(limit)
            .cloned()
            .collect()
    }

    /// The alerts firing now.
    pub fn active_alerts(&self) -> Vec<Alert> {
        self.engine().active()
    }

    /// A receiver of every alert change from now on.
    pub fn subscribe_alerts(&self) -> broadcast::Receiver<AlertChange> {
        self.alert_events.subscribe()
    }

    /// Cancelled when the server shuts down; long-lived streams end on it.
    pub fn streams_token(&self) -> CancellationToken {
        self.streams.clone()
    }

    /// Ends every long-lived stream (called when graceful shutdown starts).
    pub fn close_streams(&self) {
        self.streams.cancel();
    }

    fn engine(&self) -> MutexGuard<'_, AlertEngine> {
        // The engine's state stays consistent across a panic in its arithmetic; keep alerting.
        self.alerts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, changes: Vec<AlertChange>) {
        if changes.is_empty() {
            return;
        }
        for change in &changes {
            match change {
                AlertChange::Fired(a) => {
                    self.metrics
                        .record_alert_fired(a.kind.as_str(), a.kind.severity());
                    tracing::warn!(
                        alert = a.kind.as_str(),
                        severity = a.kind.severity(),
                        id = %a.id,
                        "alert firing: {}",
                        a.summary
                    );
                }
                AlertChange::Resolved(a, _) => {
                    tracing::info!(alert = a.kind.as_str(), id = %a.id, "alert resolved: {}", a.summary);
                }
            }
            // No subscriber is fine: nobody is watching the event stream.
            let _ = self.alert_events.send(change.clone());
        }
        let active = self.active_alerts();
        self.update_firing_gauges(&active);
    }

    fn update_firing_gauges(&self, active: &[Alert]) {
        let counts: Vec<(&str, &str, usize)> = AlertKind::ALL
            .iter()
            .map(|k| {
                (
                    k.as_str(),
                    k.severity(),
                    active.iter().filter(|a| a.kind == *k).count(),
                )
            })
            .collect();
        self.metrics.set_alerts_firing(&counts);
    }
}
