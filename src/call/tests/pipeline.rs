//! `pipeline::run` on one served tool: retries and their waits, the deadline, the bulkhead,
//! fail-over, refusals, and a background job's 429.

use super::*;
use crate::call::outcome::{Failure, Success};
use crate::call::pipeline::{self, CallTag, Context, Share};
use crate::tools::CallMode;

/// Runs `tool` once on `args`, with the tool's deadline from now.
async fn run(
    tool: &ServedTool,
    args: Value,
    mode: CallMode,
    observer: &Observer,
    jitter: &SplitMix,
) -> Result<Success, Failure> {
    let deadline = Instant::now() + tool.deadline(None);
    run_until(tool, args, mode, (observer, jitter), deadline).await
}

/// Runs `tool` once on `args` until `deadline`.
async fn run_until(
    tool: &ServedTool,
    args: Value,
    mode: CallMode,
    (observer, jitter): (&Observer, &SplitMix),
    deadline: Instant,
) -> Result<Success, Failure> {
    let key = tool.spec.needs_idempotency_key.then_some("key-1");
    let request = tool
        .check(args, Gateway::today(), key)
        .unwrap_or_else(|e| panic!("{e}"));
    let rate_limits = crate::providers::RateLimits::default();
    let cx = Context {
        observer,
        jitter,
        rate_limits: &rate_limits,
        steps: None,
        maintenance: &crate::maintenance::Schedule::default(),
        provider_reserve: None,
        call: CallTag::default(),
    };
    pipeline::run(tool, &request, deadline, mode, Share::Free, cx).await
}

/// An interactive `search_flights` call of `tool`.
async fn search(tool: &ServedTool) -> Result<Success, Failure> {
    run(
        tool,
        search_args(),
        CallMode::Interactive,
        &observer(),
        &jitter(),
    )
    .await
}

/// `actual` is `expected`, give or take the paused clock's step: it advances to timers in whole
/// milliseconds, so a jittered wait ends on the next one.
fn about(actual: Duration, expected: Duration) {
    assert!(
        actual >= expected && actual < expected + ms(1),
        "{actual:?}, expected {expected:?}"
    );
}

