//! What the call path tells operators: one `execute_tool {tool}` span per interactive call and
//! one `upstream_attempt` span per attempt (OpenTelemetry GenAI conventions), and the metrics of
//! calls, attempts, breaker rejections and fallbacks.
//!
//! The [`Observer`] is a value the pipeline and the gateway are given (it holds the gateway's
//! [`Telemetry`], which `app.rs` builds), so the call path reads as the call path and reports at
//! each decision point with one method call.
//!
//! Span attributes (no arguments, results or keys are ever recorded):
//! - `execute_tool {tool}` (kind internal): `gen_ai.operation.name = "execute_tool"`,
//!   `gen_ai.tool.name`, `gen_ai.tool.type = "function"`, `gen_ai.tool.call.id`,
//!   `faregate.call.mode` (`interactive`: background jobs run without this span),
//!   `faregate.status` (the envelope status), `faregate.provider`, `faregate.fallback` (`stale`
//!   or `text`), `faregate.coalesced = true` when the call joined an identical read in flight
//!   (with a link to the leader's span, whose children the shared attempts are), and
//!   `error.type` when the call did not get fresh data (for a stale answer it says why the
//!   fresh call failed);
//! - `upstream_attempt` (kind client), a child of the call's span: `faregate.tool`,
//!   `faregate.provider`, `faregate.attempt` (1-based), `faregate.breaker.decision`
//!   (`admitted`, `probe`, `ramp` or `rejected`), `faregate.breaker.state` (when rejected),
//!   `faregate.outcome` (`success`, `failure`, `ignored`, `rejected`) and `error.type`.
//!
//! `error.type` values: `circuit_open`, `maintenance` (a scheduled window; the attempt's
//! `faregate.breaker.decision` is `maintenance`), `bulkhead_full`, `client_share_full` (the
//! client held its share of the bulkhead: its call is `rejected`, with `limit`),
//! `provider_share_full` (the client was over its share of a provider's rate-limit window: the
//! attempt's `faregate.breaker.decision` is `provider_share`, and a call no provider served is
//! `rejected`, with `limit`),
//! `deadline_exceeded`, and the provider error kinds (`ErrorKind::as_str`): `timeout`, `connect`, `transport`,
//! `rate_limited`, `upstream_5xx`, `misconfigured`, `malformed`, `rejected` (the provider
//! refused; the model can fix it); plus `invalid_arguments`.

use std::sync::Arc;
use std::time::Duration;

use tracing::Span;
use tracing::field::Empty;

use super::envelope::{Envelope, Status};
use super::outcome::Failure;
use super::served::ServedTool;
use crate::breaker::{Outcome, PermitKind, Rejected};
use crate::clients::{PROVIDER_SHARE_LIMIT, SHARE_LIMIT};
use crate::providers::UpstreamError;
use crate::telemetry::{AttemptOutcome, FallbackKind, Telemetry};
use crate::tools::CallMode;
use crate::trace_context::TraceContext;

/// How often at most reconciliation warns that booking lookups fail.
const LOOKUP_WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Reports the call path to the gateway's telemetry.
#[derive(Debug)]
pub(crate) struct Observer {
    telemetry: Arc<Telemetry>,
    /// When reconciliation last warned that a booking lookup failed ([`Observer::lookup_failed`]).
    lookup_warned: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Observer {
    /// An observer reporting to `telemetry`.
    pub(crate) fn new(telemetry: Arc<Telemetry>) -> Self {
        Observer {
            telemetry,
            lookup_warned: std::sync::Mutex::new(None),
        }
    }

    /// Says, at most once a minute, that looking a booking up at `provider` failed: an outcome
    /// that stays unknown must not stay unexplained to the operator, while reconciliation asks
    /// again every few seconds (each failure is a debug line).
    pub(crate) fn lookup_failed(&self, entry: &crate::ledger::Entry, provider: &str, why: &str) {
        tracing::debug!(tool = %entry.tool, provider, error = why, "booking lookup failed; will try again");
        let now = crate::clock::now();
        let mut last = self
            .lookup_warned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|at| now.saturating_duration_since(at) < LOOKUP_WARN_EVERY) {
            return;
        }
        *last = Some(now);
        tracing::warn!(
            tool = %entry.tool,
            provider,
            client = %entry.client,
            idempotency_key = %entry.idempotency_key,
            error = why,
            "a booking's outcome stays unknown: looking it up at the provider failed (reconciliation asks again every few seconds; this is said at most once a minute)"
        );
    }

