//! W3C trace context end to end: a caller's `traceparent` (HTTP header on the native, OpenAI and
//! Anthropic endpoints; `_meta` on MCP) puts the call in the caller's trace, the provider request
//! carries the trace on (wiremock, standing in for Duffel, sees the header), and a background
//! job's run links to the trace that submitted it. Spans are exported into memory
//! ([`Exported`], on this test's single thread, as in `traces.rs`).

use std::time::Duration;

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Stack, fixture, in_days, one_provider_per_tool};
use crate::traces::{Exported, attr, int_attr};

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

fn trace_id(hex: &str) -> TraceId {
    TraceId::from_hex(hex).unwrap_or_else(|e| panic!("{hex}: {e}"))
}

fn span_id(hex: &str) -> SpanId {
    SpanId::from_hex(hex).unwrap_or_else(|e| panic!("{hex}: {e}"))
}

fn flights(days: i64) -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)})
}

/// A stack whose flight searches go to `duffel` (wiremock answering Duffel's recorded search),
/// with a SQLite job store.
async fn stack(duffel: &MockServer) -> Stack {
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(fixture("duffel", "offer_request_201.json")),
        )
        .mount(duffel)
        .await;
    let url = reqwest::Url::parse(&duffel.uri()).unwrap_or_else(|e| panic!("{e}"));
    Stack::builder(5)
        .config(move |config| {
            let mut config = one_provider_per_tool(config);
            if let Some(p) = config.providers.get_mut("duffel") {
                p.base_url = url;
            }
            config
        })
        .jobs()
        .start()
        .await
}

/// POSTs `body` to the gateway's `path` with `headers`; the status and the JSON answer.
async fn post(s: &Stack, path: &str, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = s.http.post(s.url(path)).json(&body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let res = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The `traceparent` of every request Duffel received, as (trace id, span id).
async fn provider_parents(duffel: &MockServer) -> Vec<(TraceId, SpanId)> {
    let requests = duffel.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .filter_map(|r| {
            let value = r.headers.get("traceparent")?.to_str().ok()?;
            let parts: Vec<&str> = value.split('-').collect();
            Some((trace_id(parts[1]), span_id(parts[2])))
        })
        .collect()
}

fn find<'a>(spans: &'a [SpanData], key: &str, value: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| attr(s, key).as_deref() == Some(value))
        .unwrap_or_else(|| panic!("no span with {key} = {value}: {spans:#?}"))
}

fn by_id(spans: &[SpanData], id: SpanId) -> &SpanData {
    spans
        .iter()
        .find(|s| s.span_context.span_id() == id)
        .unwrap_or_else(|| panic!("no span {id}"))
}

/// The upstream attempt under the tool span of `call_id`, after checking that the tool span
/// and the attempt are in the caller's trace.
fn attempt_of<'a>(spans: &'a [SpanData], call_id: &str, trace: TraceId) -> &'a SpanData {
    let tool = find(spans, "gen_ai.tool.call.id", call_id);
    assert_eq!(tool.span_context.trace_id(), trace, "{call_id}: {tool:#?}");
    let attempt = spans
        .iter()
        .find(|s| s.name == "upstream_attempt" && s.parent_span_id == tool.span_context.span_id())
        .unwrap_or_else(|| panic!("no attempt under {call_id}"));
    assert_eq!(attempt.span_context.trace_id(), trace);
    attempt
}

