//! The provider of kind http authenticates each way, with credentials from the environment: sent as configured, trimmed of the whitespace around them, refused at start when broken inside, and an OAuth2 token fetched once and renewed.
//! A token whose lifetime no clock can hold is kept a day, and the token endpoint is asked in
//! plain HTTP/1.1 when the API itself is spoken to in HTTP/2 with prior knowledge.

use std::sync::{Arc, Mutex};

use super::*;

#[tokio::test]
async fn each_authentication_mode_sends_its_credential_from_the_environment() {
    let modes = [
        (
            "auth = \"bearer\"\ntoken_env = \"FLIGHTS_TOKEN\"",
            MapEnv(vec![("FLIGHTS_TOKEN", "tok-abc")]),
            ("authorization", "Bearer tok-abc"),
        ),
        (KEY_AUTH, key_env(), ("x-apikey", API_KEY)),
        (
            "auth = \"basic\"\nusername_env = \"FLIGHTS_USER\"\npassword_env = \"FLIGHTS_PASSWORD\"",
            MapEnv(vec![
                ("FLIGHTS_USER", "agent"),
                ("FLIGHTS_PASSWORD", "s3cret"),
            ]),
            // base64("agent:s3cret")
            ("authorization", "Basic YWdlbnQ6czNjcmV0"),
        ),
    ];
    for (auth, env, (name, value)) in modes {
        let upstream = MockServer::start().await;
        Mock::given(path("/aeroapi/flights/BAW117"))
            .and(header(name, value))
            .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
            .mount(&upstream)
            .await;
        // Without the credential the provider says 401: an operator's problem, not the model's.
        Mock::given(path("/aeroapi/flights/BAW117"))
            .respond_with(ResponseTemplate::new(401))
            .mount(&upstream)
            .await;
        let (gw, _dir) = gateway(&upstream, auth, &env).await;
        let answer = call(&gw, json!({"ident": "BAW117"})).await;
        assert_eq!(answer["status"], "ok", "{auth}: {answer:#}");
    }
}

