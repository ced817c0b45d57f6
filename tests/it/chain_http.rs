//! A built-in tool whose chain goes on to an http provider: `get_flight_status` as shipped,
//! Amadeus first and then FlightAware AeroAPI (the simulator's flight tracker) through the
//! binding in `tools/get_flight_status.toml`. With Amadeus's flight-status routes down,
//! flightaware answers `ok` in the tool's own typed result, on a breaker of its own; with both
//! down, the fallback text names both; an answer that does not fit the tool's output is a
//! failure of that provider (the chain goes on), never a result with invented fields.

use std::time::Duration;

use faregate::tools::get_flight_status;
use faregate_sim::RouteGroup;
use serde_json::{Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Stack, StackBuilder, in_days, send, wait_until};

/// Short breaker timings for the flight-status tool: open after two failures in a row.
fn fast(mut config: faregate::config::Config) -> faregate::config::Config {
    for t in &mut config.tools {
        if t.name != "get_flight_status" {
            continue;
        }
        let mut breaker = t.breaker.to_builder();
        breaker
            .consecutive_failures(2)
            .open_for(Duration::from_secs(30))
            .open_for_max(Duration::from_secs(60))
            .ramp(Vec::new());
        t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
    }
    config
}

fn builder(seed: u64) -> StackBuilder {
    Stack::builder(seed).config(fast)
}

/// Today (UTC): the simulator's flight tracker lists each flight's departure today, in UTC.
fn today() -> String {
    faregate::clock::utc_now().format("%Y-%m-%d").to_string()
}

fn ba117() -> Value {
    json!({"carrier_code": "BA", "flight_number": "117", "departure_date": today()})
}

async fn call(s: &Stack, arguments: Value) -> Value {
    let (status, env) = s
        .call("get_flight_status", json!({ "arguments": arguments }))
        .await;
    assert_eq!(status, 200, "{env:#}");
    env
}

