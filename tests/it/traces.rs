//! Traces: the spans of an ok call, a fast-failed call and a retried call, exported through the
//! OpenTelemetry SDK into memory, with their names, attributes and parent/child structure.
//!
//! Everything runs on this test's single thread (the default `#[tokio::test]` runtime), so the
//! thread-local subscriber set here sees the gateway's spans, server tasks included, and none of
//! the spans of the other tests running beside it in this binary.

use std::collections::HashMap;

use faregate_sim::{Fault, RouteGroup};
use opentelemetry::trace::{SpanId, SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{Stack, in_days, one_provider_per_tool};

pub(crate) fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// The attribute `key` of `span` when it is an OTLP integer (not a number written as a string:
/// a collector's `>=` compares integers only).
pub(crate) fn int_attr(span: &SpanData, key: &str) -> Option<i64> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .and_then(|kv| match kv.value {
            opentelemetry::Value::I64(n) => Some(n),
            _ => None,
        })
}

#[track_caller]
fn assert_int(span: &SpanData, key: &str, value: i64) {
    assert_eq!(
        int_attr(span, key),
        Some(value),
        "{key} on {} as an integer: {:?}",
        span.name,
        span.attributes
    );
}

#[track_caller]
fn assert_attr(span: &SpanData, key: &str, value: &str) {
    assert_eq!(
        attr(span, key).as_deref(),
        Some(value),
        "{key} on {}: {:?}",
        span.name,
        span.attributes
    );
}

struct Trace {
    spans: Vec<SpanData>,
}

impl Trace {
    /// The `execute_tool` span whose call id is `call_id`.
    fn tool_span(&self, call_id: &str) -> &SpanData {
        self.spans
            .iter()
            .find(|s| attr(s, "gen_ai.tool.call.id").as_deref() == Some(call_id))
            .unwrap_or_else(|| panic!("no span for {call_id}"))
    }

    fn children(&self, parent: SpanId) -> Vec<&SpanData> {
        let mut c: Vec<&SpanData> = self
            .spans
            .iter()
            .filter(|s| s.parent_span_id == parent)
            .collect();
        c.sort_by_key(|s| int_attr(s, "faregate.attempt"));
        c
    }

    fn by_id(&self) -> HashMap<SpanId, &SpanData> {
        self.spans
            .iter()
            .map(|s| (s.span_context.span_id(), s))
            .collect()
    }
}

/// Spans exported into memory, for this test's thread, while it is kept.
pub(crate) struct Exported {
    pub(crate) exporter: InMemorySpanExporter,
    _silent: tracing::Dispatch,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Exported {
    /// An OpenTelemetry layer exporting into memory, as this thread's subscriber.
    pub(crate) fn start() -> Exported {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("faregate-test")));
        // tracing caches, per span callsite, whether anyone listens. While one dispatcher is
        // registered it asks the subscriber of whichever thread reaches a callsite first: in
        // this binary often another test's thread, which has none, so "never" would be cached
        // and the span lost here too. A second, silent dispatcher kept alive makes tracing
        // cache "sometimes" instead and ask each thread's own subscriber every time.
        let silent = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        let guard = tracing::subscriber::set_default(subscriber);
        Exported {
            exporter,
            _silent: silent,
            _guard: guard,
        }
    }

    /// The spans finished so far.
    pub(crate) fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap_or_default()
    }
}