    /// Creates the metric series of a served tool, so they read zero before its first call.
    pub(crate) fn register_tool(&self, tool: &ServedTool) {
        let metrics = self.telemetry.metrics();
        metrics.register_tool_calls(
            tool.spec.name,
            &tool.provider_names(),
            tool.config.max_concurrent,
        );
        for breaker in tool.breakers() {
            metrics.register_breaker(&breaker.key().tool, &breaker.key().provider);
        }
    }

    /// The call series of a tool a reload added or changed (its breakers' state series are
    /// [`Observer::register_breakers`]'s).
    pub(crate) fn register_calls(&self, tool: &ServedTool) {
        self.telemetry.metrics().register_tool_calls(
            tool.spec.name,
            &tool.provider_names(),
            tool.config.max_concurrent,
        );
    }

    /// The state series of breakers a reload made, closed.
    pub(crate) fn register_breakers(&self, keys: &[crate::breaker::BreakerKey]) {
        for key in keys {
            self.telemetry
                .metrics()
                .register_breaker(&key.tool, &key.provider);
        }
    }

    /// Forgets the breakers a reload removed (their gauges and alerts).
    pub(crate) fn forget_breakers(&self, keys: &[crate::breaker::BreakerKey]) {
        self.telemetry.forget_breakers(keys);
    }

    /// One write call's audit line and its ledger outcome counted. The line names the client,
    /// the tool, the idempotency key, the outcome and the order id: ids only, never passenger
    /// data or arguments.
    pub(crate) fn booking(
        &self,
        client: &str,
        tool: &str,
        key: &str,
        outcome: &'static str,
        order_id: Option<&str>,
    ) {
        tracing::info!(
            target: "faregate::audit",
            client,
            tool,
            idempotency_key = key,
            outcome,
            order_id = order_id.unwrap_or(""),
            "write call"
        );
        self.telemetry.metrics().record_booking(tool, outcome);
    }

    /// The span of one interactive call of `tool`.
    pub(crate) fn call_span(tool: &str) -> Span {
        tracing::info_span!(
            "execute_tool",
            otel.name = %format!("execute_tool {tool}"),
            otel.kind = "internal",
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %tool,
            gen_ai.tool.type = "function",
            gen_ai.tool.call.id = Empty,
            faregate.call.mode = CallMode::Interactive.as_str(),
            faregate.status = Empty,
            faregate.provider = Empty,
            faregate.fallback = Empty,
            faregate.coalesced = Empty,
            error.type = Empty,
        )
    }

    /// Says on `span` (a call's) that it joined the shared call `leader`'s span leads: the
    /// attribute, and a link to the leader's span, under which the provider attempts are. A
    /// disabled span (no trace export) is left alone, before anything is read or made.
    pub(crate) fn coalesced(span: &Span, leader: &Span) {
        if span.is_disabled() {
            return;
        }
        span.record("faregate.coalesced", true);
        if let Some(led) = TraceContext::of_span(leader) {
            led.link(span);
        }
    }

    /// Records a call's answer on its span and counts the call (and its fallback, if any:
    /// kind `maintenance` when `held`, maintenance windows holding every provider of the tool).
    ///
    /// The call's `provider` label is the provider that answered: a stale answer's is the one
    /// that answered originally, a refusal's the one that refused, and an unavailable answer's
    /// none (the envelope names the provider that failed, which answered nothing).
    pub(crate) fn called(&self, span: &Span, envelope: &Envelope, elapsed: Duration, held: bool) {
        let status = envelope.status.as_str();
        span.record("gen_ai.tool.call.id", envelope.call_id.as_str());
        span.record("faregate.status", status);
        if let Some(p) = &envelope.provider {
            span.record("faregate.provider", p.as_str());
        }
        let metrics = self.telemetry.metrics();
        match envelope.status {
            Status::Stale => {
                span.record("faregate.fallback", "stale");
                let kind = if held {
                    FallbackKind::Maintenance
                } else {
                    FallbackKind::Stale
                };
                metrics.record_fallback(&envelope.tool, kind);
            }
            Status::Unavailable => {
                span.record("faregate.fallback", "text");
                span.record("otel.status_code", "ERROR");
                let kind = if held {
                    FallbackKind::Maintenance
                } else {
                    FallbackKind::Text
                };
                metrics.record_fallback(&envelope.tool, kind);
            }
            Status::Rejected => {
                // A client refused for holding its share of the tool, or for being over its
                // share of the providers' windows, told apart from a provider's refusal.
                let error = match envelope.limit.as_deref() {
                    Some(PROVIDER_SHARE_LIMIT) => "provider_share_full",
                    Some(_) => "client_share_full",
                    None => "rejected",
                };
                span.record("error.type", error);
                span.record("otel.status_code", "ERROR");
            }
            Status::InvalidArguments => {
                span.record("error.type", "invalid_arguments");
                span.record("otel.status_code", "ERROR");
            }
            Status::Ok | Status::Queued => {}
        }
        let answered_by = match envelope.status {
            Status::Unavailable => None,
            _ => envelope.provider.as_deref(),
        };
        metrics.record_call(&envelope.tool, answered_by, status, elapsed);
    }

