//! Tools from configuration end to end: a tool declared in a `tools/*.toml` file of kind `http`,
//! read from disk as `faregate serve` reads it, served by a provider of kind `http` that is a
//! wiremock server shaped like a public flight-tracking API (`GET /flights/{ident}`). It answers
//! through every agent protocol, trips its own breaker and serves its fallback text, is requeued
//! silently in background mode, serves a stale answer that claims nothing about prices,
//! authenticates each way, and its path parameters can never leave
//! the configured base path. `faregate check` lists every mistake of a bad tool file at once.
//! `auth.rs`: each way it authenticates, from credentials in the environment; `import.rs`: tool
//! files written by `faregate import-openapi` pass `check` and serve; `writes.rs`: a write tool
//! keeps its clients' idempotency keys apart, and a credential its provider echoes is redacted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{MapEnv, TestGateway, run_to_end, send, sqlite_store};

mod auth;
mod import;
mod writes;

/// The flight-status tool as an operator writes it.
const TOOL: &str = r#"
name = "flight_position"
kind = "http"
title = "Live flight status by ident"
description = "Live status of one flight by its ident (an airline code and flight number, e.g. BAW117): status, origin, destination and departure gate."
access = "read"
providers = ["flights_api"]
timeout = "2s"
deadline = "3s"
stale_for = "0s"
content = "{{ ident }}: {{ status }} from {{ origin }} to {{ destination }}{% if gate %}, gate {{ gate }}{% endif %}."

[input_schema]
type = "object"
required = ["ident"]
additionalProperties = false

[input_schema.properties.ident]
type = "string"
description = "The flight's ident, e.g. BAW117"
minLength = 1
maxLength = 64

[input_schema.properties.max_pages]
type = "integer"
minimum = 1
maximum = 5

[request]
method = "GET"
path = "/flights/{ident}"
query = { max_pages = "max_pages" }

[result]
keep = { ident = "$.flights[0].ident", status = "$.flights[0].status", origin = "$.flights[0].origin.code_iata", destination = "$.flights[0].destination.code_iata", gate = "$.flights[0].gate_origin" }

[classify]
rejected = [400, 404]
message = "$.detail"

[breaker]
consecutive_failures = 2
min_calls = 2

[retry]
attempts = 1

[fallback]
interactive = "flight_position.unavailable.md"
"#;

const FALLBACK: &str = "Live flight status from {provider} is unavailable right now; no status is known, so none should be guessed. Try again in about {retry_after_s} seconds.";

/// The provider's answer for BAW117.
fn flight() -> Value {
    json!({"flights": [{
        "ident": "BAW117",
        "status": "En Route / On Time",
        "origin": {"code_iata": "LHR"},
        "destination": {"code_iata": "JFK"},
        "gate_origin": "A10",
        "filed_airspeed": 470
    }], "links": null, "num_pages": 1})
}

/// A configuration directory: `faregate.toml` with the provider of kind http at `base_url`
/// authenticating with `auth` (TOML lines), the tool file `tool` and its fallback prompt.
fn config_dir(base_url: &str, auth: &str, tool: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let write = |name: &str, text: &str| {
        let file = dir.path().join(name);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    };
    write(
        "faregate.toml",
        &format!(
            "[server]\ntools_dir = \"tools\"\nprompts_dir = \"prompts\"\n\n[providers.flights_api]\nkind = \"http\"\nbase_url = \"{base_url}\"\n{auth}\n"
        ),
    );
    write("tools/flight_position.toml", tool);
    write("prompts/flight_position.unavailable.md", FALLBACK);
    dir
}

/// A gateway serving [`TOOL`] from `upstream` (under `/aeroapi`), with `auth` and `env`.
async fn gateway(
    upstream: &MockServer,
    auth: &str,
    env: &MapEnv,
) -> (TestGateway, tempfile::TempDir) {
    gateway_serving(upstream, auth, env, TOOL).await
}

