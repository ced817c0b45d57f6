//! A back-in-service notice on two replicas of one PostgreSQL store: both look for the tool
//! every 500 ms and both see its breaker handed back, and the client's receiver gets exactly
//! one signed notice (one replica fires it, one sends it). And the gateway's own probe in a
//! fleet: every failing search went to one replica, which is gone when the provider heals; with
//! nobody calling, the other replica asks the tool again with the search the first one shared,
//! and the notice fires; likewise a single node restarted on its SQLite file.
//!
//! The PostgreSQL tests need `FAREGATE_TEST_POSTGRES_URL` (`.ci/run` sets it); without it each
//! says so on stderr and checks nothing.

use std::time::Duration;

use faregate::config::Config;
use faregate::jobs::{JobStore, Store};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{drop_schema, fleet_config, postgres_url, schema, trip, wait_for_state};
use crate::back_in_service::fast_breakers;
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
    let id = notice_for_flights(&a, &receiver).await;
    // Both replicas look a few times while the tool is held.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(notice_on(&b, &id).await["state"], "waiting");

    super::force(&b, KEY, "auto").await;
    wait_for_state(&a, KEY, "closed").await;
    wait_sent(&a, &id).await;
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

/// The configuration of the self-probe tests: one provider per tool, fast breakers, and the
/// callback allowlist of `receiver`.
fn probing_config(sim_url: &str, receiver: &MockServer) -> Config {
    let mut config = fast_breakers(fleet_config(sim_url, |_| {}));
    let hooks = format!("{}/hooks/", receiver.uri());
    config
        .auth
        .callback_allowlist
        .push(reqwest::Url::parse(&hooks).unwrap_or_else(|e| panic!("{e}")));
    config
}

async fn receiving() -> MockServer {
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hooks/faregate"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    receiver
}

/// A waiting notice for flight search on `gateway`, to `receiver`; its id.
async fn notice_for_flights(gateway: &TestGateway, receiver: &MockServer) -> String {
    let body = json!({"tool": "search_flights",
                      "callback_url": format!("{}/hooks/faregate", receiver.uri())});
    let (status, _, created) = send(
        reqwest::Client::new()
            .post(gateway.url("/v1/back-in-service"))
            .json(&body),
    )
    .await;
    assert_eq!(status, 201, "{created:#}");
    assert_eq!(created["available_now"], false, "{created:#}");
    created["notice_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Waits until notice `id`, read on `gateway`, has its callback sent, with nobody calling.
async fn wait_sent(gateway: &TestGateway, id: &str) {
    wait_until(Duration::from_secs(20), "the notice sent", || async {
        let n = notice_on(gateway, id).await;
        if n["callback"] == "sent" {
            Ok(())
        } else {
            Err(format!("{n:#}"))
        }
    })
    .await;
}

fn outage() -> Fault {
    Fault {
        outage: true,
        ..Fault::default()
    }
}

#[tokio::test]
async fn a_replica_that_saw_no_failure_asks_the_tool_again_after_the_one_that_did_is_gone() {
    let Some(url) = postgres_url("back-in-service self-probe fleet test") else {
        return;
    };
    let schema = schema("fg_back_probe");
    let sim = support::start_sim(46).await;
    let receiver = receiving().await;
    let config = probing_config(&sim.url(), &receiver);
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
    let mut a = replica(config.clone()).await;
    let b = replica(config).await;

    // Every failing search goes to A; B only follows the open.
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    trip(&a).await;
    let id = notice_for_flights(&a, &receiver).await;
    // A few looks of A's loop (every 500 ms) while the tool is down, then A is gone, with
    // everything it kept in memory.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let _ = a.begin_shutdown().await;
    let searches_before = support::requests(&sim.sim, RouteGroup::DuffelAirSearch);

    // The provider heals; nobody calls. B's breaker goes half-open, and B asks the tool again
    // itself with A's search, so its breaker closes and the notice fires.
    sim.sim.clear_faults();
    wait_sent(&b, &id).await;
    assert!(
        support::requests(&sim.sim, RouteGroup::DuffelAirSearch) > searches_before,
        "B's own probe reached the provider"
    );
    let received = receiver.received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1, "one notice");
    drop(b);
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_single_node_restarted_on_its_sqlite_file_asks_the_tool_again_with_its_last_search() {
    let sim = support::start_sim(47).await;
    let receiver = receiving().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store_url = format!("sqlite://{}", dir.path().join("faregate.db").display());
    let env = MapEnv(vec![("FAREGATE_CALLBACK_SECRET", SECRET)]);
    let start = || async {
        let store = Store::open(&store_url)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        TestGateway::start_in_fleet(probing_config(&sim.url(), &receiver), &env, store).await
    };
    let mut gateway = start().await;
    sim.sim.set_fault(RouteGroup::DuffelAirSearch, outage());
    trip(&gateway).await;
    let id = notice_for_flights(&gateway, &receiver).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let _ = gateway.begin_shutdown().await;

    sim.sim.clear_faults();
    let restarted = start().await;
    wait_sent(&restarted, &id).await;
}
