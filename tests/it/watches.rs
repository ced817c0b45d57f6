//! Watches end to end: the gateway with a SQLite job store against the simulator, a real HTTP
//! client creating, reading, pausing, resuming and deleting watches, and the simulator's flight
//! status going down under a watch (real sockets, so real time with short intervals); and the
//! agents' watch tools, offered and refused by the client's scope, making the same watches.

use std::time::Duration;

use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::jobs::{SECRET, verify_signature};
use crate::protocols::{mcp_message, mcp_post};
use crate::support::{MapEnv, Stack, StackBuilder, in_days, wait_until};

/// The stack with a job store, breakers that reopen quickly, and watches allowed every 200 ms.
async fn stack() -> Stack {
    builder().start().await
}

fn builder() -> StackBuilder {
    Stack::builder(21)
        .config(|mut config| {
            for t in &mut config.tools {
                let mut breaker = t.breaker.to_builder();
                breaker
                    .open_for(Duration::from_millis(300))
                    .open_for_max(Duration::from_millis(600))
                    .probe_interval(Duration::from_millis(100))
                    .ramp(vec![faregate::breaker::RampStage {
                        share: 0.5,
                        duration: Duration::from_millis(200),
                    }]);
                t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
                t.timeout = Duration::from_secs(2);
                t.deadline = Duration::from_secs(3);
                t.watch_min_interval = Some(Duration::from_millis(200));
            }
            config
        })
        .jobs()
}

fn flight() -> Value {
    json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(2)})
}

async fn delete(s: &Stack, path: &str) -> u16 {
    s.http
        .delete(s.url(path))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or_else(|e| panic!("DELETE {path}: {e}"))
}

/// Polls the watch until `done` holds of it.
async fn wait_for_watch(s: &Stack, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/v1/watches/{id}");
    wait_until(Duration::from_secs(20), what, || async {
        let (_, watch) = s.get_json(&path).await;
        if done(&watch) {
            return Ok(watch);
        }
        // The run under way's job says why a watch does not move on.
        let job = match watch["run_under_way"]["job_id"].as_str() {
            Some(job) => s.get_json(&format!("/v1/jobs/{job}")).await.1,
            None => Value::Null,
        };
        Err(format!("{watch:#}\nits run's job: {job:#}"))
    })
    .await
}

fn runs(w: &Value) -> u64 {
    w["runs"].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn watches_that_cannot_run_are_refused_naming_the_fix() {
    let s = stack().await;
    let cases: &[(Value, u16, &str)] = &[
        (
            json!({"tool": "book_flight", "arguments": {}, "every": "1m"}),
            422,
            "read-only tools only",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "100ms"}),
            422,
            "use \"200ms\" or longer",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "1m",
                   "condition": {"kind": "price_below", "amount": 400}}),
            422,
            "status_changed",
        ),
        (
            json!({"tool": "search_hotels", "arguments": {}, "every": "1m",
                   "ends": {"at_departure": true}}),
            422,
            "only get_flight_status",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": {"carrier_code": "BA"}, "every": "1m"}),
            422,
            "flight_number",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "often"}),
            422,
            "\"15m\"",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "99999999999999d"}),
            422,
            "is over the longest interval a watch may have, 30days; use \"30days\" or shorter",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "31d"}),
            422,
            "use \"30days\" or shorter",
        ),
        // Quoted back in days, as it was sent, not as "1month 29days 13h 26m 24s".
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "60d"}),
            422,
            "every = \"60days\" is over the longest interval",
        ),
        (
            json!({"tool": "get_flight_status", "every": "1m", "when": "soon"}),
            400,
            "unknown field",
        ),
        (
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "5m",
                   "ends": {"at": "2020-01-01T00:00:00Z"}}),
            422,
            "has passed, so the watch would never run",
        ),
        (
            json!({"tool": "no_such_tool", "every": "1m"}),
            422,
            "no tool \"no_such_tool\" is served; watchable tools: search_flights, price_flight_offer, search_hotels, check_hotel_availability, get_flight_status, get_hotel_content, track_flight",
        ),
        (
            json!({"tool": "search_flight", "every": "1m"}),
            422,
            "no tool \"search_flight\" is served (did you mean search_flights?); watchable tools: search_flights,",
        ),
    ];
    for (body, status, fix) in cases {
        let (got, answer) = s.post("/v1/watches", body.clone()).await;
        let message = answer["message"].as_str().unwrap_or_default();
        assert_eq!(got, *status, "{body}: {answer}");
        assert!(message.contains(fix), "{body}: {message}");
    }
    let (_, list) = s.get_json("/v1/watches").await;
    assert_eq!(list["watches"], json!([]), "nothing refused was kept");
}

