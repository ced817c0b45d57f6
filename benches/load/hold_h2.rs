//! Holds N interactive calls in flight at the gateway over HTTP/2, for `benches/load/memory.sh`.
//!
//! `hold_h2 GATEWAY SIM GATEWAY_PID N CONNECTIONS BODY_FILE` opens CONNECTIONS HTTP/2
//! connections to GATEWAY with prior knowledge and sends N `search_flights` calls as streams,
//! spread evenly over them (10,000 on 10 is 1,000 streams each, the gateway's shipped
//! `[server] max_concurrent_streams`). Then, as `hold.py` does over HTTP/1.1: it waits until
//! the gateway holds all N upstream (its `faregate_bulkhead_in_use` gauge; the simulator's
//! flight search hangs), reads the gateway's VmRSS, clears the simulator's faults so every call
//! answers, counts the calls answered 200 with an `ok` envelope, and prints one key=value line.
//! Bounded: gives up waiting after 180 s, and on the answers after 120 s more.
//!
//! Each call is a search of its own (an origin the simulator knows, never the body's origin
//! or destination, and a departure date 2 to 301 days ahead, as `hold.py` makes them): the gateway
//! shares one provider call among identical reads in flight, so N copies of one body would hold
//! one provider call, not N. This is what h2load (`h2.sh`) cannot do: it sends one body on every
//! stream. Known airports and dates in range make every answer a real `ok` one.
//!
//! `HOLD_ROUTE` picks the protocol the calls come in by: `native` (the default,
//! `POST /v1/tools/search_flights/call`), `openai` (a Chat Completions `tool_calls` array on
//! `POST /v1/openai/tool_calls`), `anthropic` (`tool_use` blocks on
//! `POST /v1/anthropic/tool_use`) or `mcp` (a stateless MCP 2026-07-28 `tools/call` on
//! `POST /mcp`, answered as JSON) or `mcp-session` (MCP 2025-06-18: an `initialize` per connection,
//! then `tools/call` requests in that session, answered as an event stream), one call per
//! request each. An agent protocol's answer counts as `ok` when its one result is the search's
//! data (not an error text in brackets).

use std::time::Duration;

use axum::body::Body;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::time::Instant;

#[path = "vm_rss.rs"]
mod vm_rss;
use vm_rss::rss_kib;

