//! Named clients, reloaded without a restart: a key removed from the configuration is refused
//! from the next request on, a call already running finishes, a new key works at once, and a
//! configuration with problems changes nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use faregate::clients::Scope;
use faregate::config::{ClientConfig, ClientKey, Config};
use faregate::http::ConfigSource;
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{
    MapEnv, TestGateway, config_for, in_days, requests, send, start_sim, wait_until,
};

const ADMIN: &str = "admin-key";

fn client(name: &str, key: &str) -> ClientConfig {
    crate::support::client(name, key, Scope::everything())
}

fn env() -> MapEnv {
    MapEnv(vec![("FAREGATE_ADMIN_KEY", ADMIN)])
}

async fn status_as(http: &reqwest::Client, gw: &TestGateway, key: &str) -> u16 {
    send(http.get(gw.url("/v1/tools")).bearer_auth(key)).await.0
}

async fn reload(http: &reqwest::Client, gw: &TestGateway) -> (u16, Value) {
    let (status, _, body) = send(http.post(gw.url("/v1/admin/reload")).bearer_auth(ADMIN)).await;
    (status, body)
}

/// The gateway on `config`, reloading from what the returned cell holds (the test edits it, as
/// an operator edits the file, between reloads).
async fn serve_reloading(config: Config) -> (TestGateway, Arc<Mutex<Config>>) {
    let on_disk = Arc::new(Mutex::new(config.clone()));
    let mut app = faregate::app::build(config, &env()).unwrap_or_else(|e| panic!("{e:?}"));
    let source = Arc::clone(&on_disk);
    app.state.config_source = Some(ConfigSource::new(
        move || Ok(source.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        env(),
    ));
    (TestGateway::serve(app).await, on_disk)
}

#[tokio::test]
async fn a_reloaded_key_set_takes_effect_without_a_restart() {
    let sim = start_sim(41).await;
    let mut config: Config = config_for(&sim.url());
    config.clients = vec![client("travel-app", "key-one")];
    // What the configuration file says now; the test edits it between reloads.
    let (gw, on_disk) = serve_reloading(config).await;
    let http = reqwest::Client::new();
    assert_eq!(status_as(&http, &gw, "key-one").await, 200);
    assert_eq!(status_as(&http, &gw, "key-two").await, 401);

    // A call of key-one is running (the provider takes 1.5 s) when key-one is removed.
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 1500,
            ..Fault::default()
        },
    );
    let running = {
        let request = http
            .post(gw.url("/v1/tools/search_flights/call"))
            .bearer_auth("key-one")
            .json(&json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)}}));
        tokio::spawn(send(request))
    };
    // The simulator counts a request when it arrives, before its latency.
    wait_until(
        Duration::from_secs(5),
        "the call to reach the provider",
        || async {
            match requests(&sim.sim, RouteGroup::DuffelAirSearch) {
                0 => Err("not yet".to_string()),
                _ => Ok(()),
            }
        },
    )
    .await;
    on_disk.lock().unwrap_or_else(|e| e.into_inner()).clients =
        vec![client("travel-app", "key-two")];
    let (status, summary) = reload(&http, &gw).await;
    assert_eq!(status, 200, "{summary:#}");
    assert_eq!(summary["clients"], json!(["travel-app"]), "{summary:#}");
    assert_eq!(
        status_as(&http, &gw, "key-one").await,
        401,
        "removed: refused at once"
    );
    assert_eq!(
        status_as(&http, &gw, "key-two").await,
        200,
        "added: accepted at once"
    );
    let (status, _, envelope) = running.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        status, 200,
        "the call admitted before the reload finished: {envelope:#}"
    );
    assert_eq!(envelope["status"], "ok", "{envelope:#}");

    // A reload with problems changes nothing, and says what is wrong.
    on_disk.lock().unwrap_or_else(|e| e.into_inner()).clients = vec![ClientConfig {
        key: ClientKey::Env("UNSET_CLIENT_KEY".into()),
        ..client("travel-app", "key-three")
    }];
    let (status, refused) = reload(&http, &gw).await;
    assert_eq!(status, 422, "{refused:#}");
    assert!(
        refused["problems"][0]
            .as_str()
            .is_some_and(|p| p.contains("UNSET_CLIENT_KEY") && p.contains("not set")),
        "{refused:#}"
    );
    assert_eq!(
        status_as(&http, &gw, "key-two").await,
        200,
        "the old set stays"
    );
    // Nor may a reload turn authentication off.
    on_disk.lock().unwrap_or_else(|e| e.into_inner()).clients = vec![];
    let (status, refused) = reload(&http, &gw).await;
    assert_eq!(status, 422, "{refused:#}");
    assert_eq!(status_as(&http, &gw, "anything").await, 401);
    // Only the admin key reloads.
    let (status, _, _) = send(http.post(gw.url("/v1/admin/reload")).bearer_auth("key-two")).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_gateway_not_started_from_a_file_says_reloading_is_not_possible() {
    let sim = start_sim(42).await;
    let gw = TestGateway::start(config_for(&sim.url()), &env()).await;
    let http = reqwest::Client::new();
    let (status, body) = reload(&http, &gw).await;
    assert_eq!(status, 501, "{body:#}");
}

/// An event stream opened with a key a reload takes away ends: it makes no next request that
/// could be refused. A stream of a key the reload keeps, unchanged, goes on.
#[tokio::test]
async fn a_stream_of_a_removed_key_ends_at_the_reload() {
    let sim = start_sim(43).await;
    let mut config: Config = config_for(&sim.url());
    config.clients = vec![client("alpha", "key-one"), client("beta", "key-two")];
    let (gw, on_disk) = serve_reloading(config).await;
    let http = reqwest::Client::new();
    let open = |key: &'static str| {
        let request = http.get(gw.url("/v1/events")).bearer_auth(key);
        async move {
            let mut res = request.send().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(res.status(), 200);
            let ready = res.chunk().await.unwrap_or_else(|e| panic!("{e}"));
            assert!(
                ready.is_some_and(|c| String::from_utf8_lossy(&c).contains("event: ready")),
                "{key}"
            );
            res
        }
    };
    let mut removed = open("key-one").await;
    let mut kept = open("key-two").await;

    on_disk.lock().unwrap_or_else(|e| e.into_inner()).clients = vec![client("beta", "key-two")];
    let (status, summary) = reload(&http, &gw).await;
    assert_eq!(status, 200, "{summary:#}");
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(_)) = removed.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the removed key's stream is still open");
    let going_on = tokio::time::timeout(Duration::from_millis(500), kept.chunk()).await;
    assert!(
        going_on.is_err(),
        "the kept key's stream ended or spoke: {going_on:?}"
    );
}
