//! The agent protocol endpoints end to end: the gateway on `127.0.0.1:0` against the built-in
//! simulator, driven over HTTP as a chat backend would. (The real vendor SDKs and the MCP
//! client drive the same endpoints from `tests/python/`, run by `.ci/run`.)

use std::time::Duration;

use tokio::time::Instant;

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use super::{chat_call, hotels_args, text};
use crate::support::{MapEnv, Stack, in_days};

fn flights_args() -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(21)})
}

#[tokio::test]
async fn an_openai_batch_answers_in_order_with_each_failure_in_its_own_message() {
    let s = Stack::start(7).await;
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            chat_call("call_1", "search_hotels", &hotels_args().to_string()),
            chat_call("call_2", "search_flights", "{\"origin\": \"JFK\", "),
            chat_call("call_3", "search_trains", "{}"),
            chat_call("call_4", "price_flight_offer", "{\"offer_id\": \"../x\"}"),
            chat_call("call_5", "search_flights", &flights_args().to_string()),
        ]
    });
    let (status, body) = s.post("/v1/openai/tool_calls", message).await;
    assert_eq!(status, 200, "{body:#}");
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = messages.iter().map(|m| text(&m["tool_call_id"])).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3", "call_4", "call_5"]);
    assert!(messages.iter().all(|m| m["role"] == "tool"));

    let hotels = text(&messages[0]["content"]);
    assert!(hotels.contains("Data (JSON): {"), "{hotels}");
    assert!(
        hotels.contains("hotel_result_id"),
        "ids the model needs next: {hotels}"
    );
    let malformed = text(&messages[1]["content"]);
    assert!(
        malformed.starts_with("[invalid_arguments] Invalid arguments for search_flights"),
        "{malformed}"
    );
    assert!(malformed.contains("not valid JSON"), "{malformed}");
    let unknown = text(&messages[2]["content"]);
    assert!(unknown.contains("no tool \"search_trains\""), "{unknown}");
    assert!(
        unknown.contains("search_flights, price_flight_offer"),
        "{unknown}"
    );
    let invalid = text(&messages[3]["content"]);
    assert!(invalid.starts_with("[invalid_arguments] "), "{invalid}");
    assert!(invalid.contains("offer_id"), "{invalid}");
    assert!(text(&messages[4]["content"]).contains("offers JFK→LHR"));
}

#[tokio::test]
async fn openai_calls_run_concurrently() {
    let s = Stack::start(7).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 1000,
            ..Fault::default()
        },
    );
    let calls: Vec<Value> = (0..3)
        .map(|i| {
            chat_call(
                &format!("c{i}"),
                "search_flights",
                &flights_args().to_string(),
            )
        })
        .collect();
    let started = Instant::now();
    let (status, body) = s.post("/v1/openai/tool_calls", json!(calls)).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
    assert!(
        took < Duration::from_millis(2500),
        "three 1 s calls took {took:?}: not concurrent"
    );
}

#[tokio::test]
async fn responses_api_items_get_function_call_outputs_and_nulls_mean_not_given() {
    let s = Stack::start(7).await;
    // Strict-mode models send null for every optional property.
    let strict_args = json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(21),
        "return_date": null, "adults": null, "child_ages": null, "cabin_class": null,
        "max_connections": null, "max_results": null});
    let response = json!({
        "id": "resp_1",
        "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "search_flights",
             "arguments": strict_args.to_string(), "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "search_hotels",
             "arguments": hotels_args().to_string()},
            // A custom tool call gets its own output, saying to call the tool as a function:
            // a call left without one would make OpenAI refuse the conversation's next request.
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "search_flights",
             "input": "JFK to LHR tomorrow"}
        ]
    });
    let (status, body) = s.post("/v1/openai/tool_calls", response).await;
    assert_eq!(status, 200, "{body:#}");
    let output = body["output"].as_array().cloned().unwrap_or_default();
    assert_eq!(output.len(), 3, "{body:#}");
    assert_eq!(output[2]["type"], "custom_tool_call_output", "{body:#}");
    assert_eq!(output[2]["call_id"], "call_c");
    assert!(
        text(&output[2]["output"]).contains("call it as a function"),
        "{}",
        output[2]["output"]
    );
    assert_eq!(output[0]["type"], "function_call_output");
    assert_eq!(output[0]["call_id"], "call_a");
    assert!(
        text(&output[0]["output"]).contains("offers JFK→LHR"),
        "{}",
        output[0]["output"]
    );
    assert_eq!(output[1]["call_id"], "call_b");
}

