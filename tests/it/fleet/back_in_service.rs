//! A back-in-service notice on two replicas of one PostgreSQL store: both look for the tool
//! every 500 ms and both see its breaker handed back, and the client's receiver gets exactly
//! one signed notice (one replica fires it, one sends it).
//!
//! The test needs `FAREGATE_TEST_POSTGRES_URL` (`.ci/run` sets it); without it the test says so
//! on stderr and checks nothing.

use std::time::Duration;

use faregate::jobs::{JobStore, Store};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{drop_schema, fleet_config, postgres_url, schema, wait_for_state};
use crate::jobs::{SECRET, verify_signature};
use crate::support::{self, MapEnv, TestGateway, send, wait_until};

const KEY: &str = "search_flights.duffel";

async fn notice_on(gateway: &TestGateway, id: &str) -> Value {
    let url = gateway.url(&format!("/v1/back-in-service/{id}"));
    send(reqwest::Client::new().get(url)).await.2
}

#[tokio::test]
async fn two_replicas_on_postgres_send_a_back_in_service_notice_once() {
    let Some(url) = postgres_url("back-in-service fleet test") else {
        return;
    };
    let schema = schema("fg_back");
    let sim = support::start_sim(45).await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let mut config = fleet_config(&sim.url(), |_| {});
    let hooks = format!("{}/hooks/", receiver.uri());
    config
        .auth
        .callback_allowlist
        .push(reqwest::Url::parse(&hooks).unwrap_or_else(|e| panic!("{e}")));
    let env = MapEnv(vec![("FAREGATE_CALLBACK_SECRET", SECRET)]);
    let replica = |config| {
        let (url, schema, env) = (&url, &schema, &env);
        async move {
            let store = Store::open_postgres(url, Some(schema))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
            TestGateway::start_in_fleet(config, env, store).await
        }
    };
    let a = replica(config.clone()).await;
    let b = replica(config).await;

    super::force(&a, KEY, "open").await;
    wait_for_state(&b, KEY, "forced_open").await;
    let body = json!({"tool": "search_flights",
                      "callback_url": format!("{}/hooks/faregate", receiver.uri())});
    let (status, _, created) = send(
        reqwest::Client::new()
            .post(a.url("/v1/back-in-service"))
            .json(&body),
    )
    .await;
    assert_eq!(status, 201, "{created:#}");
    assert_eq!(created["available_now"], false, "{created:#}");
    let id = created["notice_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Both replicas look a few times while the tool is held.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(notice_on(&b, &id).await["state"], "waiting");

    super::force(&b, KEY, "auto").await;
    wait_for_state(&a, KEY, "closed").await;
    wait_until(Duration::from_secs(20), "the notice sent", || async {
        let n = notice_on(&a, &id).await;
        if n["callback"] == "sent" {
            Ok(())
        } else {
            Err(format!("{n:#}"))
        }
    })
    .await;
    // More looks on both replicas: still one.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let received = receiver.received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1, "one notice, one callback, two replicas");
    let header = received[0]
        .headers
        .get("faregate-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    verify_signature(header, &received[0].body);
    let sent: Value = serde_json::from_slice(&received[0].body).unwrap_or_default();
    assert_eq!(sent["notice_id"], id.as_str(), "{sent:#}");
    drop((a, b));
    drop_schema(&url, &schema).await;
}
