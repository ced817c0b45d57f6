//! The booking ledger's cost on a booking call, for `BENCHMARKS.md`.
//!
//! `cargo run --release --example ledger_cost -- [BOOKINGS]` starts the provider simulator and
//! two gateways in this process, on loopback: one without a store (no ledger: the call goes
//! straight to the provider) and one with a SQLite store, whose ledger writes a `pending` entry
//! before the provider is asked and its outcome after (one `INSERT` and one `UPDATE` per
//! booking). With `FAREGATE_TEST_POSTGRES_URL` set, a third gateway keeps its ledger in
//! PostgreSQL (a fresh schema). It then books `BOOKINGS` offers (default 300) through each, one
//! at a time and interleaved (a booking on each gateway in turn, so that all see the same
//! machine), and books each one again with the same key on the gateways with a ledger (answered
//! from the ledger, no provider request). Printed: p50 and p99 of each, in milliseconds, and the
//! ratio to the booking without a ledger measured in the same run.

use std::path::Path;
use std::time::Duration;

use faregate::config::{self, Config, EMBEDDED_CONFIG, EmbeddedFiles};
use faregate::providers::Env;
use serde_json::{Value, json};
use tokio::time::Instant;

struct NoEnv;

impl Env for NoEnv {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }
}

fn config(base_url: &str) -> Result<Config, Box<dyn std::error::Error>> {
    let (mut config, _) = config::load(
        &EmbeddedFiles,
        Path::new(EMBEDDED_CONFIG),
        &faregate::tools::names(),
    )
    .map_err(|e| format!("embedded config: {e}"))?;
    let url = reqwest::Url::parse(base_url)?;
    for p in config.providers.values_mut() {
        p.base_url = url.clone();
    }
    for t in &mut config.tools {
        t.providers
            .retain(|p| p == "duffel" || t.name == "get_flight_status");
    }
    // One client books hundreds of times in seconds: the per-client limits are not measured.
    config.limits.client_rate = None;
    config.limits.client_max_concurrent_calls = None;
    Ok(config)
}

/// Starts a gateway on loopback; with `store`, its ledger lives there.
async fn gateway(
    config: Config,
    store: Option<faregate::jobs::Store>,
) -> Result<String, Box<dyn std::error::Error>> {
    let mut app = faregate::app::build(config, &NoEnv).map_err(|e| format!("{e:?}"))?;
    if let Some(store) = store {
        faregate::app::attach_jobs(&mut app, store, &NoEnv);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(faregate::app::run(
        listener,
        app,
        std::future::pending::<()>(),
    ));
    Ok(url)
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> Result<Value, reqwest::Error> {
    http.post(url).json(body).send().await?.json().await
}

/// The p-th percentile (0..=100) of `samples`, in milliseconds.
fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    let i = rank.clamp(1, samples.len()) - 1;
    samples[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bookings: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(300);
    let sim = faregate_sim::Simulator::new(7);
    let sim_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let sim_url = format!("http://{}", sim_listener.local_addr()?);
    tokio::spawn(faregate_sim::serve(
        sim_listener,
        sim.clone(),
        std::future::pending::<()>(),
    ));

    let dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let mut gateways = vec![
        ("no ledger", gateway(config(&sim_url)?, None).await?),
        (
            "ledger in SQLite",
            gateway(
                config(&sim_url)?,
                Some(faregate::jobs::Store::open(&sqlite).await?),
            )
            .await?,
        ),
    ];
    if let Ok(pg) = std::env::var("FAREGATE_TEST_POSTGRES_URL") {
        let schema = format!("fg_bench_{}", uuid::Uuid::now_v7().simple());
        let store = faregate::jobs::Store::open_postgres(&pg, Some(&schema)).await?;
        faregate::jobs::JobStore::migrate(&store).await?;
        gateways.push((
            "ledger in PostgreSQL",
            gateway(config(&sim_url)?, Some(store)).await?,
        ));
    }

    let http = reqwest::Client::new();
    let search = json!({"arguments": {"origin": "JFK", "destination": "LHR",
        "departure_date": (faregate::call::Gateway::today() + chrono::Duration::days(30)).format("%Y-%m-%d").to_string()}});
    let traveller = json!({"given_name": "Ana", "family_name": "Garcia", "born_on": "1990-02-15",
        "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"});
    let mut booked: Vec<Vec<Duration>> = vec![Vec::new(); gateways.len()];
    let mut replayed: Vec<Vec<Duration>> = vec![Vec::new(); gateways.len()];
    let mut offers: Vec<String> = Vec::new();
    let first = &gateways[0].1;
    // Warm-up: connections, the ledger's migration, the first pages of everything.
    for round in 0..bookings + 3 {
        for (g, (_, url)) in gateways.iter().enumerate() {
            if offers.is_empty() {
                let found = post(
                    &http,
                    &format!("{first}/v1/tools/search_flights/call"),
                    &search,
                )
                .await?;
                offers = found["data"]["offers"]
                    .as_array()
                    .map(|list| {
                        list.iter()
                            .filter_map(|o| o["offer_id"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            let offer = offers.pop().ok_or("the search found no offers")?;
            let body = json!({"arguments": {"offer_id": offer, "travellers": [traveller]},
                              "idempotency_key": format!("bench-{round}-{g}")});
            let call = format!("{url}/v1/tools/book_flight/call");
            let started = Instant::now();
            let answer = post(&http, &call, &body).await?;
            let took = started.elapsed();
            if answer["status"] != "ok" {
                return Err(format!("booking {round} on {url}: {answer}").into());
            }
            if round < 3 {
                continue;
            }
            booked[g].push(took);
            if g > 0 {
                let started = Instant::now();
                let again = post(&http, &call, &body).await?;
                replayed[g].push(started.elapsed());
                if again["data"]["order_id"] != answer["data"]["order_id"] {
                    return Err(format!("replay differs: {again}").into());
                }
            }
        }
    }
    let base_p50 = percentile(&mut booked[0], 50.0);
    let base_p99 = percentile(&mut booked[0], 99.0);
    println!("{bookings} bookings per gateway; ratios to \"no ledger\" in the same run");
    println!("| call | p50 ms | p99 ms | p50 ratio | p99 ratio |");
    println!("|---|---|---|---|---|");
    for (g, (name, _)) in gateways.iter().enumerate() {
        let p50 = percentile(&mut booked[g], 50.0);
        let p99 = percentile(&mut booked[g], 99.0);
        println!(
            "| book, {name} | {p50:.2} | {p99:.2} | {:.2} | {:.2} |",
            p50 / base_p50,
            p99 / base_p99
        );
        if g > 0 {
            let p50 = percentile(&mut replayed[g], 50.0);
            let p99 = percentile(&mut replayed[g], 99.0);
            println!(
                "| same key again, {name} (answered from the ledger) | {p50:.2} | {p99:.2} | {:.2} | {:.2} |",
                p50 / base_p50,
                p99 / base_p99
            );
        }
    }
    println!(
        "orders created at the simulator: {} (one per booking, none for the repeats)",
        sim.stats().orders_created
    );
    Ok(())
}