/// A gateway serving the tool file `tool` from `upstream` (under `/aeroapi`).
async fn gateway_serving(
    upstream: &MockServer,
    auth: &str,
    env: &MapEnv,
    tool: &str,
) -> (TestGateway, tempfile::TempDir) {
    let dir = config_dir(&format!("{}/aeroapi", upstream.uri()), auth, tool);
    let (config, _) = faregate::config::load(
        &faregate::config::DiskFiles,
        &dir.path().join("faregate.toml"),
        &faregate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (TestGateway::start(config, env).await, dir)
}

const API_KEY: &str = "provider-key-123";

fn key_env() -> MapEnv {
    MapEnv(vec![("FLIGHTS_API_KEY", API_KEY)])
}

const KEY_AUTH: &str = "auth = \"api_key\"\nheader = \"x-apikey\"\nkey_env = \"FLIGHTS_API_KEY\"";

async fn post(gw: &TestGateway, route: &str, body: Value) -> (u16, Value) {
    let (status, _, body) = send(reqwest::Client::new().post(gw.url(route)).json(&body)).await;
    (status, body)
}

async fn call(gw: &TestGateway, arguments: Value) -> Value {
    let (status, body) = post(
        gw,
        "/v1/tools/flight_position/call",
        json!({"arguments": arguments}),
    )
    .await;
    assert!(status == 200 || status == 422, "{status}: {body:#}");
    body
}

#[tokio::test]
async fn a_configured_tool_answers_through_every_protocol() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/aeroapi/flights/BAW117"))
        .and(header("x-apikey", API_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    let (gw, _dir) = gateway(&upstream, KEY_AUTH, &key_env()).await;
    let said = "BAW117: En Route / On Time from LHR to JFK, gate A10.";

    let native = call(&gw, json!({"ident": "BAW117"})).await;
    assert_eq!(native["status"], "ok", "{native:#}");
    assert_eq!(native["content"], said);
    assert_eq!(native["provider"], "flights_api");
    assert_eq!(
        native["data"],
        json!({"ident": "BAW117", "status": "En Route / On Time", "origin": "LHR",
               "destination": "JFK", "gate": "A10"}),
        "only the kept fields"
    );

    let (status, openai) = post(
        &gw,
        "/v1/openai/tool_calls",
        json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "flight_position", "arguments": "{\"ident\": \"BAW117\"}"}}]}),
    )
    .await;
    assert_eq!(status, 200, "{openai:#}");
    let text = openai["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains(said), "{text}");

    let (status, anthropic) = post(&gw, "/v1/anthropic/tool_use", json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "flight_position", "input": {"ident": "BAW117"}}]})).await;
    assert_eq!(status, 200, "{anthropic:#}");
    let block = &anthropic["content"][0];
    assert!(block["content"].to_string().contains(said), "{block:#}");
    assert_ne!(block["is_error"], true, "{block:#}");

    let mcp = mcp(
        &gw,
        "tools/call",
        json!({"name": "flight_position", "arguments": {"ident": "BAW117"}}),
    )
    .await;
    assert!(
        mcp["result"]["content"].to_string().contains(said),
        "{mcp:#}"
    );
    assert_ne!(mcp["result"]["isError"], true, "{mcp:#}");
    let listed = mcp_tools(&gw).await;
    let tool = listed.iter().find(|t| t["name"] == "flight_position");
    let tool = tool.unwrap_or_else(|| panic!("not listed: {listed:#?}"));
    assert_eq!(
        tool["inputSchema"]["required"],
        json!(["ident"]),
        "{tool:#}"
    );

    // A model's wrong arguments never reach the provider, and say what to fix.
    let invalid = call(&gw, json!({"flight": "BAW117"})).await;
    assert_eq!(invalid["status"], "invalid_arguments", "{invalid:#}");
    assert!(
        invalid["content"]
            .as_str()
            .unwrap_or_default()
            .contains("ident"),
        "{invalid:#}"
    );
    let asked = upstream.received_requests().await.unwrap_or_default().len();
    assert_eq!(asked, 4, "one request per valid call");
}

/// A 2026-07-28 (stateless) MCP request's JSON-RPC answer.
async fn mcp(gw: &TestGateway, method_name: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "configured-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method_name, "params": params});
    let mut req = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method_name);
    if let Some(name) = params["name"].as_str() {
        req = req.header("mcp-name", name);
    }
    let res = req
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = res.text().await.unwrap_or_default();
    crate::protocols::mcp_message(&text)
}

