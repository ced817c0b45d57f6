//! SSRF guards on callbacks: the allowlist (scheme, host, port, path prefix), host names that
//! resolve to private addresses (refused at submission with a 422, and again at delivery), and
//! redirects (never followed).

use std::time::Duration;

use faregate::jobs::{Job, JobStore, NewJob};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{MapEnv, Stack, in_days, wait_until};

/// A stack with a job store and a callback receiver on the allowlist, plus `extra_allow`
/// entries (`{port}` stands for the receiver's port).
async fn stack(extra_allow: &[&str]) -> Stack {
    let receiver = MockServer::start().await;
    let port = receiver.address().port().to_string();
    let extra: Vec<reqwest::Url> = extra_allow
        .iter()
        .map(|a| a.replace("{port}", &port))
        .map(|u| reqwest::Url::parse(&u).unwrap_or_else(|e| panic!("{u}: {e}")))
        .collect();
    Stack::builder(21)
        .env(MapEnv(vec![("FAREGATE_CALLBACK_SECRET", "s3")]))
        .callbacks_to(receiver)
        .config(move |mut config| {
            config.auth.callback_allowlist.extend(extra);
            config
        })
        .jobs()
        .start()
        .await
}

fn hotels(callback: &str) -> Value {
    json!({"arguments": {"city_code": "PAR", "check_in_date": in_days(30), "check_out_date": in_days(32)},
           "callback_url": callback})
}

/// Submits a background hotel search whose result goes to `callback`.
async fn submit(s: &Stack, callback: &str) -> (u16, Value) {
    s.submit("search_hotels", hotels(callback)).await
}

/// Waits until the job's callback has been tried (sent or failed at least once).
async fn callback_tried(s: &Stack, id: &str) -> Job {
    wait_until(
        Duration::from_secs(15),
        "the callback to be tried",
        || async {
            let job = s
                .store()
                .get(id)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|| panic!("no job {id}"));
            if job.callback_attempts > 0 || job.callback.as_str() == "sent" {
                Ok(job)
            } else {
                Err(format!("{job:?}"))
            }
        },
    )
    .await
}

#[tokio::test]
async fn callback_urls_off_the_allowlist_or_resolving_inward_get_422_at_submission() {
    let s = stack(&["http://localhost:{port}/hooks/"]).await;
    let port = s.receiver().address().port();
    let cases = [
        (
            format!("http://127.0.0.1:{port}/elsewhere"),
            "not on the gateway's callback allowlist",
        ),
        (
            format!("https://127.0.0.1:{port}/hooks/x"),
            "not on the gateway's callback allowlist",
        ),
        (
            "http://169.254.169.254/hooks/".to_string(),
            "not on the gateway's callback allowlist",
        ),
        (
            format!("http://localhost:{port}/hooks/x"),
            "a private or local address",
        ),
        ("not a url".to_string(), "callback_url is not a URL"),
    ];
    for (url, expected) in cases {
        let (status, body) = submit(&s, &url).await;
        assert_eq!(status, 422, "{url}: {body}");
        assert_eq!(body["field"], "callback_url", "{body}");
        let message = body["message"].as_str().unwrap_or("");
        assert!(message.contains(expected), "{url}: {message}");
    }
    // The allowlisted address itself is the operator's explicit choice.
    let (status, body) = submit(&s, &format!("{}/hooks/ok", s.receiver().uri())).await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn a_redirecting_receiver_is_not_followed() {
    let s = stack(&[]).await;
    Mock::given(method("POST"))
        .and(path("/hooks/moved"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/hooks/inner"))
        .mount(s.receiver())
        .await;
    Mock::given(method("POST"))
        .and(path("/hooks/inner"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(s.receiver())
        .await;
    let (status, body) = submit(&s, &format!("{}/hooks/moved", s.receiver().uri())).await;
    assert_eq!(status, 202, "{body}");
    let id = body["job_id"].as_str().unwrap_or_default().to_string();
    let job = callback_tried(&s, &id).await;
    assert_ne!(
        job.callback.as_str(),
        "sent",
        "a 307 is not a delivery: {job:?}"
    );
    let seen: Vec<String> = s
        .receiver()
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert_eq!(seen, ["/hooks/moved"], "the redirect was not followed");
}

#[tokio::test]
async fn at_delivery_a_name_resolving_inward_is_not_contacted() {
    // A job stored with such a URL (by an older version, or before the allowlist changed)
    // is still never posted: the callback client's resolver drops private addresses.
    let s = stack(&["http://localhost:{port}/hooks/"]).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(s.receiver())
        .await;
    let port = s.receiver().address().port();
    let (job, _) = s
        .store()
        .enqueue(
            NewJob {
                tool: "search_hotels".into(),
                arguments: hotels("")["arguments"].clone(),
                call_id: None,
                client: faregate::clients::ClientName::local(),
                idempotency_key: None,
                callback_url: Some(format!("http://localhost:{port}/hooks/x")),
                trace: None,
            },
            faregate::clock::epoch_ms(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let tried = callback_tried(&s, &job.id).await;
    assert_eq!(tried.status.as_str(), "succeeded", "{tried:?}");
    assert_ne!(tried.callback.as_str(), "sent", "{tried:?}");
    assert!(
        s.receiver()
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}