#[tokio::test]
async fn a_callers_traceparent_reaches_the_tool_span_and_the_provider_request() {
    let exported = Exported::start();
    let duffel = MockServer::start().await;
    let s = stack(&duffel).await;
    tracing::callsite::rebuild_interest_cache();
    let parent = traceparent(CALLER_TRACE, CALLER_SPAN);
    let headers = [
        ("traceparent", parent.as_str()),
        ("tracestate", "agent=planner"),
    ];

    // Native: the request span's parent is the caller's span; the tool span is its child.
    let body = json!({"arguments": flights(30), "call_id": "call_native"});
    let (status, env) = post(&s, "/v1/tools/search_flights/call", body, &headers).await;
    assert_eq!(
        (status, env["status"].as_str()),
        (200, Some("ok")),
        "{env:#}"
    );
    let spans = exported.spans();
    let tool = find(&spans, "gen_ai.tool.call.id", "call_native");
    let request = by_id(&spans, tool.parent_span_id);
    assert_eq!(request.name, "POST /v1/tools/{tool}/call");
    assert_eq!(request.parent_span_id, span_id(CALLER_SPAN));
    assert!(request.parent_span_is_remote);
    assert_eq!(request.span_context.trace_id(), trace_id(CALLER_TRACE));
    let attempt = attempt_of(&spans, "call_native", trace_id(CALLER_TRACE));
    // The provider request carries the trace on, from the attempt's span, with the state.
    let sent = provider_parents(&duffel).await;
    assert_eq!(
        sent,
        [(trace_id(CALLER_TRACE), attempt.span_context.span_id())]
    );
    let received = duffel.received_requests().await.unwrap_or_default();
    assert_eq!(
        received[0]
            .headers
            .get("tracestate")
            .and_then(|v| v.to_str().ok()),
        Some("agent=planner")
    );

    // OpenAI and Anthropic: the same header, the same trace, for each call of the batch.
    let openai = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_openai", "type": "function",
         "function": {"name": "search_flights", "arguments": flights(31).to_string()}}]});
    let (status, _) = post(&s, "/v1/openai/tool_calls", openai, &headers).await;
    assert_eq!(status, 200);
    let anthropic = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_anthropic", "name": "search_flights", "input": flights(32)}]});
    let (status, _) = post(&s, "/v1/anthropic/tool_use", anthropic, &headers).await;
    assert_eq!(status, 200);
    let spans = exported.spans();
    for call_id in ["call_openai", "toolu_anthropic"] {
        let attempt = attempt_of(&spans, call_id, trace_id(CALLER_TRACE));
        assert!(
            provider_parents(&duffel)
                .await
                .contains(&(trace_id(CALLER_TRACE), attempt.span_context.span_id())),
            "{call_id}"
        );
    }

    // A traceparent that is not W3C starts a trace of its own, and the call is answered.
    let body = json!({"arguments": flights(33), "call_id": "call_bad"});
    let bad = [("traceparent", "00-not-a-trace-01")];
    let (status, _) = post(&s, "/v1/tools/search_flights/call", body, &bad).await;
    assert_eq!(status, 200);
    let spans = exported.spans();
    let tool = find(&spans, "gen_ai.tool.call.id", "call_bad");
    let request = by_id(&spans, tool.parent_span_id);
    assert_eq!(request.parent_span_id, SpanId::INVALID);
    assert_ne!(tool.span_context.trace_id(), trace_id(CALLER_TRACE));
}

#[tokio::test]
async fn an_mcp_traceparent_in_meta_parents_the_tool_span() {
    let exported = Exported::start();
    let duffel = MockServer::start().await;
    let s = stack(&duffel).await;
    tracing::callsite::rebuild_interest_cache();
    let revision = "2026-07-28";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "search_flights", "arguments": flights(34),
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientInfo": {"name": "trace-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": traceparent(CALLER_TRACE, CALLER_SPAN),
    }}});
    let res = s
        .http
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", revision)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "search_flights")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = res.text().await.unwrap_or_default();
    assert!(text.contains("\"isError\":false"), "{text}");
    let spans = exported.spans();
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool search_flights")
        .unwrap_or_else(|| panic!("no tool span: {spans:#?}"));
    assert_eq!(tool.parent_span_id, span_id(CALLER_SPAN));
    assert!(tool.parent_span_is_remote);
    assert_eq!(tool.span_context.trace_id(), trace_id(CALLER_TRACE));
    let sent = provider_parents(&duffel).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, trace_id(CALLER_TRACE));
}

