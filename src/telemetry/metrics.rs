//! Prometheus metrics: one [`Metrics`] value with a typed method per thing the gateway counts.
//!
//! **Why the `prometheus` crate (tikv, 0.14, no default features).** It renders the classic
//! Prometheus text format, which every Prometheus version scrapes and which `promtool check
//! metrics` (CI uses Debian's 2.42) checks. `prometheus-client` 0.26 renders OpenMetrics only:
//! its counters are declared as `# TYPE x counter` with samples named `x_total`, which promtool
//! 2.42 reports as "no help text" (exit 3; tried). `opentelemetry-prometheus` renders through
//! this same crate, behind the OpenTelemetry metrics SDK's aggregation layer, which we do not need
//! for a pull endpoint. Nothing outside this file names the library, so swapping it is a
//! one-file change.
//!
//! Naming follows Prometheus conventions: a `faregate_` prefix, `_total` counters, base units
//! (`_seconds`), and low-cardinality labels only (tool, provider, state, reason, status): no call
//! ids, no arguments, no keys.

use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::breaker::{
    BreakerSnapshot, BreakerState, RejectReason, TransitionEvent, legal_transition_labels,
};

mod labels;

use labels::callback_outcome;
pub use labels::{AttemptOutcome, CallbackOutcome, FallbackKind, reject_reason};

/// Every state a breaker gauge has a series for (`detail_str` names, so the ramp is visible).
pub const BREAKER_STATES: [&str; 6] = [
    "closed",
    "open",
    "half_open",
    "ramp",
    "forced_open",
    "forced_closed",
];

/// Latency buckets in seconds, from the OTel HTTP server duration buckets up to 15 s (a flight
/// search that normally takes 2 s, on a bad day) and beyond.
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 15.0, 30.0, 60.0,
];

/// End-to-end job latency buckets in seconds (submission to result): a job that runs at once
/// ends within seconds, one that waits out an outage within minutes to hours, and a job past a
/// day is past every `max_age` worth having.
const JOB_LATENCY_BUCKETS: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
];

/// The gateway's metrics. Cheap to call from the hot path: each method is a label lookup and an
/// atomic add.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    calls: IntCounterVec,
    call_duration: HistogramVec,
    attempts: IntCounterVec,
    attempt_duration: HistogramVec,
    rejected: IntCounterVec,
    bulkhead_rejected: IntCounterVec,
    fallbacks: IntCounterVec,
    maintenance_active: IntGaugeVec,
    bulkhead_in_use: IntGaugeVec,
    fleet_connected: IntGaugeVec,
    config_info: IntGaugeVec,
    bulkhead_capacity: IntGaugeVec,
    breaker_state: IntGaugeVec,
    breaker_failure_rate: prometheus::GaugeVec,
    breaker_slow_rate: prometheus::GaugeVec,
    breaker_calls: IntGaugeVec,
    breaker_failure_rate_at_open: prometheus::GaugeVec,
    breaker_open_seconds: prometheus::GaugeVec,
    transitions: IntCounterVec,
    alerts_firing: IntGaugeVec,
    alerts_fired: IntCounterVec,
    queue_depth: IntGaugeVec,
    jobs_spooled: IntGaugeVec,
    oldest_due_job_age: prometheus::GaugeVec,
    callbacks: IntCounterVec,
    notice_callbacks: IntCounterVec,
    job_latency: HistogramVec,
    client_limited: IntCounterVec,
    bookings: IntCounterVec,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition");
    registry
        .register(Box::new(c.clone()))
        .expect("metric names are unique");
    c
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition");
    registry
        .register(Box::new(g.clone()))
        .expect("metric names are unique");
    g
}

fn float_gauge(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::GaugeVec {
    let g =
        prometheus::GaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition");
    registry
        .register(Box::new(g.clone()))
        .expect("metric names are unique");
    g
}

fn histogram(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    histogram_with(registry, name, help, labels, LATENCY_BUCKETS)
}

fn histogram_with(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )
    .expect("valid metric definition");
    registry
        .register(Box::new(h.clone()))
        .expect("metric names are unique");
    h
}

