//! Maintenance windows end to end, on real time: a window in force now holds its keys (no
//! provider request, the maintenance text, a job waiting to the window's end), and
//! `/v1/breakers` lists the windows in force and to come.

use std::time::Duration;

use chrono::{DateTime, Datelike, TimeDelta, Utc};
use faregate::maintenance::{When, Window};
use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use crate::support::{Stack, in_days};

fn window(tool: &str, provider: &str, when: When, reason: &str) -> Window {
    Window {
        tool: tool.into(),
        provider: provider.into(),
        when,
        reason: reason.into(),
    }
}

/// Flight search held at both providers from a minute ago for an hour (ending at `end`), and a
/// weekly window of `book_flight` to come.
async fn stack(end: DateTime<Utc>) -> Stack {
    let start = faregate::clock::utc_now() - TimeDelta::minutes(1);
    Stack::builder(31)
        .config(move |mut config| {
            config.maintenance = vec![
                window(
                    "search_flights",
                    "duffel",
                    When::Once { start, end },
                    "Duffel's announced API upgrade",
                ),
                window(
                    "search_flights",
                    "amadeus",
                    When::Once { start, end },
                    "Amadeus's announced API upgrade",
                ),
                window(
                    "book_flight",
                    "duffel",
                    When::Weekly {
                        day: (faregate::clock::utc_now() + TimeDelta::days(2)).weekday(),
                        at: chrono::NaiveTime::from_hms_opt(2, 0, 0).expect("a time"),
                        lasts: Duration::from_secs(7200),
                    },
                    "Duffel's weekly maintenance",
                ),
            ];
            config
        })
        .jobs()
        .start()
        .await
}

fn flights(days: i64) -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)})
}

fn end_in_an_hour() -> DateTime<Utc> {
    // Whole seconds, as /v1/breakers writes them.
    let end = faregate::clock::utc_now() + TimeDelta::hours(1);
    DateTime::from_timestamp(end.timestamp(), 0).expect("in range")
}

#[tokio::test]
async fn a_window_in_force_holds_its_keys_and_says_until_when() {
    let end = end_in_an_hour();
    let s = stack(end).await;
    let (status, env) = s
        .call("search_flights", json!({"arguments": flights(20)}))
        .await;
    assert_eq!(status, 200, "{env}");
    assert_eq!(env["status"], "unavailable", "{env}");
    assert_eq!(env["breaker"], "forced_open", "{env}");
    let content = env["content"].as_str().unwrap_or_default();
    let until = faregate::texts::call::utc_time(end);
    assert!(
        content.contains("scheduled maintenance") && content.contains(&until),
        "{content}"
    );
    assert_eq!(s.requests(RouteGroup::DuffelAirSearch), 0);
    assert_eq!(s.requests(RouteGroup::AmadeusFlights), 0);

    // A background job waits to the window's end, silently.
    let (status, accepted) = s
        .submit("search_flights", json!({"arguments": flights(21)}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["job_id"].as_str().unwrap_or_default().to_string();
    let job = s
        .wait_for_job(&id, Duration::from_secs(10), |j| {
            j["status"] == "retry_scheduled"
        })
        .await;
    let next: DateTime<Utc> = job["next_attempt_at"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a next attempt time: {job}"));
    assert!(next >= end - TimeDelta::seconds(1), "{next} before {end}");
    let error = job["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("scheduled maintenance"), "{job}");
    assert_eq!(s.requests(RouteGroup::DuffelAirSearch), 0);

    // The breaker API shows the windows in force and to come, and each held breaker.
    let (status, body) = s.get_json("/v1/breakers").await;
    assert_eq!(status, 200, "{body}");
    let windows = body["maintenance"].as_array().cloned().unwrap_or_default();
    let listed: Vec<(&str, bool)> = windows
        .iter()
        .map(|w| {
            (
                w["breaker"].as_str().unwrap_or_default(),
                w["active"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("search_flights/amadeus", true),
            ("search_flights/duffel", true),
            ("book_flight/duffel", false)
        ],
        "{body:#}"
    );
    assert_eq!(windows[2]["repeat"]["lasts_s"], 7200);
    let available = |tool: &str| {
        body["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["tool"] == tool))
            .map(|t| t["available"].clone())
    };
    assert_eq!(available("search_flights"), Some(json!(false)), "{body:#}");
    assert_eq!(available("book_flight"), Some(json!(true)), "{body:#}");
    let held = body["breakers"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["breaker"] == "search_flights/duffel"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        held["maintenance"],
        json!({"until": end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
               "reason": "Duffel's announced API upgrade"}),
        "{held:#}"
    );
}
