//! A write tool from configuration (`book_lounge`, an internal API behind faregate) keeps its
//! clients apart: the idempotency key its provider deduplicates by is scoped to the client, so
//! two clients making the same call (or giving the same key) never have one's write taken for
//! the other's, while one client repeating its key still is deduplicated. And whatever the
//! provider echoes of the credential the gateway sent never reaches the model. A write the
//! provider confirms with an empty body (204, or 201 with only a `Location`) is carried out.

use super::*;

const LOUNGE: &str = r#"
name = "book_lounge"
kind = "http"
title = "Book an airport lounge"
description = "Books a lounge visit for a member at an airport."
access = "write"
providers = ["flights_api"]
timeout = "2s"
deadline = "3s"
content = "Lounge {{ booking }} booked."

[input_schema]
type = "object"
required = ["member_id", "airport"]
additionalProperties = false

[input_schema.properties.member_id]
type = "string"

[input_schema.properties.airport]
type = "string"

[request]
method = "POST"
path = "/lounges/{airport}/bookings"
body = { member = "member_id" }

[idempotency]
header = "Idempotency-Key"

[result]
keep = { booking = "$.id" }

[classify]
rejected = [400]
message = "$.detail"

[fallback]
interactive = "book_lounge.unavailable.md"
"#;

const TOKEN: &str = "s3cr3t-token-XYZ";

/// A gateway serving [`LOUNGE`] from `upstream` with a bearer token, for the clients k-alpha
/// and k-beta (keys `alpha-key` and `beta-key`).
async fn lounge_gateway(upstream: &MockServer) -> (TestGateway, tempfile::TempDir) {
    lounge_gateway_with(
        upstream,
        "auth = \"bearer\"\ntoken_env = \"LOUNGE_TOKEN\"",
        &[("LOUNGE_TOKEN", TOKEN)],
    )
    .await
}

/// [`lounge_gateway`] with the provider authenticating with `auth` (TOML lines), from `env`.
async fn lounge_gateway_with(
    upstream: &MockServer,
    auth: &str,
    env: &[(&'static str, &'static str)],
) -> (TestGateway, tempfile::TempDir) {
    let auth = format!(
        "{auth}\n\n[[clients]]\nname = \"k-alpha\"\nkey_env = \"ALPHA_KEY\"\nmay_book = true\n\n[[clients]]\nname = \"k-beta\"\nkey_env = \"BETA_KEY\"\nmay_book = true\n"
    );
    let dir = config_dir(&format!("{}/api", upstream.uri()), &auth, TOOL);
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path().join(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
    };
    write("tools/book_lounge.toml", LOUNGE);
    write(
        "prompts/book_lounge.unavailable.md",
        "Lounge booking at {provider} is unavailable; nothing was booked.",
    );
    let (config, _) = faregate::config::load(
        &faregate::config::DiskFiles,
        &dir.path().join("faregate.toml"),
        &faregate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut vars = vec![("ALPHA_KEY", "alpha-key"), ("BETA_KEY", "beta-key")];
    vars.extend_from_slice(env);
    let env = MapEnv(vars);
    (TestGateway::start(config, &env).await, dir)
}

/// The text of one OpenAI tool call of `book_lounge` with `arguments` by the client `key`.
async fn openai_call(gw: &TestGateway, key: &str, arguments: &str) -> String {
    let body = json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "book_lounge", "arguments": arguments}}]});
    let req = reqwest::Client::new()
        .post(gw.url("/v1/openai/tool_calls"))
        .bearer_auth(key)
        .json(&body);
    let (status, _, answer) = send(req).await;
    assert_eq!(status, 200, "{answer:#}");
    answer["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A native call of `book_lounge` by the client `key` with an explicit idempotency key.
async fn native_call(gw: &TestGateway, key: &str, idempotency_key: &str) -> Value {
    let body = json!({"arguments": {"member_id": "M1", "airport": "LHR"},
        "idempotency_key": idempotency_key});
    let req = reqwest::Client::new()
        .post(gw.url("/v1/tools/book_lounge/call"))
        .bearer_auth(key)
        .json(&body);
    let (status, _, answer) = send(req).await;
    assert_eq!(status, 200, "{answer:#}");
    answer
}

/// The `Idempotency-Key` of every request the provider received, in order.
async fn sent_keys(upstream: &MockServer) -> Vec<String> {
    let received = upstream.received_requests().await.unwrap_or_default();
    received
        .iter()
        .map(|r| {
            r.headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn two_clients_making_the_same_write_never_share_an_idempotency_key_upstream() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/lounges/LHR/bookings"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": "LB-1"})))
        .mount(&upstream)
        .await;
    let (gw, _dir) = lounge_gateway(&upstream).await;
    let arguments = r#"{"member_id": "M1", "airport": "LHR"}"#;

    // The agent protocols derive a key from the arguments: the same for both clients.
    for key in ["alpha-key", "beta-key", "alpha-key"] {
        let text = openai_call(&gw, key, arguments).await;
        assert!(text.contains("Lounge LB-1 booked."), "{text}");
    }
    let derived = sent_keys(&upstream).await;
    assert_eq!(derived.len(), 3, "{derived:?}");
    assert!(derived.iter().all(|k| !k.is_empty()), "{derived:?}");
    assert_ne!(
        derived[0], derived[1],
        "k-alpha's and k-beta's writes are apart"
    );
    assert_eq!(
        derived[0], derived[2],
        "k-alpha repeating its call is deduplicated"
    );

    // A key the clients give themselves is each client's own too.
    for key in ["alpha-key", "beta-key", "beta-key"] {
        let answer = native_call(&gw, key, "1").await;
        assert_eq!(answer["status"], "ok", "{answer:#}");
    }
    let given = sent_keys(&upstream).await[3..].to_vec();
    assert_ne!(given[0], given[1], "the same key \"1\" from two clients");
    assert_eq!(given[1], given[2], "k-beta repeating key \"1\"");
    assert!(!given.contains(&"1".to_string()), "{given:?}");
    assert!(!given.iter().any(|k| derived.contains(k)), "{given:?}");
}