/// A flight status watch every 200 ms whose condition (a delay over 10 h) never holds: it runs
/// and says nothing. The watch as created.
async fn quiet_status_watch(s: &Stack) -> Value {
    let (status, created) = s
        .post(
            "/v1/watches",
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms",
                   "condition": {"kind": "delay_over", "minutes": 600}}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    created
}

#[tokio::test]
async fn a_watch_runs_on_its_schedule_is_paused_resumed_and_deleted() {
    let s = stack().await;
    let created = quiet_status_watch(&s).await;
    assert_eq!(created["state"], "active");
    let id = created["watch_id"].as_str().unwrap_or_default().to_string();

    let watch = wait_for_watch(&s, &id, "three runs", |w| runs(w) >= 3).await;
    assert_eq!(watch["last_result"]["status"], "ok", "{watch:#}");
    assert_eq!(watch["last_result"]["tool"], "get_flight_status");
    assert_eq!(watch["notices"], json!([]), "no delay over 10 h: no news");
    assert_eq!(watch["last_error"], Value::Null);

    let (_, list) = s.get_json("/v1/watches").await;
    assert_eq!(list["watches"][0]["watch_id"], id.as_str());

    let (status, paused) = s.post(&format!("/v1/watches/{id}/pause"), json!({})).await;
    assert_eq!(
        (status, paused["state"].as_str()),
        (200, Some("paused")),
        "{paused}"
    );
    assert_eq!(
        paused["next_run_at"],
        Value::Null,
        "a paused watch has no next run"
    );
    let (status, again) = s.post(&format!("/v1/watches/{id}/pause"), json!({})).await;
    assert_eq!(status, 409, "{again}");
    assert!(
        again["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not active")
    );

    let (status, resumed) = s.post(&format!("/v1/watches/{id}/resume"), json!({})).await;
    assert_eq!(
        (status, resumed["state"].as_str()),
        (200, Some("active")),
        "{resumed}"
    );
    let before = runs(&resumed);
    wait_for_watch(&s, &id, "a run after resuming", |w| runs(w) > before).await;

    assert_eq!(delete(&s, &format!("/v1/watches/{id}")).await, 204);
    let (status, _) = s.get_json(&format!("/v1/watches/{id}")).await;
    assert_eq!(status, 404);
    assert_eq!(delete(&s, &format!("/v1/watches/{id}")).await, 404);
}

/// A watch's run is a job's run, and its span names the watch, so an operator finds a watch's
/// traces from its id.
#[tokio::test]
async fn a_watch_run_is_traced_naming_its_watch() {
    let exported = crate::traces::Exported::start();
    let s = stack().await;
    tracing::callsite::rebuild_interest_cache();
    let created = quiet_status_watch(&s).await;
    let id = created["watch_id"].as_str().unwrap_or_default().to_string();
    wait_for_watch(&s, &id, "a run", |w| runs(w) >= 1).await;
    let spans = exported.spans();
    let run = spans
        .iter()
        .find(|span| span.name == "run_job get_flight_status")
        .unwrap_or_else(|| panic!("no run span: {spans:#?}"));
    assert_eq!(
        crate::traces::attr(run, "faregate.watch.id").as_deref(),
        Some(id.as_str()),
        "{:?}",
        run.attributes
    );
}

