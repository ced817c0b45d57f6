//! The edge's answers on a real socket: a wrong method gets the JSON error every refusal has,
//! `/mcp` answers a body that is not a JSON-RPC message with JSON-RPC's own 400, a
//! `Content-Length` over the body limit is refused from the header, and a client that sends
//! a whole oversized body before it reads still reads the 413.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{self, NoEnv, TestGateway};

/// A gateway whose providers are never called (nothing listens on port 9), with a short
/// request timeout, so a request that waits for its body would end in a 503.
async fn gateway() -> TestGateway {
    let mut config = support::config_for("http://127.0.0.1:9");
    config.server.request_timeout = Some(Duration::from_millis(500));
    config.limits.client_rate = None;
    TestGateway::start(config, &NoEnv).await
}

/// Sends `head` (and `body`, all of it, before reading anything, as a simple client does) and
/// reads the answer until the server closes the connection or 10 s pass.
async fn exchange(gw: &TestGateway, head: &str, body: &[u8]) -> String {
    let mut stream = TcpStream::connect(gw.addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sent = async {
        stream.write_all(head.as_bytes()).await?;
        for chunk in body.chunks(64 * 1024) {
            stream.write_all(chunk).await?;
        }
        std::io::Result::Ok(())
    };
    match tokio::time::timeout(Duration::from_secs(10), sent).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("the connection failed while the body was sent: {e}"),
        Err(_) => panic!("sending the body did not finish within 10 s"),
    }
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    match read {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => panic!(
            "the answer was lost ({e}) after {} bytes: {}",
            answer.len(),
            String::from_utf8_lossy(&answer)
        ),
        Err(_) => panic!("no end of the answer within 10 s"),
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// `body` in HTTP/1.1 chunked transfer coding (32 KiB chunks, then the last chunk).
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut coded = Vec::new();
    for chunk in body.chunks(32 * 1024) {
        coded.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        coded.extend_from_slice(chunk);
        coded.extend_from_slice(b"\r\n");
    }
    coded.extend_from_slice(b"0\r\n\r\n");
    coded
}

/// The status and the JSON body of an HTTP/1.1 answer.
fn parse(answer: &str) -> (u16, Value) {
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_wrong_method_gets_a_json_405_that_says_what_the_path_answers() {
    let gw = gateway().await;
    let http = reqwest::Client::new();
    let res = http
        .delete(gw.url("/v1/tools"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 405);
    let allow = res
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(allow.contains("GET"), "{allow}");
    let body: Value = res.json().await.unwrap_or_default();
    assert_eq!(
        body["message"],
        format!("DELETE is not allowed on /v1/tools; it answers {allow}")
    );
    // rmcp's own 405 (PUT is no method of MCP) says the same, as a JSON-RPC error (every
    // refusal on /mcp is one, the body MCP clients show).
    let res = http
        .put(gw.url("/mcp"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 405);
    assert!(res.headers().contains_key("allow"));
    let body: Value = res.json().await.unwrap_or_default();
    assert_eq!(body["error"]["code"], -31405, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("PUT is not allowed on /mcp; it answers"),
        "{body}"
    );
}

#[tokio::test]
async fn mcp_bodies_that_are_not_json_rpc_get_json_rpc_400s() {
    let gw = gateway().await;
    let http = reqwest::Client::new();
    let post = |body: &'static str| {
        http.post(gw.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    for (body, code, says) in [
        ("{", -32700, "Parse error"),
        ("{\"hello\": 1}", -32600, "not a JSON-RPC 2.0 message"),
        (
            "[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]",
            -32600,
            "batch",
        ),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": null, \"method\": \"ping\"}",
            -32600,
            "id must be a string or a number, not null",
        ),
    ] {
        let res = post(body).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(res.status().as_u16(), 400, "{body}");
        assert_eq!(
            res.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        let answer: Value = res.json().await.unwrap_or_default();
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(says)),
            "{answer}"
        );
        // JSON-RPC 2.0: an id that could not be read is answered as null, present.
        assert!(
            answer.get("id").is_some_and(Value::is_null),
            "{body}: {answer}"
        );
    }
    // A well-formed message still reaches rmcp.
    let res = post(
        r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "edge-test", "version": "1"}}}"#,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
    let answer = res.text().await.unwrap_or_default();
    assert!(answer.contains("serverInfo"), "{answer}");
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_from_the_header() {
    let gw = gateway().await;
    // Headers only: the body never comes. Waiting for it would end in the request timeout's 503.
    let head = "POST /v1/tools/search_flights/call HTTP/1.1\r\nhost: gw\r\n\
                content-type: application/json\r\ncontent-length: 10000000\r\n\r\n";
    let mut stream = TcpStream::connect(gw.addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stream
        .write_all(head.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
        .await
        .unwrap_or_else(|_| panic!("no answer"))
        .unwrap_or_else(|e| panic!("{e}"));
    let answer = String::from_utf8_lossy(&answer[..n]).into_owned();
    let (status, body) = parse(&answer);
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("262144-byte limit"), "{answer}");
}

/// What HTTP client libraries do: one that sees its upload fail reports that failure, not the
/// answer the server sent before it closed.
#[tokio::test]
async fn an_http_client_uploading_an_oversized_body_gets_the_413() {
    let gw = gateway().await;
    let http = reqwest::Client::new();
    for path in [
        "/v1/tools/search_flights/call",
        "/v1/openai/tool_calls",
        "/mcp",
    ] {
        let res = http
            .post(gw.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(vec![b' '; 3 << 20])
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: the 413 was lost: {e:?}"));
        assert_eq!(res.status().as_u16(), 413, "{path}");
        let body: Value = res.json().await.unwrap_or_default();
        // `/mcp` answers it as a JSON-RPC error, the only body MCP clients show.
        let message = match path {
            "/mcp" => &body["error"]["message"],
            _ => &body["message"],
        };
        assert!(
            message.as_str().is_some_and(|m| m.contains("limit")),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_client_that_sends_its_whole_oversized_body_reads_the_413() {
    let gw = gateway().await;
    let body = vec![b' '; 3 << 20];
    // Declared: refused from the header, then the body is read and discarded.
    let head = format!(
        "POST /v1/openai/tool_calls HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    let (status, answer) = parse(&exchange(&gw, &head, &body).await);
    assert_eq!(status, 413, "{answer}");
    // Chunked: refused while reading, at the limit.
    let head = "POST /v1/anthropic/tool_use HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n\
                transfer-encoding: chunked\r\n\r\n";
    let (status, answer) = parse(&exchange(&gw, head, &chunked(&body)).await);
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit"))
    );
}

/// `search_flights.duffel`'s breaker is closed: nothing forced it.
async fn assert_still_closed(gw: &TestGateway) {
    let breaker: Value = reqwest::get(gw.url("/v1/breakers/search_flights.duffel"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_default();
    assert_eq!(breaker["state"], "closed", "{breaker}");
}

/// Forcing a breaker reads its body under the same limit as every other route (axum's own 2 MiB
/// default no longer applies), and a body over it forces nothing.
#[tokio::test]
async fn a_force_with_a_body_over_the_limit_is_refused_and_forces_nothing() {
    let gw = gateway().await;
    let mut body = br#"{"state": "open"}"#.to_vec();
    body.resize(1 << 20, b' ');
    let head = "POST /v1/breakers/search_flights.duffel/force HTTP/1.1\r\nhost: gw\r\n\
                content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    let (status, answer) = parse(&exchange(&gw, head, &chunked(&body)).await);
    assert_eq!(status, 413, "{answer}");
    assert_still_closed(&gw).await;
}

/// A force whose body is empty, not JSON, or names no state it can force is refused saying
/// which, and what to send; it forces nothing.
#[tokio::test]
async fn a_force_with_a_bad_body_says_what_was_wrong_and_forces_nothing() {
    let gw = gateway().await;
    let http = reqwest::Client::new();
    for (body, says) in [
        ("", "the body is empty: send {\"state\": \"open\"}"),
        (
            "{state: open}",
            "the body is not valid JSON (key must be a string",
        ),
        (
            r#"{"state": "half"}"#,
            "\"state\": \"half\" is not a state to force: send {\"state\": \"open\"}",
        ),
        (
            r#"{"state": 1}"#,
            "send {\"state\": \"open\"} (reject every call)",
        ),
    ] {
        let res = http
            .post(gw.url("/v1/breakers/search_flights.duffel/force"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(res.status().as_u16(), 400, "{body}");
        let answer: Value = res.json().await.unwrap_or_default();
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(says), "{body}: {message}");
    }
    assert_still_closed(&gw).await;
}

/// `/mcp`'s refusals at the edge keep their status and carry a JSON-RPC error (the only body an
/// MCP client shows its user) whose message says what to do: a body over the limit (413), a
/// client over its rate (429, with `Retry-After`), a request over the request timeout (503).
#[tokio::test]
async fn mcp_refusals_at_the_edge_are_json_rpc_errors() {
    let mut config = support::config_for("http://127.0.0.1:9");
    config.server.request_timeout = Some(Duration::from_millis(500));
    config.limits.client_rate = Some(faregate::config::Rate {
        count: 1,
        per: Duration::from_secs(3600),
    });
    config.limits.client_burst = 1;
    let gw = TestGateway::start(config, &NoEnv).await;
    let json_rpc = |(status, body): (u16, Value), code: i64, says: &str| {
        assert_eq!(body["jsonrpc"], "2.0", "{status} {body:#}");
        assert_eq!(body["id"], Value::Null, "{body:#}");
        assert_eq!(body["error"]["code"], code, "{body:#}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message}");
        status
    };

    // Declared over the limit: refused from the header, before the body.
    let answer = exchange(
        &gw,
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 10000000\r\n\r\n",
        b"",
    )
    .await;
    assert_eq!(json_rpc(parse(&answer), -31413, "262144-byte limit"), 413);

    // A body that never comes: the request timeout's 503.
    let answer = exchange(
        &gw,
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 100\r\nconnection: close\r\n\r\n",
        b"{",
    )
    .await;
    assert_eq!(json_rpc(parse(&answer), -31503, "request_timeout"), 503);

    // Tool calls over the client's rate.
    let http = reqwest::Client::new();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "get_flight_status", "arguments": {}}});
    let mut refused = None;
    for _ in 0..5 {
        let res = http
            .post(gw.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&call)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if res.status().as_u16() == 429 {
            refused = Some(res);
            break;
        }
    }
    let res = refused.unwrap_or_else(|| panic!("no 429 in 5 calls at 1 an hour"));
    assert!(res.headers().get("retry-after").is_some(), "{res:?}");
    let body: Value = res.json().await.unwrap_or_default();
    assert_eq!(json_rpc((429, body), -31429, "retry after"), 429);
}
