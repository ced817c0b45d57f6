//! A client's share of a provider's rate-limit window: while the provider's latest
//! announcement shows its window at or below the reserve, a client that sent more than its
//! fair part of this replica's requests to it in the window is refused before anything is sent
//! (`rejected` naming the limit, `Retry-After` until the reset; no breaker told), another client
//! still goes through, the chain moves on to its next provider (another quota), and a job is
//! requeued without an attempt until the reset. Once the window has reset nobody is refused.

use super::*;
use crate::call::answer::Verdict;
use crate::call::envelope::{Envelope, Status};
use crate::clients::ProviderReserve;
use crate::providers::limits::Reading;

/// A gateway over the shipped configuration served by `providers`, every client held to its
/// share of a provider's window below the default reserve (a fifth); and its telemetry.
fn gateway_with_reserve(providers: &[(&str, &Arc<Scripted>)]) -> (Arc<Gateway>, Arc<Telemetry>) {
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(&config(), &upstreams(providers), Arc::clone(&telemetry))
        .unwrap_or_else(|e| panic!("{e:?}"));
    gateway.set_provider_reserve(Some(ProviderReserve::DEFAULT));
    (Arc::new(gateway), telemetry)
}

/// Duffel announces a window of 30 with `remaining` left, resetting in 40 s.
fn duffel_announces(gateway: &Gateway, remaining: u32) {
    let reading = Reading {
        limit: 30,
        remaining,
        reset_in: secs(40),
    };
    gateway
        .rate_limits()
        .record("duffel", reading, Instant::now());
}

/// `n` searches of `of`, one after the other, each answered.
async fn searches(gateway: &Arc<Gateway>, of: &str, n: i64) {
    for days in 0..n {
        let answered = gateway
            .call(search_of(of, 30 + days))
            .await
            .expect("served");
        assert_eq!(answered.status, Status::Ok, "{answered:?}");
    }
}

/// `series` as `/metrics` shows it now.
fn counted(telemetry: &Telemetry, series: &str) -> bool {
    telemetry.metrics().render().lines().any(|l| l == series)
}

/// Globex sent the window's first request (before any answer announced the window), acme the
/// next 5 while duffel had plenty left; then duffel says 6 of 30 are left (the reserve).
async fn acme_spends_the_window(gateway: &Arc<Gateway>) {
    searches(gateway, "globex", 1).await;
    duffel_announces(gateway, 24);
    searches(gateway, "acme", 5).await;
    duffel_announces(gateway, 6);
}

#[tokio::test(start_paused = true)]
async fn a_client_over_its_share_of_a_low_window_is_refused_and_another_client_is_not() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let (gateway, telemetry) = gateway_with_reserve(&[("duffel", &duffel)]);
    acme_spends_the_window(&gateway).await;
    let tool = gateway.tool("search_flights").expect("served");
    let before = tool.breakers()[0].snapshot(Instant::now()).calls_in_window;

    let refused = gateway.call(search_of("acme", 40)).await.expect("served");
    assert_eq!(refused.status, Status::Rejected, "{refused:?}");
    assert_eq!(refused.limit.as_deref(), Some("client_share_of_provider"));
    assert_eq!(refused.retry_after_s, Some(40), "until the window resets");
    assert_eq!((refused.provider.as_deref(), refused.data), (None, None));
    assert_eq!(
        refused.content,
        "search_flights was not called: this client sent 5 of the 6 requests this gateway sent to duffel in duffel's current rate-limit window, more than its fair part (1/2: 2 clients are calling duffel), and duffel has 6 of its 30 requests left ([limits] provider_reserve = 0.2). duffel's quota is shared by every client of this gateway, so what is left is kept for the others. Nothing was sent, and the tool itself is not failing. Slow down: make fewer search_flights calls, and call again in 40 s, when duffel's window resets."
    );
    assert_eq!(duffel.calls(), 6, "nothing was sent");

    // The other client, under its half, is answered by the provider.
    let answered = gateway.call(search_of("globex", 41)).await.expect("served");
    assert_eq!(answered.status, Status::Ok, "{answered:?}");
    assert_eq!(duffel.calls(), 7);

    // The breaker heard of globex's call only: the refusal was acme's doing.
    let snapshot = tool.breakers()[0].snapshot(Instant::now());
    assert_eq!(snapshot.state, crate::breaker::BreakerState::Closed);
    assert_eq!(snapshot.calls_in_window, before + 1);
    for series in [
        "faregate_client_limited_total{limit=\"client_share_of_provider\"} 1",
        "faregate_tool_calls_total{provider=\"none\",status=\"rejected\",tool=\"search_flights\"} 1",
    ] {
        assert!(counted(&telemetry, series), "{series}");
    }

    // Once the window has reset (and no answer has told of the new one yet), the announcement
    // is stale: nobody is refused.
    tokio::time::sleep(secs(40)).await;
    let again = gateway.call(search_of("acme", 42)).await.expect("served");
    assert_eq!(again.status, Status::Ok, "{again:?}");
}

