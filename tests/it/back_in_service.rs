//! Back-in-service notices end to end, on real time with short breaker timings: the simulator's
//! flight search goes down until the tool's breakers open, a client asks to be told when it is
//! back, nothing is sent while it is down, and once the provider heals and the gateway's own
//! probes close the breakers (nobody calls) exactly one signed notice reaches the client's
//! receiver; and a notice that could
//! never be sent is refused, and one client never sees or withdraws another's.

use std::time::Duration;

use faregate_sim::RouteGroup;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::jobs::{SECRET, verify_signature};
use crate::support::{MapEnv, Stack, in_days, wait_until};

/// Fast breakers: open after a few failures, half-open after 300 ms, probes every 100 ms.
pub(crate) fn fast_breakers(mut config: faregate::config::Config) -> faregate::config::Config {
    for t in &mut config.tools {
        let mut breaker = t.breaker.to_builder();
        breaker
            .open_for(Duration::from_millis(300))
            .open_for_max(Duration::from_millis(600))
            .probe_interval(Duration::from_millis(100))
            .ramp(Vec::new());
        t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
        t.timeout = Duration::from_secs(2);
        t.deadline = Duration::from_secs(3);
    }
    config
}

async fn stack() -> Stack {
    Stack::builder(41)
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", SECRET)]))
        .callbacks_to(MockServer::start().await)
        .config(fast_breakers)
        .jobs()
        .start()
        .await
}

fn search(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

/// Whether `/v1/breakers` says `tool` answers calls now.
async fn available(s: &Stack, tool: &str) -> bool {
    let (_, body) = s.get_json("/v1/breakers").await;
    body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["tool"] == tool))
        .and_then(|t| t["available"].as_bool())
        .unwrap_or_else(|| panic!("no availability for {tool}: {body:#}"))
}

async fn notice(s: &Stack, id: &str) -> Value {
    let (status, body) = s.get_json(&format!("/v1/back-in-service/{id}")).await;
    assert_eq!(status, 200, "{body:#}");
    body
}

