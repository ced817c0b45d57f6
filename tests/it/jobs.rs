//! Background mode end to end: the gateway with a SQLite job store against the simulator, a
//! real HTTP client submitting jobs and polling them, and a wiremock receiver for callbacks.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{MapEnv, Stack, in_days};

pub(crate) const SECRET: &str = "test-callback-secret";

/// The stack with a SQLite job store, a callback receiver and a callback secret, and short
/// breaker and requeue timings (real sockets, so real time).
async fn stack() -> Stack {
    Stack::builder(11)
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", SECRET)]))
        .callbacks_to(MockServer::start().await)
        .config(|mut config| {
            for t in &mut config.tools {
                let mut breaker = t.breaker.to_builder();
                breaker
                    .open_for(Duration::from_millis(500))
                    .open_for_max(Duration::from_secs(1))
                    .probe_interval(Duration::from_millis(100))
                    .ramp(vec![faregate::breaker::RampStage {
                        share: 0.5,
                        duration: Duration::from_millis(200),
                    }]);
                t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
                t.timeout = Duration::from_secs(2);
                t.deadline = Duration::from_secs(3);
            }
            config
        })
        .jobs()
        .start()
        .await
}

fn flights(days: i64) -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)})
}

pub(crate) fn verify_signature(header: &str, body: &[u8]) {
    assert!(
        signed_with(SECRET, header, body),
        "HMAC-SHA256 of \"t.body\" with the callback secret: {header}"
    );
}

/// Whether `header` is the signature of `body` with `secret`, as a receiver checks it.
pub(crate) fn signed_with(secret: &str, header: &str, body: &[u8]) -> bool {
    let (t, v1) = header
        .split_once(",v1=")
        .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1)))
        .unwrap_or_else(|| panic!("signature header shape: {header}"));
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| panic!("key"));
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    v1 == expected
}

/// Forces every breaker of search_flights to `state`: "open" holds its jobs queued (the
/// dispatcher claims none for a tool that admits no calls), "auto" lets them run.
async fn force_search_flights(s: &Stack, state: &str) {
    let (_, listed) = s.get_json("/v1/breakers").await;
    for key in &crate::support::breaker_keys(&listed, "search_flights") {
        let (status, body) = s
            .post(
                &format!("/v1/breakers/{key}/force"),
                json!({"state": state}),
            )
            .await;
        assert_eq!(status, 200, "{key}: {body:#}");
    }
}

#[tokio::test]
async fn a_background_call_is_accepted_at_once_and_succeeds_with_a_signed_callback() {
    let s = stack().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(s.receiver())
        .await;
    let (status, env) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(21), "mode": "background", "call_id": "c-1",
                   "callback_url": s.callback_url()}),
        )
        .await;
    assert_eq!(status, 202, "{env:#}");
    assert_eq!(env["status"], "queued");
    let id = env["job_id"].as_str().unwrap_or_default().to_string();
    assert!(!id.is_empty());
    assert!(
        env["content"]
            .as_str()
            .is_some_and(|t| t.contains(&format!("GET /v1/jobs/{id} and the callback"))),
        "{env:#}"
    );
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "succeeded")
        .await;
    assert_eq!(job["attempts"], 1);
    assert_eq!(job["result"]["status"], "ok");
    assert_eq!(job["result"]["job_id"], id.as_str());
    assert_eq!(job["result"]["call_id"], "c-1");
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["callback"]["state"] == "sent"
        })
        .await;
    assert_eq!(job["callback"]["attempts"], 1);
    let received = s.receiver().received_requests().await.unwrap_or_default();
    let cb = &received[0];
    let header = cb
        .headers
        .get("faregate-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("signed"));
    verify_signature(header, &cb.body);
    let body: Value = serde_json::from_slice(&cb.body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body["job_id"], id.as_str());
    assert_eq!(body["status"], "ok");
}