async fn mcp_tools(gw: &TestGateway) -> Vec<Value> {
    let listed = mcp(gw, "tools/list", json!({})).await;
    listed["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refusal_the_model_can_fix_is_rejected_with_the_providers_words() {
    let upstream = MockServer::start().await;
    Mock::given(path("/aeroapi/flights/BAW999"))
        .respond_with(
            ResponseTemplate::new(404).set_body_json(json!({"title": "Not found",
            "detail": "No flight BAW999 is known for the coming days"})),
        )
        .mount(&upstream)
        .await;
    let (gw, _dir) = gateway(&upstream, KEY_AUTH, &key_env()).await;
    for _ in 0..3 {
        let answer = call(&gw, json!({"ident": "BAW999"})).await;
        assert_eq!(answer["status"], "rejected", "{answer:#}");
        assert!(
            answer["content"]
                .as_str()
                .unwrap_or_default()
                .contains("No flight BAW999"),
            "{answer:#}"
        );
    }
    let (_, _, breakers) = send(reqwest::Client::new().get(gw.url("/v1/breakers"))).await;
    assert!(
        breakers.to_string().contains("\"closed\""),
        "a refusal is no failure: {breakers:#}"
    );
}

#[tokio::test]
async fn its_breaker_opens_and_its_fallback_text_is_served() {
    let upstream = MockServer::start().await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&upstream)
        .await;
    let (gw, _dir) = gateway(&upstream, KEY_AUTH, &key_env()).await;
    for _ in 0..2 {
        let failed = call(&gw, json!({"ident": "BAW117"})).await;
        assert_eq!(failed["status"], "unavailable", "{failed:#}");
    }
    let asked = upstream.received_requests().await.unwrap_or_default().len();
    let open = call(&gw, json!({"ident": "BAW117"})).await;
    assert_eq!(open["status"], "unavailable", "{open:#}");
    assert_eq!(open["breaker"], "open", "{open:#}");
    let text = open["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("Live flight status from flights_api is unavailable"),
        "{text}"
    );
    assert!(!text.contains('{'), "placeholders filled: {text}");
    assert_eq!(
        upstream.received_requests().await.unwrap_or_default().len(),
        asked,
        "an open breaker sends nothing"
    );
}

/// A developer's tool answers for something the gateway cannot see into (here a flight's
/// status): its stale answer says its age and that it may have changed, and nothing of prices,
/// availability or booking, which only the priced built-in tools' stale answers speak of.
#[tokio::test]
async fn its_stale_answer_claims_nothing_about_prices() {
    let upstream = MockServer::start().await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&upstream)
        .await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .respond_with(ResponseTemplate::new(503))
        .with_priority(2)
        .mount(&upstream)
        .await;
    let tool = TOOL.replace("stale_for = \"0s\"", "stale_for = \"10m\"");
    let (gw, _dir) = gateway_serving(&upstream, KEY_AUTH, &key_env(), &tool).await;
    let fresh = call(&gw, json!({"ident": "BAW117"})).await;
    assert_eq!(fresh["status"], "ok", "{fresh:#}");
    let stale = call(&gw, json!({"ident": "BAW117"})).await;
    assert_eq!(stale["status"], "stale", "{stale:#}");
    let text = stale["content"].as_str().unwrap_or_default();
    assert_eq!(
        text,
        "STALE RESULT, 0 s old: flight_position is not answering right now, so this is the last good result for the same request. It may have changed since; say how old it is. BAW117: En Route / On Time from LHR to JFK, gate A10."
    );
}