#[tokio::test]
async fn a_notice_is_posted_once_signed_when_the_tool_answers_again_and_not_before() {
    let s = stack().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(204))
        .mount(s.receiver())
        .await;

    s.flights_down();
    let mut day = 10;
    wait_until(Duration::from_secs(20), "search_flights down", || {
        day += 1;
        let days = day;
        let s = &s;
        async move {
            s.call("search_flights", search(days)).await;
            if available(s, "search_flights").await {
                Err("still available".to_string())
            } else {
                Ok(())
            }
        }
    })
    .await;

    let (status, created) = s
        .post(
            "/v1/back-in-service",
            json!({"tool": "search_flights", "callback_url": s.callback_url(), "expires_in": "1h"}),
        )
        .await;
    assert_eq!(status, 201, "{created:#}");
    assert_eq!(created["state"], "waiting", "{created:#}");
    assert_eq!(created["available_now"], false, "{created:#}");
    let id = created["notice_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // Several looks of every replica's loop (each 500 ms) while the tool stays down.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!available(&s, "search_flights").await);
    assert_eq!(notice(&s, &id).await["state"], "waiting");
    let early = s.receiver().received_requests().await.unwrap_or_default();
    assert!(early.is_empty(), "nothing is sent while the tool is down");

    // The provider heals, and nobody calls the tool: the gateway asks it again itself (the
    // last search it could not answer) while a breaker is half-open, until they close.
    s.sim.clear_faults();
    let searches =
        || s.requests(RouteGroup::DuffelAirSearch) + s.requests(RouteGroup::AmadeusFlights);
    let searches_before = searches();
    wait_until(Duration::from_secs(20), "search_flights back", || async {
        if available(&s, "search_flights").await {
            Ok(())
        } else {
            Err("still down".to_string())
        }
    })
    .await;
    assert!(
        searches() > searches_before,
        "the gateway's own probe reached the provider"
    );
    let sent = wait_until(Duration::from_secs(20), "the notice sent", || async {
        let n = notice(&s, &id).await;
        if n["callback"] == "sent" {
            Ok(n)
        } else {
            Err(format!("{n:#}"))
        }
    })
    .await;
    assert_eq!(sent["state"], "fired", "{sent:#}");
    assert!(sent["fired_at"].is_string(), "{sent:#}");

    // More looks: a fired notice is done.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let received = s.receiver().received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1, "one notice, one callback");
    let header = received[0]
        .headers
        .get("faregate-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    verify_signature(header, &received[0].body);
    let body: Value = serde_json::from_slice(&received[0].body).unwrap_or_default();
    assert_eq!(body["notice_id"], id.as_str(), "{body:#}");
    assert_eq!(body["tool"], "search_flights", "{body:#}");
    assert_eq!(body["available_since"], sent["fired_at"], "{body:#}");
    assert!(
        body["news"]
            .as_str()
            .unwrap_or_default()
            .starts_with("search_flights is available again"),
        "{body:#}"
    );
    // Counted, as a job callback's delivery is: a receiver that refuses notices shows.
    let (_, _, metrics) = crate::support::send(s.http.get(s.url("/metrics"))).await;
    let text = metrics.as_str().unwrap_or_default();
    assert!(
        text.contains("faregate_notice_callbacks_total{outcome=\"sent\"} 1\n")
            && text.contains("faregate_notice_callbacks_total{outcome=\"retry\"} 0\n"),
        "{text}"
    );
}

/// Two clients on one gateway, with fast breakers: `agency` may search flights only, `rival`
/// hotels only.
async fn two_clients() -> Stack {
    let client = |name: &str, key: &str, tool: &str| {
        crate::support::client(name, key, crate::support::scope(&[tool], false))
    };
    Stack::builder(43)
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", SECRET)]))
        .callbacks_to(MockServer::start().await)
        .config(move |mut c| {
            c.clients = vec![
                client("agency", "agency-key", "search_flights"),
                client("rival", "rival-key", "search_hotels"),
            ];
            fast_breakers(c)
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

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn notices_are_refused_naming_the_fix_and_belong_to_their_client() {
    use reqwest::Method;
    let s = two_clients().await;
    let create = |body: Value| {
        as_client(
            &s,
            "agency-key",
            Method::POST,
            "/v1/back-in-service",
            Some(body),
        )
    };

    let (status, body) = create(
        json!({"tool": "search_flights", "callback_url": "https://example.com/hooks/faregate"}),
    )
    .await;
    assert_eq!(status, 422, "{body:#}");
    assert!(message(&body).contains("allowlist"), "{body:#}");
    let (status, body) = create(json!({"tool": "search_flights"})).await;
    assert_eq!(status, 422, "{body:#}");
    assert!(
        message(&body).contains("callback_url is required"),
        "{body:#}"
    );
    let (status, body) = create(
        json!({"tool": "search_flights", "callback_url": s.callback_url(), "expires_in": "soon"}),
    )
    .await;
    assert_eq!(status, 422, "{body:#}");
    assert!(message(&body).contains("expires_in"), "{body:#}");
    let (status, body) =
        create(json!({"tool": "search_hotels", "callback_url": s.callback_url()})).await;
    assert_eq!(status, 403, "{body:#}");
    let (status, body) =
        create(json!({"tool": "find_trains", "callback_url": s.callback_url()})).await;
    assert_eq!(status, 404, "{body:#}");

    let (status, created) =
        create(json!({"tool": "search_flights", "callback_url": s.callback_url()})).await;
    assert_eq!(status, 201, "{created:#}");
    assert_eq!(created["client"], "agency", "{created:#}");
    assert_eq!(created["available_now"], true, "{created:#}");
    let id = created["notice_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let one = format!("/v1/back-in-service/{id}");

    let (status, theirs) =
        as_client(&s, "rival-key", Method::GET, "/v1/back-in-service", None).await;
    assert_eq!(status, 200, "{theirs:#}");
    assert_eq!(theirs["notices"], json!([]), "{theirs:#}");
    let (status, body) = as_client(&s, "rival-key", Method::GET, &one, None).await;
    assert_eq!(status, 404, "{body:#}");
    let (status, body) = as_client(&s, "rival-key", Method::DELETE, &one, None).await;
    assert_eq!(status, 404, "{body:#}");

    let (status, mine) =
        as_client(&s, "agency-key", Method::GET, "/v1/back-in-service", None).await;
    assert_eq!(status, 200, "{mine:#}");
    assert_eq!(mine["notices"][0]["notice_id"], id.as_str(), "{mine:#}");
    let (status, _) = as_client(&s, "agency-key", Method::DELETE, &one, None).await;
    assert_eq!(status, 204);
    let (status, body) = as_client(&s, "agency-key", Method::GET, &one, None).await;
    assert_eq!(status, 404, "{body:#}");
    let (status, body) = as_client(
        &s,
        "rival-key",
        Method::GET,
        "/v1/back-in-service/nothing",
        None,
    )
    .await;
    assert_eq!(status, 404, "{body:#}");
}

/// Reads server-sent events until one of type `kind` arrives; its data.
async fn next_event(res: &mut reqwest::Response, buf: &mut String, kind: &str) -> Value {
    let read = async {
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
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .unwrap_or_else(|_| panic!("no {kind} event within 20 s; read so far: {buf}"))
}

async fn stream(s: &Stack, key: &str) -> reqwest::Response {
    let res = s
        .http
        .get(s.url("/v1/availability/events"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
    res
}

/// Calls `tool` as `key`'s client, with `arguments(day)` for a new day each time (no answer
/// from memory), until the gateway says the tool answers (`available`) or does not.
async fn call_until(
    s: &Stack,
    key: &str,
    tool: &str,
    arguments: impl Fn(i64) -> Value,
    available: bool,
) {
    let mut day = 10;
    wait_until(Duration::from_secs(20), "the tool's availability", || {
        day += 1;
        let body = json!({ "arguments": arguments(day) });
        async move {
            let (_, envelope) = as_client(
                s,
                key,
                reqwest::Method::POST,
                &format!("/v1/tools/{tool}/call"),
                Some(body),
            )
            .await;
            let (_, breakers) = as_client(s, key, reqwest::Method::GET, "/v1/breakers", None).await;
            let now = breakers["tools"]
                .as_array()
                .and_then(|t| t.iter().find(|t| t["tool"] == tool))
                .is_some_and(|t| t["available"] == available);
            if now {
                Ok(())
            } else {
                Err(format!("{envelope:#}"))
            }
        }
    })
    .await;
}

fn flights(day: i64) -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(day)})
}

fn hotels(day: i64) -> Value {
    json!({"city_code": "PAR", "check_in_date": in_days(day), "check_out_date": in_days(day + 2)})
}

#[tokio::test]
async fn the_availability_stream_tells_each_client_only_about_its_own_tools() {
    let s = two_clients().await;
    let (mut agency, mut rival) = (
        stream(&s, "agency-key").await,
        stream(&s, "rival-key").await,
    );
    let (mut agency_buf, mut rival_buf) = (String::new(), String::new());
    let ready = next_event(&mut agency, &mut agency_buf, "ready").await;
    assert_eq!(
        ready,
        json!({"tools": [{"tool": "search_flights", "available": true}]})
    );
    let ready = next_event(&mut rival, &mut rival_buf, "ready").await;
    assert_eq!(
        ready,
        json!({"tools": [{"tool": "search_hotels", "available": true}]})
    );

    // Flight search goes down first: only the agency hears of it.
    s.flights_down();
    call_until(&s, "agency-key", "search_flights", flights, false).await;
    let down = next_event(&mut agency, &mut agency_buf, "availability").await;
    assert_eq!(down["tool"], "search_flights", "{down:#}");
    assert_eq!(down["available"], false, "{down:#}");

    // Then hotel search: the rival's first news is its own tool, never the flights.
    s.down(faregate_sim::RouteGroup::DuffelStays);
    s.down(faregate_sim::RouteGroup::AmadeusHotels);
    call_until(&s, "rival-key", "search_hotels", hotels, false).await;
    let down = next_event(&mut rival, &mut rival_buf, "availability").await;
    assert_eq!(down["tool"], "search_hotels", "{down:#}");
    assert_eq!(down["available"], false, "{down:#}");

    // Healed, and probed back to closed: each hears its tool is back.
    s.sim.clear_faults();
    call_until(&s, "agency-key", "search_flights", flights, true).await;
    call_until(&s, "rival-key", "search_hotels", hotels, true).await;
    let back = next_event(&mut agency, &mut agency_buf, "availability").await;
    assert_eq!(
        (back["tool"].clone(), back["available"].clone()),
        (json!("search_flights"), json!(true)),
        "{back:#}"
    );
    let back = next_event(&mut rival, &mut rival_buf, "availability").await;
    assert_eq!(
        (back["tool"].clone(), back["available"].clone()),
        (json!("search_hotels"), json!(true)),
        "{back:#}"
    );
}
