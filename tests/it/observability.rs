//! Operations end to end: metrics after a scripted outage, the breaker API and its keys, the
//! event stream, and the dashboard page. The gateway and the simulator run on `127.0.0.1:0`.

use std::time::Duration;

use faregate::config::Config;
use faregate_sim::{Fault, RateLimitFault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{MapEnv, Stack, in_days, one_provider_per_tool, send, wait_until};

/// A stack with `env` and one provider per tool: these scenarios count one breaker's attempts,
/// not a chain's. Its calls carry the client key of [`keys`].
async fn stack_with(env: MapEnv, tweak: impl FnOnce(Config) -> Config + 'static) -> Stack {
    Stack::builder(7)
        .env(env)
        .client_key("client-key")
        .config(one_provider_per_tool)
        .config(tweak)
        .start()
        .await
}

fn flights(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

/// Searches flights (with the client key) and returns the envelope.
async fn call(s: &Stack, body: Value) -> Value {
    s.call("search_flights", body).await.1
}

/// GETs `path` with `key` (or none) and returns the status and the body as text.
async fn get(s: &Stack, path: &str, key: Option<&str>) -> (u16, String) {
    let mut req = s.http.get(s.url(path));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = res.status().as_u16();
    (status, res.text().await.unwrap_or_default())
}

/// Forces breaker `key` to `body`'s state, with `bearer` (or no key).
async fn force(s: &Stack, key: &str, body: Value, bearer: Option<&str>) -> (u16, Value) {
    let mut req = s
        .http
        .post(s.url(&format!("/v1/breakers/{key}/force")))
        .json(&body);
    if let Some(k) = bearer {
        req = req.bearer_auth(k);
    }
    let (status, _, body) = send(req).await;
    (status, body)
}

/// Scrapes until `line` appears (the transition task runs beside the request path).
async fn scrape_until(s: &Stack, line: &str) -> String {
    wait_until(
        Duration::from_secs(2),
        &format!("{line:?} in the scrape"),
        || async {
            let text = get(s, "/metrics", None).await.1;
            if text.lines().any(|l| l == line) {
                Ok(text)
            } else {
                Err(text)
            }
        },
    )
    .await
}

#[track_caller]
fn assert_sample(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "{line:?} not in the scrape:\n{}",
        text.lines()
            .filter(|l| l.starts_with(line.split('{').next().unwrap_or(line)))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn keys() -> MapEnv {
    MapEnv(vec![
        ("FAREGATE_CLIENT_KEYS", "client-key"),
        ("FAREGATE_ADMIN_KEY", "admin-key"),
    ])
}

#[tokio::test]
async fn metrics_after_a_flight_outage_count_calls_attempts_fast_fails_and_fallbacks() {
    let s = stack_with(keys(), |c| c).await;
    // Before anything opens, the openings the alert rules count are there at 0: a counter
    // series born at 1 reads as no increase, and the first trip would be lost to Prometheus.
    let (_, fresh) = get(&s, "/metrics", None).await;
    for line in [
        r#"faregate_breaker_transitions_total{from="closed",provider="duffel",reason="consecutive_failures",to="open",tool="search_flights"} 0"#,
        r#"faregate_breaker_transitions_total{from="ramp",provider="duffel",reason="ramp_failure_rate",to="open",tool="search_hotels"} 0"#,
        r#"faregate_alerts_fired_total{alert="breaker_trip_storm",severity="P2"} 0"#,
    ] {
        assert_sample(&fresh, line);
    }
    // One good search, cached for the stale fallback.
    assert_eq!(call(&s, flights(30)).await["status"], "ok");
    s.down(RouteGroup::DuffelAirSearch);
    // Two calls of two failed attempts each, a fifth failure that opens the breaker (its retry
    // is refused by the open breaker, and the cached search answers stale), then a fast fail.
    assert_eq!(call(&s, flights(31)).await["status"], "unavailable");
    assert_eq!(call(&s, flights(31)).await["status"], "unavailable");
    let stale = call(&s, flights(30)).await;
    assert_eq!(stale["status"], "stale", "{stale:#}");
    let fast = call(&s, flights(31)).await;
    assert_eq!(fast["status"], "unavailable");
    assert_eq!(fast["breaker"], "open");

    let text = scrape_until(&s, r#"faregate_breaker_transitions_total{from="closed",provider="duffel",reason="consecutive_failures",to="open",tool="search_flights"} 1"#)
        .await;
    for line in [
        r#"faregate_tool_calls_total{provider="duffel",status="ok",tool="search_flights"} 1"#,
        r#"faregate_tool_calls_total{provider="none",status="unavailable",tool="search_flights"} 3"#,
        r#"faregate_tool_calls_total{provider="duffel",status="stale",tool="search_flights"} 1"#,
        r#"faregate_tool_call_duration_seconds_count{status="unavailable",tool="search_flights"} 3"#,
        r#"faregate_upstream_attempts_total{error_type="",outcome="success",provider="duffel",tool="search_flights"} 1"#,
        r#"faregate_upstream_attempts_total{error_type="upstream_5xx",outcome="failure",provider="duffel",tool="search_flights"} 5"#,
        r#"faregate_upstream_attempt_duration_seconds_count{provider="duffel",tool="search_flights"} 6"#,
        r#"faregate_breaker_rejected_calls_total{provider="duffel",reason="open",tool="search_flights"} 2"#,
        r#"faregate_fallbacks_total{kind="stale",tool="search_flights"} 1"#,
        r#"faregate_fallbacks_total{kind="text",tool="search_flights"} 3"#,
        r#"faregate_breaker_state{provider="duffel",state="open",tool="search_flights"} 1"#,
        r#"faregate_breaker_state{provider="duffel",state="closed",tool="search_flights"} 0"#,
        r#"faregate_breaker_state{provider="duffel",state="closed",tool="search_hotels"} 1"#,
        r#"faregate_breaker_failure_ratio_at_last_open{provider="duffel",tool="search_flights"} 0.8333333333333334"#,
        r#"faregate_bulkhead_in_use{tool="search_flights"} 0"#,
        r#"faregate_bulkhead_capacity{tool="search_flights"} 64"#,
        r#"faregate_alerts_firing{alert="breaker_open_too_long",severity="P2"} 0"#,
    ] {
        assert_sample(&text, line);
    }
    assert!(!text.contains("client-key") && !text.contains("admin-key"));

    // While open, the window is emptied or ageing out; what opened the breaker is in its
    // history: the dashboard shows these figures "at opening".
    let (status, body) = get(&s, "/v1/breakers/search_flights.duffel", Some("client-key")).await;
    assert_eq!(status, 200, "{body}");
    let entry: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(entry["state"], "open", "{entry:#}");
    assert_eq!(entry["history"]["calls_at_last_open"], 6, "{entry:#}");
    assert_eq!(
        entry["history"]["failure_rate_at_last_open"],
        5.0 / 6.0,
        "{entry:#}"
    );
    assert_eq!(entry["history"]["slow_rate_at_last_open"], 0.0, "{entry:#}");
}

/// A provider answering 429 `Retry-After: 20` to every search (no single one longer than
/// `open_for`, 30 s): its fifth in a row opens the breaker as the provider's rate-limit pause,
/// and every view an operator has says so: the transition counter and the breaker API's
/// history name `retry_after` (not `consecutive_failures`), and the breaker is open for the
/// provider's 20 s, not the backoff's 30 s.
#[tokio::test]
async fn a_run_of_429s_with_retry_after_shows_as_a_retry_after_opening() {
    let s = stack_with(keys(), |c| c).await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            rate_limited: Some(RateLimitFault { retry_after_s: 20 }),
            ..Fault::default()
        },
    );
    for _ in 0..5 {
        // 20 s does not fit the 12 s deadline: each call is one attempt, answered at once.
        let env = call(&s, flights(30)).await;
        assert_eq!(env["status"], "unavailable", "{env:#}");
    }
    let fast = call(&s, flights(30)).await;
    assert_eq!(fast["breaker"], "open", "{fast:#}");
    assert!(
        fast["retry_after_s"].as_u64().is_some_and(|s| s <= 20),
        "{fast:#}"
    );
    let text = scrape_until(&s, r#"faregate_breaker_transitions_total{from="closed",provider="duffel",reason="retry_after",to="open",tool="search_flights"} 1"#)
        .await;
    for line in [
        r#"faregate_breaker_transitions_total{from="closed",provider="duffel",reason="consecutive_failures",to="open",tool="search_flights"} 0"#,
        r#"faregate_upstream_attempts_total{error_type="rate_limited",outcome="failure",provider="duffel",tool="search_flights"} 5"#,
        r#"faregate_breaker_state{provider="duffel",state="open",tool="search_flights"} 1"#,
    ] {
        assert_sample(&text, line);
    }
    let (status, body) = get(&s, "/v1/breakers/search_flights.duffel", Some("client-key")).await;
    assert_eq!(status, 200, "{body}");
    let entry: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(entry["state"], "open", "{entry:#}");
    assert_eq!(entry["transitions"][0]["to"], "open", "{entry:#}");
    assert_eq!(
        entry["transitions"][0]["reason"], "retry_after",
        "{entry:#}"
    );
    let remaining = entry["open_remaining_s"].as_f64().unwrap_or(f64::MAX);
    assert!(
        remaining <= 20.0,
        "open for the provider's 20 s, not 30: {entry:#}"
    );
}

#[tokio::test]
async fn the_breaker_api_reads_with_any_key_and_forces_only_with_the_admin_key() {
    let s = stack_with(keys(), |c| c).await;
    let (status, _) = get(&s, "/v1/breakers", None).await;
    assert_eq!(status, 401);
    let (status, body) = get(&s, "/v1/breakers", Some("client-key")).await;
    assert_eq!(status, 200);
    let list: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}"));
    let entry = list["breakers"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["key"] == "search_flights.duffel"))
        .cloned()
        .unwrap_or_else(|| panic!("{list:#}"));
    assert_eq!(entry["state"], "closed");
    assert_eq!(entry["breaker"], "search_flights/duffel");
    assert_eq!(entry["history"]["times_opened"], 0);
    assert!(entry["failure_rate"].is_number() && entry["calls_in_window"].is_number());
    assert_eq!(get(&s, "/v1/breakers", Some("admin-key")).await.0, 200);

    for path in [
        "/v1/breakers/search_flights.duffel",
        "/v1/breakers/search_flights%2Fduffel",
    ] {
        let (status, body) = get(&s, path, Some("client-key")).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.contains("\"key\":\"search_flights.duffel\""), "{body}");
    }
    let (status, body) = get(&s, "/v1/breakers/nope.x", Some("client-key")).await;
    assert_eq!(status, 404);
    assert!(body.contains("search_flights.duffel"), "{body}");

    let open = json!({"state": "open"});
    assert_eq!(
        force(&s, "search_flights.duffel", open.clone(), None)
            .await
            .0,
        401
    );
    assert_eq!(
        force(&s, "search_flights.duffel", open.clone(), Some("wrong"))
            .await
            .0,
        401
    );
    let (status, body) = force(
        &s,
        "search_flights.duffel",
        open.clone(),
        Some("client-key"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = force(
        &s,
        "search_flights.duffel",
        json!({"state": "half"}),
        Some("admin-key"),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"auto\"")
    );

    let (status, body) = force(&s, "search_flights.duffel", open, Some("admin-key")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "forced_open");
    assert_eq!(body["forced"], true);
    let env = call(&s, flights(30)).await;
    assert_eq!(env["status"], "unavailable");
    assert_eq!(env["breaker"], "forced_open");

    let (_, body) = force(
        &s,
        "search_flights.duffel",
        json!({"state": "auto"}),
        Some("admin-key"),
    )
    .await;
    assert_eq!(body["state"], "closed");
    assert_eq!(call(&s, flights(30)).await["status"], "ok");
    // The breaker's recent transitions follow (they arrive through the event channel).
    let last = wait_until(
        Duration::from_secs(1),
        "the forced_auto transition",
        || async {
            let (_, body) = get(&s, "/v1/breakers/search_flights.duffel", Some("client-key")).await;
            let last: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if last["transitions"][0]["reason"] == "forced_auto" {
                Ok(last)
            } else {
                Err(body)
            }
        },
    )
    .await;
    assert_eq!(last["transitions"][0]["to"], "closed", "{last:#}");
    assert_eq!(last["transitions"][0]["reason"], "forced_auto");
    assert_eq!(last["transitions"][1]["to"], "forced_open");
}

#[tokio::test]
async fn forcing_needs_an_admin_key_once_clients_need_keys() {
    let s = stack_with(MapEnv(vec![("FAREGATE_CLIENT_KEYS", "client-key")]), |c| c).await;
    let (status, body) = force(
        &s,
        "search_flights.duffel",
        json!({"state": "open"}),
        Some("client-key"),
    )
    .await;
    assert_eq!(status, 403);
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("FAREGATE_ADMIN_KEY")
    );
}

