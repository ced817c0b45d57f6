//! Event streams held open, capped per client and in all: one client holding its streams
//! (`GET /v1/events`, `GET /v1/availability/events`, `GET /mcp`) is refused its next one while
//! other clients still open theirs, calls are answered and `/healthz` answers; a stream that
//! ends frees its slot.

use std::time::Duration;

use faregate::config::Config;
use serde_json::{Value, json};

use super::{CLIENT, CLIENT2, config, keys};
use crate::support::{TestGateway, send, wait_until};

/// `c` with at most `per_client` streams per client and `max_connections` connections.
fn streams(mut c: Config, per_client: u32, max_connections: u32) -> Config {
    c.limits.client_max_streams = Some(per_client);
    c.server.max_connections = max_connections;
    c
}

/// Opens `path` as an event stream with `key`; the answer, its body unread (the stream stays
/// open while it is kept).
async fn open(
    http: &reqwest::Client,
    gw: &TestGateway,
    path: &str,
    key: &str,
) -> reqwest::Response {
    http.get(gw.url(path))
        .bearer_auth(key.to_string())
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_client_at_its_stream_cap_is_refused_while_others_are_served() {
    let gw = TestGateway::start(streams(config(), 2, 1024), &keys()).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let first = open(&http, &gw, "/v1/events", CLIENT).await;
    let second = open(&http, &gw, "/v1/availability/events", CLIENT).await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );

    // Every stream route counts against the same cap.
    for path in ["/v1/events", "/v1/availability/events"] {
        let refused = open(&http, &gw, path, CLIENT).await;
        assert_eq!(refused.status(), 429, "{path}");
        let body: Value = refused.json().await.unwrap_or_default();
        assert_eq!(body["limit"], "client_max_streams", "{body}");
        assert_eq!(
            (body["open"].as_u64(), body["max"].as_u64()),
            (Some(2), Some(2))
        );
        let message = body["message"].as_str().unwrap_or("");
        assert!(
            message.contains("already holds 2 event streams"),
            "{message}"
        );
    }
    let (status, _, body) = send(
        http.get(gw.url("/mcp"))
            .bearer_auth(CLIENT)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", "any"),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body["error"]["code"], -31429,
        "a JSON-RPC error on /mcp: {body}"
    );

    // Another client still opens a stream; calls and probes are answered.
    let other = open(&http, &gw, "/v1/events", CLIENT2).await;
    assert_eq!(other.status(), 200);
    assert_eq!(send(http.get(gw.url("/healthz"))).await.0, 200);
    let call = http
        .post(gw.url("/v1/tools/search_flights/call"))
        .bearer_auth(CLIENT)
        .json(&json!({"arguments": {}}));
    assert_eq!(
        send(call).await.0,
        422,
        "the client's calls are not streams"
    );

    // A stream that ends frees its slot.
    drop(first);
    let reopened = wait_until(
        Duration::from_secs(10),
        "the closed stream's slot to be free",
        || async {
            let res = open(&http, &gw, "/v1/events", CLIENT).await;
            match res.status().as_u16() {
                200 => Ok(res),
                status => Err(format!("{status}")),
            }
        },
    )
    .await;
    drop((second, other, reopened));
}

#[tokio::test]
async fn streams_in_all_leave_half_the_connections_to_calls_and_probes() {
    // Eight connections: streams may take four, whichever clients hold them.
    let gw = TestGateway::start(streams(config(), 3, 8), &keys()).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut held = Vec::new();
    for key in [CLIENT, CLIENT, CLIENT, CLIENT2] {
        let res = open(&http, &gw, "/v1/events", key).await;
        assert_eq!(res.status(), 200, "{key}");
        held.push(res);
    }
    let refused = open(&http, &gw, "/v1/events", CLIENT2).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: Value = refused.json().await.unwrap_or_default();
    assert_eq!(body["limit"], "streams_in_all", "{body}");
    for _ in 0..3 {
        assert_eq!(send(http.get(gw.url("/healthz"))).await.0, 200);
        let call = http
            .post(gw.url("/v1/tools/search_flights/call"))
            .bearer_auth(CLIENT2)
            .json(&json!({"arguments": {}}));
        assert_eq!(send(call).await.0, 422);
    }
    drop(held);
}
