//! PostgreSQL out of one replica's reach. A booking confirmed meanwhile: its caller is
//! answered with the booking, and once the store returns the ledger says `booked` on every
//! replica within seconds, long before reconciliation could (its settle time is 2 minutes
//! here, as by default); meanwhile the other replica reads the entry `pending`, never booked or
//! failed. And a replica told to stop: its loops waiting on the store's pool do not hold its
//! exit beyond the grace.
//!
//! Needs `FAREGATE_TEST_POSTGRES_URL`; without it the test says so on stderr and checks nothing.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use super::{drop_schema, fleet_config, postgres_url, replica, schema, server_of, through};
use crate::bookings::booking;
use crate::support::{self, CutProxy, TestGateway, in_days, send, wait_until};

/// The ledger entry of `key` as `gateway` lists it (`null` while it lists none).
async fn entry(gateway: &TestGateway, key: &str) -> Value {
    let (_, _, listed) = send(reqwest::Client::new().get(gateway.url("/v1/bookings"))).await;
    listed["bookings"]
        .as_array()
        .and_then(|b| b.iter().find(|e| e["idempotency_key"] == key))
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_booking_confirmed_while_the_store_is_away_is_in_the_ledger_once_it_returns() {
    let Some(url) = postgres_url("a_booking_confirmed_while_the_store_is_away") else {
        return;
    };
    let schema = schema("fg_fleet_booked");
    let sim = support::start_sim(37).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    let config = || fleet_config(&sim.url(), |_| {});
    assert_eq!(config().bookings.settle, Duration::from_secs(120));
    let booker = replica(&through(&url, proxy.addr), &schema, config()).await;
    let other = replica(&url, &schema, config()).await;
    let http = reqwest::Client::new();

    let search = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(25)}});
    let url_of = |g: &TestGateway, tool: &str| g.url(&format!("/v1/tools/{tool}/call"));
    let (_, _, found) = send(http.post(url_of(&booker, "search_flights")).json(&search)).await;
    let offer = found["data"]["offers"][0]["offer_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{found:#}"))
        .to_string();
    // The order is made at once; its answer takes 1.5 s, during which the store goes away.
    sim.sim.set_fault(
        RouteGroup::DuffelAirOrders,
        Fault {
            latency_after_ms: 1500,
            ..Fault::default()
        },
    );
    let request = http
        .post(url_of(&booker, "book_flight"))
        .json(&booking(&offer, "cut-1"));
    let booked = tokio::spawn(send(request));
    wait_until(Duration::from_secs(5), "the entry written", || async {
        let e = entry(&other, "cut-1").await;
        if e["state"] == "pending" {
            Ok(())
        } else {
            Err(format!("{e:#}"))
        }
    })
    .await;
    proxy.cut();
    let (status, _, answer) = booked.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (status, &answer["status"]),
        (200, &json!("ok")),
        "{answer:#}"
    );
    let order = answer["data"]["order_id"].clone();
    assert!(order.is_string(), "{answer:#}");

    // While the store is away from the booker, the other replica knows no outcome yet.
    let meanwhile = entry(&other, "cut-1").await;
    assert_eq!(meanwhile["state"], "pending", "{meanwhile:#}");

    // The store returns: the kept outcome lands, long before reconciliation would look.
    proxy.restore();
    let settled = wait_until(
        Duration::from_secs(15),
        "booked on the other replica",
        || async {
            let e = entry(&other, "cut-1").await;
            if e["state"] == "booked" {
                Ok(e)
            } else {
                Err(format!("{e:#}"))
            }
        },
    )
    .await;
    assert_eq!(settled["order_id"], order, "{settled:#}");
    drop(booker);
    drop(other);
    drop_schema(&url, &schema).await;
}

/// A replica told to stop while PostgreSQL is out of its reach (connections hang unanswered):
/// nothing holds its exit beyond the
/// grace (its dispatch waiting on the store's pool, handing its leases back), so it is gone
/// well before one 10-second pool wait would have ended.
#[tokio::test]
async fn a_replica_cut_off_from_the_store_stops_within_its_grace() {
    let Some(url) = postgres_url("a_replica_cut_off_from_the_store_stops_within_its_grace") else {
        return;
    };
    let schema = schema("fg_fleet_stop");
    let sim = support::start_sim(39).await;
    let proxy = CutProxy::start(server_of(&url).await).await;
    let mut config = fleet_config(&sim.url(), |_| {});
    config.server.shutdown_grace = Duration::from_secs(1);
    let mut cut_off = replica(&through(&url, proxy.addr), &schema, config).await;
    // Up and running first (its loops started, the shared pacers' table made).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    proxy.hang();
    // Let its loops meet the cut: the dispatcher's next claim now waits on the pool.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let asked = tokio::time::Instant::now();
    let stopped = cut_off.begin_shutdown();
    let ended = tokio::time::timeout(Duration::from_secs(8), stopped).await;
    assert!(
        ended.is_ok(),
        "still running {:?} after the shutdown began (grace 1 s)",
        asked.elapsed()
    );
    drop_schema(&url, &schema).await;
}

/// The jobs table locked (a long migration, an operator's `LOCK TABLE`): a connection is free
/// and `SELECT 1` answers at once, but submissions wait and go to the spool, so `/readyz` says
/// the store does not answer, and why.
#[tokio::test]
async fn readyz_says_the_store_does_not_answer_while_submissions_are_spooled() {
    use sqlx::Connection as _;
    let Some(url) = postgres_url("readyz_says_the_store_does_not_answer_while_spooled") else {
        return;
    };
    let schema = schema("fg_fleet_locked");
    let sim = support::start_sim(41).await;
    let gateway = replica(&url, &schema, fleet_config(&sim.url(), |_| {})).await;
    let mut lock = sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for statement in [
        format!("SET search_path TO {schema}"),
        "BEGIN".to_string(),
        "LOCK TABLE faregate_jobs IN ACCESS EXCLUSIVE MODE".to_string(),
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut lock)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let body = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(27)},
                      "mode": "background"});
    let submit = gateway.url("/v1/tools/search_flights/call");
    let (status, _, queued) = send(reqwest::Client::new().post(submit).json(&body)).await;
    assert_eq!(status, 202, "{queued:#}");
    let (_, _, ready) = send(reqwest::Client::new().get(gateway.url("/readyz"))).await;
    assert_eq!(ready["store"]["answers"], false, "{ready:#}");
    let message = ready["store"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("spooled"), "{ready:#}");
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut lock)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    drop(gateway);
    drop_schema(&url, &schema).await;
}
