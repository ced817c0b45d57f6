//! Two replicas on one PostgreSQL schema, each reloading from files of its own (as `faregate
//! serve` does): a reload asked of one through `POST /v1/admin/reload` reaches the other, whose
//! fingerprint and tool list change, and `GET /v1/admin/replicas` shows them apart until they
//! run the same files again.

use std::time::Duration;

use faregate::http::ConfigSource;
use faregate::jobs::{JobStore, Store};
use serde_json::Value;

use super::{drop_schema, postgres_url, schema};
use crate::reload::{ADMIN, KEY, OnDisk, env};
use crate::support::{TestGateway, send, start_sim, wait_until};

/// A replica serving the files of `disk`, in `schema` on `url`, reloading from them.
async fn serve(disk: &OnDisk, url: &str, schema: &str) -> TestGateway {
    let path = disk.path("faregate.toml");
    let config = OnDisk::load(&path).unwrap_or_else(|e| panic!("{e:?}"));
    let store = Store::open_postgres(url, Some(schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    let source = ConfigSource::new(move || OnDisk::load(&path), env());
    TestGateway::start_in_fleet_from(config, &env(), store, Some(source)).await
}

async fn fingerprint(gw: &TestGateway) -> String {
    let (status, _, ready) = send(reqwest::Client::new().get(gw.url("/readyz"))).await;
    assert_eq!(status, 200, "{ready:#}");
    ready["config"]["fingerprint"]
        .as_str()
        .unwrap_or_else(|| panic!("{ready:#}"))
        .to_string()
}

async fn replicas(gw: &TestGateway) -> Value {
    let (status, _, body) = send(
        reqwest::Client::new()
            .get(gw.url("/v1/admin/replicas"))
            .bearer_auth(ADMIN),
    )
    .await;
    assert_eq!(status, 200, "{body:#}");
    body
}

/// Waits until `gw` lists two live replicas, agreeing or not as `agree` says.
async fn wait_for_listing(gw: &TestGateway, agree: bool) -> Value {
    wait_until(Duration::from_secs(15), "the replicas listing", || async {
        let listing = replicas(gw).await;
        let two = listing["replicas"].as_array().map_or(0, Vec::len) == 2;
        if two && listing["agree"] == agree {
            Ok(listing)
        } else {
            Err(format!("{listing:#}"))
        }
    })
    .await
}

async fn reload(gw: &TestGateway) -> Value {
    let (status, _, body) = send(
        reqwest::Client::new()
            .post(gw.url("/v1/admin/reload"))
            .bearer_auth(ADMIN),
    )
    .await;
    assert_eq!(status, 200, "{body:#}");
    body
}

async fn serves_flight_status(gw: &TestGateway) -> bool {
    let (status, _, body) = send(
        reqwest::Client::new()
            .get(gw.url("/v1/tools"))
            .bearer_auth(KEY),
    )
    .await;
    assert_eq!(status, 200, "{body:#}");
    body["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{body:#}"))
        .iter()
        .any(|t| t["name"] == "get_flight_status")
}

#[tokio::test]
async fn a_reload_asked_of_one_replica_reaches_the_other_and_the_listing_shows_them_apart_until_then()
 {
    let Some(url) = postgres_url(
        "a_reload_asked_of_one_replica_reaches_the_other_and_the_listing_shows_them_apart_until_then",
    ) else {
        return;
    };
    let schema = schema("fg_configs");
    let sim = start_sim(97).await;
    let (disk_a, disk_b) = (OnDisk::new(&sim.url()), OnDisk::new(&sim.url()));
    let a = serve(&disk_a, &url, &schema).await;
    let b = serve(&disk_b, &url, &schema).await;
    let first = fingerprint(&a).await;
    assert_eq!(first, fingerprint(&b).await, "the same files in two places");
    let listing = wait_for_listing(&b, true).await;
    assert_eq!(listing["shared"], true, "{listing:#}");

    // A's files change and A is reloaded through the route: B is asked too, but reads its own
    // files, which have not changed, so the two now run different configurations.
    disk_a.remove("tools/get_flight_status.toml");
    let answer = reload(&a).await;
    let second = answer["fingerprint"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_ne!(second, first, "{answer:#}");
    assert_eq!(answer["replicas_asked"], 1, "{answer:#}");
    let listing = wait_for_listing(&b, false).await;
    let b_name = super::replica_name(&b).await;
    assert_eq!(
        listing["configurations"][&first],
        serde_json::json!([b_name]),
        "B runs the first configuration: {listing:#}"
    );
    assert_eq!(
        listing["configurations"][&second],
        serde_json::json!([super::replica_name(&a).await]),
        "{listing:#}"
    );

    // The same change reaches B's files; B does not read them unasked.
    disk_b.remove("tools/get_flight_status.toml");
    assert!(serves_flight_status(&b).await);
    assert_eq!(fingerprint(&b).await, first);

    // A reload asked of A (whose files are as they were) reaches B.
    let answer = reload(&a).await;
    assert_eq!(answer["fingerprint"], second.as_str(), "{answer:#}");
    assert_eq!(answer["replicas_asked"], 1, "{answer:#}");
    wait_until(Duration::from_secs(15), "B to reload", || async {
        let now = fingerprint(&b).await;
        if now == second { Ok(()) } else { Err(now) }
    })
    .await;
    assert!(!serves_flight_status(&b).await, "B's tool list changed");
    let listing = wait_for_listing(&a, true).await;
    assert_eq!(
        listing["configurations"][&second].as_array().map(Vec::len),
        Some(2)
    );
    let metrics = reqwest::Client::new()
        .get(b.url("/metrics"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .text()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        metrics.contains(&format!(
            "faregate_config_info{{fingerprint=\"{second}\"}} 1"
        )),
        "{metrics}"
    );
    assert!(!metrics.contains(&first), "the old series went");
    drop(a);
    drop(b);
    drop_schema(&url, &schema).await;
}
