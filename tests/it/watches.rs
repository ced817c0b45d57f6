//! Watches end to end: the gateway with a SQLite job store against the simulator, a real HTTP
//! client creating, reading, pausing, resuming and deleting watches, and the simulator's flight
//! status going down under a watch (real sockets, so real time with short intervals).

use std::time::Duration;

use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::jobs::{SECRET, verify_signature};
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
            json!({"tool": "get_flight_status", "every": "1m", "when": "soon"}),
            400,
            "unknown field",
        ),
        (
            json!({"tool": "no_such_tool", "every": "1m"}),
            404,
            "search_flights",
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

#[tokio::test]
async fn a_watch_runs_on_its_schedule_is_paused_resumed_and_deleted() {
    let s = stack().await;
    let (status, created) = s
        .post(
            "/v1/watches",
            json!({"tool": "get_flight_status", "arguments": flight(), "every": "200ms",
                   "condition": {"kind": "delay_over", "minutes": 600}}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
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

#[tokio::test]
async fn a_provider_outage_under_a_watch_is_silent_and_the_schedule_resumes_after_it() {
    let s = stack().await;
    s.down(RouteGroup::AmadeusStatus);
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
}
