//! Cleartext HTTP/2 beside HTTP/1.1 on the gateway's one port (real sockets, short durations):
//! with prior knowledge (reqwest, and hyper's client on one connection we hold), many calls
//! multiplexed on one connection under the same limits as HTTP/1.1 (body limit, request
//! timeout, auth, connection cap, idle and header timers, graceful shutdown), and `curl
//! --http2`'s `Upgrade: h2c` answered on HTTP/2.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use axum::body::Body;
use faregate::config::Config;
use faregate_sim::{Fault, RouteGroup};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::support::{MapEnv, Stack, in_days, one_provider_per_tool, wait_until};

/// One provider per tool, no per-client limits (the tests send many calls from one client).
async fn stack(tweak: impl FnOnce(Config) -> Config + 'static) -> Stack {
    Stack::builder(3)
        .config(one_provider_per_tool)
        .config(|mut c| {
            c.limits.client_rate = None;
            c.limits.client_max_concurrent_calls = None;
            for t in &mut c.tools {
                t.max_concurrent = 1_000;
            }
            c
        })
        .config(tweak)
        .start()
        .await
}

/// Distinct flight searches (distinct dates are never shared as one provider call).
fn flights(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

fn h2_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An HTTP/2 connection with prior knowledge that the test holds, and its driver's task.
async fn connect(addr: SocketAddr) -> (SendRequest<Body>, tokio::task::JoinHandle<()>) {
    let tcp = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    (send, driver)
}

/// A request to `path` on the gateway at `addr`: a POST with `body` (JSON), else a GET.
fn request(addr: SocketAddr, path: &str, body: Option<Vec<u8>>) -> axum::http::Request<Body> {
    let request = axum::http::Request::builder()
        .uri(format!("http://{addr}{path}"))
        .header("content-type", "application/json");
    let request = match &body {
        Some(b) => request.method("POST").header("content-length", b.len()),
        None => request.method("GET"),
    };
    request
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Sends one request on `conn` and reads its answer as JSON.
async fn send_on(
    conn: &mut SendRequest<Body>,
    addr: SocketAddr,
    path: &str,
    body: Option<Vec<u8>>,
) -> hyper::Result<(u16, Value)> {
    send(conn, request(addr, path, body)).await
}

async fn send(
    conn: &mut SendRequest<Body>,
    request: axum::http::Request<Body>,
) -> hyper::Result<(u16, Value)> {
    conn.ready().await?;
    let response = conn.send_request(request).await?;
    assert_eq!(response.version(), axum::http::Version::HTTP_2);
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), 1 << 22)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

fn call_body(days: i64) -> Option<Vec<u8>> {
    Some(flights(days).to_string().into_bytes())
}

const CALL: &str = "/v1/tools/search_flights/call";

#[tokio::test]
async fn a_tool_call_over_http2_with_prior_knowledge() {
    let s = stack(|c| c).await;
    let res = h2_client()
        .post(s.url(CALL))
        .json(&flights(30))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert_eq!(res.status().as_u16(), 200);
    let envelope: Value = res.json().await.unwrap_or_default();
    assert_eq!(envelope["status"], "ok", "{envelope:#}");
    assert_eq!(envelope["provider"], "duffel");
    // HTTP/1.1 is still served on the same port.
    let res = reqwest::Client::new()
        .get(s.url("/healthz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.version(), reqwest::Version::HTTP_11);
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn many_calls_are_in_flight_at_once_on_one_connection() {
    const CALLS: i64 = 100;
    let s = stack(|mut c| {
        // One slot: every call below must ride the one connection.
        c.server.max_connections = 1;
        // Room for a loaded machine: 100 calls set up on a busy CI core must still be answered
        // by the provider, not by the deadline's fallback.
        for t in &mut c.tools {
            t.deadline = t.deadline.max(Duration::from_secs(20));
            t.timeout = t.timeout.max(Duration::from_secs(20));
        }
        c
    })
    .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 1_500,
            ..Fault::default()
        },
    );
    let addr = s.gateway.addr;
    let (conn, _driver) = connect(addr).await;
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            let mut conn = conn.clone();
            tokio::spawn(async move { send_on(&mut conn, addr, CALL, call_body(10 + i)).await })
        })
        .collect();
    // Every call reaches the provider while the first is still held there.
    wait_until(
        Duration::from_secs(15),
        "every call to be at the provider at once",
        || async {
            match s.requests(RouteGroup::DuffelAirSearch) {
                n if n >= CALLS as u64 => Ok(()),
                n => Err(format!("{n} of {CALLS}")),
            }
        },
    )
    .await;
    for call in calls {
        let (status, envelope) = call
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, 200);
        assert_eq!(envelope["status"], "ok", "{envelope:#}");
    }
}