#[tokio::test]
async fn a_credential_the_provider_echoes_never_reaches_the_model() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"detail": format!("bad token Bearer {TOKEN}")})),
        )
        .mount(&upstream)
        .await;
    let (gw, _dir) = lounge_gateway(&upstream).await;
    let answer = native_call(&gw, "alpha-key", "k-1").await;
    assert_eq!(answer["status"], "rejected", "{answer:#}");
    let text = answer.to_string();
    assert!(!text.contains(TOKEN), "{text}");
    assert!(text.contains("bad token Bearer [redacted]"), "{text}");
    let said = openai_call(&gw, "beta-key", r#"{"member_id": "M2", "airport": "LHR"}"#).await;
    assert!(
        !said.contains(TOKEN) && said.contains("[redacted]"),
        "{said}"
    );
}

/// Many APIs confirm a write with `204 No Content`, or `201 Created` and only a `Location`
/// header: the write was carried out, the model is told so, and `data` holds the kept fields
/// with nothing behind them. Before, an empty body was a malformed answer: the model read that
/// the outcome was unknown, and the provider's breaker counted a failure.
#[tokio::test]
async fn a_write_confirmed_with_an_empty_body_is_carried_out() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/lounges/LHR/bookings"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&upstream)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/lounges/JFK/bookings"))
        .respond_with(
            ResponseTemplate::new(201).insert_header("location", "/api/lounges/JFK/bookings/LB-2"),
        )
        .mount(&upstream)
        .await;
    let (gw, _dir) = lounge_gateway(&upstream).await;
    for (airport, status) in [("LHR", 204), ("JFK", 201)] {
        let body = json!({"arguments": {"member_id": "M1", "airport": airport},
            "idempotency_key": format!("k-{airport}")});
        let req = reqwest::Client::new()
            .post(gw.url("/v1/tools/book_lounge/call"))
            .bearer_auth("alpha-key")
            .json(&body);
        let (code, _, answer) = send(req).await;
        assert_eq!(code, 200, "{answer:#}");
        assert_eq!(answer["status"], "ok", "{answer:#}");
        assert_eq!(answer["data"], json!({"booking": null}), "{answer:#}");
        assert_eq!(
            answer["content"],
            format!(
                "The book_lounge request was carried out: the provider confirmed it (HTTP {status}) and sent no details back."
            ),
            "{answer:#}"
        );
    }
    let said = openai_call(&gw, "beta-key", r#"{"member_id": "M2", "airport": "LHR"}"#).await;
    assert!(said.contains("was carried out"), "{said}");
    assert_eq!(
        upstream.received_requests().await.unwrap_or_default().len(),
        3
    );
}

/// A write whose OAuth2 token never comes was never sent: the model is told the write is
/// unavailable (nothing booked), never that it is unknown whether it went through. Before,
/// the attempt's timeout fired while the write waited for its token, and read as a write sent
/// and unanswered.
#[tokio::test]
async fn a_write_whose_token_never_comes_is_told_it_was_not_sent() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/oauth/token"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"access_token": "tkn", "expires_in": 3600}))
                .set_delay(Duration::from_secs(30)),
        )
        .mount(&upstream)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/lounges/LHR/bookings"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": "LB-1"})))
        .mount(&upstream)
        .await;
    let auth = format!(
        "auth = \"oauth2\"\ntoken_url = \"{}/oauth/token\"\nclient_id_env = \"LOUNGE_CLIENT_ID\"\nclient_secret_env = \"LOUNGE_CLIENT_SECRET\"",
        upstream.uri()
    );
    let env = [
        ("LOUNGE_CLIENT_ID", "lounge-app"),
        ("LOUNGE_CLIENT_SECRET", "s3cret"),
    ];
    let (gw, _dir) = lounge_gateway_with(&upstream, &auth, &env).await;
    let answer = native_call(&gw, "alpha-key", "k-1").await;
    assert_eq!(answer["status"], "unavailable", "{answer:#}");
    let text = answer.to_string();
    assert!(!text.contains("not known whether"), "{text}");
    assert!(text.contains("nothing was booked"), "{text}");
    let received = upstream.received_requests().await.unwrap_or_default();
    assert!(
        received.iter().all(|r| r.url.path() == "/oauth/token"),
        "the write was never sent: {received:#?}"
    );
}
