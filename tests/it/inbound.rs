//! Inbound limits and graceful shutdown on a real server (real sockets, so real time):
//! a slow-loris connection is dropped at the header read timeout while others are served,
//! connections over the cap wait, a request over the request timeout gets a JSON 503, and a
//! shutdown finishes in-flight calls, refuses new connections and hands job leases back.

use std::time::Duration;

use tokio::time::Instant;

use faregate::config::Config;
use faregate::jobs::{JobStatus, JobStore};
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Stack, in_days, one_provider_per_tool, wait_until, wait_until_upstream};

/// A stack against a simulator seeded with `seed`, one provider per tool, and `server` settings.
async fn stack(seed: u64, server: impl FnOnce(Config) -> Config + 'static) -> Stack {
    Stack::builder(seed)
        .config(one_provider_per_tool)
        .config(server)
        .start()
        .await
}

fn flights(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

/// Reads until the server closes the connection; returns how long that took.
async fn closed_within(
    stream: &mut tokio::net::tcp::OwnedReadHalf,
    limit: Duration,
) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn a_slow_loris_is_dropped_at_the_header_timeout_while_others_are_served() {
    let s = stack(1, |mut c| {
        c.server.header_read_timeout = Duration::from_millis(300);
        c
    })
    .await;
    let stream = TcpStream::connect(s.gateway.addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut read, mut write) = stream.into_split();
    // Headers byte by byte, one every 50 ms, never finished.
    let drip = tokio::spawn(async move {
        let head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        for byte in head {
            if write.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    // Meanwhile a normal client is served at once.
    let http = reqwest::Client::new();
    let res = http
        .get(s.url("/healthz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
    let took = closed_within(&mut read, Duration::from_secs(3))
        .await
        .unwrap_or_else(|| panic!("the slow-loris connection was still open after 3 s"));
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(1500),
        "closed after {took:?}, expected about 300 ms"
    );
    drip.abort();
    // A fresh connection: the pooled one idled past the same timer (an idle keep-alive
    // connection closes after header_read_timeout too).
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let res = fresh
        .get(s.url("/readyz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200, "still serving");
}

#[tokio::test]
async fn connections_over_the_cap_wait_for_a_free_slot() {
    let s = stack(1, |mut c| {
        c.server.max_connections = 1;
        c.server.header_read_timeout = Duration::from_secs(5);
        c
    })
    .await;
    let holder = TcpStream::connect(s.gateway.addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        http.get(s.url("/healthz")).send().await.is_err(),
        "a second connection is not served while the first holds the only slot"
    );
    drop(holder);
    let started = Instant::now();
    loop {
        match http.get(s.url("/healthz")).send().await {
            Ok(res) => {
                assert_eq!(res.status().as_u16(), 200);
                break;
            }
            Err(e) => assert!(started.elapsed() < Duration::from_secs(3), "{e}"),
        }
    }
}

#[tokio::test]
async fn a_request_over_the_request_timeout_gets_a_json_503() {
    let s = stack(1, |mut c| {
        c.server.request_timeout = Some(Duration::from_millis(400));
        c
    })
    .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 3_000,
            ..Fault::default()
        },
    );
    let started = Instant::now();
    let res = reqwest::Client::new()
        .post(s.url("/v1/tools/search_flights/call"))
        .json(&flights(30))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 503);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let body: Value = res.json().await.unwrap_or_default();
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.contains("request timeout") && message.contains("[server] request_timeout"),
        "{body}"
    );
}

#[tokio::test]
async fn shutdown_finishes_calls_refuses_connections_and_returns_leased_jobs() {
    let mut s = Stack::builder(2)
        .config(one_provider_per_tool)
        .config(|mut c| {
            c.server.shutdown_grace = Duration::from_millis(1_500);
            for t in &mut c.tools {
                t.timeout = Duration::from_secs(10);
                t.deadline = Duration::from_secs(20);
            }
            c
        })
        .jobs()
        .start()
        .await;
    // The interactive call takes 1 s; the background job's provider never answers in time.
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 1_000,
            ..Fault::default()
        },
    );
    s.sim.set_fault(
        RouteGroup::DuffelStays,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    let (status, job) = s
        .submit(
            "search_hotels",
            json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32)}}),
        )
        .await;
    assert_eq!(status, 202, "{job:#}");
    let job_id = job["job_id"].as_str().unwrap_or_default().to_string();
    // Wait until a worker holds the job's lease.
    wait_until(
        Duration::from_secs(5),
        "a worker to lease the job",
        || async {
            let j = s
                .store()
                .get(&job_id)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|| panic!("no job"));
            if j.status == JobStatus::Running {
                Ok(())
            } else {
                Err(format!("{j:?}"))
            }
        },
    )
    .await;
    let in_flight = tokio::spawn(
        s.http
            .post(s.url("/v1/tools/search_flights/call"))
            .json(&flights(30))
            .send(),
    );
    // Wait until the first call is at the provider (in flight), not for a fixed time.
    wait_until_upstream(&s.sim, RouteGroup::DuffelAirSearch).await;

    let stopping = Instant::now();
    let done = s.gateway.begin_shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        TcpStream::connect(s.gateway.addr).await.is_err(),
        "new connections are refused once shutdown starts"
    );
    let res = in_flight
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("the in-flight call lost its answer: {e}"));
    assert_eq!(res.status().as_u16(), 200);
    let envelope: Value = res.json().await.unwrap_or_default();
    assert_eq!(envelope["status"], "ok", "{envelope:#}");
    tokio::time::timeout(Duration::from_secs(10), done)
        .await
        .unwrap_or_else(|_| panic!("shutdown did not end"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let took = stopping.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "the grace period bounds the shutdown: {took:?}"
    );
    let j = s
        .store()
        .get(&job_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("job lost"));
    assert_eq!(
        j.status,
        JobStatus::Queued,
        "back in the queue, not dead: {j:?}"
    );
    assert_eq!(j.lease_owner, None);
    assert_eq!(j.attempts, 0, "an abandoned attempt is not counted");
}