#[tokio::test]
async fn metrics_and_dashboard_access_follow_the_config() {
    let open = stack_with(keys(), |c| c).await;
    assert_eq!(get(&open, "/metrics", None).await.0, 200);
    let (status, page) = get(&open, "/dashboard", None).await;
    assert_eq!(status, 200);
    assert!(page.contains("<title>faregate"), "{page}");
    // A page of the gateway's own, never framed, sniffed or cached elsewhere.
    let res = open
        .http
        .get(open.url("/dashboard"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for (name, value) in [
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(
            res.headers().get(name).and_then(|v| v.to_str().ok()),
            Some(value),
            "{name}"
        );
    }
    // Its one script runs by its digest, and nothing else would: no 'unsafe-inline' scripts.
    let csp = res
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let script = page
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(script, _)| script);
    let digest = {
        use base64::Engine as _;
        use sha2::{Digest, Sha256};
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script.as_bytes()))
    };
    assert!(
        csp.starts_with("default-src 'none'")
            && csp.contains(&format!("script-src 'sha256-{digest}';"))
            && csp.contains("base-uri 'none'")
            && !script.is_empty(),
        "{csp}"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no external assets"
    );

    let closed = stack_with(keys(), |mut c| {
        c.telemetry.metrics_public = false;
        c
    })
    .await;
    assert_eq!(get(&closed, "/metrics", None).await.0, 401);
    assert_eq!(get(&closed, "/metrics", Some("client-key")).await.0, 200);
    assert_eq!(get(&closed, "/dashboard", None).await.0, 200);
}