#[tokio::test]
async fn anthropic_tool_results_raise_is_error_for_an_outage_only() {
    let s = Stack::start(7).await;
    s.flights_down();
    let message = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Let me check both."},
        {"type": "tool_use", "id": "toolu_1", "name": "search_flights", "input": flights_args()},
        {"type": "tool_use", "id": "toolu_2", "name": "search_hotels", "input": hotels_args()},
        {"type": "tool_use", "id": "toolu_3", "name": "search_hotels", "input": {"city_code": "paris"}}
    ]});
    let (status, body) = s.post("/v1/anthropic/tool_use", message).await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["role"], "user");
    let blocks = body["content"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = blocks.iter().map(|b| text(&b["tool_use_id"])).collect();
    assert_eq!(ids, ["toolu_1", "toolu_2", "toolu_3"]);
    assert!(blocks.iter().all(|b| b["type"] == "tool_result"));

    assert_eq!(blocks[0]["is_error"], true);
    let down = text(&blocks[0]["content"]);
    assert!(down.starts_with("[unavailable; retry after "), "{down}");
    assert!(
        down.contains("Flight search is temporarily unavailable"),
        "the tool's fallback text: {down}"
    );
    assert!(!down.contains("Data (JSON)"), "nothing invented: {down}");
    assert_eq!(blocks[1]["is_error"], false);
    assert_eq!(blocks[2]["is_error"], true);
    assert!(text(&blocks[2]["content"]).starts_with("[invalid_arguments] "));
}

#[tokio::test]
async fn the_same_text_reaches_every_protocol() {
    let s = Stack::start(7).await;
    s.flights_down();
    let (_, native) = s
        .post(
            "/v1/tools/search_flights/call",
            json!({"arguments": flights_args()}),
        )
        .await;
    let (_, anthropic) = s
        .post(
            "/v1/anthropic/tool_use",
            json!([{"type": "tool_use", "id": "t", "name": "search_flights", "input": flights_args()}]),
        )
        .await;
    let fallback = text(&native["content"]);
    assert!(!fallback.is_empty());
    assert!(
        text(&anthropic["content"][0]["content"]).ends_with(fallback),
        "{anthropic:#}"
    );
}

#[tokio::test]
async fn a_booking_without_a_key_gets_one_from_its_arguments_and_never_books_twice() {
    let s = Stack::start(7).await;
    let (_, search) = s
        .post(
            "/v1/tools/search_flights/call",
            json!({"arguments": flights_args()}),
        )
        .await;
    let offer_id = text(&search["data"]["offers"][0]["offer_id"]).to_string();
    let traveller = json!({"given_name": "Ana", "family_name": "Garcia", "born_on": "1990-02-15",
        "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"});
    let book = json!([{"type": "tool_use", "id": "toolu_b", "name": "book_flight",
        "input": {"offer_id": offer_id, "travellers": [traveller]}}]);
    let (_, first) = s.post("/v1/anthropic/tool_use", book.clone()).await;
    assert_eq!(first["content"][0]["is_error"], false, "{first:#}");
    // The repeat carries the same key: the provider finds the booking instead of making another
    // (Duffel's simulator answers that a booking with the same details exists).
    let (_, again) = s.post("/v1/anthropic/tool_use", book).await;
    let repeat = text(&again["content"][0]["content"]);
    assert!(
        again["content"][0]["is_error"] == false || repeat.contains("already"),
        "{again:#}"
    );
    let stats = s.sim.stats();
    let keys: Vec<&String> = stats.orders_by_idempotency_key.keys().collect();
    assert_eq!(keys.len(), 1, "one key for the same booking: {keys:?}");
    assert!(keys[0].starts_with("fg-args-"), "{keys:?}");
    assert_eq!(
        stats
            .orders_by_idempotency_key
            .get(keys[0])
            .map(|o| o.orders),
        Some(1),
        "the repeat did not book again"
    );
}

