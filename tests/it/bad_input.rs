//! Bad input, as a table, against a real server and the real simulator: every malformed,
//! oversized, mistyped, ambiguous or hostile request gets a clear 4xx whose message says what
//! to fix, none is a 5xx or a crash, and the simulator's counters show that nothing reached a
//! provider.
//!
//! Every case is a regression test: add the request that broke something, with the answer it
//! should get.

use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use crate::support::{Stack, in_days};

/// One request and what it must get.
struct Case {
    name: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    /// Must appear in the answer's `message` (or, for agent protocols, in the answer text).
    says: &'static str,
}

fn raw(name: &'static str, body: impl Into<Vec<u8>>, status: u16, says: &'static str) -> Case {
    Case {
        name,
        path: "/v1/tools/search_flights/call",
        content_type: Some("application/json"),
        body: body.into(),
        status,
        says,
    }
}

fn args(name: &'static str, arguments: Value, status: u16, says: &'static str) -> Case {
    raw(
        name,
        json!({ "arguments": arguments }).to_string(),
        status,
        says,
    )
}

fn at(mut case: Case, path: &'static str) -> Case {
    case.path = path;
    case
}

fn typed(mut case: Case, content_type: Option<&'static str>) -> Case {
    case.content_type = content_type;
    case
}

fn good_flight() -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)})
}

fn with(key: &str, value: Value) -> Value {
    let mut v = good_flight();
    v[key] = value;
    v
}

fn nested(open: &str, close: &str, depth: usize) -> String {
    format!(
        "{{\"arguments\": {}{}}}",
        open.repeat(depth),
        close.repeat(depth)
    )
}

