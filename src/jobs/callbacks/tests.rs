use serde_json::{Value, json};

use super::*;
use crate::clients::ClientName;
use crate::jobs::store::{CallbackState, JobStatus};

#[test]
fn signatures_follow_the_documented_scheme() {
    // Computed independently with Python's hmac module:
    // hmac.new(b"secret", b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
    assert_eq!(
        sign(b"secret", 1_700_000_000, br#"{"a":1}"#),
        "t=1700000000,v1=49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686"
    );
}

#[test]
fn deliveries_wait_twice_as_long_each_time_then_give_up() {
    let waits: Vec<Option<u64>> = (1..=ATTEMPTS)
        .map(|failed| next_delivery_in(failed).map(|d| d.as_secs()))
        .collect();
    assert_eq!(
        waits,
        [
            Some(1),
            Some(2),
            Some(4),
            Some(8),
            Some(16),
            Some(32),
            Some(64),
            None
        ]
    );
}

#[test]
fn every_delivery_is_counted_as_sent_retried_or_given_up() {
    let outcomes: Vec<CallbackOutcome> = (1..=ATTEMPTS)
        .map(|failed| delivery_outcome(false, next_delivery_in(failed)))
        .collect();
    let mut expected = vec![CallbackOutcome::Retry; ATTEMPTS as usize - 1];
    expected.push(CallbackOutcome::Failed);
    assert_eq!(outcomes, expected, "the eighth failure gives up");
    assert_eq!(delivery_outcome(true, None), CallbackOutcome::Sent);
}

fn dead_job(call_id: Option<&str>, result: Option<Value>) -> Job {
    Job {
        id: "0190a000-0000-7000-8000-000000000001".into(),
        tool: "book_flight".into(),
        arguments: json!({}),
        call_id: call_id.map(str::to_string),
        client: crate::clients::ClientName::local(),
        idempotency_key: Some("k".into()),
        callback_url: Some("https://chat.example.com/hooks/x".into()),
        status: JobStatus::Dead,
        attempts: 20,
        next_attempt_at_ms: 0,
        lease_owner: None,
        lease_until_ms: None,
        created_at_ms: 0,
        updated_at_ms: 0,
        result,
        last_error: Some("gave up after 20 attempts; last error: duffel: 503".into()),
        callback: CallbackState::Pending,
        callback_attempts: 0,
        next_callback_at_ms: Some(0),
        callback_error: None,
        trace: None,
    }
}

fn parsed(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_body_is_the_stored_envelope() {
    let stored = json!({"call_id": "c-1", "tool": "book_flight", "status": "rejected",
                        "content": "The provider refused …", "job_id": "j"});
    assert_eq!(
        parsed(&body(&dead_job(Some("c-1"), Some(stored.clone())))),
        stored
    );
}

#[test]
fn a_job_given_up_without_an_envelope_gets_an_unavailable_one() {
    let expected = |call_id: &str| {
        json!({
            "call_id": call_id,
            "tool": "book_flight",
            "status": "unavailable",
            "content": "gave up after 20 attempts; last error: duffel: 503",
            "data": null,
            "stale_age_s": null,
            "cached_age_s": null,
            "retry_after_s": null,
            "breaker": "",
            "job_id": "0190a000-0000-7000-8000-000000000001",
            "provider": null,
        })
    };
    assert_eq!(parsed(&body(&dead_job(Some("c-1"), None))), expected("c-1"));
    assert_eq!(
        parsed(&body(&dead_job(None, None))),
        expected("0190a000-0000-7000-8000-000000000001"),
        "without the caller's call id, the job id the queued answer carried"
    );
}

#[tokio::test]
async fn a_failed_delivery_says_why_without_the_receivers_url() {
    // `localhost` is on the allowlist, but the guarded resolver never connects to a private
    // address: the delivery fails, and its reason (logged, and kept on the job) says so.
    let allowlist = Allowlists::from(vec![
        Url::parse("http://localhost/hooks/").unwrap_or_else(|e| panic!("{e}")),
    ])
    .of(&ClientName::local());
    let http = guard::client().unwrap_or_else(|e| panic!("{e}"));
    let secret = crate::secret::Secret::new("s");
    let failed = post_signed(
        &http,
        "http://localhost/hooks/SECRET-TOKEN?sig=abc",
        &allowlist,
        &secret,
        b"{}".to_vec(),
    )
    .await;
    let why = failed
        .err()
        .unwrap_or_else(|| panic!("delivered to a private address"));
    assert!(
        why.starts_with("could not reach the receiver: ")
            && why.contains("resolves only to private or local addresses"),
        "the cause is named, not only reqwest's outer text: {why}"
    );
    assert!(!why.contains("SECRET-TOKEN"), "{why}");
    assert!(!why.contains("sig=abc"), "{why}");
}

#[test]
fn a_receiver_is_named_by_its_host_and_port_only() {
    for (url, host) in [
        (
            "https://user:pw@hooks.example.com:8443/hooks/SECRET?token=abc#f",
            "hooks.example.com:8443",
        ),
        (
            "https://hooks.example.com/hooks/x?sig=1",
            "hooks.example.com",
        ),
        ("https://hooks.example.com:443/x", "hooks.example.com"),
        ("http://[::1]:9000/x", "[::1]:9000"),
        ("http://10.0.0.7/x", "10.0.0.7"),
        ("not a url", "?"),
    ] {
        assert_eq!(receiver_host(url), host, "{url}");
    }
}

/// A failed delivery's line names the receiver's host (and port), so an operator sees which
/// receiver fails, and never the rest of its URL; a job's line names the job and its client.
#[tokio::test]
async fn a_failed_delivery_is_logged_with_the_receivers_host_only() {
    let logs = crate::telemetry::captured::capture();
    let url = "https://user:pw@hooks.example.com:8443/hooks/SECRET-TOKEN?sig=abc";
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = format!("sqlite://{}", dir.path().join("jobs.db").display());
    let sender = Sender {
        store: Store::open(&db).await.unwrap_or_else(|e| panic!("{e}")),
        allowlists: Allowlists::from(Vec::new()),
        signing: Signing::from(Some(crate::secret::Secret::new("s"))),
        // No callback client: the delivery fails before any connection.
        http: None,
        telemetry: Arc::new(Telemetry::new(crate::telemetry::AlertRules::spec())),
        unstored: super::super::land::Unstored::default(),
        wake: Default::default(),
        deliveries: super::deliveries(),
    };
    let job = Job {
        callback_url: Some(url.into()),
        ..dead_job(Some("c-1"), None)
    };
    assert!(sender.deliver(&job).await.is_err());

    let notices =
        notice::NoticeSender::new(Vec::<Url>::new(), Some(crate::secret::Secret::new("s")));
    let delivered = notices
        .deliver(&ClientName::local(), url, b"{}".to_vec())
        .await;
    assert!(delivered.is_err(), "not on the allowlist");

    for (what, lines) in [
        ("job", logs.lines_with("callback not delivered")),
        ("notice", logs.lines_with("notice callback not delivered")),
    ] {
        assert!(!lines.is_empty(), "no {what} line");
        for line in lines {
            assert!(
                line.contains("host=hooks.example.com:8443"),
                "{what}: {line}"
            );
            assert!(line.contains("client=\"local\""), "{what}: {line}");
            for secret in ["user", "pw@", "SECRET-TOKEN", "sig=abc", "/hooks"] {
                assert!(!line.contains(secret), "{what}: {line}");
            }
        }
    }
    assert!(
        logs.lines_with("callback not delivered")
            .iter()
            .any(|l| l.contains(&format!("job={}", job.id))),
        "the job's line names it"
    );
}
