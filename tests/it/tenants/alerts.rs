//! Alerts by scope: `GET /v1/alerts` shows a client an alert only when it is about a breaker
//! guarding one of its tools, naming only those breakers; the admin key sees every breaker.
//! Real breakers trip on the simulator's outages (a trip storm across two tools), on real time
//! with short breaker timings.

use std::time::Duration;

use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use super::post_as;
use crate::back_in_service::fast_breakers;
use crate::protocols::hotels_args;
use crate::support::{self, MapEnv, Stack, in_days, scope, send, wait_until};

/// `agency` may search flights only, `rival` hotels only, `tracker` flight status only.
async fn stack() -> Stack {
    let client =
        |name: &str, key: &str, tool: &str| support::client(name, key, scope(&[tool], false));
    Stack::builder(57)
        .env(MapEnv(vec![("FAREGATE_ADMIN_KEY", "admin-key")]))
        .config(move |mut c| {
            c.clients = vec![
                client("agency", "agency-key", "search_flights"),
                client("rival", "rival-key", "search_hotels"),
                client("tracker", "tracker-key", "get_flight_status"),
            ];
            fast_breakers(c)
        })
        .start()
        .await
}

async fn alerts(s: &Stack, key: &str) -> Value {
    let (status, _, body) = send(s.http.get(s.url("/v1/alerts")).bearer_auth(key)).await;
    assert_eq!(status, 200, "{body:#}");
    body
}

/// The storm alert in `body`, if it shows one.
fn storm(body: &Value) -> Option<&Value> {
    body["alerts"]
        .as_array()?
        .iter()
        .find(|a| a["alert"] == "breaker_trip_storm")
}

/// `tool`, called as `key`, until every one of its breakers is open.
async fn trip(s: &Stack, key: &str, tool: &str, arguments: Value) {
    wait_until(Duration::from_secs(20), &format!("{tool} down"), || {
        let arguments = arguments.clone();
        async move {
            let body = json!({ "arguments": arguments });
            post_as(s, key, &format!("/v1/tools/{tool}/call"), body).await;
            let (_, _, breakers) = send(s.http.get(s.url("/v1/breakers")).bearer_auth(key)).await;
            let open = breakers["breakers"]
                .as_array()
                .map(|b| b.iter().filter(|b| b["state"] == "open").count());
            if open == Some(2) {
                Ok(())
            } else {
                Err(format!("{breakers:#}"))
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_client_sees_an_alert_only_about_its_own_tools_breakers() {
    let s = stack().await;
    for group in [
        RouteGroup::DuffelAirSearch,
        RouteGroup::AmadeusFlights,
        RouteGroup::DuffelStays,
        RouteGroup::AmadeusHotels,
    ] {
        s.down(group);
    }
    let flights = json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)});
    trip(&s, "agency-key", "search_flights", flights).await;
    trip(&s, "rival-key", "search_hotels", hotels_args()).await;

    // Four trips within a minute: a storm, about all four breakers, for the admin.
    let everything = wait_until(Duration::from_secs(10), "the storm alert", || async {
        let body = alerts(&s, "admin-key").await;
        match storm(&body) {
            Some(a) if a["breakers"].as_array().map(Vec::len) == Some(4) => Ok(body.clone()),
            _ => Err(format!("{body:#}")),
        }
    })
    .await;
    let all = everything.to_string();
    assert!(
        all.contains("search_flights") && all.contains("search_hotels"),
        "{all}"
    );

    // Each client: the same storm, naming only its own tool's breakers.
    for (key, own, other) in [
        ("agency-key", "search_flights", "search_hotels"),
        ("rival-key", "search_hotels", "search_flights"),
    ] {
        let body = alerts(&s, key).await;
        let alert = storm(&body).unwrap_or_else(|| panic!("{key} sees the storm: {body:#}"));
        let named: Vec<&str> = alert["breakers"]
            .as_array()
            .map(|b| b.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(named.len(), 2, "{key}: {body:#}");
        assert!(named.iter().all(|k| k.starts_with(own)), "{key}: {body:#}");
        assert!(
            !body.to_string().contains(other),
            "{key} reads nothing of {other}'s breakers: {body:#}"
        );
    }
    // A client whose tool has no breaker in any alert sees none.
    assert_eq!(alerts(&s, "tracker-key").await, json!({"alerts": []}));
}