/// The state of each breaker of get_flight_status, by provider.
async fn breakers(s: &Stack) -> Vec<(String, String)> {
    let (_, body) = s.get_json("/v1/breakers").await;
    let mut out: Vec<(String, String)> = body["breakers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|b| b["tool"] == "get_flight_status")
        .map(|b| {
            let s = |k: &str| b[k].as_str().unwrap_or_default().to_string();
            (s("provider"), s("state"))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn with_amadeus_down_flightaware_answers_in_the_tools_own_result_on_its_own_breaker() {
    let s = builder(41).start().await;
    let healthy = call(&s, ba117()).await;
    assert_eq!(
        (healthy["status"].as_str(), healthy["provider"].as_str()),
        (Some("ok"), Some("amadeus")),
        "{healthy:#}"
    );

    s.down(RouteGroup::AmadeusStatus);
    let env = call(&s, ba117()).await;
    assert_eq!(env["status"], "ok", "{env:#}");
    assert_eq!(env["provider"], "flightaware", "{env:#}");
    // The same typed result: it reads back as the tool's output type, field for field.
    let typed: get_flight_status::Output =
        serde_json::from_value(env["data"].clone()).unwrap_or_else(|e| panic!("{e}: {env:#}"));
    let [flight] = typed.flights.as_slice() else {
        panic!("one flight today: {env:#}");
    };
    assert_eq!(
        (
            flight.carrier_code.as_str(),
            flight.flight_number.as_str(),
            flight.scheduled_departure_date.as_str()
        ),
        ("BA", "117", today().as_str())
    );
    let [from, to] = flight.points.as_slice() else {
        panic!("origin and destination: {env:#}");
    };
    assert_eq!(from.airport, "LHR", "odd numbers leave the airline's hub");
    let departure = from.departure.clone().unwrap_or_else(|| panic!("{env:#}"));
    assert!(
        departure
            .scheduled
            .as_deref()
            .is_some_and(|t| t.starts_with(&today())),
        "{env:#}"
    );
    assert!(
        departure.gate.is_some() && departure.terminal.is_some(),
        "{env:#}"
    );
    assert!(
        departure.delay_minutes.is_none_or(|m| m > 0),
        "a delay only when the latest time is later: {env:#}"
    );
    assert!(from.arrival.is_none() && to.departure.is_none(), "{env:#}");
    assert!(to.arrival.as_ref().is_some_and(|a| a.scheduled.is_some()));
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with(&format!("BA 117 on {}: departs LHR ", today())),
        "the tool's own text: {text}"
    );
    // Keys in the result that the tool's output does not have are never invented.
    assert_eq!(
        env["data"]["flights"][0]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "carrier_code".to_string(),
            "flight_number".to_string(),
            "points".to_string(),
            "scheduled_departure_date".to_string()
        ])
    );

    // A flight AeroAPI does not know is the provider's refusal, in its words.
    let unknown = call(
        &s,
        json!({"carrier_code": "ZZ", "flight_number": "1", "departure_date": today()}),
    )
    .await;
    assert_eq!(unknown["status"], "rejected", "{unknown:#}");
    assert!(
        unknown["content"]
            .as_str()
            .is_some_and(|t| t.contains("No flights found for ident ZZ1")),
        "{unknown:#}"
    );

    // A date AeroAPI lists no departure on is not "no such flight" (it lists days near today),
    // and Amadeus, which would know, is down: the outage's answer, naming Amadeus, never a
    // refusal a model would take as a wrong flight number.
    let later = call(
        &s,
        json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(5)}),
    )
    .await;
    assert_eq!(
        (later["status"].as_str(), later["provider"].as_str()),
        (Some("unavailable"), Some("amadeus")),
        "{later:#}"
    );
    assert!(
        later["content"]
            .as_str()
            .is_some_and(|t| t.contains("no reliable answer is coming from amadeus")
                && !t.contains("flightaware")),
        "{later:#}"
    );

    // Amadeus's breaker has opened on its own; flightaware's stays closed and keeps answering.
    wait_until(
        Duration::from_secs(5),
        "amadeus's breaker to open",
        || async {
            let states = breakers(&s).await;
            if states.contains(&("amadeus".into(), "open".into())) {
                Ok(())
            } else {
                Err(format!("{states:?}"))
            }
        },
    )
    .await;
    let asked = s.requests(RouteGroup::AmadeusStatus);
    let again = call(&s, ba117()).await;
    assert_eq!(
        (again["status"].as_str(), again["provider"].as_str()),
        (Some("ok"), Some("flightaware")),
        "{again:#}"
    );
    assert_eq!(
        s.requests(RouteGroup::AmadeusStatus),
        asked,
        "an open breaker sends nothing"
    );
    assert_eq!(
        breakers(&s).await,
        vec![
            ("amadeus".to_string(), "open".to_string()),
            ("flightaware".to_string(), "closed".to_string())
        ]
    );

    // Its calls are counted like any provider's.
    let (_, _, metrics) = send(s.http.get(s.url("/metrics"))).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    assert!(
        metrics.lines().any(|l| !l.starts_with('#')
            && l.contains("tool=\"get_flight_status\"")
            && l.contains("provider=\"flightaware\"")),
        "flightaware's series for get_flight_status"
    );
}

/// AeroAPI's delay is in seconds, which the binding cannot map; the delay its latest time
/// shows is told in minutes, in the result (where `delay_over` watches read it) and in the text.
#[tokio::test]
async fn a_delay_flightaware_shows_in_its_times_is_told_in_minutes() {
    let s = builder(41).start().await;
    s.down(RouteGroup::AmadeusStatus);
    // About one flight in four is delayed: the first such of American's, as the tracker lists it.
    let aeroapi = |number: u32| {
        let url = format!(
            "{}/aeroapi/flights/AA{number}",
            s.sim_url().trim_end_matches('/')
        );
        async move { send(reqwest::Client::new().get(url)).await.2 }
    };
    let mut delayed = None;
    for number in 700..800 {
        let listed = aeroapi(number).await;
        let seconds = listed["flights"][0]["departure_delay"]
            .as_i64()
            .unwrap_or(0);
        if seconds > 0 {
            delayed = Some((number, seconds / 60));
            break;
        }
    }
    let (number, minutes) = delayed.unwrap_or_else(|| panic!("no delayed AA flight in 700-799"));

    let env = call(
        &s,
        json!({"carrier_code": "AA", "flight_number": number.to_string(), "departure_date": today()}),
    )
    .await;
    assert_eq!(
        (env["status"].as_str(), env["provider"].as_str()),
        (Some("ok"), Some("flightaware")),
        "{env:#}"
    );
    let points = &env["data"]["flights"][0]["points"];
    assert_eq!(
        points[0]["departure"]["delay_minutes"],
        json!(minutes),
        "{env:#}"
    );
    assert_eq!(
        points[1]["arrival"]["delay_minutes"],
        json!(minutes),
        "{env:#}"
    );
    let text = env["content"].as_str().unwrap_or_default();
    let scheduled = points[0]["departure"]["scheduled"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(&format!("(delayed {minutes} min, scheduled {scheduled})")),
        "{text}"
    );
}