/// A credential is sent without the whitespace around it (the newline `echo` leaves in a
/// secret's file would otherwise make every request fail before leaving, and open the
/// provider's breakers as if it were down); one with a line break inside stops start-up, naming
/// the variable and never the value.
#[tokio::test]
async fn a_credential_is_sent_without_the_newline_around_it_and_one_broken_inside_stops_start() {
    let upstream = MockServer::start().await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .and(header("x-apikey", API_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    Mock::given(path("/aeroapi/flights/BAW117"))
        .respond_with(ResponseTemplate::new(401))
        .mount(&upstream)
        .await;
    const PADDED: &str = " provider-key-123\n";
    assert_eq!(PADDED.trim(), API_KEY);
    let (gw, _dir) = gateway(
        &upstream,
        KEY_AUTH,
        &MapEnv(vec![("FLIGHTS_API_KEY", PADDED)]),
    )
    .await;
    for _ in 0..3 {
        let answer = call(&gw, json!({"ident": "BAW117"})).await;
        assert_eq!(answer["status"], "ok", "{answer:#}");
    }

    let dir = config_dir(&format!("{}/aeroapi", upstream.uri()), KEY_AUTH, TOOL);
    let (config, _) = faregate::config::load(
        &faregate::config::DiskFiles,
        &dir.path().join("faregate.toml"),
        &faregate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let broken = MapEnv(vec![("FLIGHTS_API_KEY", "provider-key\r\n-123")]);
    let Err(errors) = faregate::app::build(config, &broken) else {
        panic!("a gateway started with a credential that cannot be sent");
    };
    let text = errors.join("\n");
    assert!(
        text.contains("FLIGHTS_API_KEY holds a control character")
            && text.contains("set it to the credential alone"),
        "{text}"
    );
    assert!(!text.contains("provider-key"), "never the value: {text}");
}

#[tokio::test]
async fn an_oauth2_token_is_fetched_once_for_concurrent_calls_and_renewed_when_refused() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/oauth/token"))
        .and(body_string_contains("grant_type=client_credentials"))
        .and(body_string_contains("client_id=agent-app"))
        .and(body_string_contains("scope=flights%3Aread"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(
                    json!({"access_token": "tkn-1", "token_type": "Bearer", "expires_in": 3600}),
                )
                // Slow enough that every concurrent call is waiting for this one fetch.
                .set_delay(Duration::from_millis(300)),
        )
        .up_to_n_times(1)
        .mount(&upstream)
        .await;
    Mock::given(method("POST"))
        .and(path("/oauth/token"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"access_token": "tkn-2", "expires_in": 3600})),
        )
        .mount(&upstream)
        .await;
    Mock::given(method("GET"))
        .and(header("authorization", "Bearer tkn-1"))
        .and(path_regex("^/aeroapi/flights/[A-Z]+[0-9]+$"))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    let auth = format!(
        "auth = \"oauth2\"\ntoken_url = \"{}/oauth/token\"\nclient_id_env = \"FLIGHTS_CLIENT_ID\"\nclient_secret_env = \"FLIGHTS_CLIENT_SECRET\"\nscope = \"flights:read\"",
        upstream.uri()
    );
    let env = MapEnv(vec![
        ("FLIGHTS_CLIENT_ID", "agent-app"),
        ("FLIGHTS_CLIENT_SECRET", "s3cret"),
    ]);
    let (gw, _dir) = gateway(&upstream, &auth, &env).await;
    // Different flights, so no call joins another: each needs a token of its own asking.
    let calls = (0..12).map(|i| call(&gw, json!({"ident": format!("BAW{}", 100 + i)})));
    for answer in futures::future::join_all(calls).await {
        assert_eq!(answer["status"], "ok", "{answer:#}");
    }
    let tokens = |requests: &[wiremock::Request]| {
        requests
            .iter()
            .filter(|r| r.url.path() == "/oauth/token")
            .count()
    };
    let received = upstream.received_requests().await.unwrap_or_default();
    assert_eq!(
        tokens(&received),
        1,
        "one token for twelve concurrent calls"
    );

    // The API stops taking the first token: the next call fetches a new one and asks again.
    upstream.reset().await;
    Mock::given(method("POST"))
        .and(path("/oauth/token"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"access_token": "tkn-2", "expires_in": 3600})),
        )
        .mount(&upstream)
        .await;
    Mock::given(method("GET"))
        .and(header("authorization", "Bearer tkn-2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(401))
        .mount(&upstream)
        .await;
    let answer = call(&gw, json!({"ident": "BAW117"})).await;
    assert_eq!(answer["status"], "ok", "{answer:#}");
    let received = upstream.received_requests().await.unwrap_or_default();
    assert_eq!(tokens(&received), 1, "{received:#?}");
    assert_eq!(received.len(), 3, "refused, new token, asked again");
}

/// The OAuth2 lines of the provider, with its token endpoint at `token_url`.
fn oauth2_auth(token_url: &str) -> String {
    format!(
        "auth = \"oauth2\"\ntoken_url = \"{token_url}\"\nclient_id_env = \"FLIGHTS_CLIENT_ID\"\nclient_secret_env = \"FLIGHTS_CLIENT_SECRET\""
    )
}

fn oauth2_env() -> MapEnv {
    MapEnv(vec![
        ("FLIGHTS_CLIENT_ID", "agent-app"),
        ("FLIGHTS_CLIENT_SECRET", "s3cret"),
    ])
}

/// A token endpoint answering `expires_in` past what any clock can add (`u64::MAX` seconds)
/// issues a token kept for a day: the calls answer, and share one token. Before, adding the
/// lifetime panicked inside the shared fetch, and every later call of the provider answered
/// `unavailable` for good.
#[tokio::test]
async fn a_token_lifetime_past_any_clock_is_kept_a_day_and_the_calls_answer() {
    assert_two_calls_share_one_token("18446744073709551615").await;
}

/// A token endpoint answering `expires_in: 0` issues a token kept as if the lifetime were not
/// said (an hour): the calls share it. Before, it was used once and fetched again before every
/// call, one more request (and its round trip) per call.
#[tokio::test]
async fn a_token_lifetime_of_zero_is_read_as_not_said_not_fetched_per_call() {
    assert_two_calls_share_one_token("0").await;
}

/// Two calls through a provider whose token endpoint answers `expires_in` as given both
/// answer, and make one token request between them.
async fn assert_two_calls_share_one_token(expires_in: &str) {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/oauth/token"))
        .respond_with(ResponseTemplate::new(200).set_body_string(format!(
            r#"{{"access_token": "tkn-1", "token_type": "bearer", "expires_in": {expires_in}}}"#
        )))
        .mount(&upstream)
        .await;
    Mock::given(method("GET"))
        .and(header("authorization", "Bearer tkn-1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    let auth = oauth2_auth(&format!("{}/oauth/token", upstream.uri()));
    let (gw, _dir) = gateway(&upstream, &auth, &oauth2_env()).await;
    for ident in ["BAW117", "BAW118"] {
        let answer = call(&gw, json!({ "ident": ident })).await;
        assert_eq!(
            answer["status"], "ok",
            "expires_in {expires_in}: {answer:#}"
        );
    }
    let received = upstream.received_requests().await.unwrap_or_default();
    let tokens = received
        .iter()
        .filter(|r| r.url.path() == "/oauth/token")
        .count();
    assert_eq!(tokens, 1, "expires_in {expires_in}: {received:#?}");
}

/// A token endpoint that speaks HTTP/1.1 only, on `127.0.0.1:0`: it answers each request with
/// a token and closes the connection, and closes at once a connection that opens with the
/// HTTP/2 preface (as an HTTP/1.1 server does, with a 400 at best). Returns its token URL and
/// the first line of every request it read.
async fn http1_token_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let record = Arc::clone(&record);
            tokio::spawn(async move {
                let mut read = Vec::new();
                let mut buf = [0u8; 4096];
                // The head and the short form body come together or soon after; enough to
                // answer once the head is whole and the form's `grant_type` arrived.
                while !String::from_utf8_lossy(&read).contains("grant_type") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => read.extend_from_slice(&buf[..n]),
                    }
                    if read.starts_with(b"PRI * HTTP/2.0") {
                        break;
                    }
                }
                let text = String::from_utf8_lossy(&read).into_owned();
                let first = text.lines().next().unwrap_or_default().to_string();
                record
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(first.clone());
                if !first.starts_with("POST /oauth/token HTTP/1.1") {
                    return;
                }
                let body =
                    r#"{"access_token": "tkn-1", "token_type": "Bearer", "expires_in": 3600}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (format!("http://{addr}/oauth/token"), seen)
}

/// With `http2_prior_knowledge`, the API is spoken to in HTTP/2 from the first byte, and the
/// token endpoint, another server, in HTTP/1.1 as any client does. Before, the token request
/// opened with the HTTP/2 preface too, an HTTP/1.1 identity provider never answered, and no call
/// of the provider could.
#[tokio::test]
async fn the_token_endpoint_is_asked_in_http1_when_the_api_is_spoken_to_in_http2() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(header("authorization", "Bearer tkn-1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    let (token_url, seen) = http1_token_endpoint().await;
    let auth = format!("{}\nhttp2_prior_knowledge = true", oauth2_auth(&token_url));
    let (gw, _dir) = gateway(&upstream, &auth, &oauth2_env()).await;
    let answer = call(&gw, json!({"ident": "BAW117"})).await;
    assert_eq!(answer["status"], "ok", "{answer:#}");
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(seen, ["POST /oauth/token HTTP/1.1"]);
    let received = upstream.received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1, "{received:#?}");
}
