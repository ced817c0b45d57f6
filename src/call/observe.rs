//! What the call pipeline tells operators: one `execute_tool {tool}` span per call and one
//! `upstream_attempt` span per attempt (OpenTelemetry GenAI conventions), and the metrics of
//! calls, attempts, breaker rejections and fallbacks.
//!
//! Kept apart from the pipeline so `mod.rs` and `pipeline.rs` read as the call path only; they
//! call in here at each decision point.
//!
//! Span attributes (no arguments, results or keys are ever recorded):
//! - `execute_tool {tool}` (kind internal): `gen_ai.operation.name = "execute_tool"`,
//!   `gen_ai.tool.name`, `gen_ai.tool.type = "function"`, `gen_ai.tool.call.id`,
//!   `faregate.call.mode`, `faregate.status` (the envelope status), `faregate.provider`,
//!   `faregate.fallback` (`stale` or `text`), and `error.type` when the call did not get fresh
//!   data (for a stale answer it says why the fresh call failed);
//! - `upstream_attempt` (kind client), a child of the call's span: `faregate.tool`,
//!   `faregate.provider`, `faregate.attempt` (1-based), `faregate.breaker.decision`
//!   (`admitted`, `probe`, `ramp` or `rejected`), `faregate.breaker.state` (when rejected),
//!   `faregate.outcome` (`success`, `failure`, `ignored`, `rejected`) and `error.type`.
//!
//! `error.type` values: `circuit_open`, `bulkhead_full`, `deadline_exceeded`, and the
//! provider error kinds (`ErrorKind::as_str`): `timeout`, `connect`, `transport`,
//! `rate_limited`, `upstream_5xx`, `misconfigured`, `malformed`, `rejected` (the provider
//! refused; the model can fix it); plus `invalid_arguments`.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;
use tracing::field::Empty;

use super::pipeline::Failure;
use super::{CallError, CallRequest, Envelope, Gateway, ServedTool, Status};
use crate::breaker::{Outcome, PermitKind, Rejected};
use crate::providers::{ErrorKind, UpstreamError};
use crate::telemetry::{AttemptOutcome, FallbackKind, Telemetry};

impl Gateway {
    /// Runs one call to its envelope, inside an `execute_tool {tool}` span, and counts it.
    pub async fn call(self: &Arc<Self>, req: CallRequest) -> Result<Envelope, CallError> {
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format!("execute_tool {}", req.tool),
            otel.kind = "internal",
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %req.tool,
            gen_ai.tool.type = "function",
            gen_ai.tool.call.id = Empty,
            faregate.call.mode = req.mode.as_str(),
            faregate.status = Empty,
            faregate.provider = Empty,
            faregate.fallback = Empty,
            error.type = Empty,
        );
        let started = tokio::time::Instant::now();
        let result = self.call_untraced(req).instrument(span.clone()).await;
        if let Ok(env) = &result {
            let status = env.status.as_str();
            span.record("gen_ai.tool.call.id", env.call_id.as_str());
            span.record("faregate.status", status);
            if let Some(p) = &env.provider {
                span.record("faregate.provider", p.as_str());
            }
            match env.status {
                Status::Stale => {
                    span.record("faregate.fallback", "stale");
                    self.telemetry
                        .metrics()
                        .record_fallback(&env.tool, FallbackKind::Stale);
                }
                Status::Unavailable => {
                    span.record("faregate.fallback", "text");
                    span.record("otel.status_code", "ERROR");
                    self.telemetry
                        .metrics()
                        .record_fallback(&env.tool, FallbackKind::Text);
                }
                Status::Rejected => {
                    span.record("error.type", "rejected");
                    span.record("otel.status_code", "ERROR");
                }
                Status::InvalidArguments => {
                    span.record("error.type", "invalid_arguments");
                    span.record("otel.status_code", "ERROR");
                }
                _ => {}
            }
            self.telemetry.metrics().record_call(
                &env.tool,
                env.provider.as_deref(),
                status,
                started.elapsed(),
            );
        }
        result
    }

    /// The gateway's metrics, alerts and event streams.
    pub fn telemetry(&self) -> &Arc<Telemetry> {
        &self.telemetry
    }

    /// Notes why the upstream part of a call failed, on the call's span (and counts a full
    /// bulkhead).
    pub(crate) fn note_failure(&self, tool: &ServedTool, failure: &Failure) {
        if matches!(failure, Failure::BulkheadFull) {
            self.telemetry
                .metrics()
                .record_bulkhead_rejected(tool.spec.name);
        }
        tracing::Span::current().record("error.type", failure.error_type());
    }

    /// Counts an attempt the breaker refused, and says so on its span.
    pub(crate) fn note_rejected(
        &self,
        span: &tracing::Span,
        tool: &str,
        provider: &str,
        rejected: &Rejected,
    ) {
        span.record("faregate.breaker.decision", "rejected");
        span.record("faregate.breaker.state", rejected.state.detail_str());
        span.record("faregate.outcome", "rejected");
        span.record("error.type", "circuit_open");
        self.telemetry
            .metrics()
            .record_rejected(tool, provider, rejected.reason);
    }

    /// Counts an attempt that reached the provider, and records its outcome on its span.
    pub(crate) fn note_attempt<T>(
        &self,
        span: &tracing::Span,
        tool: &str,
        provider: &str,
        result: &Result<T, UpstreamError>,
        outcome: Outcome,
        elapsed: Duration,
    ) {
        let outcome = match outcome {
            Outcome::Success { .. } => AttemptOutcome::Success,
            Outcome::Failure(_) => AttemptOutcome::Failure,
            Outcome::Ignored => AttemptOutcome::Ignored,
        };
        let error_type = match result {
            Ok(_) => "",
            Err(e) => upstream_error_type(&e.kind),
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

/// The span of one upstream attempt (a child of the current `execute_tool` span).
pub(crate) fn attempt_span(tool: &str, provider: &str, attempt: u32) -> tracing::Span {
    tracing::info_span!(
        "upstream_attempt",
        otel.kind = "client",
        otel.status_code = Empty,
        faregate.tool = tool,
        faregate.provider = provider,
        faregate.attempt = attempt,
        faregate.breaker.decision = Empty,
        faregate.breaker.state = Empty,
        faregate.outcome = Empty,
        error.type = Empty,
    )
}

/// Records which kind of permit admitted the attempt.
pub(crate) fn note_admitted(span: &tracing::Span, kind: PermitKind) {
    span.record(
        "faregate.breaker.decision",
        match kind {
            PermitKind::Normal => "admitted",
            PermitKind::Probe => "probe",
            PermitKind::Ramp => "ramp",
        },
    );
}

impl Failure {
    /// The `error.type` of a call that got no fresh answer.
    pub(crate) fn error_type(&self) -> &'static str {
        match self {
            Failure::BulkheadFull => "bulkhead_full",
            Failure::Breaker { .. } => "circuit_open",
            Failure::DeadlinePassed => "deadline_exceeded",
            Failure::Upstream { error, .. } => upstream_error_type(&error.kind),
        }
    }
}

fn upstream_error_type(kind: &ErrorKind) -> &'static str {
    kind.as_str()
}

/// A telemetry hub with every served tool's series created.
pub(crate) fn telemetry_for(
    tools: &std::collections::BTreeMap<String, Arc<ServedTool>>,
) -> Arc<Telemetry> {
    let telemetry = Telemetry::new(crate::telemetry::AlertRules::spec());
    for tool in tools.values() {
        telemetry.metrics().register_tool(
            tool.spec.name,
            &tool.provider_names(),
            tool.config.max_concurrent,
        );
    }
    Arc::new(telemetry)
}