/// Reads server-sent events until one of type `kind` arrives.
async fn next_event(res: &mut reqwest::Response, buf: &mut String, kind: &str) -> Value {
    loop {
        while let Some(cut) = buf.find("\n\n") {
            let block: String = buf.drain(..cut + 2).collect();
            let mut event = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = e.trim();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim());
                }
            }
            if event == kind {
                return serde_json::from_str(&data).unwrap_or_else(|e| panic!("{data}: {e}"));
            }
        }
        let chunk = res
            .chunk()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the stream ended"));
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn events_stream_transitions_to_authenticated_clients() {
    let s = stack_with(keys(), |c| c).await;
    assert_eq!(get(&s, "/v1/events", None).await.0, 401);
    let mut res = s
        .http
        .get(s.url("/v1/events"))
        .bearer_auth("client-key")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut buf = String::new();
    next_event(&mut res, &mut buf, "ready").await;
    force(
        &s,
        "search_hotels.duffel",
        json!({"state": "open"}),
        Some("admin-key"),
    )
    .await;
    let event = tokio::time::timeout(
        Duration::from_secs(1),
        next_event(&mut res, &mut buf, "transition"),
    )
    .await
    .unwrap_or_else(|_| panic!("no transition event within a second"));
    assert_eq!(event["key"], "search_hotels.duffel");
    assert_eq!(event["from"], "closed");
    assert_eq!(event["to"], "forced_open");
    assert_eq!(event["reason"], "forced_open");
    assert!(event["at"].as_str().is_some_and(|t| t.ends_with('Z')));
}

