//! HTTP/2 to a provider (`[providers.X] http2_prior_knowledge`), seen on the wire: a proxy on a
//! real socket between the gateway and the simulator records the first bytes of every
//! connection the gateway opens. With the setting, each connection opens with HTTP/2's
//! connection preface and calls in flight at once share one connection as streams; without it,
//! each call in flight opens its own HTTP/1.1 connection. The calls answer `ok` either way.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use faregate::config::Config;
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{NoEnv, TestGateway, config_for, in_days, one_provider_per_tool, start_sim};

/// What every HTTP/2 connection starts with (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Calls sent at once; the simulator holds each long enough that all are in flight together.
const CALLS: usize = 6;

/// A proxy on `127.0.0.1:0` to `target` that keeps the first bytes of each connection.
async fn sniffing_proxy(target: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let record = Arc::clone(&record);
            tokio::spawn(async move {
                // Both an HTTP/1.1 request line and the HTTP/2 preface are this long at least.
                let mut first = vec![0; PREFACE.len()];
                if client.read_exact(&mut first).await.is_err() {
                    return;
                }
                record
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(first.clone());
                let Ok(mut server) = TcpStream::connect(target).await else {
                    return;
                };
                if server.write_all(&first).await.is_ok() {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (addr, seen)
}

/// The simulator slow enough that `CALLS` searches are in flight together, the gateway in
/// front of it through the proxy with Duffel alone serving flight search, and `CALLS` distinct
/// searches (distinct dates are never shared as one provider call) sent at once. Returns each
/// call's status and `status` field, and the first bytes of each provider connection.
async fn searches_through_proxy(http2: bool) -> (Vec<(u16, Value)>, Vec<Vec<u8>>) {
    let sim = start_sim(11).await;
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 400,
            ..Fault::default()
        },
    );
    let (proxy, seen) = sniffing_proxy(sim.addr).await;
    let mut config: Config = one_provider_per_tool(config_for(&format!("http://{proxy}")));
    config.limits.client_rate = None;
    config.limits.client_max_concurrent_calls = None;
    for p in config.providers.values_mut() {
        p.http2_prior_knowledge = http2;
    }
    let gateway = TestGateway::start(config, &NoEnv).await;
    let client = reqwest::Client::new();
    let calls: Vec<_> = (0..CALLS as i64)
        .map(|i| {
            let client = client.clone();
            let url = gateway.url("/v1/tools/search_flights/call");
            tokio::spawn(async move {
                let body = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(20 + i)}});
                let res = client
                    .post(url)
                    .json(&body)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let status = res.status().as_u16();
                let envelope: Value = res.json().await.unwrap_or_else(|e| panic!("{e}"));
                (status, envelope)
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.unwrap_or_else(|e| panic!("{e}")));
    }
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (answers, seen)
}

/// Each connection's first bytes as text, for a failure message.
fn openings(connections: &[Vec<u8>]) -> Vec<String> {
    connections
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

fn all_ok(answers: &[(u16, Value)]) {
    for (status, envelope) in answers {
        assert_eq!(*status, 200, "{envelope}");
        assert_eq!(envelope["status"], "ok", "{envelope}");
    }
}

#[tokio::test]
async fn with_http2_prior_knowledge_calls_in_flight_share_one_http2_connection() {
    let (answers, connections) = searches_through_proxy(true).await;
    all_ok(&answers);
    assert!(
        connections.iter().all(|first| first == PREFACE),
        "every provider connection opens with the HTTP/2 preface: {:?}",
        openings(&connections)
    );
    assert_eq!(
        connections.len(),
        1,
        "{CALLS} searches in flight at once are streams of one connection"
    );
}

#[tokio::test]
async fn without_it_each_call_in_flight_has_its_own_http1_connection() {
    let (answers, connections) = searches_through_proxy(false).await;
    all_ok(&answers);
    assert!(
        connections
            .iter()
            .all(|first| first.starts_with(b"POST /air/offer_requests")),
        "every provider connection carries an HTTP/1.1 request line: {:?}",
        openings(&connections)
    );
    assert_eq!(
        connections.len(),
        CALLS,
        "one connection per search in flight"
    );
}
