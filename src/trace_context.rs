//! W3C trace context (`traceparent`, `tracestate`): how a call joins its caller's trace, how a
//! provider request carries the trace on, and how a background job remembers the trace that
//! submitted it.
//!
//! - In: the `traceparent` header of an HTTP request parents its server span (so the tool span
//!   under it is in the caller's trace); an MCP `tools/call` may carry it in `_meta` instead,
//!   and then it parents that call's tool span.
//! - Out: every provider request carries the current span's context (its `upstream_attempt`
//!   span), so the provider's own spans join the same trace.
//! - Later: a background job stores the context it was submitted under, and its run's span
//!   links to it (a run is a trace of its own: it may start hours later, on another replica).
//!
//! Why a room of its own on floor 1: the edge, the agent protocols, the call path, the job queue
//! and the providers (below `telemetry/`) all meet trace context. It knows only the OpenTelemetry
//! API, the SDK's W3C propagator and tracing-opentelemetry's span extension; the exporter and the
//! tracer provider stay in `telemetry/`.
//!
//! Spans have an OpenTelemetry context only while traces are exported (`[telemetry]
//! otlp_endpoint`): without it a caller's context parents nothing and no provider request
//! carries one. A `traceparent` that is not valid W3C (bad hex, all-zero ids, a version it cannot
//! read) is ignored, as the W3C recommendation says: the call starts a trace of its own.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The W3C header (and MCP `_meta` key) naming the caller's span.
pub const TRACEPARENT: &str = "traceparent";

/// The W3C header (and MCP `_meta` key) carrying vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

/// A valid W3C trace context, as its two header values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// The context a caller sent, if `traceparent` is valid W3C; `tracestate` goes with it.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        if !well_formed(traceparent.trim()) {
            return None;
        }
        let mut carrier = HashMap::with_capacity(2);
        carrier.insert(TRACEPARENT.to_string(), traceparent.trim().to_string());
        if let Some(state) = tracestate {
            carrier.insert(TRACESTATE.to_string(), state.trim().to_string());
        }
        let cx = TraceContextPropagator::new().extract(&carrier);
        Self::of(cx.span().span_context())
    }

    /// The context of `span`, if it has one (only while traces are exported).
    pub fn of_span(span: &tracing::Span) -> Option<Self> {
        Self::of(span.context().span().span_context())
    }

    /// The context of the current span, if it has one.
    pub fn current() -> Option<Self> {
        Self::of_span(&tracing::Span::current())
    }

    fn of(span: &SpanContext) -> Option<Self> {
        if !span.is_valid() {
            return None;
        }
        let cx = opentelemetry::Context::new().with_remote_span_context(span.clone());
        let mut carrier: HashMap<String, String> = HashMap::with_capacity(2);
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        Some(TraceContext {
            traceparent: carrier.remove(TRACEPARENT)?,
            tracestate: carrier.remove(TRACESTATE).filter(|s| !s.is_empty()),
        })
    }

    fn span_context(&self) -> SpanContext {
        let mut carrier = HashMap::with_capacity(2);
        carrier.insert(TRACEPARENT.to_string(), self.traceparent.clone());
        if let Some(state) = &self.tracestate {
            carrier.insert(TRACESTATE.to_string(), state.clone());
        }
        TraceContextPropagator::new()
            .extract(&carrier)
            .span()
            .span_context()
            .clone()
    }

    /// The `traceparent` value (`00-{trace id}-{span id}-{flags}`).
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` value, if the caller sent one.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        self.span_context().trace_id().to_string()
    }

    /// The span id of the context's span, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        self.span_context().span_id().to_string()
    }

    /// Makes this context the parent of `span`, which must not have been entered yet (a span
    /// already started keeps its parent). Without trace export, nothing happens.
    pub fn parent(&self, span: &tracing::Span) {
        let cx = opentelemetry::Context::new().with_remote_span_context(self.span_context());
        // Refused only without an OpenTelemetry layer or for a started span: then the span
        // stays where it is, which is what it would be without a caller's context.
        let _ = span.set_parent(cx);
    }

    /// Links `span` to this context (a span that follows from it without being its child).
    pub fn link(&self, span: &tracing::Span) {
        span.add_link(self.span_context());
    }
}

/// Whether `traceparent` has W3C's shape: `version-traceid-parentid-flags`, of 2, 32, 16 and 2
/// lowercase hex digits (version 00 exactly so; a later version may append fields). The SDK's
/// propagator reads a short id as if zero-padded, so the lengths are checked here.
fn well_formed(traceparent: &str) -> bool {
    let fields: Vec<&str> = traceparent.split('-').collect();
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    fields.len() >= 4
        && hex(fields[0], 2)
        && (fields[0] != "00" || fields.len() == 4)
        && hex(fields[1], 32)
        && hex(fields[2], 16)
        && hex(fields[3], 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_kept_with_its_state() {
        let t = TraceContext::parse(PARENT, Some("vendor=abc")).expect("valid");
        assert_eq!(t.traceparent(), PARENT);
        assert_eq!(t.tracestate(), Some("vendor=abc"));
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.span_id(), "00f067aa0ba902b7");
        let plain = TraceContext::parse(&format!(" {PARENT} "), None).expect("valid");
        assert_eq!(plain.tracestate(), None);
    }

    #[test]
    fn an_invalid_traceparent_is_ignored() {
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn without_an_opentelemetry_layer_no_span_has_a_context() {
        let span = tracing::info_span!("no_layer");
        assert_eq!(TraceContext::of_span(&span), None);
        // Parenting and linking are then no-ops, not errors.
        let t = TraceContext::parse(PARENT, None).expect("valid");
        t.parent(&span);
        t.link(&span);
    }
}