/// The provider a failure names and its error kind.
fn upstream_error(failure: &Failure) -> Option<(&str, &str)> {
    match failure {
        Failure::Upstream {
            provider, error, ..
        } => Some((provider, error.kind.as_str())),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_waits_its_full_jitter_backoff_then_succeeds() {
    let duffel = Scripted::new([fail(ms(100), server_error()), ok(ms(50), flights())]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let start = Instant::now();
    let success = search(&tool).await.expect("the retry succeeds");
    // The first retry waits uniformly below the first ceiling (100 ms), drawn from the seed.
    let wait = tool
        .config
        .retry
        .backoff()
        .full_jitter(0, SplitMix::new(SEED).next_unit());
    assert!(wait <= ms(100));
    let started = duffel.started();
    assert_eq!(started.len(), 2);
    about(started[1] - started[0], ms(100) + wait);
    about(Instant::now() - start, ms(150) + wait);
    assert_eq!(success.provider, "duffel");
}

#[tokio::test(start_paused = true)]
async fn the_providers_retry_after_is_waited_instead_of_the_backoff() {
    let limited = ErrorKind::RateLimited {
        retry_after: Some(secs(2)),
    };
    let duffel = Scripted::new([fail(ms(0), limited), ok(ms(0), flights())]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let result = search(&tool).await;
    assert!(result.is_ok());
    let started = duffel.started();
    assert_eq!(started[1] - started[0], secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_deadline_answers_at_once() {
    let limited = ErrorKind::RateLimited {
        retry_after: Some(secs(30)),
    };
    let duffel = Scripted::new([fail(ms(0), limited)]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let start = Instant::now();
    let failure = search(&tool).await.expect_err("no answer");
    assert_eq!(upstream_error(&failure), Some(("duffel", "rate_limited")));
    assert_eq!(duffel.calls(), 1);
    assert_eq!(Instant::now(), start, "the wait does not fit in 12 s");
}

/// Each attempt gets `min(timeout, deadline left)`: a hanging provider is attempted twice and
/// the call answers exactly at its 12 s deadline, not at two 8 s timeouts.
#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_every_attempt() {
    let duffel = Scripted::new([Step::Hang]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let start = Instant::now();
    let failure = search(&tool).await.expect_err("no answer");
    assert_eq!(upstream_error(&failure), Some(("duffel", "timeout")));
    let started = duffel.started();
    assert_eq!(started.len(), 2);
    assert!(started[1] - start >= secs(8), "the first attempt timed out");
    assert_eq!(
        Instant::now() - start,
        secs(12),
        "the deadline, to the nanosecond"
    );
    assert_eq!(duffel.answered(), 0);
}

/// A provider's own `timeout` caps each attempt under the tool's 8 s: a hanging provider
/// capped at 3 s is attempted at 0 s and 3 s (plus the retry's wait), and never for 8 s.
#[tokio::test(start_paused = true)]
async fn a_providers_timeout_caps_each_attempt_under_the_tools() {
    let duffel = Scripted::new([Step::Hang, Step::Hang]);
    let caps = BTreeMap::from([("duffel".to_string(), secs(3))]);
    let tool = served_capped(
        &tool_config("search_flights"),
        &[("duffel", &duffel)],
        &caps,
    );
    let start = Instant::now();
    let failure = search(&tool).await.expect_err("no answer");
    assert_eq!(upstream_error(&failure), Some(("duffel", "timeout")));
    let started = duffel.started();
    assert_eq!(started.len(), 2);
    assert!(
        started[1] - start >= secs(3) && started[1] - start < secs(8),
        "the first attempt ended at its provider's 3 s: {:?}",
        started[1] - start
    );
    assert!(Instant::now() - started[1] <= secs(3), "the second too");
    assert!(
        Instant::now() - start < secs(12),
        "well before the deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_answers_at_once_without_asking_the_provider() {
    let mut config = tool_config("search_flights");
    config.max_concurrent = 1;
    let duffel = Scripted::new([Step::Hang]);
    let tool = served(&config, &[("duffel", &duffel)]);
    let holder = Arc::clone(&tool);
    let held = tokio::spawn(async move { search(&holder).await });
    tokio::time::sleep(ms(1)).await;
    assert_eq!(tool.in_flight(), 1);
    let start = Instant::now();
    let failure = search(&tool).await.expect_err("the bulkhead is full");
    assert!(matches!(failure, Failure::BulkheadFull));
    assert_eq!(Instant::now(), start);
    assert_eq!(duffel.calls(), 1, "only the call holding the slot");
    held.abort();
    let _ = held.await;
    assert_eq!(tool.in_flight(), 0, "the aborted call gave its slot back");
}

/// With another provider next in the chain, a failure fails over instead of retrying.
#[tokio::test(start_paused = true)]
async fn a_failing_provider_fails_over_to_the_next_without_a_retry() {
    let duffel = Scripted::new([fail(ms(100), server_error())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let tool = served(
        &tool_config("search_flights"),
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let start = Instant::now();
    let success = search(&tool).await.expect("the second provider answers");
    assert_eq!(success.provider, "amadeus");
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 1));
    assert_eq!(Instant::now() - start, ms(150));
}

/// A caller's deadline that the first provider's timeout used up leaves the next one no time:
/// the answer is the first provider's timeout (it is what failed), not a passed deadline that
/// would name no failure.
#[tokio::test(start_paused = true)]
async fn a_deadline_used_up_by_a_provider_answers_with_its_failure() {
    let duffel = Scripted::new([Step::Hang]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let tool = served(
        &tool_config("search_flights"),
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let start = Instant::now();
    let mode = CallMode::Interactive;
    let deadline = start + secs(2);
    let failure = run_until(
        &tool,
        search_args(),
        mode,
        (&observer(), &jitter()),
        deadline,
    )
    .await
    .expect_err("no time left for amadeus");
    assert_eq!(upstream_error(&failure), Some(("duffel", "timeout")));
    assert_eq!(failure.failed_providers(), ["duffel"]);
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 0));
    assert_eq!(Instant::now() - start, secs(2));
}

/// When the whole chain fails, the failure names every provider that failed, in chain order,
/// so the fallback text can name them all.
#[tokio::test(start_paused = true)]
async fn a_chain_that_fails_everywhere_names_every_provider() {
    let duffel = Scripted::new([fail(ms(10), server_error())]);
    let amadeus = Scripted::new((0..5).map(|_| fail(ms(10), server_error())));
    let tool = served(
        &tool_config("search_flights"),
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let failure = search(&tool).await.expect_err("both fail");
    assert_eq!(upstream_error(&failure), Some(("amadeus", "upstream_5xx")));
    assert_eq!(failure.failed_providers(), ["duffel", "amadeus"]);
}

/// A refusal the model can fix stops the chain: the next provider would refuse it too.
#[tokio::test(start_paused = true)]
async fn a_refusal_is_not_failed_over() {
    let refused = ErrorKind::Rejected {
        message: "unknown airport".into(),
    };
    let duffel = Scripted::new([fail(ms(10), refused)]);
    let amadeus = Scripted::new([ok(ms(0), flights())]);
    let tool = served(
        &tool_config("search_flights"),
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let failure = search(&tool).await.expect_err("refused");
    assert_eq!(upstream_error(&failure), Some(("duffel", "rejected")));
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 0));
}

/// A provider that refuses a request up front (an id another provider issued) is skipped
/// without a breaker permit or a call; with nobody else to ask, its refusal is the answer.
#[tokio::test(start_paused = true)]
async fn a_provider_that_refuses_up_front_is_skipped_without_a_permit() {
    let duffel = Scripted::refusing("amx_1 was issued by Amadeus, not Duffel");
    let amadeus = Scripted::new([ok(ms(0), flights())]);
    let tool = served(
        &tool_config("search_flights"),
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let success = search(&tool).await.expect("amadeus answers");
    assert_eq!(success.provider, "amadeus");
    assert_eq!(duffel.calls(), 0);
    let duffel_breaker = &tool.breakers()[0];
    assert_eq!(duffel_breaker.snapshot(Instant::now()).calls_in_window, 0);

    let alone = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let failure = search(&alone).await.expect_err("refused");
    assert_eq!(upstream_error(&failure), Some(("duffel", "rejected")));
}

/// A write is attempted once, and a write that failed after reaching a provider is never sent
/// to the next one.
#[tokio::test(start_paused = true)]
async fn a_write_is_attempted_once_and_never_failed_over() {
    let duffel = Scripted::new([fail(ms(100), ErrorKind::Timeout)]);
    let amadeus = Scripted::new([ok(ms(0), booked())]);
    let mut config = tool_config("book_flight");
    config.providers = vec!["duffel".into(), "amadeus".into()];
    let tool = served(&config, &[("duffel", &duffel), ("amadeus", &amadeus)]);
    let failure = run(
        &tool,
        booking_args(),
        CallMode::Interactive,
        &observer(),
        &jitter(),
    )
    .await
    .expect_err("no confirmation");
    assert_eq!(upstream_error(&failure), Some(("duffel", "timeout")));
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 0));
}

/// A background job never waits out a rate limit on a worker: it goes back to the queue,
/// while an interactive call retries after the provider's wait.
#[tokio::test(start_paused = true)]
async fn a_background_job_does_not_wait_out_a_rate_limit() {
    let limited = || {
        fail(
            ms(0),
            ErrorKind::RateLimited {
                retry_after: Some(secs(1)),
            },
        )
    };
    let duffel = Scripted::new([limited(), ok(ms(0), flights())]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let failure = run(
        &tool,
        search_args(),
        CallMode::Background,
        &observer(),
        &jitter(),
    )
    .await
    .expect_err("requeued instead");
    assert_eq!(upstream_error(&failure), Some(("duffel", "rate_limited")));
    assert_eq!(duffel.calls(), 1);

    let duffel = Scripted::new([limited(), ok(ms(0), flights())]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let interactive = search(&tool).await;
    assert!(interactive.is_ok());
    assert_eq!(duffel.calls(), 2);
}

/// An attempt cut short by the deadline's leftover says its timeout to the millisecond (a
/// job's `last_error` read "no answer within 3s 904ms 422us 923ns").
#[tokio::test(start_paused = true)]
async fn a_timeout_is_said_to_the_millisecond() {
    let duffel = Scripted::new([Step::Hang]);
    let tool = served(&tool_config("search_flights"), &[("duffel", &duffel)]);
    let request = tool
        .check(search_args(), Gateway::today(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_nanos(3_904_422_923);
    let rate_limits = crate::providers::RateLimits::default();
    let (observer, jitter) = (observer(), jitter());
    let cx = Context {
        observer: &observer,
        jitter: &jitter,
        rate_limits: &rate_limits,
        steps: None,
        maintenance: &crate::maintenance::Schedule::default(),
        provider_reserve: None,
        call: CallTag::default(),
    };
    let failure = pipeline::run(
        &tool,
        &request,
        deadline,
        CallMode::Interactive,
        Share::Free,
        cx,
    )
    .await
    .expect_err("no answer");
    let Failure::Upstream { error, .. } = failure else {
        panic!("a timeout: {failure:?}");
    };
    assert_eq!(error.to_string(), "timeout: no answer within 3s 904ms");
}