impl Metrics {
    /// A fresh registry with every metric family defined (and no series yet).
    pub fn new() -> Self {
        let r = Registry::new();
        Metrics {
            calls: counter(
                &r,
                "faregate_tool_calls_total",
                "Tool calls answered, by tool, answering provider (stale: the one that answered originally; rejected: the one that refused; none when no provider answered) and envelope status.",
                &["tool", "provider", "status"],
            ),
            call_duration: histogram(
                &r,
                "faregate_tool_call_duration_seconds",
                "Time from receiving a tool call to its envelope, by tool and envelope status.",
                &["tool", "status"],
            ),
            attempts: counter(
                &r,
                "faregate_upstream_attempts_total",
                "Upstream attempts (first tries and retries), by tool, provider and outcome (success, failure, ignored) and error type.",
                &["tool", "provider", "outcome", "error_type"],
            ),
            attempt_duration: histogram(
                &r,
                "faregate_upstream_attempt_duration_seconds",
                "Duration of one upstream attempt, by tool and provider.",
                &["tool", "provider"],
            ),
            rejected: counter(
                &r,
                "faregate_breaker_rejected_calls_total",
                "Attempts a breaker fast-failed without contacting the provider, by reason (open, half_open_full, ramp_share, forced_open).",
                &["tool", "provider", "reason"],
            ),
            bulkhead_rejected: counter(
                &r,
                "faregate_bulkhead_rejected_calls_total",
                "Calls answered unavailable at once because the tool's bulkhead was full.",
                &["tool"],
            ),
            fallbacks: counter(
                &r,
                "faregate_fallbacks_total",
                "Interactive calls answered by a fallback, by kind (stale: last good result; text: the tool's fallback prompt; maintenance: either while maintenance windows hold every provider of the tool).",
                &["tool", "kind"],
            ),
            maintenance_active: gauge(
                &r,
                "faregate_maintenance_active",
                "1 while a scheduled maintenance window holds the tool's provider (not asked), else 0.",
                &["tool", "provider"],
            ),
            bulkhead_in_use: gauge(
                &r,
                "faregate_bulkhead_in_use",
                "Calls of the tool upstream right now (bulkhead slots taken).",
                &["tool"],
            ),
            fleet_connected: gauge(
                &r,
                "faregate_fleet_connected",
                "1 while the fleet's store answers, 0 while this replica serves on its own breakers (only with a fleet store).",
                &[],
            ),
            config_info: gauge(
                &r,
                "faregate_config_info",
                "1 for the fingerprint of the configuration this replica runs (its files: faregate.toml, tools/, prompts/; no environment value); replicas with different fingerprints run different configurations.",
                &["fingerprint"],
            ),
            jobs_spooled: gauge(
                &r,
                "faregate_jobs_spooled",
                "Background submissions this replica holds in its local spool because the job store did not answer; they move into the store when it answers again (only with a PostgreSQL store).",
                &[],
            ),
            bulkhead_capacity: gauge(
                &r,
                "faregate_bulkhead_capacity",
                "Bulkhead size of the tool (max_concurrent).",
                &["tool"],
            ),
            breaker_state: gauge(
                &r,
                "faregate_breaker_state",
                "1 for the breaker's current state, 0 for the others (closed, open, half_open, ramp, forced_open, forced_closed).",
                &["tool", "provider", "state"],
            ),
            breaker_failure_rate: float_gauge(
                &r,
                "faregate_breaker_failure_ratio",
                "Failed calls / calls in the breaker's window.",
                &["tool", "provider"],
            ),
            breaker_slow_rate: float_gauge(
                &r,
                "faregate_breaker_slow_call_ratio",
                "Slow successes / calls in the breaker's window.",
                &["tool", "provider"],
            ),
            breaker_calls: gauge(
                &r,
                "faregate_breaker_window_calls",
                "Calls in the breaker's window.",
                &["tool", "provider"],
            ),
            breaker_failure_rate_at_open: float_gauge(
                &r,
                "faregate_breaker_failure_ratio_at_last_open",
                "Failure ratio of the population that last opened the breaker.",
                &["tool", "provider"],
            ),
            breaker_open_seconds: float_gauge(
                &r,
                "faregate_breaker_open_seconds",
                "Total time the breaker has spent automatically open since start.",
                &["tool", "provider"],
            ),
            transitions: counter(
                &r,
                "faregate_breaker_transitions_total",
                "Breaker state transitions, by from and to state (ramp shown as ramp) and reason.",
                &["tool", "provider", "from", "to", "reason"],
            ),
            alerts_firing: gauge(
                &r,
                "faregate_alerts_firing",
                "Alerts the gateway itself currently raises, by alert name and severity.",
                &["alert", "severity"],
            ),
            alerts_fired: counter(
                &r,
                "faregate_alerts_fired_total",
                "Alerts the gateway raised since start, by alert name and severity.",
                &["alert", "severity"],
            ),
            queue_depth: gauge(
                &r,
                "faregate_jobs",
                "Background jobs by tool and state (queued, running, retry_scheduled, succeeded, dead, cancelled).",
                &["tool", "state"],
            ),
            oldest_due_job_age: float_gauge(
                &r,
                "faregate_jobs_oldest_due_age_seconds",
                "Age of the oldest job of the tool that is due to run (0 when none is due).",
                &["tool"],
            ),
            callbacks: counter(
                &r,
                "faregate_job_callbacks_total",
                "Job result callback deliveries, by outcome (sent; retry: failed, tried again later; failed: given up).",
                &["outcome"],
            ),
            notice_callbacks: counter(
                &r,
                "faregate_notice_callbacks_total",
                "Notice callback deliveries (a watch's news, a tool back in service), by outcome (sent; retry: failed, tried again later; failed: given up).",
                &["outcome"],
            ),
            job_latency: histogram_with(
                &r,
                "faregate_job_latency_seconds",
                "Background jobs from submission to their end, by tool and outcome (succeeded, dead).",
                &["tool", "outcome"],
                JOB_LATENCY_BUCKETS,
            ),
            client_limited: {
                let c = counter(
                    &r,
                    "faregate_client_limited_total",
                    "Requests refused because a client was over a [limits] limit, by limit (client_rate, client_max_concurrent_calls, client_max_streams, client_max_mcp_sessions; client_share_of_tool counts tool calls and job runs refused because the client held its share of the tool's concurrent calls, client_share_of_provider those refused because the client was over its share of a provider's rate-limit window while it ran low), or because event streams held their share of the connections (streams_in_all).",
                    &["limit"],
                );
                for limit in [
                    "client_rate",
                    "client_max_concurrent_calls",
                    "client_max_streams",
                    "client_max_mcp_sessions",
                    crate::clients::SHARE_LIMIT,
                    crate::clients::PROVIDER_SHARE_LIMIT,
                    "streams_in_all",
                ] {
                    c.with_label_values(&[limit]);
                }
                c
            },
            bookings: counter(
                &r,
                "faregate_bookings_total",
                "Booking calls by tool and ledger outcome (booked, failed, unknown, replayed, conflict, refused) and the outcomes reconciliation settled (reconciled_booked, reconciled_failed).",
                &["tool", "outcome"],
            ),
            registry: r,
        }
    }