/// The gateway's own count of `search_flights` calls upstream (bulkhead slots taken).
async fn in_flight(http: &reqwest::Client, gateway: &str) -> Option<u64> {
    let text = http
        .get(format!("http://{gateway}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|l| l.starts_with("faregate_bulkhead_in_use{tool=\"search_flights\"}"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
}

/// Flight searches the simulator has received so far.
async fn sim_searches(http: &reqwest::Client, sim: &str) -> u64 {
    let stats: Option<Value> = async {
        http.get(format!("http://{sim}/_sim/stats"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()
    }
    .await;
    stats
        .and_then(|s| s["groups"]["duffel_air_search"]["requests"].as_u64())
        .unwrap_or(0)
}

/// Airports the simulator knows (crates/faregate-sim/src/tables.rs), as origins; not London's
/// other two (LGW, STN), which the simulator refuses as a route to LHR (one city).
const KNOWN: [&str; 40] = [
    "LHR", "MAN", "EDI", "DUB", "CDG", "ORY", "NCE", "AMS", "FRA", "MUC", "BER", "MAD", "BCN",
    "FCO", "MXP", "LIS", "ZRH", "VIE", "CPH", "ATH", "IST", "JFK", "EWR", "BOS", "IAD", "ATL",
    "MIA", "ORD", "DFW", "DEN", "LAX", "SFO", "SEA", "YYZ", "DXB", "DOH", "SIN", "HND", "HKG",
    "SYD",
];

/// Distinct (origin, departure date) pairs, never from one of `skip` (the body's own search,
/// which a warm-up may have left in the fresh cache, and its destination): 300 dates (2 to 301
/// days ahead, inside the simulator's 361) for each other known airport in turn.
fn searches(skip: [&str; 2]) -> Vec<(&'static str, String)> {
    let today = faregate::clock::utc_now().date_naive();
    let mut all = Vec::new();
    for days in 2..302 {
        let date = (today + chrono::TimeDelta::days(days)).to_string();
        for origin in KNOWN.iter().filter(|o| !skip.contains(*o)) {
            all.push((*origin, date.clone()));
        }
    }
    all
}

/// The protocol the calls come in by (`HOLD_ROUTE`).
#[derive(Debug, Clone, Copy)]
enum Route {
    Native,
    OpenAi,
    Anthropic,
    Mcp,
    McpSession,
}

/// The MCP revision of `HOLD_ROUTE=mcp-session` (the session era's latest but one, which the
/// gateway keeps sessions for).
const SESSION_REVISION: &str = "2025-06-18";

impl Route {
    fn from_env() -> Result<Route, String> {
        match std::env::var("HOLD_ROUTE").as_deref() {
            Err(_) | Ok("native") => Ok(Route::Native),
            Ok("openai") => Ok(Route::OpenAi),
            Ok("anthropic") => Ok(Route::Anthropic),
            Ok("mcp") => Ok(Route::Mcp),
            Ok("mcp-session") => Ok(Route::McpSession),
            Ok(other) => Err(format!(
                "HOLD_ROUTE={other}: use native, openai, anthropic, mcp or mcp-session"
            )),
        }
    }

    fn path(self) -> &'static str {
        match self {
            Route::Native => "/v1/tools/search_flights/call",
            Route::OpenAi => "/v1/openai/tool_calls",
            Route::Anthropic => "/v1/anthropic/tool_use",
            Route::Mcp | Route::McpSession => "/mcp",
        }
    }

    /// The headers the route's protocol asks for beside the content type.
    fn headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Route::Mcp => &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "search_flights"),
            ],
            Route::McpSession => &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", SESSION_REVISION),
            ],
            _ => &[],
        }
    }

    /// The request body of one search with `arguments`.
    fn body(self, arguments: &Value, i: usize) -> Value {
        match self {
            Route::Native => serde_json::json!({ "arguments": arguments }),
            Route::OpenAi => serde_json::json!({ "tool_calls": [{
                "id": format!("call_{i}"),
                "type": "function",
                "function": { "name": "search_flights", "arguments": arguments.to_string() },
            }]}),
            Route::Anthropic => serde_json::json!({ "content": [{
                "type": "tool_use",
                "id": format!("toolu_{i}"),
                "name": "search_flights",
                "input": arguments,
            }]}),
            Route::Mcp => serde_json::json!({
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {
                    "name": "search_flights",
                    "arguments": arguments,
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            }),
            Route::McpSession => serde_json::json!({
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": { "name": "search_flights", "arguments": arguments },
            }),
        }
    }

    /// Whether an answer's body is the search's fresh data.
    fn ok(self, answer: &Value) -> bool {
        let text = match self {
            Route::Native => return answer["status"] == "ok",
            Route::OpenAi => &answer["messages"][0]["content"],
            Route::Anthropic => &answer["content"][0]["content"],
            Route::Mcp | Route::McpSession if answer["result"]["isError"] == true => return false,
            Route::Mcp | Route::McpSession => &answer["result"]["content"][0]["text"],
        };
        text.as_str().is_some_and(|t| {
            !t.starts_with('[') && !t.starts_with("STALE") && t.contains("\"offers\"")
        })
    }
}

