//! Fleets: gateways sharing one store. `queue` runs 1,000 jobs on three replicas of one
//! PostgreSQL queue; `breakers` checks that the replicas act as one gateway's breakers (an open
//! propagates, half-open probes are leased fleet-wide, forced states survive restarts);
//! `opens` has every replica, one started after the opens too, tell the fleet's count of opens
//! and time `breaker_open_too_long` from the fleet's open; `degraded` takes PostgreSQL away from one replica and gives it back, and `spool` does so
//! while background jobs arrive and run; `rejoin` checks what such a replica writes on its
//! return against what the fleet did meanwhile; `lease` hands the probe lease to a replica with callers; `watches` restarts a watch's gateway and runs one
//! watch on two replicas; `scope` shares one breaker per provider account across replicas;
//! `back_in_service` sends one back-in-service notice from two replicas, and has a replica that saw
//! no failure ask the tool again with the read another, gone since, shared; `out_of_reach` records a
//! booking confirmed while PostgreSQL was out of its replica's reach once it returns, and stops
//! such a replica within its grace; `limits` holds a client's rate for the fleet; `configs` reloads
//! both replicas through one and shows them apart until they run the same files.
//!
//! The PostgreSQL tests need `FAREGATE_TEST_POSTGRES_URL` (`.ci/run` sets it); without it each
//! says so on stderr and checks nothing. Each uses a schema of its own, dropped at the end.

mod back_in_service;
mod breakers;
mod configs;
mod degraded;
mod lease;
mod limits;
mod opens;
mod out_of_reach;
mod queue;
mod rejoin;
mod scope;
mod spool;
mod watches;

use std::net::SocketAddr;
use std::time::Duration;

use faregate::config::Config;
use faregate::jobs::{JobStore, Store};
use serde_json::{Value, json};

use crate::support::{self, NoEnv, TestGateway, send, wait_until};

/// The breaker of flight search (one provider per tool), in URLs.
const FLIGHTS: &str = "search_flights.duffel";

/// The PostgreSQL URL, or `None` after saying on stderr that `test` did not run.
fn postgres_url(test: &str) -> Option<String> {
    let url = std::env::var("FAREGATE_TEST_POSTGRES_URL").ok();
    if url.is_none() {
        eprintln!("note: {test} skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)");
    }
    url
}