#[tokio::test]
async fn calls_are_traced_with_genai_spans_and_attempt_children() {
    let exported = Exported::start();
    let exporter = exported.exporter.clone();

    // One flight provider: the spans below are one breaker's attempts, not a chain's.
    let s = Stack::builder(7)
        .config(one_provider_per_tool)
        .start()
        .await;
    // A callsite another thread was registering while the dispatchers above were installed
    // may still hold the "never" it computed before them: recompute the cache once more.
    tracing::callsite::rebuild_interest_cache();
    let call = |call_id: &str, days: i64| {
        let body = json!({"arguments": {"origin": "JFK", "destination": "LHR",
                                        "departure_date": in_days(days)},
                          "call_id": call_id});
        let s = &s;
        async move { s.call("search_flights", body).await.1 }
    };

    // 1. An ok call.
    assert_eq!(call("call_ok", 30).await["status"], "ok");
    // 2. A fast-failed call: the breaker is forced open.
    s.post(
        "/v1/breakers/search_flights.duffel/force",
        json!({"state": "open"}),
    )
    .await;
    assert_eq!(call("call_fast", 31).await["status"], "unavailable");
    s.post(
        "/v1/breakers/search_flights.duffel/force",
        json!({"state": "auto"}),
    )
    .await;
    // 3. A retried call: every other search fails with a 503, so a call whose first attempt
    //    fails succeeds on its retry.
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            error_rate: 0.5,
            ..Fault::default()
        },
    );
    let mut retried = None;
    for i in 0..4 {
        let id = format!("call_retry_{i}");
        assert_eq!(call(&id, 40 + i).await["status"], "ok");
        let spans = exporter.get_finished_spans().unwrap_or_default();
        let trace = Trace { spans };
        let tool = trace.tool_span(&id).span_context.span_id();
        if trace.children(tool).len() == 2 {
            retried = Some(id);
            break;
        }
    }
    let retried = retried.unwrap_or_else(|| panic!("no call needed a retry"));

    let trace = Trace {
        spans: exporter.get_finished_spans().unwrap_or_default(),
    };
    let by_id = trace.by_id();

    // The ok call: HTTP server span → execute_tool → one admitted, successful attempt.
    let ok = trace.tool_span("call_ok");
    assert_eq!(ok.name, "execute_tool search_flights");
    assert_eq!(ok.span_kind, SpanKind::Internal);
    assert_attr(ok, "gen_ai.operation.name", "execute_tool");
    assert_attr(ok, "gen_ai.tool.name", "search_flights");
    assert_attr(ok, "gen_ai.tool.type", "function");
    assert_attr(ok, "faregate.status", "ok");
    assert_attr(ok, "faregate.provider", "duffel");
    assert_eq!(attr(ok, "error.type"), None);
    let request = by_id
        .get(&ok.parent_span_id)
        .unwrap_or_else(|| panic!("the tool span has no parent"));
    assert_eq!(request.name, "POST /v1/tools/{tool}/call");
    assert_eq!(request.span_kind, SpanKind::Server);
    assert_attr(request, "http.route", "/v1/tools/{tool}/call");
    assert_attr(request, "http.request.method", "POST");
    assert_int(request, "http.response.status_code", 200);
    let attempts = trace.children(ok.span_context.span_id());
    assert_eq!(attempts.len(), 1);
    let a = attempts[0];
    assert_eq!(a.name, "upstream_attempt");
    assert_eq!(a.span_kind, SpanKind::Client);
    assert_attr(a, "faregate.provider", "duffel");
    assert_int(a, "faregate.attempt", 1);
    assert_attr(a, "faregate.breaker.decision", "admitted");
    assert_attr(a, "faregate.outcome", "success");
    // Which host answered, and with what, as OpenTelemetry's HTTP client spans say it.
    assert_attr(a, "server.address", "127.0.0.1");
    // Duffel answers an offer request 201 Created.
    assert_int(a, "http.response.status_code", 201);

    // The fast-failed call: one rejected attempt, error.type circuit_open, text fallback.
    let fast = trace.tool_span("call_fast");
    assert_attr(fast, "faregate.status", "unavailable");
    assert_attr(fast, "error.type", "circuit_open");
    assert_attr(fast, "faregate.fallback", "text");
    assert_eq!(fast.status, opentelemetry::trace::Status::error(""));
    let attempts = trace.children(fast.span_context.span_id());
    assert_eq!(attempts.len(), 1);
    assert_attr(attempts[0], "faregate.breaker.decision", "rejected");
    assert_attr(attempts[0], "faregate.breaker.state", "forced_open");
    assert_attr(attempts[0], "faregate.outcome", "rejected");
    assert_attr(attempts[0], "error.type", "circuit_open");
    assert_eq!(
        attr(attempts[0], "server.address"),
        None,
        "no request was sent"
    );

    // The retried call: a failed first attempt and a successful second, both children of it.
    let r = trace.tool_span(&retried);
    assert_attr(r, "faregate.status", "ok");
    let attempts = trace.children(r.span_context.span_id());
    assert_eq!(attempts.len(), 2);
    assert_int(attempts[0], "faregate.attempt", 1);
    assert_attr(attempts[0], "faregate.outcome", "failure");
    assert_attr(attempts[0], "error.type", "upstream_5xx");
    assert_int(attempts[0], "http.response.status_code", 503);
    assert_int(attempts[1], "faregate.attempt", 2);
    assert_attr(attempts[1], "faregate.outcome", "success");
    assert_eq!(attr(attempts[1], "error.type"), None);

    // No argument or key ever reaches a span.
    for span in &trace.spans {
        for kv in &span.attributes {
            let v = kv.value.as_str();
            assert!(!v.contains("JFK") && !v.contains("Bearer"), "{kv:?}");
        }
    }
}