#[tokio::test]
async fn a_background_call_is_requeued_silently_until_the_provider_answers() {
    let upstream = MockServer::start().await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .mount(&upstream)
        .await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    let dir = config_dir(&format!("{}/aeroapi", upstream.uri()), KEY_AUTH, TOOL);
    let (config, _) = faregate::config::load(
        &faregate::config::DiskFiles,
        &dir.path().join("faregate.toml"),
        &faregate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (store, _store_dir) = sqlite_store().await;
    let gw = TestGateway::start_with_jobs(config, &key_env(), store).await;
    let (status, queued) = post(
        &gw,
        "/v1/tools/flight_position/call",
        json!({"arguments": {"ident": "BAW117"}, "mode": "background"}),
    )
    .await;
    assert_eq!(status, 202, "{queued:#}");
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();
    let job = crate::support::wait_until(Duration::from_secs(10), "the job to succeed", || async {
        let (_, _, job) = send(reqwest::Client::new().get(gw.url(&format!("/v1/jobs/{id}")))).await;
        if job["status"] == "succeeded" {
            Ok(job)
        } else {
            Err(format!("{job:#}"))
        }
    })
    .await;
    assert_eq!(job["attempts"], 2, "{job:#}");
    assert_eq!(job["result"]["status"], "ok", "{job:#}");
    assert_eq!(job["result"]["data"]["gate"], "A10", "{job:#}");
}

#[tokio::test]
async fn path_parameters_never_leave_the_configured_base_path() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"detail": "unknown flight"})))
        .mount(&upstream)
        .await;
    let (gw, _dir) = gateway(&upstream, KEY_AUTH, &key_env()).await;
    let idents = [
        ("a?b=c#d", "/aeroapi/flights/a%3Fb%3Dc%23d"),
        ("%2F..%2F", "/aeroapi/flights/%252F..%252F"),
        ("Zürich", "/aeroapi/flights/Z%C3%BCrich"),
        ("@evil.example.com", "/aeroapi/flights/%40evil.example.com"),
    ];
    for (ident, _) in idents {
        let answer = call(&gw, json!({"ident": ident})).await;
        assert_eq!(answer["status"], "rejected", "{ident}: {answer:#}");
    }
    // Refused by the gateway before sending: the model's to fix, and said so. A `/` or a
    // backslash, even encoded, would take a proxy that decodes before routing out of the path.
    for ident in [
        "..",
        ".",
        "../../admin",
        "x/../../y",
        "//evil.example.com/x",
        "a\\b",
    ] {
        let answer = call(&gw, json!({"ident": ident})).await;
        assert_eq!(answer["status"], "invalid_arguments", "{ident}: {answer:#}");
        let text = answer["content"].as_str().unwrap_or_default();
        assert!(text.contains("ident") && text.contains("segment"), "{text}");
    }
    let received = upstream.received_requests().await.unwrap_or_default();
    let paths: Vec<String> = received.iter().map(|r| r.url.path().to_string()).collect();
    let expected: Vec<&str> = idents.iter().map(|(_, p)| *p).collect();
    assert_eq!(
        paths, expected,
        "`.`, `..` and separators are refused before any request"
    );
    for r in &received {
        let host = r.headers.get("host").and_then(|h| h.to_str().ok());
        assert_eq!(
            host,
            Some(upstream.address().to_string().as_str()),
            "{}",
            r.url
        );
        assert_eq!(r.url.query(), None, "{}", r.url);
    }
}

/// `faregate check` on the configuration in `dir`: whether it passed, and what it printed.
fn check(dir: &Path) -> (bool, String) {
    let (status, text) = run_to_end(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["check", "--config"])
            .arg(dir.join("faregate.toml"))
            .env_remove("FAREGATE_CLIENT_KEYS")
            .env_remove("FAREGATE_ADMIN_KEY"),
    );
    (status.success(), text)
}

#[test]
fn check_lists_every_mistake_of_a_tool_file_with_its_key() {
    let bad = TOOL
        .replace(
            "{% if gate %}, gate {{ gate }}{% endif %}",
            ", terminal {{ terminal }}",
        )
        .replace("\"$.flights[0].status\"", "\"$.flights[0.status\"")
        .replace(
            "path = \"/flights/{ident}\"",
            "path = \"/flights/{ident}/{leg}\"",
        )
        .replace("access = \"read\"", "access = \"write\"");
    let dir = config_dir("http://127.0.0.1:9/aeroapi", "", &bad);
    let (ok, text) = check(dir.path());
    assert!(!ok, "{text}");
    for says in [
        "flight_position.toml: content: names terminal that the result does not keep",
        "flight_position.toml: result.keep.status: \"$.flights[0.status\" is not a JSONPath",
        "flight_position.toml: request.path: the path parameter {leg} is not an argument",
        "flight_position.toml: idempotency: a write tool needs an idempotency rule",
    ] {
        assert!(text.contains(says), "missing {says:?} in:\n{text}");
    }

    let good = config_dir("http://127.0.0.1:9/aeroapi", KEY_AUTH, TOOL);
    let (ok, text) = check(good.path());
    assert!(ok, "{text}");
}
