//! Secrets never print: provider credentials and keys come only from the environment, and
//! neither `Debug` of the built gateway, nor `faregate check`, nor the logs of `faregate serve`
//! (at debug level, through authenticated and refused calls and a SIGTERM) show one.

use std::process::Command;

use crate::support::{self, MapEnv, ServeProcess, repo, run_to_end};

const SECRETS: [(&str, &str); 8] = [
    ("DUFFEL_ACCESS_TOKEN", "duffel_live_s3cr3ttok3n"),
    ("AMADEUS_CLIENT_ID", "amadeusIds3cr3t77"),
    ("AMADEUS_CLIENT_SECRET", "amadeusSecrets3cr3t88"),
    ("FAREGATE_CLIENT_KEYS", "clients3cr3tone,clients3cr3ttwo"),
    ("FAREGATE_ADMIN_KEY", "admins3cr3tkey"),
    ("FAREGATE_CALLBACK_SECRET", "callbacks3cr3tsig"),
    ("FLIGHTAWARE_API_KEY", "aeroapiKeys3cr3t99"),
    ("HOTEL_CONTENT_TOKEN", "hotelContentTok3ns3cr3t"),
];

/// Every secret value (each client key separately).
fn values() -> Vec<&'static str> {
    SECRETS.iter().flat_map(|(_, v)| v.split(',')).collect()
}

#[track_caller]
fn assert_clean(what: &str, text: &str) {
    for v in values() {
        assert!(!text.contains(v), "{what} shows the secret {v}:\n{text}");
    }
    assert!(
        !text.contains("s3cr3t"),
        "{what} shows part of a secret:\n{text}"
    );
}

#[test]
fn debug_of_the_built_gateway_shows_no_secret() {
    // Real provider hosts, so the configured credentials (not simulator placeholders) are used.
    let mut config = support::config_for("https://api.duffel.com");
    if let Some(p) = config.providers.get_mut("amadeus") {
        p.base_url =
            reqwest::Url::parse("https://test.api.amadeus.com").unwrap_or_else(|e| panic!("{e}"));
    }
    let env = MapEnv(SECRETS.to_vec());
    let app = faregate::app::build(config, &env).unwrap_or_else(|e| panic!("{e:?}"));
    assert_clean("Debug of App", &format!("{app:?}"));
    assert_clean("start-up warnings", &app.warnings.join("\n"));
}

#[test]
fn faregate_check_names_variables_never_values() {
    let (status, text) = run_to_end(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["check", "--config"])
            .arg(repo().join("faregate.toml"))
            .envs(SECRETS)
            .env("RUST_LOG", "debug"),
    );
    assert!(status.success(), "{text}");
    assert!(
        text.contains("auth: 2 client key(s) in FAREGATE_CLIENT_KEYS; admin key set"),
        "{text}"
    );
    assert_clean("faregate check", &text);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_logs_of_serve_show_no_secret_through_calls_and_a_sigterm() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut serve = ServeProcess::start(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(repo().join("faregate.toml"))
            .current_dir(dir.path())
            .envs(SECRETS)
            .env("RUST_LOG", "debug"),
    );
    let addr = serve.addr.clone();
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/v1/tools/search_flights/call");
    let body =
        r#"{"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": "2020-01-01"}}"#;
    for key in ["clients3cr3tone", "wrong-guess-key"] {
        let res = http
            .post(&url)
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", serve.log));
        let expected = if key == "wrong-guess-key" { 401 } else { 422 };
        assert_eq!(res.status().as_u16(), expected);
    }
    let res = http
        .post(format!(
            "http://{addr}/v1/breakers/search_flights.duffel/force"
        ))
        .bearer_auth("admins3cr3tkey")
        .body(r#"{"state": "auto"}"#)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 200);
    let exit = serve.terminate();
    let log = &serve.log;
    assert!(exit.success(), "SIGTERM is a clean exit: {exit:?}\n{log}");
    assert!(log.contains("shutting down"), "{log}");
    assert_clean("the serve log", log);
    assert!(
        !log.contains("wrong-guess-key"),
        "a presented key is logged:\n{log}"
    );
}