#[tokio::test]
async fn background_mode_needs_a_job_store_and_bad_modes_are_400() {
    // This stack has no job store: the call cannot be stored, and the model is told why.
    let s = Stack::start(7).await;
    let (status, body) = s
        .post(
            "/v1/openai/tool_calls",
            json!({"mode": "background", "tool_calls": [chat_call("c", "search_hotels", &hotels_args().to_string())]}),
        )
        .await;
    assert_eq!(status, 200);
    let content = text(&body["messages"][0]["content"]);
    assert!(content.starts_with("[unavailable]"), "{content}");
    assert!(content.contains("needs a job store"), "{content}");
    let (status, body) = s
        .post(
            "/v1/anthropic/tool_use",
            json!({"mode": "whenever", "content": []}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(text(&body["message"]).contains("interactive"), "{body:#}");
}

#[tokio::test]
async fn bodies_without_calls_are_400_saying_what_to_send() {
    let s = Stack::start(7).await;
    for (path, body) in [
        (
            "/v1/openai/tool_calls",
            json!({"role": "assistant", "content": "hi"}),
        ),
        ("/v1/openai/tool_calls", json!([{"type": "message"}])),
        (
            "/v1/anthropic/tool_use",
            json!({"role": "assistant", "content": [{"type": "text", "text": "hi"}]}),
        ),
    ] {
        let (status, answer) = s.post(path, body).await;
        assert_eq!(status, 400, "{path}: {answer:#}");
        assert!(text(&answer["message"]).contains("send"), "{answer:#}");
    }
}

#[tokio::test]
async fn manifests_come_in_every_format_and_available_leaves_out_open_breakers() {
    let s = Stack::start(7).await;
    for (format, pointer) in [
        (
            "openai",
            "/tools/0/function/parameters/additionalProperties",
        ),
        ("anthropic", "/tools/0/input_schema/type"),
        (
            "gemini",
            "/tools/0/functionDeclarations/0/parametersJsonSchema/type",
        ),
        ("mcp", "/tools/0/annotations/readOnlyHint"),
        ("native", "/tools/0/policy/timeout_ms"),
    ] {
        let (status, body) = s.get_json(&format!("/v1/tools?format={format}")).await;
        assert_eq!(status, 200, "{format}: {body:#}");
        assert!(body.pointer(pointer).is_some(), "{format}: {body:#}");
    }
    let (status, body) = s.get_json("/v1/tools?format=yaml").await;
    assert_eq!(status, 400);
    assert!(
        text(&body["message"]).contains("openai, anthropic"),
        "{body:#}"
    );

    // Five failures in a row open search_flights' breaker (the shipped default).
    s.flights_down();
    for _ in 0..5 {
        s.post(
            "/v1/tools/search_flights/call",
            json!({"arguments": flights_args()}),
        )
        .await;
    }
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    };
    let (_, all) = s.get_json("/v1/tools?format=openai").await;
    assert!(
        names(&all).contains(&"search_flights".to_string()),
        "the list stays stable"
    );
    let (_, available) = s.get_json("/v1/tools?format=openai&available=true").await;
    assert!(!names(&available).contains(&"search_flights".to_string()));
    assert!(names(&available).contains(&"search_hotels".to_string()));
}

/// The HTTP edge of `/mcp` (the protocol itself is driven by the official MCP client and the
/// conformance suite in `.ci/run`): client keys, then rmcp's Host and Origin checks from
/// `[mcp]`. Each refusal is a JSON-RPC error whose message says what to send, with its HTTP
/// status: the only body an MCP client shows its user.
#[tokio::test]
async fn mcp_sits_behind_client_keys_and_checks_host_and_origin() {
    let s = Stack::builder(1)
        .env(MapEnv(vec![("FAREGATE_CLIENT_KEYS", "k1")]))
        .config(|mut c| {
            c.mcp.allowed_origins = vec!["https://chat.example.com:443".into()];
            c
        })
        .start()
        .await;
    let http = &s.http;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "edge-test", "version": "1"}}});
    let post = |host: Option<&str>, origin: Option<&str>, key: Option<&str>| {
        let mut req = http
            .post(s.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(h) = host {
            req = req.header("host", h);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        async move {
            let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
            let status = res.status().as_u16();
            let text = res.text().await.unwrap_or_default();
            // A session's answer may come as an event stream: its data line is the message.
            let body = serde_json::from_str(&text)
                .ok()
                .or_else(|| {
                    text.lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                })
                .unwrap_or(Value::Null);
            (status, body)
        }
    };
    // A refusal as JSON-RPC: its code, and a message that says what to do.
    let refused = |(status, body): (u16, Value), code: i64, says: &str| {
        assert_eq!(body["jsonrpc"], "2.0", "{status} {body:#}");
        assert_eq!(body["id"], Value::Null, "the body was not read: {body:#}");
        assert_eq!(body["error"]["code"], code, "{body:#}");
        let message = text(&body["error"]["message"]);
        assert!(message.contains(says), "{message}");
        status
    };
    assert_eq!(
        refused(
            post(None, None, None).await,
            -31401,
            "send `Authorization: Bearer <client key>`"
        ),
        401,
        "client key first"
    );
    assert_eq!(
        refused(
            post(None, None, Some("k2")).await,
            -31401,
            "the bearer key is not valid; use a client key"
        ),
        401
    );
    let (ok, body) = post(None, None, Some("k1")).await;
    assert_eq!(ok, 200, "{body:#}");
    assert_eq!(body["result"]["serverInfo"]["name"], "faregate", "{body:#}");
    assert_eq!(
        post(None, Some("https://chat.example.com"), Some("k1"))
            .await
            .0,
        200,
        "an allowed browser origin"
    );
    assert_eq!(
        refused(
            post(None, Some("https://evil.example.com"), Some("k1")).await,
            -31403,
            "Origin"
        ),
        403
    );
    assert_eq!(
        refused(
            post(Some("evil.example.com"), None, Some("k1")).await,
            -31403,
            "Host"
        ),
        403,
        "DNS rebinding: a Host outside [mcp] allowed_hosts"
    );
}

/// A 2025-revision client that ends its session with `DELETE /mcp` gets 200 (the official
/// Python SDK logs a failed termination for anything but 200 or 204), and the session is gone.
#[tokio::test]
async fn ending_an_mcp_session_answers_200_and_ends_it() {
    let s = Stack::start(1).await;
    let mcp = |method: reqwest::Method, session: Option<&str>| {
        let mut req = s
            .http
            .request(method, s.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(id) = session {
            req = req.header("mcp-session-id", id);
        }
        req
    };
    let res = mcp(reqwest::Method::POST, None)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "closing-client", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
    let session = res
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session id: {:?}", res.headers()));
    let status = |res: reqwest::Result<reqwest::Response>| {
        res.map(|r| r.status().as_u16())
            .unwrap_or_else(|e| panic!("{e}"))
    };
    // Before it ends: a tools/call whose params lack a name is invalid params, not an
    // unknown method.
    let (code, body) = answer(mcp(reqwest::Method::POST, Some(&session)).json(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {}}}),
    ))
    .await;
    assert_eq!(
        (code, &body["id"], &body["error"]["code"]),
        (200, &json!(7), &json!(-32602)),
        "{body:#}"
    );
    assert!(
        text(&body["error"]["message"]).ends_with("name is missing"),
        "{body:#}"
    );
    // rmcp's refusals come as JSON-RPC errors that say what to send.
    for (request, status_code, code, says) in [
        (
            mcp(reqwest::Method::POST, None)
                .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
            400,
            -31400,
            "this request needs the Mcp-Session-Id header",
        ),
        (
            s.http
                .post(s.url("/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", "1999-01-01")
                .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
            400,
            -31400,
            "MCP-Protocol-Version 1999-01-01 is not served here; send one of 2024-11-05,",
        ),
    ] {
        let (got, body) = answer(request).await;
        assert_eq!(
            (got, &body["error"]["code"]),
            (status_code, &json!(code)),
            "{says}: {body:#}"
        );
        assert!(text(&body["error"]["message"]).contains(says), "{body:#}");
    }
    assert_eq!(
        status(mcp(reqwest::Method::DELETE, Some(&session)).send().await),
        200
    );
    let (got, body) = answer(
        mcp(reqwest::Method::POST, Some(&session))
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
    )
    .await;
    assert_eq!(
        (got, &body["error"]["code"]),
        (404, &json!(-31404)),
        "the session is over: {body:#}"
    );
    assert!(
        text(&body["error"]["message"]).contains("send initialize without Mcp-Session-Id"),
        "{body:#}"
    );
    // Ending it again: no such session any more, as for any request naming it.
    let (got, body) = answer(mcp(reqwest::Method::DELETE, Some(&session))).await;
    assert_eq!(
        (got, &body["error"]["code"]),
        (404, &json!(-31404)),
        "an ended session is not ended twice: {body:#}"
    );
}

