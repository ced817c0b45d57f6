//! When a caller or a job may come back: an interactive call's `retry_after_s` and a requeued
//! job's anchor heed what the providers said (a 429's `Retry-After`, a breaker's remaining open
//! time), across a provider chain, and a run of 429s with a wait pauses the breaker for it.

use super::*;
use crate::breaker::BreakerState;
use crate::call::answer::Verdict;
use crate::call::envelope::Status;

/// A background flight search that the breakers turned away without asking a provider: when
/// its job comes back (the test fails on any other verdict).
async fn job_anchor(gateway: &Arc<Gateway>) -> Duration {
    let verdict = gateway
        .run_background(request("search_flights", search_args()))
        .await;
    let Verdict::Later {
        anchor: Some(anchor),
        attempted: false,
        ..
    } = verdict
    else {
        panic!("later, anchored, no provider asked: {verdict:?}");
    };
    anchor
}

/// A provider that answers 429 `Retry-After: 20` (no longer than `open_for`, so no single one
/// opens the breaker) five times in a row pauses the breaker for those 20 s as a rate limit
/// (`retry_after`), not for a sick provider's 30 s (`consecutive_failures`) and its ramp:
/// meanwhile an interactive call is answered at once and a job waits for the pause's end, and
/// after it one successful call closes the breaker.
#[tokio::test(start_paused = true)]
async fn five_429s_with_a_retry_after_pause_the_breaker_for_it() {
    let limited = || {
        fail(
            ms(10),
            ErrorKind::RateLimited {
                retry_after: Some(secs(20)),
            },
        )
    };
    let duffel = Scripted::new([
        limited(),
        limited(),
        limited(),
        limited(),
        limited(),
        ok(ms(100), flights()),
    ]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let mut events = gateway.breakers().subscribe();
    for _ in 0..5 {
        let env = gateway
            .call(request("search_flights", search_args()))
            .await
            .expect("served");
        assert_eq!(
            (env.status, env.retry_after_s),
            (Status::Unavailable, Some(20)),
            "the 20 s does not fit the 12 s deadline: answered at once, {env:?}"
        );
    }
    let opened = events.try_recv().expect("the breaker opened");
    assert_eq!(
        (opened.from, opened.to, opened.reason.as_str()),
        (BreakerState::Closed, BreakerState::Open, "retry_after"),
        "{opened:?}"
    );
    let tool = gateway.tool("search_flights").expect("served");
    let breaker = &tool.breakers()[0];
    assert_eq!(breaker.remaining_open(Instant::now()), Some(secs(20)));

    let start = Instant::now();
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(Instant::now(), start, "answered at once");
    assert_eq!(
        (env.status, env.breaker.as_str(), env.retry_after_s),
        (Status::Unavailable, "open", Some(20))
    );
    let anchor = job_anchor(&gateway).await;
    assert!(
        anchor > secs(19) && anchor <= secs(20),
        "the job comes back when the pause ends: {anchor:?}"
    );
    assert_eq!(duffel.calls(), 5);

    tokio::time::sleep(secs(20)).await;
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Ok, "{env:?}");
    assert_eq!(env_breaker(&gateway), BreakerState::Closed, "no ramp");
}

/// Both providers of the chain answer 429, duffel asking for 25 s and amadeus for 40 s (each
/// shorter than `open_for`, so no breaker opens for it): the tool answers again when duffel
/// does, so the retry estimate is duffel's own 25 s, not a guess.
#[tokio::test(start_paused = true)]
async fn the_retry_estimate_heeds_every_failed_providers_retry_after() {
    let limited = |s| ErrorKind::RateLimited {
        retry_after: Some(secs(s)),
    };
    let duffel = Scripted::new([fail(ms(10), limited(25)), fail(ms(10), limited(25))]);
    let amadeus = Scripted::new([fail(ms(10), limited(40)), fail(ms(10), limited(40))]);
    let gateway = gateway(&[("duffel", &duffel), ("amadeus", &amadeus)]);
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 1));
    assert_eq!(env.retry_after_s, Some(25), "{env:?}");
}

/// Opens flight search's breakers as another replica's opens would: duffel's for 51 s,
/// amadeus's for 148 s.
fn open_chain(gateway: &Gateway) {
    let tool = gateway.tool("search_flights").expect("served");
    let now = Instant::now();
    for (provider, open_for) in [("duffel", secs(51)), ("amadeus", secs(148))] {
        let breaker = tool.breaker_on(provider).expect("in the chain");
        breaker.follow_open(now + open_for, true, now);
        assert_eq!(breaker.state(now), BreakerState::Open);
    }
}

/// Both breakers of the chain are open, duffel's reopening in 51 s and amadeus's in 148 s:
/// the tool answers again when duffel does, so the retry estimate is 51 s, not amadeus's.
#[tokio::test(start_paused = true)]
async fn the_retry_estimate_is_the_soonest_provider_of_the_chain_back() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let gateway = gateway(&[("duffel", &duffel), ("amadeus", &amadeus)]);
    open_chain(&gateway);
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");
    assert_eq!((duffel.calls(), amadeus.calls()), (0, 0));
    assert_eq!(env.retry_after_s, Some(51), "{env:?}");
    assert!(
        env.content.contains("back in about 51 seconds"),
        "{}",
        env.content
    );
}

/// The same chain for a background job: duffel's breaker reopens in 51 s, amadeus's in 148 s.
/// The job is requeued to when the chain may answer again, duffel's 51 s, not to the last
/// provider's (amadeus was refused last, and its breaker's wait was the anchor).
#[tokio::test(start_paused = true)]
async fn a_job_comes_back_when_the_soonest_provider_of_the_chain_is_back() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let gateway = gateway(&[("duffel", &duffel), ("amadeus", &amadeus)]);
    open_chain(&gateway);
    let anchor = job_anchor(&gateway).await;
    assert!(
        anchor > secs(50) && anchor <= secs(51),
        "anchored on duffel's reopening, the chain's soonest: {anchor:?}"
    );
    assert_eq!((duffel.calls(), amadeus.calls()), (0, 0));
}