/// Each callback is sent on a task of its own: two callbacks to a receiver that takes 5 s to
/// answer do not hold back a third to a quick one (nor, in a fleet, outlast the lease of the
/// callbacks claimed beside them, which another replica would then send again).
#[tokio::test]
async fn a_slow_receiver_does_not_hold_back_other_callbacks() {
    let s = stack().await;
    Mock::given(method("POST"))
        .and(path("/hooks/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(s.receiver())
        .await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(200))
        .mount(s.receiver())
        .await;
    let slow = format!("{}/hooks/slow", s.receiver().uri());
    for days in [31, 32] {
        let (status, env) = s
            .submit(
                "search_flights",
                json!({"arguments": flights(days), "mode": "background", "callback_url": slow}),
            )
            .await;
        assert_eq!(status, 202, "{env:#}");
    }
    let arrived = |path: &'static str| {
        let receiver = s.receiver();
        async move {
            receiver
                .received_requests()
                .await
                .unwrap_or_default()
                .iter()
                .filter(|r| r.url.path() == path)
                .count()
        }
    };
    let started = tokio::time::Instant::now();
    while arrived("/hooks/slow").await < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the two slow callbacks were not sent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Both slow receivers are still answering; a third job's callback goes out meanwhile.
    let submitted = tokio::time::Instant::now();
    let (status, env) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(33), "mode": "background", "callback_url": s.callback_url()}),
        )
        .await;
    assert_eq!(status, 202, "{env:#}");
    while arrived("/hooks/faregate").await < 1 {
        assert!(
            submitted.elapsed() < Duration::from_secs(4),
            "the quick receiver's callback waited for the slow ones"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_refused_callback_says_why_on_the_job_until_one_is_delivered() {
    let s = stack().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .mount(s.receiver())
        .await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(204))
        .mount(s.receiver())
        .await;
    let (status, env) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(23), "mode": "background",
                   "callback_url": s.callback_url()}),
        )
        .await;
    assert_eq!(status, 202, "{env:#}");
    let id = env["job_id"].as_str().unwrap_or_default().to_string();
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["callback"]["attempts"] == 1
        })
        .await;
    assert_eq!(
        (&job["callback"]["state"], &job["callback"]["last_error"]),
        (
            &json!("pending"),
            &json!("the receiver answered 500 Internal Server Error")
        ),
        "the client reads why its callback has not arrived, not only the server's log: {job:#}"
    );
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["callback"]["state"] == "sent"
        })
        .await;
    assert_eq!(job["callback"]["attempts"], 2);
    assert_eq!(
        job["callback"]["last_error"],
        Value::Null,
        "delivered the second time: {job:#}"
    );
}

#[tokio::test]
async fn an_outage_requeues_silently_and_the_job_succeeds_once_the_provider_heals() {
    let s = stack().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(200))
        .mount(s.receiver())
        .await;
    s.flights_down();
    let (status, env) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(22), "mode": "background", "callback_url": s.callback_url()}),
        )
        .await;
    assert_eq!(status, 202);
    let id = env["job_id"].as_str().unwrap_or_default().to_string();
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["status"] == "retry_scheduled" && j["attempts"].as_u64() >= Some(1)
        })
        .await;
    assert!(
        job["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("503"),
        "{job:#}"
    );
    assert!(job["next_attempt_at"].as_str().is_some());
    assert!(job["result"].is_null());
    assert!(
        s.receiver()
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "silent: no callback while requeued"
    );
    s.sim.clear_faults();
    let job = s
        .wait_for_job(&id, Duration::from_secs(20), |j| j["status"] == "succeeded")
        .await;
    assert_eq!(job["result"]["status"], "ok");
    assert_eq!(
        (&env["call_id"], &job["result"]["call_id"]),
        (&json!(id), &json!(id)),
        "a call sent without an id is known by its job's id, queued and answered"
    );
    s.wait_for_job(&id, Duration::from_secs(10), |j| {
        j["callback"]["state"] == "sent"
    })
    .await;
    assert_eq!(
        s.receiver()
            .received_requests()
            .await
            .unwrap_or_default()
            .len(),
        1,
        "one callback, at the end"
    );
}

#[tokio::test]
async fn a_refusal_the_model_must_fix_ends_the_job_dead_with_its_error() {
    let s = stack().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(s.receiver())
        .await;
    let (_, env) = s
        .submit(
            "price_flight_offer",
            json!({"arguments": {"offer_id": "off_doesnotexist"}, "mode": "background",
                   "callback_url": s.callback_url()}),
        )
        .await;
    let id = env["job_id"].as_str().unwrap_or_default().to_string();
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "dead")
        .await;
    assert!(
        job["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("refused"),
        "{job:#}"
    );
    assert_eq!(job["result"]["status"], "rejected");
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["callback"]["state"] == "sent"
        })
        .await;
    assert_eq!(job["status"], "dead");
}

#[tokio::test]
async fn an_idempotency_key_returns_the_existing_job() {
    let s = stack().await;
    // Held queued while the key is sent again: a job that has ended answers otherwise (below).
    force_search_flights(&s, "open").await;
    let body =
        json!({"arguments": flights(23), "mode": "background", "idempotency_key": "price-watch-7"});
    let (a, first) = s.submit("search_flights", body.clone()).await;
    let (b, second) = s.submit("search_flights", body).await;
    assert_eq!((a, b), (202, 202));
    assert_eq!(first["job_id"], second["job_id"]);
    assert!(
        second["content"]
            .as_str()
            .unwrap_or_default()
            .contains("already used")
    );
    let (_, list) = s.get_json("/v1/jobs?tool=search_flights").await;
    assert_eq!(list["jobs"].as_array().map(Vec::len), Some(1));
    // Once the job has succeeded, the key is answered with its result, not "queued".
    force_search_flights(&s, "auto").await;
    let id = first["job_id"].as_str().unwrap_or_default().to_string();
    let done = s
        .wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "succeeded")
        .await;
    let (status, replayed) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(23), "mode": "background", "idempotency_key": "price-watch-7", "call_id": "again-1"}),
        )
        .await;
    assert_eq!(
        (status, &replayed["status"]),
        (200, &json!("ok")),
        "{replayed:#}"
    );
    assert_eq!(replayed["job_id"], id.as_str());
    assert_eq!(
        replayed["call_id"], "again-1",
        "the caller's id for this call"
    );
    assert_eq!(replayed["data"], done["result"]["data"]);
}