    /// Notes why the upstream part of a call failed, on the call's span (and counts a full
    /// bulkhead, and a client refused for holding its share of it, as the edge counts the
    /// clients over their other limits).
    pub(crate) fn failed(&self, tool: &str, failure: &Failure) {
        match failure {
            Failure::BulkheadFull => self.telemetry.metrics().record_bulkhead_rejected(tool),
            Failure::ClientShareFull(_) => {
                self.telemetry.metrics().record_client_limited(SHARE_LIMIT);
            }
            Failure::ProviderShareFull { .. } => {
                self.telemetry
                    .metrics()
                    .record_client_limited(PROVIDER_SHARE_LIMIT);
            }
            _ => {}
        }
        Span::current().record("error.type", failure.error_type());
    }

    /// The span of one upstream attempt (a child of the current `execute_tool` span).
    pub(crate) fn attempt_span(tool: &str, provider: &str, attempt: u32) -> Span {
        tracing::info_span!(
            "upstream_attempt",
            otel.kind = "client",
            otel.status_code = Empty,
            faregate.tool = tool,
            faregate.provider = provider,
            // An `i64`, as every number on a span: tracing-opentelemetry exports other integer
            // types as text (`http/edge/trace.rs`).
            faregate.attempt = i64::from(attempt),
            faregate.breaker.decision = Empty,
            faregate.breaker.state = Empty,
            faregate.outcome = Empty,
            error.type = Empty,
            // The provider's host and HTTP status, recorded by the adapter's send
            // (`providers::http::send`) when the request was made.
            server.address = Empty,
            http.response.status_code = Empty,
        )
    }

    /// Records which kind of permit admitted the attempt.
    pub(crate) fn admitted(span: &Span, kind: PermitKind) {
        span.record(
            "faregate.breaker.decision",
            match kind {
                PermitKind::Normal => "admitted",
                PermitKind::Probe => "probe",
                PermitKind::Ramp => "ramp",
            },
        );
    }

    /// Counts an attempt the breaker refused, and says so on its span.
    pub(crate) fn rejected(&self, span: &Span, tool: &str, provider: &str, rejected: &Rejected) {
        span.record("faregate.breaker.decision", "rejected");
        span.record("faregate.breaker.state", rejected.state.detail_str());
        span.record("faregate.outcome", "rejected");
        span.record("error.type", "circuit_open");
        self.telemetry
            .metrics()
            .record_rejected(tool, provider, rejected.reason);
    }

    /// Says on an attempt's span that the client was over its share of the provider's
    /// rate-limit window, so nothing was sent (counted once per call, by [`Observer::failed`]).
    pub(crate) fn over_provider_share(&self, span: &Span) {
        span.record("faregate.breaker.decision", "provider_share");
        span.record("faregate.outcome", "rejected");
        span.record("error.type", "provider_share_full");
    }

    /// Says on its span that an attempt was not made: its key is in a maintenance window.
    pub(crate) fn under_maintenance(&self, span: &Span) {
        span.record("faregate.breaker.decision", "maintenance");
        span.record("faregate.outcome", "rejected");
        span.record("error.type", "maintenance");
    }

    /// Counts an attempt that reached the provider, and records its outcome on its span.
    pub(crate) fn attempted<T>(
        &self,
        span: &Span,
        tool: &str,
        provider: &str,
        result: &Result<T, UpstreamError>,
        outcome: Outcome,
        elapsed: Duration,
    ) {
        let outcome = match outcome {
            Outcome::Success { .. } => AttemptOutcome::Success,
            Outcome::Failure(_) => AttemptOutcome::Failure,
            // The metric's "ignored" is what a closed breaker's window does with it.
            Outcome::Refused { .. } | Outcome::Ignored => AttemptOutcome::Ignored,
        };
        let error_type = match result {
            Ok(_) => "",
            Err(e) => e.kind.as_str(),
        };
        span.record("faregate.outcome", outcome.as_str());
        if !error_type.is_empty() {
            span.record("error.type", error_type);
        }
        if outcome == AttemptOutcome::Failure {
            span.record("otel.status_code", "ERROR");
        }
        self.telemetry
            .metrics()
            .record_attempt(tool, provider, outcome, error_type, elapsed);
    }
}
