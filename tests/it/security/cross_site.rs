//! With client keys off, a web page the user opens must not be able to make the browser call
//! tools on a gateway on the user's machine: what a browser sends to another site without
//! asking first (a form, `text/plain`, no content type, or anything marked cross-site) is
//! refused before a provider is reached.

use faregate_sim::RouteGroup;
use serde_json::json;

use crate::support::{MapEnv, Stack, in_days, send};

fn flights() -> String {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)}})
        .to_string()
}

/// The gateway's own call routes answer 403 or 415; `/mcp` is rmcp's, which refuses such a
/// request too (406 or 415, as the MCP transport specifies).
fn refused(path: &str, status: u16) -> bool {
    if path == "/mcp" {
        (400..500).contains(&status)
    } else {
        status == 403 || status == 415
    }
}

#[tokio::test]
async fn a_cross_site_simple_post_is_refused_with_auth_off() {
    let s = Stack::start(31).await;
    let openai = json!({"tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "search_flights", "arguments": json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)}).to_string()}}]})
    .to_string();
    let routes = [
        ("/v1/tools/search_flights/call", flights()),
        ("/v1/openai/tool_calls", openai),
        ("/mcp", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_flights", "arguments": {}}}).to_string()),
    ];
    for (path, body) in routes {
        // What an HTML form or a no-cors fetch on evil.example sends: no preflight.
        for content_type in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            let request = s
                .http
                .post(s.url(path))
                .header("content-type", content_type)
                .header("origin", "https://evil.example")
                .header("sec-fetch-site", "cross-site")
                .body(body.clone());
            let (status, _, answer) = send(request).await;
            assert!(
                refused(path, status),
                "{path} {content_type}: {status} {answer}"
            );
        }
        let untyped = s.http.post(s.url(path)).body(body.clone());
        let (status, _, answer) = send(untyped).await;
        assert!(
            refused(path, status),
            "{path} without a content type: {status} {answer}"
        );
    }
    // A JSON body marked cross-site (only sent after a preflight the gateway never grants) is
    // refused too.
    let marked = s
        .http
        .post(s.url("/v1/tools/search_flights/call"))
        .header("content-type", "application/json")
        .header("sec-fetch-site", "cross-site")
        .body(flights());
    let (status, _, answer) = send(marked).await;
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .is_some_and(|m| m.contains("cross-site requests are refused")),
        "{answer}"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelAirSearch),
        0,
        "nothing reached a provider"
    );
    assert_eq!(
        s.requests(RouteGroup::AmadeusFlights),
        0,
        "nothing reached a provider"
    );
    // A program's JSON call passes.
    let (status, envelope) = s
        .post(
            "/v1/tools/search_flights/call",
            serde_json::from_str(&flights()).unwrap_or_default(),
        )
        .await;
    assert_eq!(status, 200, "{envelope:#}");
    assert_eq!(envelope["status"], "ok", "{envelope:#}");
}

/// With keys off (and no admin key) forcing a breaker is open to local programs, not to a web
/// page: a form or a cross-site request forces nothing.
#[tokio::test]
async fn a_cross_site_force_is_refused_with_auth_off() {
    let s = Stack::start(33).await;
    let force = "/v1/breakers/search_flights.duffel/force";
    let state = || async {
        let (_, breaker) = s.get_json("/v1/breakers/search_flights.duffel").await;
        breaker["state"].clone()
    };
    for (content_type, site) in [
        ("text/plain", "cross-site"),
        ("application/x-www-form-urlencoded", "cross-site"),
        ("application/json", "cross-site"),
        ("text/plain", "none"),
    ] {
        let request = s
            .http
            .post(s.url(force))
            .header("content-type", content_type)
            .header("sec-fetch-site", site)
            .body(r#"{"state": "open"}"#);
        let (status, _, answer) = send(request).await;
        assert!(
            status == 403 || status == 415,
            "{content_type} {site}: {status} {answer}"
        );
        assert_eq!(state().await, "closed", "{content_type} {site}");
    }
    let (status, breaker) = s.post(force, json!({"state": "open"})).await;
    assert_eq!((status, &breaker["state"]), (200, &json!("forced_open")));
}

/// A reload reads no body, so a cross-site POST needs no content type to reach it: the mark a
/// browser sets is refused.
#[tokio::test]
async fn a_cross_site_reload_is_refused_with_auth_off() {
    let s = Stack::start(34).await;
    let request = s
        .http
        .post(s.url("/v1/admin/reload"))
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site");
    let (status, _, answer) = send(request).await;
    assert_eq!(status, 403, "{answer}");
    // From a program: past the check (this stack was not started from a file: 501).
    let (status, _, answer) = send(s.http.post(s.url("/v1/admin/reload"))).await;
    assert_eq!(status, 501, "{answer}");
}

/// Pausing a watch reads no body either: a form a web page posts, marked cross-site, must not
/// stop the user's watch (nor resume one they paused).
#[tokio::test]
async fn a_cross_site_watch_pause_is_refused_with_auth_off() {
    let s = Stack::builder(35).jobs().start().await;
    let flight =
        json!({"carrier_code": "BA", "flight_number": "117", "departure_date": in_days(1)});
    let (status, watch) = s
        .post(
            "/v1/watches",
            json!({"tool": "get_flight_status", "arguments": flight, "every": "1m"}),
        )
        .await;
    assert_eq!(status, 201, "{watch:#}");
    let id = watch["watch_id"].as_str().unwrap_or_default().to_string();
    for action in ["pause", "resume"] {
        let request = s
            .http
            .post(s.url(&format!("/v1/watches/{id}/{action}")))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", "https://evil.example")
            .header("sec-fetch-site", "cross-site");
        let (status, _, answer) = send(request).await;
        assert_eq!(status, 403, "{action}: {answer}");
    }
    let (_, now) = s.get_json(&format!("/v1/watches/{id}")).await;
    assert_eq!(now["state"], "active", "{now:#}");
    // From a program it pauses.
    let (status, paused) = s.post(&format!("/v1/watches/{id}/pause"), json!({})).await;
    assert_eq!(
        (status, &paused["state"]),
        (200, &json!("paused")),
        "{paused:#}"
    );
}

#[tokio::test]
async fn with_client_keys_a_plain_text_body_is_still_read() {
    // A browser cannot add the key without a preflight, so `curl -d` keeps working.
    let s = Stack::builder(32)
        .env(MapEnv(vec![("FAREGATE_CLIENT_KEYS", "k1")]))
        .start()
        .await;
    let request = s
        .http
        .post(s.url("/v1/tools/search_flights/call"))
        .bearer_auth("k1")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(flights());
    let (status, _, envelope) = send(request).await;
    assert_eq!(status, 200, "{envelope:#}");
    assert_eq!(envelope["status"], "ok", "{envelope:#}");
}
