//! Each client's callbacks go only where its own `callback_allowlist` says, when its entry has
//! one: another client's receiver on the gateway's list is refused (at submission, naming only
//! the client's own entries, and again at delivery), while a client without a list of its own
//! keeps the gateway's.

use std::time::Duration;

use faregate::clients::{ClientName, Scope};
use faregate::config::ClientConfig;
use faregate::jobs::{JobStore, NewJob};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{message, post_as};
use crate::support::{MapEnv, Stack, in_days, wait_until};

/// `agency` has its own list (the receiver's `/agency/`); `rival` has none, so it keeps the
/// gateway's (the receiver's `/hooks/`, which the stack adds).
async fn stack() -> Stack {
    let receiver = MockServer::start().await;
    let agency_hooks = format!("{}/agency/", receiver.uri());
    let client = |name: &str, key: &str, own: Option<&str>| ClientConfig {
        callback_allowlist: own
            .map(|u| vec![reqwest::Url::parse(u).unwrap_or_else(|e| panic!("{e}"))]),
        ..crate::support::client(name, key, Scope::everything())
    };
    Stack::builder(23)
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", "s3")]))
        .callbacks_to(receiver)
        .config(move |mut c| {
            c.clients = vec![
                client("agency", "agency-key", Some(&agency_hooks)),
                client("rival", "rival-key", None),
            ];
            c
        })
        .jobs()
        .start()
        .await
}

fn hotels(callback: &str) -> Value {
    json!({"mode": "background",
           "arguments": {"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32)},
           "callback_url": callback})
}

async fn submit_as(s: &Stack, key: &str, callback: &str) -> (u16, Value) {
    post_as(s, key, "/v1/tools/search_hotels/call", hotels(callback)).await
}

/// The paths the receiver was posted to.
async fn posted(s: &Stack) -> Vec<String> {
    s.receiver()
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect()
}

#[tokio::test]
async fn a_client_with_its_own_list_may_not_aim_callbacks_at_another_clients_receiver() {
    let s = stack().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(s.receiver())
        .await;
    let base = s.receiver().uri();

    // The gateway's list names the rival's receiver; the agency's own list does not.
    let (status, body) = submit_as(&s, "agency-key", &format!("{base}/hooks/rival")).await;
    assert_eq!(status, 422, "{body:#}");
    assert_eq!(body["field"], "callback_url", "{body:#}");
    assert!(
        message(&body).contains("not on client agency's callback allowlist"),
        "{body:#}"
    );
    assert!(
        message(&body).ends_with(&format!("use a URL under one of: {base}/agency/")),
        "the refusal names the agency's entries only: {body:#}"
    );
    // So are its back-in-service notices.
    let (status, body) = post_as(
        &s,
        "agency-key",
        "/v1/back-in-service",
        json!({"tool": "search_flights", "callback_url": format!("{base}/hooks/rival")}),
    )
    .await;
    assert_eq!(status, 422, "{body:#}");
    assert!(message(&body).contains("client agency's"), "{body:#}");

    // Its own receiver gets its callback.
    let (status, body) = submit_as(&s, "agency-key", &format!("{base}/agency/done")).await;
    assert_eq!(status, 202, "{body:#}");
    // The rival, without a list of its own, keeps the gateway's, and not the agency's.
    let (status, body) = submit_as(&s, "rival-key", &format!("{base}/hooks/rival")).await;
    assert_eq!(status, 202, "{body:#}");
    let (status, body) = submit_as(&s, "rival-key", &format!("{base}/agency/x")).await;
    assert_eq!(status, 422, "{body:#}");
    assert!(
        message(&body).contains("not on the gateway's callback allowlist"),
        "{body:#}"
    );

    wait_until(Duration::from_secs(15), "both callbacks", || async {
        let mut seen = posted(&s).await;
        seen.sort();
        if seen == ["/agency/done", "/hooks/rival"] {
            Ok(())
        } else {
            Err(format!("{seen:?}"))
        }
    })
    .await;
}

#[tokio::test]
async fn at_delivery_a_clients_callback_is_held_to_its_own_list() {
    // A job stored with a URL its client's list does not name (accepted before a reload
    // narrowed the list, or by a replica that had not reloaded yet) is never posted.
    let s = stack().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(s.receiver())
        .await;
    let url = format!("{}/hooks/rival", s.receiver().uri());
    let mut ids = Vec::new();
    for client in ["agency", "rival"] {
        let (job, _) = s
            .store()
            .enqueue(
                NewJob {
                    tool: "search_hotels".into(),
                    arguments: hotels("")["arguments"].clone(),
                    call_id: None,
                    client: ClientName::stored(client),
                    idempotency_key: None,
                    callback_url: Some(url.clone()),
                    trace: None,
                },
                faregate::clock::epoch_ms(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        ids.push(job.id);
    }
    let [agency, rival] = &ids[..] else {
        panic!("two jobs")
    };
    let tried = |id: String| {
        let s = &s;
        async move {
            wait_until(Duration::from_secs(15), "the callback to be tried", || {
                let id = id.clone();
                async move {
                    let job = s
                        .store()
                        .get(&id)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"))
                        .unwrap_or_else(|| panic!("no job {id}"));
                    if job.callback_attempts > 0 || job.callback.as_str() == "sent" {
                        Ok(job)
                    } else {
                        Err(format!("{job:?}"))
                    }
                }
            })
            .await
        }
    };
    let agency_job = tried(agency.clone()).await;
    let rival_job = tried(rival.clone()).await;
    assert_eq!(rival_job.callback.as_str(), "sent", "{rival_job:?}");
    assert_ne!(agency_job.callback.as_str(), "sent", "{agency_job:?}");
    assert_eq!(
        agency_job.callback_error.as_deref(),
        Some("not sent: the URL is no longer on this client's callback allowlist"),
        "the job says why its callback was not sent"
    );
    assert_eq!(posted(&s).await, ["/hooks/rival"], "one post: the rival's");
}
