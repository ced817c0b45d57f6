//! One `tracing` span per HTTP request, named and attributed after the OpenTelemetry HTTP server
//! conventions (`{method} {route}`, `http.request.method`, `http.route`,
//! `http.response.status_code`). The route is the matched pattern (`/v1/tools/{tool}/call`),
//! never the query string or headers, so no key or argument reaches a span.
//!
//! A caller's W3C `traceparent` (with its `tracestate`) parents the request span, so the tool
//! spans under it join the caller's trace ([`crate::trace_context`]). A request with more than
//! one `traceparent`, or one that is not valid, starts a trace of its own, as W3C says.

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultOnRequest, MakeSpan, OnResponse, TraceLayer};
use tracing::Span;
use tracing::field::Empty;

use crate::trace_context::{TRACEPARENT, TRACESTATE, TraceContext};

/// Makes the request span.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map_or("unmatched", MatchedPath::as_str);
        let span = tracing::info_span!(
            "http_request",
            otel.name = %format!("{} {route}", request.method()),
            otel.kind = "server",
            otel.status_code = Empty,
            http.request.method = %request.method(),
            http.route = route,
            http.response.status_code = Empty,
        );
        // A span no layer records (no exporter: `telemetry::init`) has no parent to set, and
        // reading the caller's headers for one would cost every request (BENCHMARKS.md,
        // fast-fail).
        if !span.is_disabled()
            && let Some(caller) = caller_context(request.headers())
        {
            caller.parent(&span);
        }
        span
    }
}

/// The caller's trace context: exactly one valid `traceparent` header, with its `tracestate`
/// (several `tracestate` headers are one list, joined by commas).
fn caller_context(headers: &axum::http::HeaderMap) -> Option<TraceContext> {
    let mut parents = headers.get_all(TRACEPARENT).iter();
    let parent = parents.next()?.to_str().ok()?;
    if parents.next().is_some() {
        return None;
    }
    let states: Vec<&str> = headers
        .get_all(TRACESTATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    TraceContext::parse(parent, state.as_deref())
}

/// Records the status on the span.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordStatus;

impl<B> OnResponse<B> for RecordStatus {
    fn on_response(self, response: &Response<B>, latency: Duration, span: &Span) {
        let status = response.status();
        // As an `i64`: tracing-opentelemetry exports only `i64`, `f64` and `bool` fields as
        // numbers, and any other integer as its text, which a collector's `>= 500` never matches.
        let code = i64::from(status.as_u16());
        span.record("http.response.status_code", code);
        if status.is_server_error() {
            span.record("otel.status_code", "ERROR");
        }
        tracing::debug!(
            status = code,
            latency_ms = i64::try_from(latency.as_millis()).unwrap_or(i64::MAX),
            "response"
        );
    }
}

/// The layer, for `Router::layer` (which wraps each route, so the matched path is known).
pub(crate) fn layer()
-> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, RequestSpan, DefaultOnRequest, RecordStatus>
{
    TraceLayer::new_for_http()
        .make_span_with(RequestSpan)
        .on_response(RecordStatus)
}