#[tokio::test(start_paused = true)]
async fn above_the_reserve_or_with_one_client_nobody_is_refused() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let (gateway, _) = gateway_with_reserve(&[("duffel", &duffel)]);
    duffel_announces(&gateway, 24);
    searches(&gateway, "acme", 5).await;
    searches(&gateway, "globex", 1).await;
    // 7 of 30 left is above the reserve (6): acme, over its half, still calls.
    duffel_announces(&gateway, 7);
    searches(&gateway, "acme", 1).await;

    // Alone in a window, however low, a client is never refused.
    let alone = Scripted::new([ok(ms(10), flights())]);
    let (gateway, _) = gateway_with_reserve(&[("duffel", &alone)]);
    duffel_announces(&gateway, 24);
    searches(&gateway, "acme", 5).await;
    duffel_announces(&gateway, 0);
    searches(&gateway, "acme", 1).await;
    assert_eq!(alone.calls(), 6);
}

/// The chain goes on: the next provider has a quota of its own.
#[tokio::test(start_paused = true)]
async fn a_client_over_its_share_of_one_provider_is_served_by_the_next() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let amadeus = Scripted::new([ok(ms(10), flights())]);
    let (gateway, telemetry) = gateway_with_reserve(&[("duffel", &duffel), ("amadeus", &amadeus)]);
    acme_spends_the_window(&gateway).await;
    assert_eq!(amadeus.calls(), 0);

    let answered: Envelope = gateway.call(search_of("acme", 40)).await.expect("served");
    assert_eq!(answered.status, Status::Ok, "{answered:?}");
    assert_eq!(answered.provider.as_deref(), Some("amadeus"));
    assert_eq!((duffel.calls(), amadeus.calls()), (6, 1));
    assert!(counted(
        &telemetry,
        "faregate_client_limited_total{limit=\"client_share_of_provider\"} 0"
    ));
}

/// A job of a client over its share: later, silently, no attempt counted, anchored on the
/// window's reset; nothing sent, and no 429 for the pacer to learn from.
#[tokio::test(start_paused = true)]
async fn a_job_of_a_client_over_its_share_waits_for_the_reset_without_an_attempt() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let (gateway, _) = gateway_with_reserve(&[("duffel", &duffel)]);
    acme_spends_the_window(&gateway).await;
    let verdict = gateway.run_background(search_of("acme", 40)).await;
    let Verdict::Later {
        anchor: Some(anchor),
        attempted: false,
        rate_limited: None,
        error,
    } = verdict
    else {
        panic!("later, no attempt: {verdict:?}");
    };
    assert_eq!(anchor, secs(40));
    assert_eq!(
        error,
        "not run: this job's client had sent 5 of the 6 requests this gateway sent to duffel in its rate-limit window, more than its fair part (1/2), with 6 of 30 left ([limits] provider_reserve = 0.2); nothing was sent, and the job waits for the window to reset in 40 s"
    );
    assert_eq!(duffel.calls(), 6);
    // Globex's job runs.
    let verdict = gateway.run_background(search_of("globex", 41)).await;
    assert!(matches!(verdict, Verdict::Done(_)), "{verdict:?}");
    assert_eq!(duffel.calls(), 7);
}