fn cases() -> Vec<Case> {
    let date = in_days(30);
    vec![
        // The body as a whole.
        raw("empty body", "", 400, "the request body is empty"),
        raw("whitespace body", "  \n ", 400, "the request body is empty"),
        typed(raw("xml content type", "<call/>", 415, "Content-Type: application/json"), Some("application/xml")),
        typed(raw("multipart form", "--x\r\n\r\n--x--", 415, "Content-Type: application/json"), Some("multipart/form-data; boundary=x")),
        raw("not JSON", "hello", 400, "malformed JSON"),
        // Client keys are off here, so only application/json is read (no web page may make a browser call tools).
        typed(raw("a urlencoded form", "arguments=1", 415, "send it with `Content-Type: application/json`"), Some("application/x-www-form-urlencoded")),
        typed(raw("a text/plain body", json!({"arguments": good_flight()}).to_string(), 415, "while client keys are off"), Some("text/plain")),
        typed(raw("no content type", json!({"arguments": good_flight()}).to_string(), 415, "the body has no Content-Type header; send it with `Content-Type: application/json`"), None),
        raw("truncated JSON", "{\"arguments\": {", 400, "malformed JSON"),
        raw("an array, not an object", "[]", 400, "the body must be a JSON object"),
        raw("a string, not an object", "\"call\"", 400, "the body must be a JSON object"),
        raw("10,000 nested arrays", nested("[", "]", 10_000), 400, "recursion limit exceeded"),
        raw("10,000 nested objects", nested("{\"a\":", "}", 10_000), 400, "recursion limit exceeded"),
        raw("over the body limit", vec![b' '; 300_000], 413, "larger than the 262144-byte limit"),
        raw("invalid UTF-8", b"{\"arguments\": {\"origin\": \"\xff\"}}".to_vec(), 400, "malformed JSON"),
        raw("a lone surrogate escape", "{\"arguments\": {\"origin\": \"\\ud800\"}}", 400, "hex escape"),
        raw("a lone surrogate before text", "{\"arguments\": {\"origin\": \"\\ud800JFK\"}}", 400, "hex escape"),
        raw("a number beyond f64", format!("{{\"arguments\": {{\"origin\": \"JFK\", \"destination\": \"LHR\", \"departure_date\": \"{date}\", \"adults\": 1e400}}}}"), 400, "number out of range"),
        // Fields of the envelope.
        raw("an unknown top-level field", json!({"arguments": good_flight(), "tool": "x"}).to_string(), 400, "unknown field `tool`"),
        raw("a duplicate top-level key", format!("{{\"arguments\": {{}}, \"arguments\": {}}}", good_flight()), 400, "duplicate key \"arguments\""),
        raw("mode of the wrong type", json!({"arguments": good_flight(), "mode": 5}).to_string(), 400, "mode 5 is not valid"),
        raw("an unknown mode", json!({"arguments": good_flight(), "mode": "urgent"}).to_string(), 400, "mode \"urgent\" is not valid"),
        raw("a negative deadline", json!({"arguments": good_flight(), "deadline_ms": -1}).to_string(), 400, "deadline_ms must be a whole number of milliseconds, at least 1; got -1"),
        raw("a zero deadline", json!({"arguments": good_flight(), "deadline_ms": 0}).to_string(), 400, "deadline_ms must be a whole number of milliseconds, at least 1; got 0"),
        raw("a call id with CRLF", json!({"arguments": good_flight(), "call_id": "c1\r\nX-Injected: 1"}).to_string(), 400, "call_id must be 1 to 256 printable characters"),
        raw("a huge call id", json!({"arguments": good_flight(), "call_id": "c".repeat(10_000)}).to_string(), 400, "call_id must be 1 to 256"),
        raw("an idempotency key with NUL", json!({"arguments": good_flight(), "idempotency_key": "k\u{0}1"}).to_string(), 400, "idempotency_key must be"),
        raw("a callback for an interactive call", json!({"arguments": good_flight(), "callback_url": "http://evil/"}).to_string(), 400, "callback_url is only used with mode \"background\""),
        // The arguments.
        args("arguments of the wrong type", json!("JFK to LHR"), 422, "object"),
        args("missing arguments", json!({}), 422, "origin"),
        args("an unknown argument", with("colour", json!("blue")), 422, "colour"),
        args("a duplicate argument", json!(null), 422, "object"),
        raw("a duplicate argument key", format!("{{\"arguments\": {{\"origin\": \"JFK\", \"origin\": \"CDG\", \"destination\": \"LHR\", \"departure_date\": \"{date}\"}}}}"), 400, "duplicate key \"origin\""),
        args("adults out of range", with("adults", json!(1_000_000)), 422, "adults"),
        args("adults beyond u64", with("adults", json!(1e30)), 422, "adults"),
        args("negative adults", with("adults", json!(-1)), 422, "adults"),
        args("fractional adults", with("adults", json!(1.5)), 422, "adults"),
        args("adults as a string", with("adults", json!("2")), 422, "adults"),
        args("a huge string", with("origin", json!("A".repeat(200_000))), 422, "origin"),
        args("a NUL in a code", with("origin", json!("J\u{0}K")), 422, "origin"),
        args("right-to-left override", with("destination", json!("\u{202e}RHL")), 422, "destination"),
        args("an emoji code", with("origin", json!("✈️")), 422, "origin"),
        args("a path traversal", with("origin", json!("../")), 422, "origin"),
        args("an encoded slash", with("destination", json!("%2F")), 422, "destination"),
        args("a date with CRLF", with("departure_date", json!(format!("{date}\r\nX: 1"))), 422, "departure_date"),
        args("a date in the past", with("departure_date", json!("2020-01-01")), 422, "departure_date"),
        at(args("an offer id with traversal", json!({"offer_id": "off_../../admin"}), 422, "offer_id"), "/v1/tools/price_flight_offer/call"),
        at(args("an offer id with an encoded slash", json!({"offer_id": "off_%2F..%2Fx"}), 422, "offer_id"), "/v1/tools/price_flight_offer/call"),
        at(args("an offer id with CRLF", json!({"offer_id": "off_1\r\nHost: evil"}), 422, "offer_id"), "/v1/tools/price_flight_offer/call"),
        at(args("an offer id that is a URL", json!({"offer_id": "http://evil/x"}), 422, "offer_id"), "/v1/tools/price_flight_offer/call"),
        at(args("a city code that is a URL", json!({"city_code": "http://evil", "check_in_date": date, "check_out_date": in_days(32)}), 422, "city_code"), "/v1/tools/search_hotels/call"),
        // Paths.
        at(args("a traversal in the tool name", good_flight(), 404, "There is no tool"), "/v1/tools/..%2F..%2Fadmin/call"),
        at(args("a NUL in the tool name", good_flight(), 404, "There is no tool"), "/v1/tools/search_flights%00/call"),
        // Agent protocols: transport errors are 4xx; bad arguments are tool results the model reads.
        at(raw("OpenAI: not JSON", "{", 400, "malformed JSON"), "/v1/openai/tool_calls"),
        at(raw("OpenAI: 10,000 nested arrays", nested("[", "]", 10_000), 400, "recursion limit exceeded"), "/v1/openai/tool_calls"),
        at(raw("OpenAI: wrong shape", "{\"tool_calls\": 5}", 400, "tool_calls"), "/v1/openai/tool_calls"),
        at(raw("Anthropic: not JSON", "nope", 400, "malformed JSON"), "/v1/anthropic/tool_use"),
        at(raw("Anthropic: a duplicate key", "{\"content\": [], \"content\": []}", 400, "duplicate key"), "/v1/anthropic/tool_use"),
        at(raw("OpenAI: injected arguments", json!({"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_flights", "arguments": "{\"origin\": \"../\", \"destination\": \"http://evil\", \"departure_date\": \"x\"}"}}]}).to_string(), 200, "[invalid_arguments]"), "/v1/openai/tool_calls"),
        at(raw("Anthropic: arguments of the wrong type", json!({"content": [{"type": "tool_use", "id": "t1", "name": "search_flights", "input": "JFK"}]}).to_string(), 200, "[invalid_arguments]"), "/v1/anthropic/tool_use"),
        // MCP: a body that is not JSON is a JSON-RPC parse error (-32700) with HTTP 400.
        at(raw("MCP: not JSON", "{", 400, "Parse error"), "/mcp"),
    ]
}