#[tokio::test]
async fn a_provider_outage_under_a_watch_is_silent_and_the_schedule_resumes_after_it() {
    let s = stack().await;
    // Both providers of the chain: Amadeus, and flightaware behind it.
    s.down(RouteGroup::AmadeusStatus);
    s.down(RouteGroup::FlightTracker);
    let (status, created) = s
        .post(
            "/v1/watches",
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["watch_id"].as_str().unwrap_or_default().to_string();

    // The first run's job waits for the provider, silently: requeued, the watch unchanged.
    let watch = wait_for_watch(&s, &id, "a run under way", |w| {
        w["run_under_way"].is_object()
    })
    .await;
    let job_id = watch["run_under_way"]["job_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    s.wait_for_job(&job_id, Duration::from_secs(20), |j| {
        j["status"] == "retry_scheduled" && j["attempts"].as_u64().unwrap_or(0) >= 1
    })
    .await;
    let (_, during) = s.get_json(&format!("/v1/watches/{id}")).await;
    assert_eq!(runs(&during), 0, "{during:#}");
    assert_eq!(during["notices"], json!([]));
    assert_eq!(during["last_error"], Value::Null);

    s.sim.clear_faults();
    let after = wait_for_watch(&s, &id, "runs after the outage", |w| runs(w) >= 3).await;
    assert_eq!(after["last_result"]["status"], "ok", "{after:#}");
    assert_eq!(
        after["notices"],
        json!([]),
        "the flight did not change: no news"
    );
    assert_eq!(after["last_error"], Value::Null);
}

/// Creates a watch and answers its id.
async fn create(s: &Stack, body: Value) -> String {
    let (status, created) = s.post("/v1/watches", body).await;
    assert_eq!(status, 201, "{created}");
    created["watch_id"].as_str().unwrap_or_default().to_string()
}

fn notices(w: &Value) -> Vec<Value> {
    w["notices"].as_array().cloned().unwrap_or_default()
}

/// Waits for three more runs of the watch after `w`, and answers it then: any news those runs
/// had would be among its notices.
async fn three_more_runs(s: &Stack, id: &str, w: &Value) -> Value {
    let after = runs(w) + 3;
    wait_for_watch(s, id, "three more runs", |w| runs(w) >= after).await
}

#[tokio::test]
async fn a_price_watch_fires_once_when_the_price_crosses_its_line() {
    let s = stack().await;
    let search = json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)});
    let (_, answer) = s.call("search_flights", json!({"arguments": search})).await;
    let lowest = answer["data"]["offers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["total_amount"].as_str()?.parse::<f64>().ok())
        .fold(f64::INFINITY, f64::min);
    assert!(lowest.is_finite(), "the search has offers: {answer}");
    let line = (lowest * 0.9).round();
    let id = create(
        &s,
        json!({"tool": "search_flights", "arguments": search, "every": "200ms",
               "condition": {"kind": "price_below", "amount": line}}),
    )
    .await;
    let baseline = wait_for_watch(&s, &id, "two runs", |w| runs(w) >= 2).await;
    assert_eq!(
        notices(&baseline),
        Vec::<Value>::new(),
        "above the line: no news"
    );

    s.sim
        .script(vec![faregate_sim::ScriptStep {
            after_ms: 0,
            price_factor: Some(0.8),
            flight: None,
            delay_minutes: None,
            gate: None,
        }])
        .unwrap_or_else(|e| panic!("{e}"));
    let fired = wait_for_watch(&s, &id, "a notice", |w| !notices(w).is_empty()).await;
    let after = three_more_runs(&s, &id, &fired).await;
    let all = notices(&after);
    assert_eq!(
        all.len(),
        1,
        "once, not on every run below the line: {all:#?}"
    );
    let news = all[0]["news"].as_str().unwrap_or_default();
    assert!(
        news.starts_with(&format!("price fell below {line}")),
        "{news}"
    );
    assert_eq!(all[0]["result"]["status"], "ok");
}