/// One call on `conn`: true when it was answered 200 with the search's fresh data.
async fn one(
    mut conn: SendRequest<Body>,
    gateway: String,
    route: Route,
    session: Option<String>,
    body: Vec<u8>,
) -> bool {
    let mut request = axum::http::Request::builder()
        .method("POST")
        .uri(format!("http://{gateway}{}", route.path()));
    for (name, value) in route.headers() {
        request = request.header(*name, *value);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let request = request
        .header("content-type", "application/json")
        .header("content-length", body.len())
        .body(Body::from(body));
    let Ok(request) = request else {
        return false;
    };
    if conn.ready().await.is_err() {
        return false;
    }
    let Ok(response) = conn.send_request(request).await else {
        return false;
    };
    let ok = response.status().as_u16() == 200;
    let Ok(bytes) = axum::body::to_bytes(Body::new(response.into_body()), 1 << 24).await else {
        return false;
    };
    ok && route.ok(&answer_of(&bytes))
}

/// The JSON answer in `bytes`: the body itself, or an event stream's last `data:` line that is
/// a JSON-RPC result or error (a session's answer; progress notifications come before it).
fn answer_of(bytes: &[u8]) -> Value {
    if let Ok(answer) = serde_json::from_slice(bytes) {
        return answer;
    }
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
        .unwrap_or(Value::Null)
}

/// Opens an MCP session on `conn` (`initialize`, then `notifications/initialized`): its
/// `Mcp-Session-Id`.
async fn open_session(
    conn: &mut SendRequest<Body>,
    gateway: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let post = |body: Value, session: Option<&str>| {
        let mut request = axum::http::Request::builder()
            .method("POST")
            .uri(format!("http://{gateway}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", SESSION_REVISION);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.body(Body::from(body.to_string()))
    };
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": SESSION_REVISION,
            "capabilities": {},
            "clientInfo": { "name": "hold_h2", "version": "1" },
        },
    });
    conn.ready().await?;
    let response = conn.send_request(post(initialize, None)?).await?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or("initialize answered without an Mcp-Session-Id")?;
    axum::body::to_bytes(Body::new(response.into_body()), 1 << 20).await?;
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    conn.ready().await?;
    let response = conn
        .send_request(post(initialized, Some(&session))?)
        .await?;
    axum::body::to_bytes(Body::new(response.into_body()), 1 << 20).await?;
    Ok(session)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [gateway, sim, pid, n, connections, body_file] = args.as_slice() else {
        return Err("usage: hold_h2 GATEWAY SIM GATEWAY_PID N CONNECTIONS BODY_FILE".into());
    };
    let (pid, n, connections): (u32, usize, usize) =
        (pid.parse()?, n.parse()?, connections.parse()?);
    let body: Value = serde_json::from_str(&std::fs::read_to_string(body_file)?)?;
    let arguments = body["arguments"].clone();
    let route = Route::from_env()?;
    let http = reqwest::Client::new();
    let idle = rss_kib(&pid.to_string());
    let base = sim_searches(&http, sim).await;

    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections.max(1) {
        let tcp = tokio::net::TcpStream::connect(gateway.as_str()).await?;
        tcp.set_nodelay(true)?;
        let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(tcp))
            .await?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                eprintln!("connection ended: {e}");
            }
        });
        conns.push(send);
    }
    let mut sessions = Vec::with_capacity(conns.len());
    for conn in &mut conns {
        sessions.push(match route {
            Route::McpSession => Some(open_session(conn, gateway).await?),
            _ => None,
        });
    }

    let started = Instant::now();
    let skip = ["origin", "destination"].map(|k| arguments[k].as_str().unwrap_or(""));
    let mut codes = searches(skip).into_iter();
    let mut calls = Vec::with_capacity(n);
    for i in 0..n {
        let Some((origin, date)) = codes.next() else {
            return Err(format!("more calls than distinct searches ({i})").into());
        };
        let mut arguments = arguments.clone();
        arguments["origin"] = Value::String(origin.to_string());
        arguments["departure_date"] = Value::String(date);
        let body = serde_json::to_vec(&route.body(&arguments, i))?;
        calls.push(tokio::spawn(one(
            conns[i % conns.len()].clone(),
            gateway.clone(),
            route,
            sessions[i % conns.len()].clone(),
            body,
        )));
    }

    let mut held = 0;
    while started.elapsed() < Duration::from_secs(180) {
        // A busy gateway may miss one scrape; the next one counts.
        held = in_flight(&http, gateway).await.unwrap_or(held);
        if held >= n as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss = rss_kib(&pid.to_string());
    let reached = started.elapsed();
    // `HOLD_PROBE=CMD`: a command run while every call is still held (a heap probe of the
    // gateway, say), with the gateway's pid as its one argument.
    if let Ok(probe) = std::env::var("HOLD_PROBE") {
        let status = std::process::Command::new(&probe)
            .arg(pid.to_string())
            .status();
        eprintln!("HOLD_PROBE {probe}: {status:?}");
    }
    http.delete(format!("http://{sim}/_sim/faults"))
        .send()
        .await?;
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    for call in calls {
        if let Ok(Ok(true)) = tokio::time::timeout_at(deadline, call).await {
            answered += 1;
        }
    }
    let arrived = sim_searches(&http, sim).await.saturating_sub(base);
    let per_call = (rss.saturating_sub(idle)) * 1024 / held.max(1);
    println!(
        "calls={n} connections={} held={held} at_provider={arrived} seconds_to_hold={:.1} \
         rss_idle_mib={:.1} rss_held_mib={:.1} bytes_per_call={per_call} answered={answered}",
        conns.len(),
        reached.as_secs_f64(),
        idle as f64 / 1024.0,
        rss as f64 / 1024.0,
    );
    Ok(())
}