#[tokio::test]
async fn a_background_run_links_to_the_trace_that_submitted_it() {
    let exported = Exported::start();
    let duffel = MockServer::start().await;
    let s = stack(&duffel).await;
    tracing::callsite::rebuild_interest_cache();
    let parent = traceparent(CALLER_TRACE, CALLER_SPAN);
    let body = json!({"arguments": flights(35), "mode": "background"});
    let (status, env) = post(
        &s,
        "/v1/tools/search_flights/call",
        body,
        &[("traceparent", parent.as_str())],
    )
    .await;
    assert_eq!(status, 202, "{env:#}");
    let id = env["job_id"].as_str().unwrap_or_default().to_string();
    s.wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "succeeded")
        .await;

    let spans = exported.spans();
    let submitted = spans
        .iter()
        .find(|s| s.name == "POST /v1/tools/{tool}/call")
        .unwrap_or_else(|| panic!("no request span"));
    assert_eq!(submitted.span_context.trace_id(), trace_id(CALLER_TRACE));
    let run = find(&spans, "faregate.job.id", &id);
    assert_eq!(run.name, "run_job search_flights");
    assert_eq!(
        attr(run, "faregate.job.status").as_deref(),
        Some("succeeded")
    );
    assert_eq!(
        int_attr(run, "faregate.attempt"),
        Some(1),
        "{:?}",
        run.attributes
    );
    // A trace of its own (it may run hours later, elsewhere), linked to the submitting span.
    assert_ne!(run.span_context.trace_id(), trace_id(CALLER_TRACE));
    assert_eq!(run.parent_span_id, SpanId::INVALID);
    assert_eq!(
        links(run),
        [(trace_id(CALLER_TRACE), submitted.span_context.span_id())]
    );
    // The run's provider request carries the run's trace.
    let attempt = spans
        .iter()
        .find(|s| s.name == "upstream_attempt" && s.parent_span_id == run.span_context.span_id())
        .unwrap_or_else(|| panic!("no attempt under the run"));
    assert_eq!(
        provider_parents(&duffel).await,
        [(run.span_context.trace_id(), attempt.span_context.span_id())]
    );
}

/// Two identical searches at once, in two callers' traces: the second joins the first's
/// provider call (one request reaches Duffel). Its tool span says it was coalesced and links to
/// the leader's, under which the one attempt is; the leader's says nothing of the kind.
#[tokio::test]
async fn a_caller_who_joins_a_shared_call_is_marked_and_linked_to_its_leader() {
    const JOINER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const JOINER_SPAN: &str = "b7ad6b7169203331";
    let exported = Exported::start();
    let duffel = MockServer::start().await;
    let s = stack(&duffel).await;
    // Slow enough for the second caller to arrive while the first is upstream.
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(fixture("duffel", "offer_request_201.json"))
                .set_delay(Duration::from_millis(600)),
        )
        .with_priority(1)
        .mount(&duffel)
        .await;
    tracing::callsite::rebuild_interest_cache();
    let route = "/v1/tools/search_flights/call";
    let body = json!({"arguments": flights(36)});
    let (leads, joins) = (
        traceparent(CALLER_TRACE, CALLER_SPAN),
        traceparent(JOINER_TRACE, JOINER_SPAN),
    );
    let leads = [("traceparent", leads.as_str())];
    let first = post(&s, route, body.clone(), &leads);
    let second = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        post(&s, route, body.clone(), &[("traceparent", joins.as_str())]).await
    };
    let ((a, first), (b, second)) = tokio::join!(first, second);
    assert_eq!((a, b), (200, 200), "{first:#} {second:#}");
    assert_eq!(
        (&first["status"], &second["status"]),
        (&json!("ok"), &json!("ok"))
    );
    assert_eq!(
        provider_parents(&duffel).await.len(),
        1,
        "one shared request"
    );

    let spans = exported.spans();
    let tool_in = |trace: &str| {
        spans
            .iter()
            .find(|s| {
                s.name == "execute_tool search_flights"
                    && s.span_context.trace_id() == trace_id(trace)
            })
            .unwrap_or_else(|| panic!("no tool span in {trace}: {spans:#?}"))
    };
    let (leader, joiner) = (tool_in(CALLER_TRACE), tool_in(JOINER_TRACE));
    let coalesced = |span: &SpanData| {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == "faregate.coalesced")
            .map(|kv| kv.value.clone())
    };
    assert_eq!(coalesced(leader), None, "{:?}", leader.attributes);
    assert_eq!(
        coalesced(joiner),
        Some(opentelemetry::Value::Bool(true)),
        "{:?}",
        joiner.attributes
    );
    assert_eq!(
        links(joiner),
        [(trace_id(CALLER_TRACE), leader.span_context.span_id())]
    );
    let attempts_under = |span: &SpanData| {
        spans
            .iter()
            .filter(|s| {
                s.name == "upstream_attempt" && s.parent_span_id == span.span_context.span_id()
            })
            .count()
    };
    assert_eq!((attempts_under(leader), attempts_under(joiner)), (1, 0));
}

/// The (trace, span) each of `span`'s links points to.
fn links(span: &SpanData) -> Vec<(TraceId, SpanId)> {
    span.links
        .iter()
        .map(|l| (l.span_context.trace_id(), l.span_context.span_id()))
        .collect()
}