#[tokio::test]
async fn a_status_watch_fires_on_a_delay_and_on_a_gate_change_and_not_on_unchanged_runs() {
    let s = stack().await;
    let every_change = create(
        &s,
        json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms",
               "condition": {"kind": "status_changed"}}),
    )
    .await;
    let gate = create(
        &s,
        json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms",
               "condition": {"kind": "gate_changed"}}),
    )
    .await;
    let baseline = wait_for_watch(&s, &every_change, "two runs", |w| runs(w) >= 2).await;
    assert_eq!(
        notices(&baseline),
        Vec::<Value>::new(),
        "unchanged runs: no news"
    );

    let step = |after_ms, delay_minutes, gate: Option<&str>| faregate_sim::ScriptStep {
        after_ms,
        price_factor: None,
        flight: Some("BA117".into()),
        delay_minutes,
        gate: gate.map(str::to_string),
    };
    s.sim
        .script(vec![step(0, Some(95), None)])
        .unwrap_or_else(|e| panic!("{e}"));
    let delayed = wait_for_watch(&s, &every_change, "the delay's notice", |w| {
        !notices(w).is_empty()
    })
    .await;
    let delayed = three_more_runs(&s, &every_change, &delayed).await;
    assert_eq!(notices(&delayed).len(), 1, "{delayed:#}");
    assert!(
        notices(&delayed)[0]["news"]
            .as_str()
            .unwrap_or_default()
            .contains("status changed"),
        "{delayed:#}"
    );
    let (_, gate_watch) = s.get_json(&format!("/v1/watches/{gate}")).await;
    assert_eq!(
        notices(&gate_watch),
        Vec::<Value>::new(),
        "a delay is not a gate change"
    );

    s.sim
        .script(vec![step(0, Some(95), Some("Z9"))])
        .unwrap_or_else(|e| panic!("{e}"));
    let moved = wait_for_watch(&s, &gate, "the gate's notice", |w| !notices(w).is_empty()).await;
    let moved = three_more_runs(&s, &gate, &moved).await;
    assert_eq!(notices(&moved).len(), 1, "{moved:#}");
    assert!(
        notices(&moved)[0]["news"]
            .as_str()
            .unwrap_or_default()
            .contains("gate or terminal changed"),
        "{moved:#}"
    );
    let both = wait_for_watch(&s, &every_change, "the gate's notice too", |w| {
        notices(w).len() >= 2
    })
    .await;
    let both = three_more_runs(&s, &every_change, &both).await;
    assert_eq!(
        notices(&both).len(),
        2,
        "the delay, then the gate: {both:#}"
    );
}

#[tokio::test]
async fn a_notice_is_posted_signed_to_the_watch_callback_url() {
    let s = builder()
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", SECRET)]))
        .callbacks_to(MockServer::start().await)
        .start()
        .await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(204))
        .mount(s.receiver())
        .await;
    let (status, refused) = s
        .post(
            "/v1/watches",
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms",
                   "callback_url": "https://example.com/hooks/faregate"}),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("allowlist"),
        "{refused}"
    );

    let id = create(
        &s,
        json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms",
               "condition": {"kind": "gate_changed"}, "callback_url": s.callback_url()}),
    )
    .await;
    wait_for_watch(&s, &id, "two runs", |w| runs(w) >= 2).await;
    s.sim
        .script(vec![faregate_sim::ScriptStep {
            after_ms: 0,
            price_factor: None,
            flight: Some("BA117".into()),
            delay_minutes: None,
            gate: Some("Z9".into()),
        }])
        .unwrap_or_else(|e| panic!("{e}"));
    let sent = wait_for_watch(&s, &id, "the notice's callback sent", |w| {
        notices(w).first().is_some_and(|n| n["callback"] == "sent")
    })
    .await;
    let received = s.receiver().received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1, "one notice, one callback");
    let header = received[0]
        .headers
        .get("faregate-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    verify_signature(header, &received[0].body);
    let body: Value = serde_json::from_slice(&received[0].body).unwrap_or_default();
    assert_eq!(body["watch_id"], id.as_str());
    assert_eq!(body["news"], notices(&sent)[0]["news"]);
    assert!(
        body["news"].as_str().unwrap_or_default().contains("Z9"),
        "{body}"
    );
    assert_eq!(body["result"]["status"], "ok");
    // When the run's answer was read: the notice's created_at, never before its instant.
    assert_eq!(body["seen_at"], notices(&sent)[0]["created_at"], "{body}");
    assert!(
        body["seen_at"].as_str() >= body["instant"].as_str(),
        "{body}"
    );
}