#[tokio::test]
async fn with_both_down_the_fallback_names_both_providers() {
    let s = builder(42).start().await;
    s.down(RouteGroup::AmadeusStatus);
    s.down(RouteGroup::FlightTracker);
    let env = call(&s, ba117()).await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    assert!(env.get("data").is_none_or(Value::is_null), "{env:#}");
    let text = env["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("The status of this flight could not be retrieved"),
        "{text}"
    );
    assert!(
        text.contains("no reliable answer is coming from amadeus and flightaware"),
        "{text}"
    );
}

/// An AeroAPI-shaped answer whose flight does not fit get_flight_status's output: its
/// operator code is a number.
async fn misfit_flightaware() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path_regex("^/aeroapi/flights/[A-Z0-9]+$"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"flights": [{
                "ident": "BA117",
                "operator_iata": 7,
                "flight_number": "117",
                "origin": {"code_iata": "LHR"},
                "destination": {"code_iata": "JFK"},
                "scheduled_out": format!("{}T09:00:00Z", today()),
                "scheduled_in": format!("{}T17:00:00Z", today())
            }]})),
        )
        .mount(&server)
        .await;
    server
}

fn flightaware_at(
    server: &MockServer,
) -> impl FnOnce(faregate::config::Config) -> faregate::config::Config + 'static {
    let url = format!("{}/aeroapi", server.uri());
    move |mut config| {
        if let Some(p) = config.providers.get_mut("flightaware") {
            p.base_url = reqwest::Url::parse(&url).unwrap_or_else(|e| panic!("{e}"));
        }
        config
    }
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_tools_output_fails_over_and_never_reaches_the_model() {
    let server = misfit_flightaware().await;
    // flightaware first: its answer does not map, so Amadeus answers.
    let s = builder(43)
        .config(flightaware_at(&server))
        .config(|mut config| {
            for t in &mut config.tools {
                if t.name == "get_flight_status" {
                    t.providers = vec!["flightaware".into(), "amadeus".into()];
                }
            }
            config
        })
        .start()
        .await;
    let env = call(&s, ba117()).await;
    assert_eq!(
        (env["status"].as_str(), env["provider"].as_str()),
        (Some("ok"), Some("amadeus")),
        "{env:#}"
    );
    assert!(
        !server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "flightaware was asked first"
    );

    // As shipped (flightaware last), with Amadeus down: the fallback text, nothing invented.
    let s = builder(44).config(flightaware_at(&server)).start().await;
    s.down(RouteGroup::AmadeusStatus);
    let env = call(&s, ba117()).await;
    assert_eq!(env["status"], "unavailable", "{env:#}");
    assert!(env.get("data").is_none_or(Value::is_null), "{env:#}");
    assert!(
        env["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("The status of this flight could not be retrieved")),
        "{env:#}"
    );
}

/// A background call on a date the backup lists nothing for, while the first provider is down,
/// is asked again later rather than ended: the backup lists only days near today, so "nothing
/// listed" may change, and the tool promises background calls are retried until answered.
#[tokio::test]
async fn a_background_call_the_backup_lists_nothing_for_waits_and_asks_again() {
    let s = builder(84).jobs().start().await;
    s.down(RouteGroup::AmadeusStatus);
    let (status, queued) = s
        .submit(
            "get_flight_status",
            json!({"arguments": {"carrier_code": "BA", "flight_number": "117",
                                 "departure_date": in_days(5)},
                   "mode": "background"}),
        )
        .await;
    assert_eq!(status, 202, "{queued:#}");
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["status"] == "retry_scheduled" || j["status"] == "dead"
        })
        .await;
    assert_eq!(job["status"], "retry_scheduled", "{job:#}");
    let said = job["last_error"].as_str().unwrap_or_default();
    // The outage of the provider that would know, never advice to check the flight.
    assert!(
        said.contains("amadeus did not answer")
            && said.contains("flightaware, the backup, lists nothing for this call")
            && !said.contains("check the airline code")
            && !said.contains(".."),
        "{job:#}"
    );
}