/// The status and JSON body of a request's answer.
async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let res = request.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    (status, body)
}

#[tokio::test]
async fn the_openapi_document_covers_every_route_and_only_routed_ones() {
    let s = Stack::start(7).await;
    let (status, doc) = s.get_json("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: Vec<&str> = doc["paths"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut routed = faregate::http::ROUTED_PATHS.to_vec();
    routed.sort_unstable();
    let mut sorted = documented.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, routed);
    // The admin routes say they need the admin key; a client key is the default.
    for (path, method) in [
        ("/v1/breakers/{key}/force", "post"),
        ("/v1/admin/reload", "post"),
        ("/v1/admin/replicas", "get"),
    ] {
        assert_eq!(
            doc["paths"][path][method]["security"],
            json!([{"adminKey": []}]),
            "{method} {path}"
        );
    }
    assert_eq!(doc["security"], json!([{"clientKey": []}]));
    assert!(
        doc.pointer("/components/securitySchemes/adminKey")
            .is_some()
    );
    // A list's `limit` is documented as the server holds it: 1 to 1000 (others are refused).
    for path in ["/v1/jobs", "/v1/bookings"] {
        let params = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let limit = params
            .iter()
            .find(|p| p["name"] == "limit")
            .unwrap_or_else(|| panic!("{path}: no limit parameter"));
        assert_eq!(
            (&limit["schema"]["minimum"], &limit["schema"]["maximum"]),
            (&json!(1), &json!(1000)),
            "{path}: {limit:#}"
        );
    }
    // Every documented operation reaches its handler: no fallback 404, no 405.
    for (path, ops) in doc["paths"].as_object().into_iter().flatten() {
        let concrete = path
            .replace("{tool}", "search_hotels")
            .replace("{key}", "search_hotels.duffel")
            .replace("{job_id}", "no-such-job");
        for method in ops.as_object().into_iter().flatten().map(|(m, _)| m) {
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes())
                .unwrap_or(reqwest::Method::GET);
            let res = s
                .http
                .request(m, s.url(&concrete))
                .header("accept", "application/json, text/event-stream")
                .json(&json!({}))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let code = res.status().as_u16();
            // An event stream never ends: its status is the answer.
            let streaming = res
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/event-stream"));
            let body = if streaming {
                String::new()
            } else {
                res.text().await.unwrap_or_default()
            };
            assert!(
                code != 405 && !body.contains("no route"),
                "{method} {path}: {code} {body}"
            );
        }
    }
    assert!(
        doc.pointer("/components/schemas/search_flights.arguments/properties/origin")
            .is_some()
    );
}