/// Two clients on a gateway with watches: `reader` may search only, `booker` may only book (no
/// read tool to watch).
async fn scoped() -> Stack {
    let client = |name: &str, key: &str, tools: &[&str], may_book: bool| {
        crate::support::client(name, key, crate::support::scope(tools, may_book))
    };
    Stack::builder(23)
        .config(move |mut c| {
            c.clients = vec![
                client("reader", "reader-key", &["search_*"], false),
                client("booker", "booker-key", &["book_flight"], true),
            ];
            for t in &mut c.tools {
                t.watch_min_interval = Some(Duration::from_secs(60));
            }
            c
        })
        .jobs()
        .start()
        .await
}

async fn as_client(
    s: &Stack,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = s.http.request(method, s.url(path)).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let (status, _, body) = crate::support::send(request).await;
    (status, body)
}

/// One OpenAI tool call of `name` with `arguments`, as `key`'s client; the tool message's text.
async fn openai_call(s: &Stack, key: &str, name: &str, arguments: Value) -> String {
    let body = json!({"tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}}]});
    let (status, answer) = as_client(
        s,
        key,
        reqwest::Method::POST,
        "/v1/openai/tool_calls",
        Some(body),
    )
    .await;
    assert_eq!(status, 200, "{answer:#}");
    answer["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn the_watch_tools_follow_the_clients_scope_and_share_the_apis_watches() {
    let s = scoped().await;
    let tool_names = |manifest: &Value| -> Vec<String> {
        manifest["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect()
    };
    let get = reqwest::Method::GET;
    let (_, reader) = as_client(
        &s,
        "reader-key",
        get.clone(),
        "/v1/tools?format=openai",
        None,
    )
    .await;
    let reader = tool_names(&reader);
    assert!(
        reader.ends_with(&[
            "watch_create".into(),
            "watch_list".into(),
            "watch_delete".into()
        ]),
        "a client with a read tool is offered the watch tools: {reader:?}"
    );
    let (_, booker) = as_client(
        &s,
        "booker-key",
        get.clone(),
        "/v1/tools?format=openai",
        None,
    )
    .await;
    assert_eq!(
        tool_names(&booker),
        ["book_flight"],
        "nothing to watch, no watch tools"
    );
    let (_, guidance) = as_client(
        &s,
        "booker-key",
        get.clone(),
        "/v1/prompts/agent-guidance",
        None,
    )
    .await;
    let guidance = guidance["guidance"].as_str().unwrap_or_default();
    assert!(
        guidance.contains("Watches:") && !guidance.contains("watch_create"),
        "the line about the watch tools is left out: {guidance}"
    );
    let (_, guidance) = as_client(
        &s,
        "reader-key",
        get.clone(),
        "/v1/prompts/agent-guidance",
        None,
    )
    .await;
    assert!(
        guidance["guidance"]
            .as_str()
            .unwrap_or_default()
            .contains("watch_create")
    );

    // A misspelt watch tool is answered with the tools the model was offered, watch tools
    // included; a client offered none is not told of them.
    let misspelt = openai_call(&s, "reader-key", "watch_creat", json!({})).await;
    assert!(
        misspelt.contains("Did you mean watch_create?") && misspelt.contains("watch_delete"),
        "{misspelt}"
    );
    let booker = openai_call(&s, "booker-key", "watch_creat", json!({})).await;
    assert!(!booker.contains("watch_create"), "{booker}");
    // Nor does a client offered none call them: `watch_list` is refused as any tool outside
    // its scope, not answered as if the client had no watches.
    let listed = openai_call(&s, "booker-key", "watch_list", json!({})).await;
    assert!(
        listed.starts_with("[rejected] This client may not call watch_list"),
        "{listed}"
    );
    // Over MCP, as any tool outside the scope: a JSON-RPC error (-32602) naming its tools.
    let mcp = |body: Value, session: Option<String>| {
        let req = s.http.post(s.url("/mcp")).bearer_auth("booker-key");
        async move { mcp_post(req, &body, session.as_deref(), "2025-11-25").await }
    };
    let (_, headers, body) = mcp(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "booker", "version": "1"}}}),
        None,
    )
    .await;
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session: {body}"));
    mcp(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(session.clone()),
    )
    .await;
    let (_, _, body) = mcp(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "watch_list", "arguments": {}}}),
        Some(session),
    )
    .await;
    let answer = mcp_message(&body);
    assert_eq!(answer["error"]["code"], -32602, "{answer:#}");
    assert_eq!(
        answer["error"]["data"]["allowed_tools"],
        json!(["book_flight"]),
        "{answer:#}"
    );

    // A tool outside the scope is refused as the native API refuses it, in the model's words.
    let status_watch = json!({"tool": "get_flight_status", "every": "1h", "condition": null,
        "ends": null, "arguments": flight().to_string()});
    let refused = openai_call(&s, "reader-key", "watch_create", status_watch.clone()).await;
    assert!(refused.starts_with("[rejected] "), "{refused}");
    let mut native = status_watch.clone();
    native["arguments"] = flight();
    native.as_object_mut().map(|o| {
        o.remove("condition");
        o.remove("ends")
    });
    let (status, api) = as_client(
        &s,
        "reader-key",
        reqwest::Method::POST,
        "/v1/watches",
        Some(native),
    )
    .await;
    assert_eq!(status, 403, "{api:#}");
    assert_eq!(
        refused,
        format!("[rejected] {}", api["message"].as_str().unwrap_or_default())
    );
    // So is an interval under the minimum: the API's 422 text.
    let fast = json!({"tool": "search_flights", "every": "30s", "condition": null, "ends": null,
        "arguments": json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30),
                            "adults": null, "cabin_class": null}).to_string()});
    let refused = openai_call(&s, "reader-key", "watch_create", fast).await;
    assert!(
        refused.starts_with(
            "[invalid_arguments] every = \"30s\" is under search_flights's minimum interval"
        ),
        "{refused}"
    );

    // A model's watch is the client's own, listed by the native API; strict mode's nulls in the
    // watched arguments read as absent.
    let watch = json!({"tool": "search_flights", "every": "1h",
        "condition": {"kind": "price_change", "share": 0.1},
        "ends": {"at": null, "after_runs": 5, "at_departure": null},
        "arguments": json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30),
                            "adults": null, "cabin_class": null}).to_string()});
    let created = openai_call(&s, "reader-key", "watch_create", watch).await;
    assert!(created.starts_with("Watch "), "{created}");
    let id = created["Watch ".len()..]
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    let (status, listed) = as_client(&s, "reader-key", get.clone(), "/v1/watches", None).await;
    assert_eq!(status, 200);
    let mine = &listed["watches"][0];
    assert_eq!(mine["watch_id"], id.as_str(), "{listed:#}");
    assert_eq!(
        mine["arguments"],
        json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)})
    );
    assert_eq!(
        mine["condition"],
        json!({"kind": "price_change", "share": 0.1})
    );
    assert_eq!(mine["ends"]["after_runs"], 5);
    let (status, _) = as_client(&s, "booker-key", get, &format!("/v1/watches/{id}"), None).await;
    assert_eq!(
        status, 404,
        "another client's watch is none of its business"
    );
    let write = json!({"tool": "book_flight", "every": "1h", "condition": null, "ends": null,
        "arguments": "{}"});
    // A client with no read tool to watch is not offered the watch tools, and calling one is
    // refused as calling any tool outside its scope, naming only the tools it may call.
    let refused = openai_call(&s, "booker-key", "watch_create", write).await;
    assert_eq!(
        refused,
        "[rejected] This client may not call watch_create. The tools it may call are: book_flight."
    );
    let gone = openai_call(&s, "booker-key", "watch_delete", json!({"watch_id": id})).await;
    assert!(
        gone.starts_with("[rejected] This client may not call watch_delete"),
        "another client's watch is not even named: {gone}"
    );
    let listed = openai_call(&s, "reader-key", "watch_list", json!({})).await;
    assert!(
        listed.starts_with("1 watch:") && listed.contains(&id),
        "{listed}"
    );
    let deleted = openai_call(&s, "reader-key", "watch_delete", json!({"watch_id": id})).await;
    assert!(
        deleted.starts_with(&format!("Watch {id} is stopped")),
        "{deleted}"
    );
    assert_eq!(
        openai_call(&s, "reader-key", "watch_list", json!({})).await,
        "There are no watches."
    );
}