/// An attempt the breaker refuses was not sent: it is not counted as the client's request.
#[tokio::test(start_paused = true)]
async fn an_attempt_the_breaker_refuses_is_not_counted_as_sent() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let (gateway, _) = gateway_with_reserve(&[("duffel", &duffel)]);
    duffel_announces(&gateway, 24);
    searches(&gateway, "acme", 1).await;
    searches(&gateway, "globex", 1).await;
    let tool = gateway.tool("search_flights").expect("served");
    let now = Instant::now();
    tool.breakers()[0].force(crate::breaker::ForceMode::Open, now);
    for days in 0..5 {
        let refused = gateway
            .call(search_of("globex", 50 + days))
            .await
            .expect("served");
        assert_eq!(refused.status, Status::Unavailable, "{refused:?}");
    }
    tool.breakers()[0].force(crate::breaker::ForceMode::Auto, Instant::now());
    // Globex's refused calls were not its requests: 1 of 2 is its half, not more.
    duffel_announces(&gateway, 1);
    searches(&gateway, "globex", 1).await;
    assert_eq!(duffel.calls(), 3);
}

/// Two identical reads that come together, the first of a client over its share of every
/// provider: it is refused before it leads a shared call, so the second (another client's)
/// leads its own, is answered by the provider, and is not handed the first one's refusal.
#[tokio::test(start_paused = true)]
async fn a_refused_read_hands_its_refusal_to_no_one_who_asked_the_same() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let (gateway, _) = gateway_with_reserve(&[("duffel", &duffel)]);
    acme_spends_the_window(&gateway).await;
    // Both futures are polled before any task runs: the second would join a call the first
    // had started.
    let (acme, globex) = tokio::join!(
        gateway.call(search_of("acme", 40)),
        gateway.call(search_of("globex", 40)),
    );
    let (acme, globex) = (acme.expect("served"), globex.expect("served"));
    assert_eq!(acme.limit.as_deref(), Some("client_share_of_provider"));
    assert_eq!(globex.status, Status::Ok, "{globex:?}");
    assert_eq!(duffel.calls(), 7, "globex's call was sent");
}

/// A call let in whose provider fails is retried even when the window ran low meanwhile: the
/// retry is counted, not refused, so the call's answer is the provider's, not "not called".
#[tokio::test(start_paused = true)]
async fn a_retry_of_a_call_let_in_is_not_refused() {
    let mut script = vec![ok(ms(10), flights()); 6];
    script.extend([fail(ms(100), server_error()), ok(ms(10), flights())]);
    let duffel = Scripted::new(script);
    let (gateway, _) = gateway_with_reserve(&[("duffel", &duffel)]);
    searches(&gateway, "globex", 1).await;
    duffel_announces(&gateway, 24);
    searches(&gateway, "acme", 5).await;
    // Acme's next call is let in (7 of 30 left); the window runs low while its first attempt
    // waits on duffel, which then fails it.
    duffel_announces(&gateway, 7);
    let call = tokio::spawn({
        let gateway = Arc::clone(&gateway);
        async move { gateway.call(search_of("acme", 40)).await }
    });
    tokio::time::sleep(ms(50)).await;
    duffel_announces(&gateway, 6);
    let answered = call.await.expect("ran").expect("served");
    assert_eq!(answered.status, Status::Ok, "{answered:?}");
    assert_eq!(duffel.calls(), 8, "the retry was sent");
    // The next call is refused: the retry was counted (acme 7 of 8).
    let refused = gateway.call(search_of("acme", 41)).await.expect("served");
    assert_eq!(refused.limit.as_deref(), Some("client_share_of_provider"));
}