/// A fresh schema name.
fn schema(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// [`fleet_config`] with breakers that open for a second and close on one probe's success: a
/// half-open period comes within the test's time.
fn one_probe_config(sim_url: &str) -> Config {
    fleet_config(sim_url, |b| {
        b.open_for(Duration::from_secs(1))
            .open_for_max(Duration::from_secs(60))
            .half_open_probes(1)
            .half_open_successes(1);
    })
}

/// The configuration of a fleet test against the simulator at `sim_url`: one provider per tool
/// (one breaker to watch), no per-client limits, and `breaker` applied to every tool's policy.
fn fleet_config(sim_url: &str, breaker: impl Fn(&mut faregate::breaker::BreakerBuilder)) -> Config {
    let mut config = support::one_provider_per_tool(support::config_for(sim_url));
    config.limits.client_rate = None;
    config.limits.client_max_concurrent_calls = None;
    for tool in &mut config.tools {
        let mut builder = tool.breaker.to_builder();
        builder.jitter(0.0);
        breaker(&mut builder);
        tool.breaker = builder.build().unwrap_or_else(|e| panic!("{e:?}"));
    }
    config
}

/// A replica on `url` (PostgreSQL, in `schema`), as `faregate serve` starts one.
async fn replica(url: &str, schema: &str, config: Config) -> TestGateway {
    let store = Store::open_postgres(url, Some(schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    TestGateway::start_in_fleet(config, &NoEnv, store).await
}

/// `GET /v1/breakers/{key}` on `gateway`.
async fn breaker(gateway: &TestGateway, key: &str) -> Value {
    let url = gateway.url(&format!("/v1/breakers/{key}"));
    send(reqwest::Client::new().get(url)).await.2
}

/// Waits until `gateway`'s breaker `key` is in `state` (the published name); returns its JSON.
async fn wait_for_state(gateway: &TestGateway, key: &str, state: &str) -> Value {
    wait_until(Duration::from_secs(10), state, || async {
        let b = breaker(gateway, key).await;
        if b["state"] == state {
            Ok(b)
        } else {
            Err(format!("{b:#}"))
        }
    })
    .await
}

/// This replica's name in the fleet (from `/readyz`).
async fn replica_name(gateway: &TestGateway) -> String {
    let ready = send(reqwest::Client::new().get(gateway.url("/readyz")))
        .await
        .2;
    ready["fleet"]["replica"]
        .as_str()
        .unwrap_or_else(|| panic!("{ready:#}"))
        .to_string()
}

/// One flight search on `gateway`; the HTTP status and the envelope.
async fn search_flights(gateway: &TestGateway) -> (u16, Value) {
    let body = json!({"arguments": {"origin": "LHR", "destination": "JFK",
                                    "departure_date": support::in_days(30)}});
    let url = gateway.url("/v1/tools/search_flights/call");
    let (status, _, envelope) = send(reqwest::Client::new().post(url).json(&body)).await;
    (status, envelope)
}

/// `POST /v1/breakers/{key}/force` with `state` on `gateway`; the answer (a 200).
async fn force(gateway: &TestGateway, key: &str, state: &str) -> Value {
    let url = gateway.url(&format!("/v1/breakers/{key}/force"));
    let (status, _, body) = send(
        reqwest::Client::new()
            .post(url)
            .json(&json!({ "state": state })),
    )
    .await;
    assert_eq!(status, 200, "{body:#}");
    body
}

/// Epoch milliseconds of an RFC 3339 field.
fn epoch_ms(value: &Value) -> i64 {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a time: {value}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .timestamp_millis()
}

/// `GET /readyz` on `gateway`.
async fn ready(gateway: &TestGateway) -> Value {
    send(reqwest::Client::new().get(gateway.url("/readyz")))
        .await
        .2
}

/// Waits until `gateway` says whether the fleet's store answers it (`connected`).
async fn wait_connected(gateway: &TestGateway, connected: bool) {
    wait_until(
        Duration::from_secs(15),
        "the fleet connection state",
        || async {
            let r = ready(gateway).await;
            if r["fleet"]["connected"] == connected {
                Ok(())
            } else {
                Err(format!("{r:#}"))
            }
        },
    )
    .await;
}

/// Calls flight search on `gateway` until its breaker is open (the provider failing).
async fn trip(gateway: &TestGateway) {
    wait_until(Duration::from_secs(10), "the breaker to open", || async {
        search_flights(gateway).await;
        let b = breaker(gateway, FLIGHTS).await;
        if b["state"] == "open" {
            Ok(())
        } else {
            Err(format!("{b:#}"))
        }
    })
    .await;
}

/// `url` with its host and port replaced by `addr`.
pub(super) fn through(url: &str, addr: SocketAddr) -> String {
    let mut parsed = reqwest::Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    parsed
        .set_host(Some(&addr.ip().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    parsed
        .set_port(Some(addr.port()))
        .unwrap_or_else(|()| panic!("{url} takes no port"));
    parsed.to_string()
}

/// The address of the PostgreSQL server `url` names.
pub(super) async fn server_of(url: &str) -> SocketAddr {
    let parsed = reqwest::Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let host = parsed.host_str().unwrap_or("127.0.0.1").to_string();
    let port = parsed.port().unwrap_or(5432);
    tokio::net::lookup_host((host.as_str(), port))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .next()
        .unwrap_or_else(|| panic!("{host} has no address"))
}

/// `GET /metrics` on `gateway`, as text.
pub(super) async fn metrics(gateway: &TestGateway) -> String {
    let res = reqwest::Client::new()
        .get(gateway.url("/metrics"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    res.text().await.unwrap_or_default()
}

/// Drops `schema` and everything in it.
pub(crate) async fn drop_schema(url: &str, schema: &str) {
    let db = faregate::store::Db::open_postgres(url, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    db.execute(
        sqlx_safe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// A statement built at run time from a checked schema name.
fn sqlx_safe(sql: String) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(sql)
}