/// A path parameter that is not UTF-8 once percent-decoded gets the JSON 400 the OpenAPI
/// document describes, not axum's text/plain rejection (found while checking the document
/// against the server for schemathesis).
#[tokio::test]
async fn undecodable_path_parameters_are_json_400s() {
    let s = Stack::start(7).await;
    let says_utf8 = |body: &Value| {
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("UTF-8"))
    };
    for path in ["/v1/tools/%FF", "/v1/breakers/%FF", "/v1/jobs/%FF"] {
        let (status, body) = s.get_json(path).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(says_utf8(&body), "{path}: {body}");
    }
    let (status, body) = s.post("/v1/tools/%FF/call", json!({"arguments": {}})).await;
    assert_eq!(status, 400, "{body}");
    assert!(says_utf8(&body), "{body}");
}

/// Makes the simulator's flight status hang (never answer), and returns a status call's
/// arguments.
fn flight_status_hangs(s: &Stack) -> Value {
    s.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(3)})
}

/// The native endpoint takes the caller's deadline from the `Faregate-Deadline-Ms` header as
/// well as from `deadline_ms` in the body; with both, the shorter wins. A client that gives up
/// after 5 s gets the fallback text in time from either.
#[tokio::test]
async fn the_native_endpoint_takes_the_deadline_header_and_the_shorter_deadline_wins() {
    let s = Stack::start(8).await;
    let args = flight_status_hangs(&s);
    let call = |body: Value, header: Option<&'static str>| {
        let mut req = s
            .http
            .post(s.url("/v1/tools/get_flight_status/call"))
            .timeout(Duration::from_secs(5))
            .json(&body);
        if let Some(ms) = header {
            req = req.header("faregate-deadline-ms", ms);
        }
        async move {
            let res = req.send().await?;
            let status = res.status().as_u16();
            Ok::<_, reqwest::Error>((status, res.json::<Value>().await.unwrap_or_default()))
        }
    };
    let without = call(json!({"arguments": args}), None).await;
    assert!(
        without.as_ref().is_err_and(reqwest::Error::is_timeout),
        "without a deadline the client gives up first: {without:?}"
    );
    for (body, header) in [
        (json!({"arguments": args}), Some("1000")),
        (
            json!({"arguments": args, "deadline_ms": 60000}),
            Some("1000"),
        ),
        (
            json!({"arguments": args, "deadline_ms": 1000}),
            Some("60000"),
        ),
    ] {
        let (status, envelope) = call(body.clone(), header)
            .await
            .unwrap_or_else(|e| panic!("{body} {header:?}: the client gave up: {e}"));
        assert_eq!(status, 200, "{envelope:#}");
        assert_eq!(
            envelope["status"], "unavailable",
            "{body} {header:?}: {envelope:#}"
        );
    }
    let (status, refused) = call(json!({"arguments": args}), Some("soon"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 400, "{refused:#}");
    assert_eq!(
        refused["message"],
        "header Faregate-Deadline-Ms: must be a whole number of milliseconds, at least 1; got \"soon\""
    );
}