#[tokio::test]
async fn every_bad_request_gets_a_clear_4xx_and_reaches_no_provider() {
    let s = Stack::builder(9)
        .config(|mut config| {
            // This table is about input, not rates: the limits have their own tests (security).
            config.limits.client_rate = None;
            config
        })
        .start()
        .await;
    let http = &s.http;
    let mut failures = Vec::new();
    for case in cases() {
        let mut req = http
            .post(s.url(case.path))
            .header("accept", "application/json, text/event-stream")
            .body(case.body.clone());
        if let Some(ct) = case.content_type {
            req = req.header("content-type", ct);
        }
        let res = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{}: no answer ({e})", case.name));
                continue;
            }
        };
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let message = match &body {
            Value::Object(m) if m.contains_key("message") => {
                body["message"].as_str().unwrap_or("").to_string()
            }
            Value::Object(m) if m.contains_key("content") && status == 422 => {
                body["content"].as_str().unwrap_or("").to_string()
            }
            _ => text.clone(),
        };
        if status != case.status {
            failures.push(format!(
                "{}: status {status}, expected {}: {text}",
                case.name, case.status
            ));
        } else if !message.contains(case.says) {
            failures.push(format!(
                "{}: message does not say {:?}: {message}",
                case.name, case.says
            ));
        } else if status >= 400 && message.trim().is_empty() {
            failures.push(format!("{}: no message", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let reached: u64 = s.sim.stats().groups.values().map(|g| g.requests).sum();
    assert_eq!(reached, 0, "a bad request reached a provider");
    assert!(RouteGroup::ALL.len() > 1);
    // The gateway is still healthy after all of it.
    let res = http
        .get(s.url("/readyz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
}