#[tokio::test]
async fn an_idempotency_key_used_with_other_arguments_is_refused() {
    let s = stack().await;
    // Held queued, so that the same request sent again is answered 202 with its job.
    force_search_flights(&s, "open").await;
    let with = |arguments: Value| json!({"arguments": arguments, "mode": "background", "idempotency_key": "trip-9"});
    let (_, first) = s.submit("search_flights", with(flights(23))).await;
    let date = flights(23)["departure_date"].clone();
    let reordered = json!({"departure_date": date, "destination": "LHR", "origin": "JFK"});
    let (status, same) = s.submit("search_flights", with(reordered)).await;
    assert_eq!(
        (status, &same["job_id"]),
        (202, &first["job_id"]),
        "the same arguments in another key order are the same request"
    );
    let (status, other) = s.submit("search_flights", with(flights(24))).await;
    assert_eq!(status, 422, "{other:#}");
    assert_eq!(other["status"], "invalid_arguments");
    let content = other["content"].as_str().unwrap_or_default();
    let first_id = first["job_id"].as_str().unwrap_or_default();
    assert!(
        content.contains("other arguments") && content.contains(first_id),
        "{content}"
    );
    let (_, list) = s.get_json("/v1/jobs?tool=search_flights").await;
    assert_eq!(list["jobs"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn bad_background_calls_are_refused_before_they_are_stored() {
    let s = stack().await;
    let (status, env) = s
        .submit(
            "search_flights",
            json!({"arguments": {"origin": "jfk"}, "mode": "background"}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(env["status"], "invalid_arguments");
    assert!(
        env["call_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("fg_")),
        "a refused call without an id gets one, as an interactive call does: {env:#}"
    );
    assert!(
        env["content"]
            .as_str()
            .unwrap_or_default()
            .contains("destination: is required")
    );
    let (status, body) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(24), "mode": "background",
                   "callback_url": "https://attacker.example.net/hooks/faregate"}),
        )
        .await;
    assert_eq!(
        status, 422,
        "a callback URL is validated like the arguments"
    );
    assert_eq!(body["field"], "callback_url");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not on the gateway's callback allowlist")
    );
    assert_eq!(s.get_json("/v1/jobs?status=sleeping").await.0, 400);
    // A mistyped tool filter is not an empty list.
    let (status, body) = s.get_json("/v1/jobs?tool=search_flight").await;
    assert_eq!(status, 400, "{body:#}");
    assert!(
        body["message"].as_str().unwrap_or_default().starts_with(
            "no tool \"search_flight\" is served (did you mean search_flights?) and no job of it is stored; filter by one of: search_flights,"
        ),
        "{body:#}"
    );
    let (status, body) = s.get_json("/v1/jobs?tool=book_hotel").await;
    assert_eq!(
        (status, &body["jobs"]),
        (200, &json!([])),
        "a served tool with no jobs is an empty list"
    );
    assert_eq!(s.get_json("/v1/jobs/no-such-job").await.0, 404);
    // A query string axum cannot read is a JSON 400 that names what each list route takes.
    for (path, accepted) in [
        (
            "/v1/jobs?limit=lots",
            "the parameters are status, tool, origin (calls, watch_runs or all) and limit",
        ),
        ("/v1/bookings?limit=lots", "the one parameter is limit"),
        // A number out of range is refused, not read as another.
        ("/v1/jobs?limit=0", "limit must be 1 to 1000 (got 0)"),
        (
            "/v1/bookings?limit=5000",
            "limit must be 1 to 1000 (got 5000)",
        ),
        ("/v1/tools?available=maybe", "the parameters are format ("),
        // A list route without filters says so, rather than answering the whole list.
        (
            "/v1/watches?state=paused",
            "GET /v1/watches takes no query parameters, and filters nothing (found \"state\")",
        ),
        (
            "/v1/breakers?tool=search_flights",
            "GET /v1/breakers takes no query parameters",
        ),
        (
            "/v1/alerts?active=1",
            "GET /v1/alerts takes no query parameters",
        ),
        ("/v1/back-in-service?foo=1&bar", "(found \"foo\", \"bar\")"),
    ] {
        let (status, body) = s.get_json(path).await;
        assert_eq!(status, 400, "{path}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(accepted), "{path}: {message}");
    }
}

#[tokio::test]
async fn a_due_job_whose_tool_admits_no_calls_says_it_is_waiting_not_stuck() {
    let s = stack().await;
    force_search_flights(&s, "open").await;
    let (_, queued) = s
        .submit(
            "search_flights",
            json!({"arguments": flights(25), "mode": "background"}),
        )
        .await;
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();
    let (_, job) = s.get_json(&format!("/v1/jobs/{id}")).await;
    assert_eq!(job["status"], "queued", "{job:#}");
    let waiting = job["waiting"].as_str().unwrap_or_default();
    assert!(
        waiting.starts_with("due, and waiting: search_flights admits no calls now"),
        "{job:#}"
    );
    force_search_flights(&s, "auto").await;
    let done = s
        .wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "succeeded")
        .await;
    assert!(done.get("waiting").is_none(), "{done:#}");
}