#[tokio::test]
async fn each_stream_keeps_the_body_limit_the_request_timeout_and_auth() {
    let s = Stack::builder(3)
        .env(MapEnv(vec![("FAREGATE_CLIENT_KEYS", "key-a")]))
        .config(one_provider_per_tool)
        .config(|mut c| {
            c.server.max_body_bytes = 2_048;
            c.server.request_timeout = Some(Duration::from_millis(400));
            for t in &mut c.tools {
                t.deadline = t.deadline.min(Duration::from_millis(300));
                t.timeout = t.timeout.min(Duration::from_millis(300));
            }
            c
        })
        .start()
        .await;
    let addr = s.gateway.addr;
    let (mut conn, _driver) = connect(addr).await;
    let keyed = |body: Option<Vec<u8>>| {
        let mut r = request(addr, CALL, body);
        r.headers_mut().insert(
            "authorization",
            axum::http::HeaderValue::from_static("Bearer key-a"),
        );
        r
    };
    // No key: 401, as on HTTP/1.1.
    let (status, _) = send_on(&mut conn, addr, CALL, call_body(30))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 401);
    // Over the body limit: 413 for that stream, and the connection goes on serving.
    let mut big = flights(30).to_string().into_bytes();
    big.extend(std::iter::repeat_n(b' ', 4_096));
    let (status, body) = send(&mut conn, keyed(Some(big)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 413);
    assert!(body["message"].as_str().is_some(), "{body}");
    let (status, envelope) = send(&mut conn, keyed(call_body(31)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200, "{envelope:#}");
    // A stream whose body never ends gets the request timeout's JSON 503 (the call's own
    // deadline is shorter, so only a stuck request reaches it), on the same connection.
    let (tx, rx) = futures::channel::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let mut stuck = keyed(None);
    *stuck.method_mut() = axum::http::Method::POST;
    *stuck.body_mut() = Body::from_stream(rx);
    let started = Instant::now();
    let (status, body) = send(&mut conn, stuck)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 503, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let message = body["message"].as_str().unwrap_or("");
    assert!(message.contains("[server] request_timeout"), "{body}");
    drop(tx);
}

#[tokio::test]
async fn an_http2_connection_takes_one_slot_of_the_connection_cap() {
    let s = stack(|mut c| {
        c.server.max_connections = 1;
        c.server.header_read_timeout = Duration::from_secs(5);
        c
    })
    .await;
    let addr = s.gateway.addr;
    let (mut first, first_driver) = connect(addr).await;
    let (status, _) = send_on(&mut first, addr, "/healthz", None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
    // A second connection waits in the backlog while the first holds the slot.
    let waiting = tokio::spawn(async move {
        let (mut second, _driver) = connect(addr).await;
        send_on(&mut second, addr, "/healthz", None).await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "served while the only slot was taken"
    );
    // The first connection closes; the second is served.
    drop(first);
    first_driver.abort();
    let (status, _) = tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .unwrap_or_else(|_| panic!("the second connection was not served after the first closed"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
}

#[tokio::test]
async fn idle_and_silent_connections_close_at_the_header_read_timeout() {
    let s = stack(|mut c| {
        c.server.header_read_timeout = Duration::from_millis(300);
        c
    })
    .await;
    let addr = s.gateway.addr;
    // An HTTP/2 connection with no stream in flight is closed (GOAWAY), however long-lived.
    let (mut conn, driver) = connect(addr).await;
    let (status, _) = send_on(&mut conn, addr, "/healthz", None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
    let idle = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), driver)
        .await
        .unwrap_or_else(|_| panic!("an idle HTTP/2 connection was still open after 3 s"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        idle.elapsed() >= Duration::from_millis(250),
        "{:?}",
        idle.elapsed()
    );
    // A connection that stops in the middle of the preface is closed too.
    let mut tcp = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tcp.write_all(b"PRI * HTTP/2.0\r\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(3), tcp.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "a silent connection was not closed: {read:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
}

/// A new connection to `addr` is served within 3 s: the connection cap's slot was freed.
async fn the_freed_slot_serves(addr: SocketAddr) {
    let (mut conn, _driver) = connect(addr).await;
    let (status, _) = tokio::time::timeout(
        Duration::from_secs(3),
        send_on(&mut conn, addr, "/healthz", None),
    )
    .await
    .unwrap_or_else(|_| panic!("the freed slot did not serve a new connection"))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
}

/// Reads `tcp` until the gateway closes it; panics if it is still open after 3 s.
async fn closed_within_3_s(tcp: &mut TcpStream, what: &str) {
    let mut buf = [0u8; 4096];
    let closing = async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(3), closing)
        .await
        .unwrap_or_else(|_| panic!("{what}: the connection was still open after 3 s"));
}

/// An h2 client connection of our own to `addr` whose streams' windows start at `window`, and
/// the task driving it (it ends when the connection does).
async fn raw_h2(
    addr: SocketAddr,
    window: u32,
) -> (
    h2::client::SendRequest<axum::body::Bytes>,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
) {
    let tcp = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .handshake(tcp)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (client, tokio::spawn(connection))
}

/// A client that stops reading (every stream's window left at zero, so no byte of an answer
/// can be sent) is closed once an answer has waited the header read timeout, and its slot of
/// the connection cap serves another: it cannot hold the gateway's connections and the
/// answers' memory for ever.
#[tokio::test]
async fn a_client_that_takes_no_answer_is_closed_at_the_header_read_timeout() {
    let s = stack(|mut c| {
        c.server.header_read_timeout = Duration::from_millis(300);
        c.server.max_connections = 1;
        c
    })
    .await;
    let addr = s.gateway.addr;
    let (mut client, driver) = raw_h2(addr, 0).await;
    let request = axum::http::Request::get(format!("http://{addr}/openapi.json"))
        .body(())
        .unwrap_or_else(|e| panic!("{e}"));
    let (response, _) = client
        .send_request(request, true)
        .unwrap_or_else(|e| panic!("{e}"));
    let head = tokio::time::timeout(Duration::from_secs(3), response)
        .await
        .unwrap_or_else(|_| panic!("no answer head"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(head.status(), 200);
    // Its body is never read, and the window never opened: the connection ends.
    let started = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(3), driver).await;
    assert!(
        ended.is_ok(),
        "a connection whose client took no answer was still open after 3 s"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "closed before the timeout: {:?}",
        started.elapsed()
    );
    drop(head);
    // The only slot of the connection cap serves a new connection.
    the_freed_slot_serves(addr).await;
}

/// A request whose `host` header names another host than its `:authority` is malformed (RFC
/// 9113, 8.3.1) and refused with a JSON 400, before the `/mcp` Host check reads only one of them.
#[tokio::test]
async fn a_host_header_that_contradicts_the_authority_is_refused() {
    let s = stack(|c| c).await;
    let addr = s.gateway.addr;
    let (mut client, _driver) = raw_h2(addr, 65_535).await;
    for (authority, host, expected) in [
        ("evil.example", addr.to_string(), 400),
        (&*addr.to_string(), addr.to_string().to_uppercase(), 200),
    ] {
        let request = axum::http::Request::get(format!("http://{authority}/healthz"))
            .header("host", host.as_str())
            .body(())
            .unwrap_or_else(|e| panic!("{e}"));
        let (response, _) = client
            .send_request(request, true)
            .unwrap_or_else(|e| panic!("{e}"));
        let response = response.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), expected, "{authority} / {host}");
        if expected == 400 {
            let mut body = response.into_body();
            let mut bytes = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap_or_else(|e| panic!("{e}"));
                let _ = body.flow_control().release_capacity(chunk.len());
                bytes.extend_from_slice(&chunk);
            }
            let said: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                said["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("host header and :authority")),
                "{said}"
            );
        }
    }
}

#[tokio::test]
async fn a_client_that_never_answers_the_goodbye_is_dropped() {
    let s = stack(|mut c| {
        c.server.header_read_timeout = Duration::from_millis(300);
        c.server.max_connections = 1;
        c
    })
    .await;
    let addr = s.gateway.addr;
    // A full preface and an empty SETTINGS frame, then silence: the idle close sends GOAWAY
    // and a PING that is never answered.
    let mut silent = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    silent
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    closed_within_3_s(&mut silent, "prior knowledge, PING never answered").await;
    // An h2c upgrade whose client never sends the HTTP/2 preface after the 101.
    let mut upgraded = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    upgraded
        .write_all(
            format!(
                "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                 Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut head = [0u8; 12];
    upgraded
        .read_exact(&mut head)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&head, b"HTTP/1.1 101", "the upgrade was not taken");
    closed_within_3_s(&mut upgraded, "h2c upgrade, preface never sent").await;
    // The only slot of the connection cap is free again.
    the_freed_slot_serves(addr).await;
}

#[tokio::test]
async fn shutdown_lets_streams_in_flight_finish() {
    let mut s = stack(|mut c| {
        c.server.shutdown_grace = Duration::from_secs(5);
        c
    })
    .await;
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            latency_ms: 1_000,
            ..Fault::default()
        },
    );
    let addr = s.gateway.addr;
    let (conn, _driver) = connect(addr).await;
    let calls: Vec<_> = (0..10)
        .map(|i| {
            let mut conn = conn.clone();
            tokio::spawn(async move { send_on(&mut conn, addr, CALL, call_body(40 + i)).await })
        })
        .collect();
    wait_until(
        Duration::from_secs(5),
        "the calls to be at the provider",
        || async {
            match s.requests(RouteGroup::DuffelAirSearch) {
                n if n >= 10 => Ok(()),
                n => Err(format!("{n} of 10")),
            }
        },
    )
    .await;
    let done = s.gateway.begin_shutdown();
    for call in calls {
        let (status, envelope) = call
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("an in-flight stream lost its answer: {e}"));
        assert_eq!(status, 200);
        assert_eq!(envelope["status"], "ok", "{envelope:#}");
    }
    // After GOAWAY, a new stream on the same connection is not served.
    let mut late = conn.clone();
    let refused = send_on(&mut late, addr, "/healthz", None).await;
    assert!(
        refused.is_err(),
        "a stream after GOAWAY was served: {refused:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), done)
        .await
        .unwrap_or_else(|_| panic!("shutdown did not end"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Runs curl with `args`; curl is on every machine this suite runs on, and a missing one fails
/// the test by name.
fn curl(args: &[&str]) -> (String, String) {
    let out = Command::new("curl")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("curl is needed for the h2c upgrade test and could not run: {e}")
        });
    assert!(out.status.success(), "curl {args:?}: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, version) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
    (body.to_string(), version.to_string())
}

#[tokio::test]
async fn curl_http2_upgrades_and_gets_its_answer_on_http2() {
    let s = stack(|c| c).await;
    let url = s.url(CALL);
    let health = s.url("/healthz");
    let call = flights(30).to_string();
    // Valid JSON too large to replay on stream 1 (trailing whitespace).
    let big = format!("{call}{}", " ".repeat(70_000));
    let (answers, bigger) = tokio::task::spawn_blocking(move || {
        let w = ["-w", "\n%{http_version}"];
        let json = ["-H", "content-type: application/json", "--data"];
        let get = curl(&["-sS", "--http2", w[0], w[1], &health]);
        let post = curl(&[
            "-sS", "--http2", w[0], w[1], json[0], json[1], json[2], &call, &url,
        ]);
        // Two calls in one curl run: the second goes on the connection the first switched.
        let twice = curl(&[
            "-sS", "--http2", w[0], w[1], json[0], json[1], json[2], &call, &url, "--next",
            "--http2", w[0], w[1], json[0], json[1], json[2], &call, &url,
        ]);
        let big = curl(&[
            "-sS", "--http2", w[0], w[1], json[0], json[1], json[2], &big, &url,
        ]);
        ((get, post, twice), big)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (get, post, twice) = answers;
    assert_eq!(get.1, "2", "GET /healthz: {get:?}");
    assert_eq!(post.1, "2", "the call: {post:?}");
    let envelope: Value = serde_json::from_str(&post.0).unwrap_or_default();
    assert_eq!(envelope["status"], "ok", "{}", post.0);
    assert_eq!(twice.1, "2", "{twice:?}");
    assert_eq!(
        twice.0.matches("}\n2{").count(),
        1,
        "both on HTTP/2: {twice:?}"
    );
    assert_eq!(twice.0.matches("\"status\":\"ok\"").count(), 2, "{twice:?}");
    // A body too large to replay is answered in HTTP/1.1 (the gateway declines the upgrade).
    assert_eq!(bigger.1, "1.1", "{bigger:?}");
    let envelope: Value = serde_json::from_str(&bigger.0).unwrap_or_default();
    assert_eq!(envelope["status"], "ok", "{}", bigger.0);
}
