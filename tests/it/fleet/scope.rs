//! Breaker scope in a fleet: under scope `credential`, an open that flight search causes on one
//! replica holds every Duffel tool on the replicas that call Duffel with the same account, and
//! none on a replica (sharing the store) that calls it with another account.

use std::time::Duration;

use faregate::breaker::BreakerScope;
use faregate::config::Config;
use faregate::jobs::{JobStore, Store};
use faregate::secret::Secret;
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use super::{
    breaker, drop_schema, fleet_config, postgres_url, schema, search_flights, wait_for_state,
};
use crate::support::{self, MapEnv, TestGateway, requests, send, wait_until};

const ACCOUNT_ONE: &str = "duffel_test_fleet_account_one";
const ACCOUNT_TWO: &str = "duffel_test_fleet_account_two";

/// The URL key of the breaker every Duffel tool on `token`'s account shares.
fn account_key(token: &str) -> String {
    format!("*.duffel@{}", Secret::new(token).digest())
}

/// A replica on `url` (PostgreSQL, in `schema`) calling Duffel with `token`.
async fn replica_on(url: &str, schema: &str, config: Config, token: &'static str) -> TestGateway {
    let store = Store::open_postgres(url, Some(schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
    TestGateway::start_in_fleet(config, &MapEnv(vec![("DUFFEL_ACCESS_TOKEN", token)]), store).await
}

/// One hotel search on `gateway`; the envelope.
async fn search_hotels(gateway: &TestGateway) -> Value {
    let body = json!({"arguments": {"city_code": "PAR", "check_in_date": support::in_days(30),
                                    "check_out_date": support::in_days(32)}});
    let url = gateway.url("/v1/tools/search_hotels/call");
    send(reqwest::Client::new().post(url).json(&body)).await.2
}

#[tokio::test]
async fn a_shared_open_holds_the_replicas_on_the_same_account_only() {
    let Some(url) = postgres_url("a_shared_open_holds_the_replicas_on_the_same_account_only")
    else {
        return;
    };
    let schema = schema("fg_fleet_scope");
    let sim = support::start_sim(23).await;
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    let config = || {
        let mut config = fleet_config(&sim.url(), |_| {});
        config.breakers.scope = BreakerScope::Credential;
        let mut shared = config.breakers.shared_policy.to_builder();
        shared.jitter(0.0);
        config.breakers.shared_policy = shared.build().unwrap_or_else(|e| panic!("{e:?}"));
        config
    };
    let first = replica_on(&url, &schema, config(), ACCOUNT_ONE).await;
    let same = replica_on(&url, &schema, config(), ACCOUNT_ONE).await;
    let other = replica_on(&url, &schema, config(), ACCOUNT_TWO).await;
    let (one, two) = (account_key(ACCOUNT_ONE), account_key(ACCOUNT_TWO));

    // Flight search failures on the first replica open its account's breaker.
    wait_until(
        Duration::from_secs(10),
        "the first replica's account breaker to open",
        || async {
            search_flights(&first).await;
            let b = breaker(&first, &one).await;
            if b["state"] == "open" {
                Ok(())
            } else {
                Err(format!("{b:#}"))
            }
        },
    )
    .await;

    // The replica on the same account follows, and its hotel search fails fast.
    let followed = wait_for_state(&same, &one, "open").await;
    assert_eq!(followed["scope"], "credential", "{followed:#}");
    let asked = requests(&sim.sim, RouteGroup::DuffelStays);
    let held = search_hotels(&same).await;
    assert_eq!(held["status"], "unavailable", "{held:#}");
    assert_eq!(held["breaker"], "open", "{held:#}");
    assert_eq!(requests(&sim.sim, RouteGroup::DuffelStays), asked);

    // The replica on another account has a breaker of its own, closed, and is served.
    let (status, _, absent) =
        send(reqwest::Client::new().get(other.url(&format!("/v1/breakers/{one}")))).await;
    assert_eq!(
        status, 404,
        "no breaker of the first account there: {absent:#}"
    );
    assert_eq!(breaker(&other, &two).await["state"], "closed");
    let served = search_hotels(&other).await;
    assert_eq!(served["status"], "ok", "{served:#}");
    assert!(requests(&sim.sim, RouteGroup::DuffelStays) > asked);

    drop((first, same, other));
    drop_schema(&url, &schema).await;
}
