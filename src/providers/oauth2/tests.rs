//! The token source without a network: the answers it accepts and refuses, what a refusal's
//! detail says, and the single-flight slot, whose fetches are injected (on tokio's paused
//! clock where time matters).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn ok() -> StatusCode {
    StatusCode::OK
}

/// A token source whose endpoint is never asked (its fetches are injected).
fn source() -> TokenSource {
    let url = Url::parse("http://127.0.0.1:9/oauth/token").unwrap_or_else(|e| panic!("{e}"));
    TokenSource::new(
        "test",
        reqwest::Client::new(),
        url,
        (Secret::new("agent-app"), Secret::new("s3cr3t+p&ss/word-42")),
        crate::providers::rest::token_failure,
    )
}

fn token(value: &str, lifetime: Duration) -> Token {
    Token {
        value: Secret::new(value),
        refresh_at: Instant::now() + lifetime,
    }
}

#[test]
fn form_values_are_encoded() {
    assert_eq!(form_encode("TEST_KEY"), "TEST_KEY");
    assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
}

#[test]
fn a_lifetime_past_a_day_is_cut_to_a_day_instead_of_overflowing_the_clock() {
    let started = Instant::now();
    for expires_in in [
        "9223372036854775807",
        "18446744073709551615",
        "1e300",
        "86401",
    ] {
        let body =
            format!(r#"{{"access_token":"tkn","token_type":"Bearer","expires_in":{expires_in}}}"#);
        let token = issued(body.as_bytes(), ok(), started)
            .unwrap_or_else(|e| panic!("expires_in {expires_in}: {e}"));
        assert_eq!(
            token.refresh_at,
            started + MAX_LIFETIME - MAX_MARGIN,
            "expires_in {expires_in}: a day, refreshed a minute early"
        );
    }
}

#[test]
fn expires_in_may_be_a_string_of_digits_or_a_fraction_and_nothing_else() {
    let started = Instant::now();
    let lifetime = |expires_in: &str| {
        let body = format!(r#"{{"access_token":"tkn","expires_in":{expires_in}}}"#);
        issued(body.as_bytes(), ok(), started).map(|t| t.refresh_at - started)
    };
    // 10 % of the lifetime, at most 60 s, before the expiry.
    let refreshed = |secs: u64| {
        let life = Duration::from_secs(secs);
        life - (life / 10).min(MAX_MARGIN)
    };
    for (given, secs) in [
        (r#""3600""#, 3600),
        ("3599.9", 3599),
        ("1799", 1799),
        ("60", 60),
        ("1", 1),
        ("0.5", 3600),
        ("0", 3600),
        (r#""99999999999999999999999""#, 86400),
    ] {
        assert_eq!(lifetime(given).ok(), Some(refreshed(secs)), "{given}");
    }
    let absent = issued(br#"{"access_token":"tkn"}"#, ok(), started)
        .map(|t| t.refresh_at - started)
        .ok();
    assert_eq!(absent, Some(refreshed(3600)), "an hour when absent");
    for refused in [
        "-5",
        "-0.5",
        "null",
        "true",
        r#""""#,
        r#""1h""#,
        r#""-60""#,
        r#""36.5""#,
        "[60]",
    ] {
        let e = lifetime(refused)
            .err()
            .unwrap_or_else(|| panic!("{refused} accepted"));
        assert_eq!(e.kind, ErrorKind::Malformed, "{refused}");
        assert!(
            e.detail
                .starts_with("token endpoint: HTTP 200 body is not a token: ")
                && e.detail.contains("expires_in"),
            "{refused}: {}",
            e.detail
        );
    }
}

#[test]
fn a_token_no_header_can_carry_or_not_a_bearer_is_refused_when_it_comes() {
    let started = Instant::now();
    let refusal = |body: &str| {
        issued(body.as_bytes(), ok(), started)
            .err()
            .unwrap_or_else(|| panic!("accepted: {body}"))
    };
    let e = refusal(r#"{"access_token":"tkn-1\n","expires_in":3600}"#);
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(
        e.detail.contains("no HTTP header can carry"),
        "{}",
        e.detail
    );
    assert!(!e.detail.contains("tkn-1"), "never the token: {}", e.detail);
    let e = refusal(r#"{"access_token":"tkn\u0000x"}"#);
    assert!(
        e.detail.contains("no HTTP header can carry"),
        "{}",
        e.detail
    );

    let e = refusal(r#"{"access_token":"tkn","token_type":"mac"}"#);
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(
        e.detail.contains(r#"token_type is "mac""#) && e.detail.contains("bearer"),
        "{}",
        e.detail
    );
    for kind in [r#""Bearer""#, r#""bearer""#, r#""BEARER""#] {
        let body = format!(r#"{{"access_token":"tkn","token_type":{kind}}}"#);
        assert!(issued(body.as_bytes(), ok(), started).is_ok(), "{kind}");
    }
}

#[test]
fn a_refusal_names_the_oauth2_error_and_never_the_client_credentials() {
    let tokens = source();
    let sent = tokens.sent_credentials();
    // An endpoint that echoes the request's form back, in its description and as its body.
    let echo =
        "grant_type=client_credentials&client_id=agent-app&client_secret=s3cr3t%2Bp%26ss%2Fword-42";
    let body = serde_json::json!({
        "error": "invalid_client",
        "error_description": format!("bad client s3cr3t+p&ss/word-42 in {echo}\nagain"),
    })
    .to_string();
    let e = refused(
        crate::providers::rest::token_failure,
        StatusCode::UNAUTHORIZED,
        &HeaderMap::new(),
        Bytes::from(body),
        &sent,
    );
    assert_eq!(e.kind, ErrorKind::Misconfigured { status: 401 });
    assert!(
        e.detail
            .starts_with("token endpoint: HTTP 401: invalid_client: bad client [redacted] in "),
        "{}",
        e.detail
    );
    for secret in ["s3cr3t", "word-42", "agent-app", "\n"] {
        assert!(!e.detail.contains(secret), "{secret:?} in {}", e.detail);
    }

    // A classifier that copies the body (as Amadeus's does for a body it cannot read) gets it
    // redacted, and a code it already says is not said twice.
    fn verbatim(status: StatusCode, _: &HeaderMap, body: &[u8], _: SystemTime) -> UpstreamError {
        UpstreamError::new(
            ErrorKind::Rejected {
                message: "refused".into(),
            },
            format!(
                "token endpoint: HTTP {}: {}",
                status.as_u16(),
                String::from_utf8_lossy(body)
            ),
        )
    }
    let e = refused(
        verbatim,
        StatusCode::BAD_REQUEST,
        &HeaderMap::new(),
        Bytes::from(format!("invalid_scope {echo}&scope=flights%3Aread")),
        &sent,
    );
    assert_eq!(e.kind, ErrorKind::Misconfigured { status: 400 });
    assert_eq!(
        e.detail,
        "token endpoint: HTTP 400: invalid_scope grant_type=client_credentials&client_id=[redacted]&client_secret=[redacted]&scope=flights%3Aread"
    );
    let e = refused(
        verbatim,
        StatusCode::BAD_REQUEST,
        &HeaderMap::new(),
        Bytes::from_static(br#"{"error":"invalid_scope"}"#),
        &sent,
    );
    assert_eq!(
        e.detail,
        r#"token endpoint: HTTP 400: {"error":"invalid_scope"}"#
    );
}

/// Counts the fetches an injected start makes.
fn counted<'a>(
    starts: &'a AtomicUsize,
    fetch: impl Future<Output = Result<Token, UpstreamError>> + Send + 'static,
) -> impl FnOnce() -> BoxFuture<'static, Result<Token, UpstreamError>> + 'a {
    move || {
        starts.fetch_add(1, Ordering::SeqCst);
        fetch.boxed()
    }
}

#[tokio::test(start_paused = true)]
async fn a_fetch_that_ends_in_any_way_but_a_token_is_never_the_one_in_flight_again() {
    let tokens = source();
    let starts = AtomicUsize::new(0);

    // A panic (the overflow a lifetime of u64::MAX seconds used to cause) is an error once.
    let overflowing = async {
        Ok(Token {
            value: Secret::new("tkn"),
            refresh_at: Instant::now() + Duration::from_secs(u64::MAX),
        })
    };
    let panicked = tokens.get_or_start(counted(&starts, overflowing)).await;
    let e = panicked
        .err()
        .unwrap_or_else(|| panic!("a token from a panic"));
    assert!(e.detail.starts_with("token endpoint: "), "{}", e.detail);

    // An error.
    let failing = async { Err(UpstreamError::new(ErrorKind::Connect, "refused")) };
    assert!(
        tokens
            .get_or_start(counted(&starts, failing))
            .await
            .is_err()
    );

    // A hung endpoint: its own timeout ends it, saying so.
    let hung = tokens
        .get_or_start(counted(&starts, futures::future::pending()))
        .await;
    let e = hung.err().unwrap_or_else(|| panic!("a token from nowhere"));
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert_eq!(e.detail, "token endpoint: no answer within 10s");

    // Each of them left the slot: the next call starts a fetch of its own, and its token is
    // kept for the calls after it.
    let fine = async { Ok(token("tkn", Duration::from_secs(3600))) };
    let got = tokens.get_or_start(counted(&starts, fine)).await;
    assert_eq!(got.map(|t| t.value).ok(), Some(Secret::new("tkn")));
    assert_eq!(starts.load(Ordering::SeqCst), 4, "one fetch per call");
    let again = tokens
        .get_or_start(counted(&starts, futures::future::pending()))
        .await;
    assert!(again.is_ok());
    assert_eq!(starts.load(Ordering::SeqCst), 4, "the kept token");
}

#[tokio::test(start_paused = true)]
async fn a_fetch_outlives_its_cancelled_waiters_and_concurrent_callers_share_it() {
    let tokens = source();
    let starts = AtomicUsize::new(0);
    let (answer, answered) = tokio::sync::oneshot::channel::<()>();
    let fetch = async move {
        let _ = answered.await;
        Ok(token("tkn", Duration::from_secs(3600)))
    };
    // The caller that started it gives up (its attempt timed out) before the token comes.
    let gave_up = tokio::time::timeout(
        Duration::from_secs(1),
        tokens.get_or_start(counted(&starts, fetch)),
    )
    .await;
    assert!(gave_up.is_err());
    // Callers now join the same fetch, which still runs.
    let waiters: Vec<_> = (0..5)
        .map(|_| tokens.get_or_start(counted(&starts, futures::future::pending())))
        .collect();
    let _ = answer.send(());
    for got in futures::future::join_all(waiters).await {
        assert_eq!(got.map(|t| t.value).ok(), Some(Secret::new("tkn")));
    }
    assert_eq!(starts.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_token_fetched_with_no_one_waiting_is_kept() {
    let tokens = source();
    let starts = AtomicUsize::new(0);
    let fetch = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        Ok(token("tkn", Duration::from_secs(3600)))
    };
    let gave_up = tokio::time::timeout(
        Duration::from_secs(1),
        tokens.get_or_start(counted(&starts, fetch)),
    )
    .await;
    assert!(gave_up.is_err());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        lock(&tokens.slot).inflight.is_none(),
        "the finished fetch left"
    );
    let got = tokens
        .get_or_start(counted(&starts, futures::future::pending()))
        .await;
    assert!(got.is_ok());
    assert_eq!(starts.load(Ordering::SeqCst), 1);
}
