//! Simulator tests over real HTTP: `serve` on 127.0.0.1:0 and a reqwest client, real time.
//!
//! This file holds the harness; `tests/air.rs` covers Duffel Air (shapes, header and
//! validation errors, bookings, determinism), `tests/stays.rs` Duffel Stays,
//! `tests/amadeus.rs` the Amadeus routes, and `tests/faults.rs` fault injection and the admin
//! API.

mod air;
mod amadeus;
mod examples;
mod faults;
mod stays;

use chrono::{NaiveDateTime, TimeDelta, Utc};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::Simulator;

/// A simulator served on a loopback port; dropping it shuts the server down.
pub(super) struct Harness {
    pub(super) sim: Simulator,
    pub(super) base: String,
    pub(super) client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(super) server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub(super) async fn start(seed: u64) -> Harness {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let sim = Simulator::new(seed);
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(super::serve(listener, sim.clone(), async move {
        let _ = rx.await;
    }));
    Harness {
        sim,
        base,
        client: reqwest::Client::new(),
        stop: Some(stop),
        server: Some(server),
    }
}

/// A response reduced to what the tests look at.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: HeaderMap,
    pub(super) body: Value,
}

impl Harness {
    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request with the headers Duffel requires.
    pub(super) fn duffel(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth("duffel_test_sim")
            .header("Duffel-Version", "v2")
            .header("Accept", "application/json")
    }

    pub(super) async fn send(&self, rb: reqwest::RequestBuilder) -> Reply {
        let res = rb.send().await.expect("request");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            headers,
            body,
        }
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(self.duffel(reqwest::Method::POST, path).json(&body))
            .await
    }

    pub(super) async fn get(&self, path: &str) -> Reply {
        self.send(self.duffel(reqwest::Method::GET, path)).await
    }

    /// A one-adult search and its offers.
    pub(super) async fn search(&self, origin: &str, destination: &str) -> Vec<Value> {
        let r = self
            .post(
                "/air/offer_requests?return_offers=true&supplier_timeout=10000",
                search_body(origin, destination, 30),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["data"]["offers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

pub(super) fn date_in(days: i64) -> String {
    (Utc::now().date_naive() + TimeDelta::days(days)).to_string()
}

pub(super) fn search_body(origin: &str, destination: &str, days: i64) -> Value {
    json!({ "data": { "slices": [{ "origin": origin, "destination": destination, "departure_date": date_in(days) }],
                      "passengers": [{ "type": "adult" }], "cabin_class": "economy" } })
}

pub(super) fn stays_body(lat: f64, lon: f64) -> Value {
    json!({ "data": { "rooms": 1, "guests": [{ "type": "adult" }, { "type": "adult" }],
                      "check_in_date": date_in(20), "check_out_date": date_in(22),
                      "location": { "radius": 5, "geographic_coordinates": { "latitude": lat, "longitude": lon } } } })
}

pub(super) fn minor(s: &Value) -> i64 {
    super::data::parse_minor(s.as_str().expect("amount string")).expect("2dp amount")
}

pub(super) fn is_2dp(s: &Value) -> bool {
    s.as_str()
        .is_some_and(|s| s.split_once('.').is_some_and(|(_, f)| f.len() == 2))
}

pub(super) fn local(s: &Value) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s.as_str().expect("time"), "%Y-%m-%dT%H:%M:%S")
        .expect("local time")
}

pub(super) fn first_error(r: &Reply) -> &Value {
    &r.body["errors"][0]
}