/// The OpenAI and Anthropic routes take the `Faregate-Deadline-Ms` header too, for every call
/// of their body: a client that gives up after 5 s gets each call's answer in time (the header
/// was ignored there, and the calls waited out the tool's own deadline).
#[tokio::test]
async fn the_agent_routes_take_the_deadline_header_for_every_call() {
    let s = Stack::start(9).await;
    let args = flight_status_hangs(&s);
    let openai = json!({"tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "get_flight_status", "arguments": args.to_string()}}]});
    let anthropic = json!({"content": [{"type": "tool_use", "id": "toolu_1",
        "name": "get_flight_status", "input": args}]});
    for (path, body) in [
        ("/v1/openai/tool_calls", openai),
        ("/v1/anthropic/tool_use", anthropic),
    ] {
        let res = s
            .http
            .post(s.url(path))
            .timeout(Duration::from_secs(5))
            .header("faregate-deadline-ms", "1000")
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: the client gave up: {e}"));
        assert_eq!(res.status().as_u16(), 200, "{path}");
        let text = res.text().await.unwrap_or_default();
        // The provider has not failed yet (it hangs, its breaker closed): the answer says the
        // call took longer than allowed, not that the tool is down or when it is back.
        assert!(
            text.contains("[unavailable] get_flight_status took longer than this call allowed"),
            "{path}: {text}"
        );
    }
}