    /// Creates the series of a served tool and its breakers at zero, so dashboards and `rate()`
    /// see them before the first call: for a tool with a breaker of its own on each provider
    /// (see [`Metrics::register_tool_calls`] and [`Metrics::register_breaker`] for shared ones).
    pub fn register_tool(&self, tool: &str, providers: &[&str], max_concurrent: u32) {
        self.register_tool_calls(tool, providers, max_concurrent);
        for provider in providers {
            self.register_breaker(tool, provider);
        }
    }

    /// Creates the series of a served tool's calls on `providers` at zero (bulkhead,
    /// fallbacks, rejections by its breakers).
    pub fn register_tool_calls(&self, tool: &str, providers: &[&str], max_concurrent: u32) {
        self.bulkhead_capacity
            .with_label_values(&[tool])
            .set(i64::from(max_concurrent));
        self.bulkhead_in_use.with_label_values(&[tool]).set(0);
        self.bulkhead_rejected.with_label_values(&[tool]);
        for kind in ["stale", "text", "maintenance"] {
            self.fallbacks.with_label_values(&[tool, kind]);
        }
        for provider in providers {
            for reason in ["open", "half_open_full", "ramp_share", "forced_open"] {
                self.rejected.with_label_values(&[tool, provider, reason]);
            }
        }
    }

