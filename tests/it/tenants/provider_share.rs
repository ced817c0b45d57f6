//! A client's share of a provider's rate-limit window: the simulator enforces 30 searches a
//! minute (announced on every answer), and two clients share that quota through the gateway.
//! The noisy client searches on and on; once Duffel announces the reserve (a fifth: 6 of 30)
//! or less left, its calls are refused as its own doing (429 naming the limit, until the
//! window resets), so the window's last requests stay for the quiet client, whose calls still
//! get Duffel's answers. Duffel never answers 429, and the breaker stays closed.
//!
//! Without the share, the noisy client spends the whole window, Duffel answers 429 with
//! `Retry-After`, the breaker pauses the tool for every client, and the quiet client gets
//! fallbacks until the reset.

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{MapEnv, Stack, in_days, one_provider_per_tool, send};

const NOISY: &str = "noisy-team-key";
const QUIET: &str = "quiet-team-key";

/// Searches the window allows.
const LIMIT: u32 = 30;

const ADMIN: &str = "share-admin-key";

/// The gateway with the noisy and the quiet client (and an admin key), `tweak`ed, in front of a
/// simulator whose Duffel flight search allows [`LIMIT`] searches a minute.
async fn two_clients_sharing_duffel(
    seed: u64,
    tweak: impl FnOnce(faregate::config::Config) -> faregate::config::Config + 'static,
) -> Stack {
    let s = Stack::builder(seed)
        .env(MapEnv(vec![
            ("FAREGATE_CLIENT_KEYS", "noisy-team-key, quiet-team-key"),
            ("FAREGATE_ADMIN_KEY", ADMIN),
        ]))
        .config(tweak)
        .start()
        .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            requests_per_minute: Some(LIMIT),
            ..Fault::default()
        },
    );
    s
}

/// A native `search_flights` call of the holder of `key`, `days` out; the status, the
/// `Retry-After` header and the envelope.
async fn search(s: &Stack, key: &str, days: i64) -> (u16, Option<String>, Value) {
    let request = s
        .http
        .post(s.url("/v1/tools/search_flights/call"))
        .bearer_auth(key)
        .json(&json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}}));
    let (status, headers, body) = send(request).await;
    let retry_after = headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, retry_after, body)
}

#[tokio::test]
async fn a_noisy_client_is_held_to_its_share_of_the_providers_window_and_the_quiet_one_is_answered()
{
    // A minute-long window: the test sends its 30-odd searches well within it.
    let s = two_clients_sharing_duffel(71, one_provider_per_tool).await;

    // The quiet client searches once; then the noisy one on and on, one search after another.
    let (status, _, body) = search(&s, QUIET, 3).await;
    assert_eq!((status, &body["status"]), (200, &json!("ok")), "{body}");
    let mut noisy = Vec::new();
    for n in 0..LIMIT as i64 + 5 {
        noisy.push(search(&s, NOISY, 4 + n).await);
    }

    // Answered by Duffel while more than 6 of 30 were left: the quiet client's 1 and the noisy
    // one's first 23 left 6. From there on the noisy client (23 of 24 requests, more than its
    // half) is refused, as its own doing, until the window resets.
    let answered = noisy
        .iter()
        .take_while(|(status, _, body)| *status == 200 && body["status"] == "ok")
        .count();
    assert_eq!(answered, 23, "{noisy:#?}");
    for (status, retry_after, body) in &noisy[answered..] {
        assert_eq!(*status, 429, "{body}");
        assert_eq!(body["status"], "rejected", "{body}");
        assert_eq!(body["limit"], "client_share_of_provider", "{body}");
        assert_eq!(body["provider"], Value::Null, "{body}");
        let wait = body["retry_after_s"].as_u64().unwrap_or_default();
        assert!((1..=60).contains(&wait), "until the reset: {body}");
        assert_eq!(retry_after.as_deref(), Some(wait.to_string().as_str()));
        let content = body["content"].as_str().unwrap_or_default();
        for says in [
            "search_flights was not called: this client sent 23 of the 24 requests this gateway sent to duffel",
            "more than its fair part (1/2: 2 clients are calling duffel)",
            "duffel has 6 of its 30 requests left ([limits] provider_reserve = 0.2)",
            "duffel's quota is shared by every client of this gateway",
            "Slow down",
            "when duffel's window resets",
        ] {
            assert!(content.contains(says), "{says:?} in {content}");
        }
    }

    // The window's last requests are the quiet client's: Duffel answers each.
    for days in 0..3 {
        let (status, _, body) = search(&s, QUIET, 60 + days).await;
        assert_eq!((status, &body["status"]), (200, &json!("ok")), "{body}");
        assert_eq!(body["provider"], "duffel", "{body}");
    }

    // Duffel was never driven into a 429, and the breaker stayed closed for everyone.
    let stats = s.sim.stats();
    let statuses = &stats.groups[&RouteGroup::DuffelAirSearch].statuses;
    assert_eq!(statuses.get(&429), None, "{statuses:?}");
    assert_eq!(statuses.values().sum::<u64>(), 1 + 23 + 3, "{statuses:?}");
    let (_, _, breakers) = send(s.http.get(s.url("/v1/breakers")).bearer_auth(QUIET)).await;
    let breaker = breakers["breakers"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|b| b["tool"] == "search_flights" && b["provider"] == "duffel")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(breaker["state"], "closed", "{breaker}");

    // Counted as a client's limit, one per refused call.
    let refused = noisy.len() - answered;
    let (_, _, metrics) = send(s.http.get(s.url("/metrics"))).await;
    let series =
        format!("faregate_client_limited_total{{limit=\"client_share_of_provider\"}} {refused}");
    let metrics = metrics.as_str().unwrap_or_default();
    assert!(metrics.lines().any(|l| l == series), "{series} in /metrics");
}