#[tokio::test]
async fn without_any_key_configured_the_demo_is_open() {
    let s = stack_with(MapEnv(vec![]), |c| c).await;
    assert_eq!(get(&s, "/v1/breakers", None).await.0, 200);
    assert_eq!(get(&s, "/v1/alerts", None).await.1, r#"{"alerts":[]}"#);
    assert_eq!(
        force(&s, "book_flight.duffel", json!({"state": "closed"}), None)
            .await
            .1["state"],
        "forced_closed"
    );
    // A key the route does not read is refused, not ignored: there is no timed force.
    let (status, refused) = force(
        &s,
        "search_flights.duffel",
        json!({"state": "open", "for": "10m"}),
        None,
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    let text = refused["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("unknown field \"for\"") && text.contains("until"),
        "{refused}"
    );
    let (_, breaker) = get(&s, "/v1/breakers/search_flights.duffel", None).await;
    assert!(
        !breaker.contains("forced_open"),
        "nothing was forced: {breaker}"
    );
}

/// Scrapes until `sample(scrape)` holds (queue figures are published about every 5 s).
async fn scrape_until_holds(s: &Stack, what: &str, sample: impl Fn(&str) -> bool) -> String {
    wait_until(Duration::from_secs(15), what, || async {
        let text = get(s, "/metrics", None).await.1;
        if sample(&text) { Ok(text) } else { Err(text) }
    })
    .await
}

/// The value of the sample named exactly `series` (name and labels) in `text`.
fn sample_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn the_queue_metrics_follow_jobs_from_submission_to_callback() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let s = Stack::builder(13)
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", "test-secret")]))
        .callbacks_to(MockServer::start().await)
        .config(one_provider_per_tool)
        .jobs()
        .start()
        .await;
    for (hook, status) in [("/hooks/faregate", 204), ("/hooks/broken", 500)] {
        Mock::given(method("POST"))
            .and(path(hook))
            .respond_with(ResponseTemplate::new(status))
            .mount(s.receiver())
            .await;
    }
    // The flight breaker forced open: submitted jobs are due, and wait.
    let forced = force(&s, "search_flights.duffel", json!({"state": "open"}), None).await;
    assert_eq!(forced.0, 200, "{forced:?}");
    let broken = s.callback_url().replace("/hooks/faregate", "/hooks/broken");
    let mut ids = Vec::new();
    for (days, callback) in [(40, s.callback_url()), (41, broken)] {
        let mut body = flights(days);
        body["callback_url"] = json!(callback);
        let (status, env) = s.submit("search_flights", body).await;
        assert_eq!(status, 202, "{env:#}");
        ids.push(env["job_id"].as_str().unwrap_or_default().to_string());
    }
    let queued = r#"faregate_jobs{state="queued",tool="search_flights"}"#;
    let oldest = r#"faregate_jobs_oldest_due_age_seconds{tool="search_flights"}"#;
    let text = scrape_until_holds(&s, "two queued jobs, the oldest due for a second", |t| {
        sample_value(t, queued) == Some(2.0) && sample_value(t, oldest).is_some_and(|a| a >= 1.0)
    })
    .await;
    assert_sample(
        &text,
        r#"faregate_jobs{state="running",tool="search_flights"} 0"#,
    );
    assert_sample(
        &text,
        r#"faregate_jobs{state="queued",tool="search_hotels"} 0"#,
    );
    assert_sample(
        &text,
        r#"faregate_jobs_oldest_due_age_seconds{tool="search_hotels"} 0"#,
    );

    // Back in service: both run, succeed and call back; one receiver is broken.
    force(&s, "search_flights.duffel", json!({"state": "auto"}), None).await;
    for id in &ids {
        s.wait_for_job(id, Duration::from_secs(10), |j| j["status"] == "succeeded")
            .await;
    }
    let latency =
        r#"faregate_job_latency_seconds_count{outcome="succeeded",tool="search_flights"}"#;
    let text = scrape_until_holds(&s, "the queue drained and both callbacks tried", |t| {
        sample_value(t, queued) == Some(0.0)
            && sample_value(t, oldest) == Some(0.0)
            && sample_value(t, r#"faregate_job_callbacks_total{outcome="retry"}"#)
                .is_some_and(|n| n >= 1.0)
    })
    .await;
    assert_sample(
        &text,
        r#"faregate_jobs{state="succeeded",tool="search_flights"} 2"#,
    );
    assert_sample(&text, r#"faregate_job_callbacks_total{outcome="sent"} 1"#);
    assert_eq!(sample_value(&text, latency), Some(2.0));
    // Submission to result: the first job alone waited out the forced breaker for a second.
    let waited = sample_value(
        &text,
        r#"faregate_job_latency_seconds_sum{outcome="succeeded",tool="search_flights"}"#,
    );
    assert!(waited.is_some_and(|s| s >= 1.0), "{waited:?}");
    assert_sample(
        &text,
        r#"faregate_job_latency_seconds_bucket{outcome="succeeded",tool="search_flights",le="86400"} 2"#,
    );
}