    /// Creates the series of one breaker, labelled with its key's two parts (a shared breaker's
    /// tool is `*`): its state, closed, and a transition counter at zero for every transition it
    /// may make ([`legal_transition_labels`]). A counter series born at 1 reads as no change to
    /// `increase()` and `changes()`, so without the zeros the alert rules and the dashboard would
    /// miss each breaker's first opening.
    pub fn register_breaker(&self, tool: &str, provider: &str) {
        for (i, state) in BREAKER_STATES.iter().enumerate() {
            self.breaker_state
                .with_label_values(&[tool, provider, state])
                .set(i64::from(i == 0));
        }
        for (from, to, reason) in legal_transition_labels() {
            self.transitions
                .with_label_values(&[tool, provider, from, to, reason]);
        }
    }

    /// One answered tool call. `provider` is the provider that answered (a stale answer's the
    /// one that answered originally, a refusal's the one that refused; none when no provider
    /// answered); `status` the envelope status.
    pub fn record_call(&self, tool: &str, provider: Option<&str>, status: &str, elapsed: Duration) {
        self.calls
            .with_label_values(&[tool, provider.unwrap_or("none"), status])
            .inc();
        self.call_duration
            .with_label_values(&[tool, status])
            .observe(elapsed.as_secs_f64());
    }

    /// One upstream attempt. `error_type` is empty on success.
    pub fn record_attempt(
        &self,
        tool: &str,
        provider: &str,
        outcome: AttemptOutcome,
        error_type: &str,
        elapsed: Duration,
    ) {
        self.attempts
            .with_label_values(&[tool, provider, outcome.as_str(), error_type])
            .inc();
        self.attempt_duration
            .with_label_values(&[tool, provider])
            .observe(elapsed.as_secs_f64());
    }

    /// An attempt the breaker fast-failed.
    pub fn record_rejected(&self, tool: &str, provider: &str, reason: RejectReason) {
        self.rejected
            .with_label_values(&[tool, provider, reject_reason(reason)])
            .inc();
    }

    /// A call the full bulkhead turned away.
    pub fn record_bulkhead_rejected(&self, tool: &str) {
        self.bulkhead_rejected.with_label_values(&[tool]).inc();
    }

    /// An interactive call answered by a fallback.
    pub fn record_fallback(&self, tool: &str, kind: FallbackKind) {
        let kind = match kind {
            FallbackKind::Stale => "stale",
            FallbackKind::Text => "text",
            FallbackKind::Maintenance => "maintenance",
        };
        self.fallbacks.with_label_values(&[tool, kind]).inc();
    }

    /// Which tool × provider keys maintenance windows hold now (`true`): every served key, so
    /// a key a reload removed goes.
    pub fn set_maintenance_active(&self, keys: &[(&str, &str, bool)]) {
        self.maintenance_active.reset();
        for (tool, provider, held) in keys {
            self.maintenance_active
                .with_label_values(&[tool, provider])
                .set(i64::from(*held));
        }
    }

    /// Bulkhead slots of `tool` in use now.
    pub fn set_bulkhead_in_use(&self, tool: &str, in_use: usize) {
        self.bulkhead_in_use
            .with_label_values(&[tool])
            .set(i64::try_from(in_use).unwrap_or(i64::MAX));
    }

