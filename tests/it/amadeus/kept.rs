//! Amadeus offers kept for pricing outlive the gateway that found them: a second gateway on the
//! same store (another replica on PostgreSQL, or the next start on the same SQLite file) prices
//! an offer the first one handed out. Both gateways talk to one simulator, which prices only
//! offers it served. Without a store the second gateway cannot know the offer and says so.

use faregate::jobs::{JobStore, Store};
use serde_json::{Value, json};

use crate::support::{Stack, in_days, sqlite_store};

/// Flight search served by Amadeus alone, its base URL `sim` when given (the first gateway's
/// simulator).
fn amadeus_flights(
    sim: Option<String>,
) -> impl FnOnce(faregate::config::Config) -> faregate::config::Config + 'static {
    move |mut c| {
        for t in &mut c.tools {
            if t.name == "search_flights" {
                t.providers = vec!["amadeus".into()];
            }
        }
        if let (Some(url), Some(p)) = (sim, c.providers.get_mut("amadeus")) {
            p.base_url = reqwest::Url::parse(&url).unwrap_or_else(|e| panic!("{e}"));
        }
        c
    }
}

/// Searches on `first`, prices the cheapest offer on `second`; the pricing envelope.
async fn search_there_price_here(first: &Stack, second: &Stack) -> Value {
    let (status, found) = first
        .call(
            "search_flights",
            json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)}}),
        )
        .await;
    assert_eq!(status, 200, "{found:#}");
    assert_eq!(found["provider"], "amadeus", "{found:#}");
    let offer_id = found["data"]["offers"][0]["offer_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(offer_id.starts_with("amx_"), "{found:#}");
    let (_, priced) = second
        .call(
            "price_flight_offer",
            json!({"arguments": {"offer_id": offer_id}}),
        )
        .await;
    priced
}

async fn priced_on_another_gateway(store_a: Store, store_b: Store) {
    let a = Stack::builder(1)
        .config(amadeus_flights(None))
        .jobs_in(store_a)
        .start()
        .await;
    let b = Stack::builder(1)
        .config(amadeus_flights(Some(a.sim_url())))
        .jobs_in(store_b)
        .start()
        .await;
    let priced = search_there_price_here(&a, &b).await;
    assert_eq!(priced["status"], "ok", "{priced:#}");
    assert_eq!(priced["provider"], "amadeus", "{priced:#}");
}

#[tokio::test]
async fn an_offer_found_before_a_restart_is_priced_after_it_sqlite() {
    let (store, dir) = sqlite_store().await;
    let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
    let next_start = Store::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
    priced_on_another_gateway(store, next_start).await;
}

#[tokio::test]
async fn an_offer_found_on_one_replica_is_priced_on_another_postgres() {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: kept offers PostgreSQL run skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_kept_{}", uuid::Uuid::now_v7().simple());
    let open = || async {
        let store = Store::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
        store
    };
    let (a, b) = (open().await, open().await);
    priced_on_another_gateway(a, b).await;
}

#[tokio::test]
async fn without_a_store_another_gateway_cannot_know_the_offer() {
    let a = Stack::builder(1)
        .config(amadeus_flights(None))
        .start()
        .await;
    let b = Stack::builder(1)
        .config(amadeus_flights(Some(a.sim_url())))
        .start()
        .await;
    let priced = search_there_price_here(&a, &b).await;
    assert_eq!(priced["status"], "rejected", "{priced:#}");
}