#[tokio::test]
async fn without_a_job_store_the_watch_tools_are_not_offered_and_say_so_if_called() {
    let s = Stack::start(24).await;
    let (_, manifest) = s.get_json("/v1/tools?format=anthropic").await;
    let names: Vec<&str> = manifest["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("watch_")), "{names:?}");
    let (status, answer) = s
        .post(
            "/v1/anthropic/tool_use",
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "watch_list", "input": {}}]}),
        )
        .await;
    assert_eq!(status, 200, "{answer:#}");
    let block = &answer["content"][0];
    assert_eq!(block["is_error"], true);
    assert!(
        block["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[unavailable] watches are off"),
        "{block:#}"
    );
}

#[tokio::test]
async fn a_clients_job_list_holds_its_calls_and_its_watches_runs_only_when_asked() {
    let s = stack().await;
    let (status, created) = s
        .post(
            "/v1/watches",
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms"}),
        )
        .await;
    assert_eq!(status, 201, "{created:#}");
    let id = created["watch_id"].as_str().unwrap_or_default().to_string();
    wait_for_watch(&s, &id, "two runs", |w| runs(w) >= 2).await;
    let (_, call) = s
        .submit(
            "get_flight_status",
            json!({"arguments": flight(), "mode": "background", "idempotency_key": "mine-1"}),
        )
        .await;
    let keys = |listed: &Value| -> Vec<String> {
        listed["jobs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|j| j["idempotency_key"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let (_, own) = s.get_json("/v1/jobs").await;
    assert_eq!(
        keys(&own),
        ["mine-1"],
        "the client's own calls by default: {own:#}"
    );
    assert_eq!(own["jobs"][0]["job_id"], call["job_id"]);
    let (_, runs_listed) = s.get_json("/v1/jobs?origin=watch_runs").await;
    let run_keys = keys(&runs_listed);
    assert!(
        run_keys.len() >= 2
            && run_keys
                .iter()
                .all(|k| k.starts_with(&format!("watch:{id}:"))),
        "{runs_listed:#}"
    );
    let (_, all) = s.get_json("/v1/jobs?origin=all").await;
    assert_eq!(keys(&all).len(), run_keys.len() + 1, "{all:#}");
    let (status, bad) = s.get_json("/v1/jobs?origin=mine").await;
    assert_eq!(status, 400, "{bad:#}");
    assert!(
        bad["message"]
            .as_str()
            .unwrap_or_default()
            .contains("use calls (the default"),
        "{bad:#}"
    );
    // A client's key cannot pose as a watch's run.
    let (status, posing) = s
        .submit(
            "get_flight_status",
            json!({"arguments": flight(), "mode": "background", "idempotency_key": format!("watch:{id}:1")}),
        )
        .await;
    assert_eq!(status, 422, "{posing:#}");
    assert!(
        posing["content"]
            .as_str()
            .unwrap_or_default()
            .contains("must not start with \"watch:\""),
        "{posing:#}"
    );
    // In any case: SQLite's LIKE would list `WATCH:` as a watch's run, PostgreSQL's as a call.
    let (status, shouting) = s
        .submit(
            "get_flight_status",
            json!({"arguments": flight(), "mode": "background", "idempotency_key": "WATCH:x"}),
        )
        .await;
    assert_eq!(status, 422, "{shouting:#}");
}