    /// Whether the fleet's store answers (1) or this replica serves on its own breakers (0).
    pub fn set_fleet_connected(&self, connected: bool) {
        self.fleet_connected
            .with_label_values(&[] as &[&str])
            .set(i64::from(connected));
    }

    /// The fingerprint of the configuration in force: its series alone, the one before goes.
    pub fn set_config_fingerprint(&self, fingerprint: &str) {
        self.config_info.reset();
        self.config_info.with_label_values(&[fingerprint]).set(1);
    }

    /// A breaker transition (counted; the state gauge follows).
    pub fn record_transition(&self, event: &TransitionEvent) {
        let (tool, provider) = (event.key.tool.as_str(), event.key.provider.as_str());
        self.transitions
            .with_label_values(&[
                tool,
                provider,
                event.from.detail_str(),
                event.to.detail_str(),
                event.reason.as_str(),
            ])
            .inc();
        self.set_breaker_state(tool, provider, event.to);
    }

    /// Everything a snapshot tells: state, window rates and calls, history figures.
    pub fn observe_breaker(&self, snapshot: &BreakerSnapshot) {
        let (tool, provider) = (snapshot.key.tool.as_str(), snapshot.key.provider.as_str());
        self.set_breaker_state(tool, provider, snapshot.state);
        let labels = [tool, provider];
        self.breaker_failure_rate
            .with_label_values(&labels)
            .set(snapshot.failure_rate);
        self.breaker_slow_rate
            .with_label_values(&labels)
            .set(snapshot.slow_rate);
        self.breaker_calls
            .with_label_values(&labels)
            .set(i64::from(snapshot.calls_in_window));
        self.breaker_open_seconds
            .with_label_values(&labels)
            .set(snapshot.history.total_open_time.as_secs_f64());
        match snapshot.history.failure_rate_at_last_open {
            Some(rate) => self
                .breaker_failure_rate_at_open
                .with_label_values(&labels)
                .set(rate),
            // Never opened, or its last open was followed from another replica, whose figure
            // that replica reports: none here, rather than 0 or an earlier open's.
            None => {
                let _ = self
                    .breaker_failure_rate_at_open
                    .remove_label_values(&labels);
            }
        }
    }

    /// Drops the gauges of a breaker a reload removed (its tool, or its provider in the tool's
    /// chain), so no dashboard or alert rule reads its last state as if it were current.
    /// Counters stay: what happened, happened.
    pub fn forget_breaker(&self, tool: &str, provider: &str) {
        for s in BREAKER_STATES {
            let _ = self.breaker_state.remove_label_values(&[tool, provider, s]);
        }
        let labels = [tool, provider];
        let _ = self.breaker_failure_rate.remove_label_values(&labels);
        let _ = self.breaker_slow_rate.remove_label_values(&labels);
        let _ = self.breaker_calls.remove_label_values(&labels);
        let _ = self.breaker_open_seconds.remove_label_values(&labels);
        let _ = self
            .breaker_failure_rate_at_open
            .remove_label_values(&labels);
    }

    fn set_breaker_state(&self, tool: &str, provider: &str, state: BreakerState) {
        let current = state.detail_str();
        for s in BREAKER_STATES {
            self.breaker_state
                .with_label_values(&[tool, provider, s])
                .set(i64::from(s == current));
        }
    }