/// A client over its share of the first provider of a chain still reaches the next one, but
/// alone: a client under its share that asks the same search meanwhile gets the first
/// provider's answer, not the one the other client could only reach further down the chain.
#[tokio::test]
async fn a_client_over_its_share_of_one_provider_does_not_lead_another_clients_identical_search() {
    // Answered from memory too, so a remembered answer would show.
    let s = two_clients_sharing_duffel(73, |mut c| {
        if let Some(t) = c.tools.iter_mut().find(|t| t.name == "search_flights") {
            t.fresh_for = std::time::Duration::from_secs(60);
        }
        c
    })
    .await;
    let (status, _, body) = search(&s, QUIET, 3).await;
    assert_eq!(
        (status, &body["provider"]),
        (200, &json!("duffel")),
        "{body}"
    );
    for n in 0..23 {
        let (_, _, body) = search(&s, NOISY, 4 + n).await;
        assert_eq!(body["provider"], "duffel", "call {n}: {body}");
    }
    // The noisy client is over its share of Duffel's window now: its search goes to Amadeus,
    // slowly; the quiet client asks the same search meanwhile.
    s.sim.set_fault(
        RouteGroup::AmadeusFlights,
        Fault {
            latency_ms: 1_000,
            ..Fault::default()
        },
    );
    let noisy = tokio::spawn(send(
        s.http
            .post(s.url("/v1/tools/search_flights/call"))
            .bearer_auth(NOISY)
            .json(&json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(40)}})),
    ));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, _, quiet) = search(&s, QUIET, 40).await;
    assert_eq!(
        (status, &quiet["status"], &quiet["provider"]),
        (200, &json!("ok"), &json!("duffel")),
        "the quiet client's own answer, not the noisy one's Amadeus call: {quiet:#}"
    );
    let (_, _, noisy) = noisy.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(noisy["provider"], "amadeus", "{noisy:#}");
    // What the noisy client reached alone is not remembered for anyone.
    let (_, _, again) = search(&s, QUIET, 40).await;
    assert_eq!(again["provider"], "duffel", "{again:#}");
}

/// A client over its share of a provider whose breaker is open is told what every client is
/// told (the provider is not answering, back in so long), not that it should slow down because
/// "the tool itself is not failing".
#[tokio::test]
async fn over_its_share_of_a_provider_whose_breaker_is_open_a_client_hears_the_outage() {
    let s = two_clients_sharing_duffel(75, one_provider_per_tool).await;
    let (status, _, _) = search(&s, QUIET, 3).await;
    assert_eq!(status, 200);
    for n in 0..23 {
        search(&s, NOISY, 4 + n).await;
    }
    let (status, _, body) = search(&s, NOISY, 30).await;
    assert_eq!(
        (status, &body["limit"]),
        (429, &json!("client_share_of_provider")),
        "{body}"
    );
    let (status, _, forced) = send(
        s.http
            .post(s.url("/v1/breakers/search_flights.duffel/force"))
            .bearer_auth(ADMIN)
            .json(&json!({"state": "open"})),
    )
    .await;
    assert_eq!(status, 200, "{forced}");
    let (status, _, body) = search(&s, NOISY, 31).await;
    assert_eq!(
        (status, &body["status"], &body["breaker"]),
        (200, &json!("unavailable"), &json!("forced_open")),
        "{body:#}"
    );
    assert!(
        !body["content"]
            .as_str()
            .unwrap_or_default()
            .contains("not failing"),
        "{body:#}"
    );
}
