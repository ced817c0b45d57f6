//! A client whose `[[clients]]` entry names its own `callback_secret_env` gets its callbacks
//! signed with that secret, so its receiver can tell them from any other client's; a client
//! without one keeps the gateway's. Without a gateway secret, only clients with their own may
//! ask for callbacks.

use std::time::Duration;

use faregate::clients::Scope;
use faregate::config::ClientConfig;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{message, post_as};
use crate::jobs::signed_with;
use crate::support::{MapEnv, Stack, in_days, wait_until};

const GATEWAY_SECRET: &str = "gateway-callback-secret";
const AGENCY_SECRET: &str = "agency-callback-secret";

/// `agency` signs with its own secret (`AGENCY_CALLBACK_SECRET`), `rival` has none; both are
/// held to the gateway's allowlist (the receiver's `/hooks/`). `env` is the gateway's.
async fn stack(env: Vec<(&'static str, &'static str)>) -> Stack {
    let client = |name: &str, key: &str, secret_env: Option<&str>| ClientConfig {
        callback_secret_env: secret_env.map(str::to_string),
        ..crate::support::client(name, key, Scope::everything())
    };
    Stack::builder(29)
        .env(MapEnv(env))
        .callbacks_to(MockServer::start().await)
        .config(move |mut c| {
            c.clients = vec![
                client("agency", "agency-key", Some("AGENCY_CALLBACK_SECRET")),
                client("rival", "rival-key", None),
            ];
            c
        })
        .jobs()
        .start()
        .await
}

async fn submit_as(s: &Stack, key: &str, callback: &str) -> (u16, Value) {
    let body = json!({"mode": "background",
        "arguments": {"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32)},
        "callback_url": callback});
    post_as(s, key, "/v1/tools/search_hotels/call", body).await
}

#[tokio::test]
async fn a_clients_own_secret_signs_its_callbacks_and_no_one_elses() {
    let s = stack(vec![
        ("FAREGATE_CALLBACK_SECRET", GATEWAY_SECRET),
        ("AGENCY_CALLBACK_SECRET", AGENCY_SECRET),
    ])
    .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(s.receiver())
        .await;
    let hooks = format!("{}/hooks", s.receiver().uri());
    for (key, path) in [("agency-key", "agency"), ("rival-key", "rival")] {
        let (status, body) = submit_as(&s, key, &format!("{hooks}/{path}")).await;
        assert_eq!(status, 202, "{body:#}");
    }
    let received = wait_until(Duration::from_secs(15), "both callbacks", || async {
        let received = s.receiver().received_requests().await.unwrap_or_default();
        if received.len() >= 2 {
            Ok(received)
        } else {
            Err(format!("{} received", received.len()))
        }
    })
    .await;
    assert_eq!(received.len(), 2, "one callback per job");
    for request in &received {
        let signature = request
            .headers
            .get("faregate-signature")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("unsigned callback to {}", request.url));
        let (own, other) = match request.url.path() {
            "/hooks/agency" => (AGENCY_SECRET, GATEWAY_SECRET),
            "/hooks/rival" => (GATEWAY_SECRET, AGENCY_SECRET),
            path => panic!("a callback to {path}"),
        };
        assert!(
            signed_with(own, signature, &request.body),
            "{} is signed with its client's secret",
            request.url.path()
        );
        assert!(
            !signed_with(other, signature, &request.body),
            "{} fails the other receiver's check",
            request.url.path()
        );
    }
}

#[tokio::test]
async fn without_a_gateway_secret_only_a_client_with_its_own_may_ask_for_callbacks() {
    let s = stack(vec![("AGENCY_CALLBACK_SECRET", AGENCY_SECRET)]).await;
    let hooks = format!("{}/hooks", s.receiver().uri());

    let (status, body) = submit_as(&s, "agency-key", &format!("{hooks}/agency")).await;
    assert_eq!(status, 202, "{body:#}");
    let notice = json!({"tool": "search_flights", "callback_url": format!("{hooks}/agency"), "expires_in": "1h"});
    let (status, body) = post_as(&s, "agency-key", "/v1/back-in-service", notice).await;
    assert_eq!(status, 201, "{body:#}");

    let (status, body) = submit_as(&s, "rival-key", &format!("{hooks}/rival")).await;
    assert_eq!(status, 422, "{body:#}");
    assert_eq!(body["field"], "callback_url", "{body:#}");
    assert!(
        message(&body).contains("callbacks need a signing secret")
            && message(&body).contains("its own callback_secret_env"),
        "the refusal says both ways to fix it: {body:#}"
    );
    let notice = json!({"tool": "search_flights", "callback_url": format!("{hooks}/rival"), "expires_in": "1h"});
    let (status, body) = post_as(&s, "rival-key", "/v1/back-in-service", notice).await;
    assert_eq!(status, 422, "{body:#}");
    assert!(
        message(&body).contains("callbacks need a signing secret"),
        "{body:#}"
    );
}