    /// The alerts firing now, by name and severity (every known alert is reported, 0 or more).
    pub fn set_alerts_firing(&self, counts: &[(&str, &str, usize)]) {
        for (alert, severity, n) in counts {
            self.alerts_firing
                .with_label_values(&[alert, severity])
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }

    /// Creates the fired counter of one alert at zero, so `increase()` sees its first firing.
    pub fn register_alert(&self, alert: &str, severity: &str) {
        self.alerts_fired.with_label_values(&[alert, severity]);
    }

    /// An alert started firing.
    pub fn record_alert_fired(&self, alert: &str, severity: &str) {
        self.alerts_fired
            .with_label_values(&[alert, severity])
            .inc();
    }

    /// For the jobs engine: how many jobs of `tool` are in `state` (`queued`, `running`,
    /// `retry_scheduled`, `succeeded`, `dead`). Call it with the store's counts whenever they
    /// change or on a timer; a state not reported keeps its last value, so report zeros too.
    pub fn set_queue_depth(&self, tool: &str, state: &str, jobs: u64) {
        self.queue_depth
            .with_label_values(&[tool, state])
            .set(i64::try_from(jobs).unwrap_or(i64::MAX));
    }

    /// For the jobs engine: how many submissions wait in this replica's spool for the store.
    pub fn set_jobs_spooled(&self, jobs: u64) {
        self.jobs_spooled
            .with_label_values(&[] as &[&str])
            .set(i64::try_from(jobs).unwrap_or(i64::MAX));
    }

    /// For the jobs engine: the age of the oldest job of `tool` whose next attempt is due (zero
    /// when none is due). An operator reads it with the queue depth: a deep queue whose oldest
    /// job is young is draining, one whose oldest job keeps ageing is stuck.
    pub fn set_oldest_due_job_age(&self, tool: &str, age: Duration) {
        self.oldest_due_job_age
            .with_label_values(&[tool])
            .set(age.as_secs_f64());
    }

    /// For the jobs engine: creates the callback counters at zero (every outcome), the job
    /// callbacks' and the notices' (a store that keeps jobs keeps watches and notices too).
    pub fn register_job_callbacks(&self) {
        for outcome in ["sent", "retry", "failed"] {
            self.callbacks.with_label_values(&[outcome]);
            self.notice_callbacks.with_label_values(&[outcome]);
        }
    }

    /// For the jobs engine: creates the latency histograms of `tool`'s jobs at zero (both
    /// outcomes [`Metrics::record_job_finished`] is given).
    pub fn register_job_tool(&self, tool: &str) {
        for outcome in ["succeeded", "dead"] {
            self.job_latency.with_label_values(&[tool, outcome]);
        }
    }

    /// For the jobs engine: one job callback delivery: delivered, failed and tried again later,
    /// or given up on.
    pub fn record_callback(&self, outcome: CallbackOutcome) {
        self.callbacks
            .with_label_values(&[callback_outcome(outcome)])
            .inc();
    }

    /// For the notice senders: one notice callback delivery, as [`Metrics::record_callback`].
    pub fn record_notice_callback(&self, outcome: CallbackOutcome) {
        self.notice_callbacks
            .with_label_values(&[callback_outcome(outcome)])
            .inc();
    }

    /// For the jobs engine: a job of `tool` ended (`succeeded` or `dead`) `latency` after it was
    /// submitted: the promise background mode makes, measured end to end.
    pub fn record_job_finished(&self, tool: &str, outcome: &str, latency: Duration) {
        self.job_latency
            .with_label_values(&[tool, outcome])
            .observe(latency.as_secs_f64());
    }

    /// A request refused by a per-client limit (`client_rate`, `client_max_concurrent_calls`,
    /// `client_max_streams`, `client_max_mcp_sessions`, and, counted by the call path per call,
    /// `client_share_of_tool` and `client_share_of_provider`) or by the share of connections event streams may take
    /// (`streams_in_all`); no client identity is ever a label.
    pub fn record_client_limited(&self, limit: &'static str) {
        self.client_limited.with_label_values(&[limit]).inc();
    }

    /// One booking call's ledger outcome, or one outcome reconciliation settled.
    pub fn record_booking(&self, tool: &str, outcome: &'static str) {
        self.bookings.with_label_values(&[tool, outcome]).inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        // Encoding into a Vec cannot fail for valid families, and ours are defined above.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    /// The `Content-Type` of [`Metrics::render`].
    pub fn content_type(&self) -> &'static str {
        "text/plain; version=0.0.4; charset=utf-8"
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
