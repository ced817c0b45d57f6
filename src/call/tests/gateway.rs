//! Both entry points of the gateway: a caller that goes away, a write that must finish, probe
//! priority, the stale answer, and a background job's single check (when a call or a job may
//! come back: `come_back.rs`).

use super::*;
use crate::breaker::BreakerState;
use crate::call::answer::Verdict;
use crate::call::envelope::Status;
use crate::call::gateway::CallRequest;
use crate::clients::{ClientName, ClientProfile, Directory, Roster, digest};

/// A read whose caller goes away is cancelled with it: the attempt tells nothing about the
/// provider (its permit records nothing), and its bulkhead slot is free again. Callers that
/// keep giving up never trip a healthy provider's breaker. (The call runs on a task of its own,
/// which identical calls could share; it is aborted when its last caller leaves, and the abort
/// takes effect when the runtime next runs that task.)
#[tokio::test(start_paused = true)]
async fn a_read_whose_caller_goes_away_records_nothing_and_frees_its_slot() {
    let duffel = Scripted::new([Step::Hang]);
    let gateway = gateway(&[("duffel", &duffel)]);
    for _ in 0..10 {
        let call = gateway.call(request("search_flights", search_args()));
        let gave_up = tokio::time::timeout(secs(1), call).await;
        assert!(
            gave_up.is_err(),
            "the provider hangs; the caller leaves after 1 s"
        );
    }
    tokio::task::yield_now().await;
    let tool = gateway.tool("search_flights").expect("served");
    assert_eq!(
        duffel.calls(),
        10,
        "each leaver's call was cancelled, not joined"
    );
    assert_eq!(tool.in_flight(), 0);
    let snapshot = tool.breakers()[0].snapshot(Instant::now());
    assert_eq!(snapshot.state, BreakerState::Closed);
    assert_eq!(snapshot.calls_in_window, 0);
}

/// A write runs to completion on its own task when its caller goes away: dropping it halfway
/// could leave a booking made at the provider with nobody told, and its outcome is recorded.
#[tokio::test(start_paused = true)]
async fn a_write_runs_to_completion_when_its_caller_goes_away() {
    let duffel = Scripted::new([ok(secs(5), booked())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let call = gateway.call(request("book_flight", booking_args()));
    assert!(tokio::time::timeout(secs(1), call).await.is_err());
    assert_eq!(duffel.answered(), 0);
    tokio::time::sleep(secs(10)).await;
    assert_eq!(duffel.answered(), 1, "the booking ran to its answer");
    let tool = gateway.tool("book_flight").expect("served");
    assert_eq!(tool.in_flight(), 0);
    let snapshot = tool.breakers()[0].snapshot(Instant::now());
    assert_eq!(snapshot.calls_in_window, 1, "its success was recorded");
}

/// A write whose task fails (a panic) may have reached the provider: the caller is told the
/// outcome is unknown, never that nothing was booked.
#[tokio::test(start_paused = true)]
async fn a_write_whose_task_fails_is_answered_as_of_unknown_outcome() {
    let duffel = Scripted::new([Step::Panic]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let env = gateway
        .call(request("book_flight", booking_args()))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        env.content.contains("not known whether it went through"),
        "{}",
        env.content
    );
    assert!(!env.content.contains("not made"), "{}", env.content);
}

/// Duffel's script for the half-open tests: five malformed answers (the five calls of
/// [`open_by_five_calls`]), then `then`.
fn five_malformed_then(then: impl IntoIterator<Item = Step>) -> Arc<Scripted> {
    let malformed = || fail(ms(0), ErrorKind::Malformed);
    Scripted::new(
        [
            malformed(),
            malformed(),
            malformed(),
            malformed(),
            malformed(),
        ]
        .into_iter()
        .chain(then),
    )
}

/// Five interactive flight searches, each failing, which open the breaker.
async fn open_by_five_calls(gateway: &Arc<Gateway>) {
    for _ in 0..5 {
        let env = gateway
            .call(request("search_flights", search_args()))
            .await
            .expect("served");
        assert_eq!(env.status, Status::Unavailable);
    }
}

/// While background jobs of the tool are due, a half-open breaker's probes are theirs: the
/// interactive call gets its fallback at once, and the job probes.
#[tokio::test(start_paused = true)]
async fn half_open_probes_go_to_due_background_jobs() {
    let duffel = five_malformed_then([ok(ms(100), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    open_by_five_calls(&gateway).await;
    assert_eq!(env_breaker(&gateway), BreakerState::Open);
    tokio::time::sleep(secs(30)).await;
    assert_eq!(env_breaker(&gateway), BreakerState::HalfOpen);

    let tool = gateway.tool("search_flights").expect("served");
    tool.set_background_due(true);
    let start = Instant::now();
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(Instant::now(), start, "answered at once");
    assert_eq!(
        (env.status, env.breaker.as_str(), env.retry_after_s),
        (Status::Unavailable, "half_open", Some(4)),
        "told to come back after one probe gap (3.3 s)"
    );
    assert_eq!(duffel.calls(), 5, "the interactive call probed nothing");

    let verdict = gateway
        .run_background(request("search_flights", search_args()))
        .await;
    let Verdict::Done(env) = verdict else {
        panic!("the job probes and succeeds: {verdict:?}");
    };
    assert_eq!(env.status, Status::Ok);
    assert_eq!(duffel.calls(), 6);
}

/// The soak's stuck breaker: jobs that hold the half-open probes all ask for something the
/// provider does not list. Each such answer proves the provider is up, so two spaced ones close
/// the breaker (into the ramp), and the interactive call for something it does list is served;
/// meanwhile the interactive caller was refused only for the background's turn.
#[tokio::test(start_paused = true)]
async fn half_open_probes_the_provider_answers_with_nothing_listed_close_it() {
    let not_listed = || Step::Answer {
        after: ms(50),
        result: Box::new(Err(UpstreamError::new(
            ErrorKind::Rejected {
                message: "no flights listed for that date".into(),
            },
            crate::providers::error::NOT_LISTED,
        ))),
    };
    let duffel = five_malformed_then([not_listed(), not_listed(), ok(ms(100), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    open_by_five_calls(&gateway).await;
    tokio::time::sleep(secs(30)).await;
    assert_eq!(env_breaker(&gateway), BreakerState::HalfOpen);
    let tool = gateway.tool("search_flights").expect("served");
    tool.set_background_due(true);

    let verdict = gateway
        .run_background(request("search_flights", search_args()))
        .await;
    assert!(
        matches!(
            verdict,
            Verdict::Later {
                attempted: true,
                ..
            }
        ),
        "not listed: the job asks again later: {verdict:?}"
    );
    assert_eq!(env_breaker(&gateway), BreakerState::HalfOpen);
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(
        (env.status, env.breaker.as_str()),
        (Status::Unavailable, "half_open"),
        "within the background's turn, the probes are the jobs'"
    );

    tokio::time::sleep(ms(3_400)).await;
    let verdict = gateway
        .run_background(request("search_flights", search_args()))
        .await;
    assert!(matches!(verdict, Verdict::Later { .. }), "{verdict:?}");
    assert_eq!(
        env_breaker(&gateway),
        BreakerState::Ramp,
        "two answers from a provider that is up close it"
    );
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Ok, "the interactive call is served");
    assert_eq!(duffel.calls(), 8);
}

/// However long background jobs stay due, an interactive call is refused a half-open probe
/// only for the background's turn (the probe interval): after it, it probes, and its success
/// closes the breaker.
#[tokio::test(start_paused = true)]
async fn due_jobs_never_lock_interactive_calls_out_of_a_half_open_breaker() {
    let duffel = five_malformed_then([ok(ms(100), flights()), ok(ms(100), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    open_by_five_calls(&gateway).await;
    tokio::time::sleep(secs(30)).await;
    let tool = gateway.tool("search_flights").expect("served");
    tool.set_background_due(true);
    let mut served_at = None;
    for second in 0..=20 {
        let env = gateway
            .call(request("search_flights", search_args()))
            .await
            .expect("served");
        if env.status == Status::Ok {
            served_at = Some(second);
            break;
        }
        assert_eq!(env.breaker.as_str(), "half_open");
        tokio::time::sleep(secs(1)).await;
    }
    assert_eq!(
        served_at,
        Some(10),
        "served once the background's 10 s turn ended"
    );
    tokio::time::sleep(secs(4)).await;
    let env = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env_breaker(&gateway), BreakerState::Ramp);
}

/// A read that fails after a good answer for the same arguments gets that answer, with its age.
#[tokio::test(start_paused = true)]
async fn a_failed_read_is_answered_with_its_last_good_result_and_its_age() {
    let duffel = Scripted::new([ok(ms(0), flights()), fail(ms(0), ErrorKind::Malformed)]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let fresh = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(fresh.status, Status::Ok);
    tokio::time::sleep(secs(4 * 60)).await;
    let stale = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(stale.status, Status::Stale);
    assert_eq!(stale.stale_age_s, Some(240));
    assert_eq!(stale.data, fresh.data);
    assert!(stale.content.starts_with("STALE RESULT, 4 min old"));
}

/// A job's arguments are checked once per run, schema and semantics together: valid at
/// acceptance but past their date now, the job is never run, and its result says why.
#[tokio::test(start_paused = true)]
async fn a_job_whose_arguments_are_no_longer_valid_is_never_run() {
    let duffel = Scripted::new([ok(ms(0), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let past = json!({"origin": "LHR", "destination": "JFK", "departure_date": "2001-01-01"});
    let verdict = gateway
        .run_background(request("search_flights", past))
        .await;
    let Verdict::Never {
        envelope: Some(env),
        error,
        attempted: false,
    } = verdict
    else {
        panic!("never, with an invalid_arguments result: {verdict:?}");
    };
    assert_eq!(env.status, Status::InvalidArguments);
    assert_eq!(error, env.content);
    assert!(error.contains("departure_date"), "{error}");
    assert_eq!(duffel.calls(), 0);
}

/// A job whose tool this replica does not serve sends nothing and is not ended: in a fleet
/// during a rolling change of configuration, the replica that accepted it serves the tool and
/// this one does not yet. It comes back in 30 s; `[jobs] max_age` ends it if nobody serves it.
#[tokio::test(start_paused = true)]
async fn a_job_whose_tool_is_not_served_here_sends_nothing_and_comes_back() {
    let duffel = Scripted::new([]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let verdict = gateway
        .run_background(request("search_trains", search_args()))
        .await;
    let Verdict::Later {
        anchor,
        error,
        attempted: false,
        rate_limited: None,
    } = verdict
    else {
        panic!("later, not attempted: {verdict:?}");
    };
    assert_eq!(anchor, Some(Duration::from_secs(30)));
    assert!(
        error.starts_with(
            "not run: tool search_trains is not served by this replica's configuration"
        ),
        "{error}"
    );
    assert!(
        error.contains("tried again in 30 s until [jobs] max_age"),
        "{error}"
    );
    assert_eq!(duffel.calls(), 0);
}

/// A job accepted before a reload took its client's key away (or narrowed what it may call)
/// sends nothing: no booking, no quota. It is not ended either: in a fleet, a replica the
/// reload has not reached yet may not know a client just added; the job comes back later.
#[tokio::test(start_paused = true)]
async fn a_job_whose_client_may_not_call_its_tool_now_sends_nothing_and_comes_back() {
    let duffel = Scripted::new([ok(ms(0), booked())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    // Client keys turned on by a reload: the local client, whose job this is (accepted while
    // auth was off), holds no key any more.
    let mut roster = Roster::default();
    let other = ClientName::configured("other").unwrap_or_else(|e| panic!("{e}"));
    roster
        .add_client(
            digest(b"other-key"),
            Arc::new(ClientProfile::unrestricted(other)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let clients = Arc::new(Directory::new(roster));
    gateway.check_clients_against(Arc::clone(&clients));

    let verdict = gateway
        .run_background(request("book_flight", booking_args()))
        .await;

    let Verdict::Later {
        anchor,
        attempted,
        ref error,
        ..
    } = verdict
    else {
        panic!("later, not ended: {verdict:?}");
    };
    assert_eq!(anchor, Some(secs(30)), "tried again in 30 s");
    assert!(!attempted, "no attempt counted");
    assert!(error.contains("may not call book_flight"), "{error}");
    assert_eq!(duffel.calls(), 0, "nothing reached the provider");

    // The reload reaches back (auth off again): the job books.
    clients.replace(Roster::default());
    let verdict = gateway
        .run_background(request("book_flight", booking_args()))
        .await;
    assert!(matches!(verdict, Verdict::Done(_)), "{verdict:?}");
    assert_eq!(duffel.calls(), 1);
}

/// Both providers fail: no provider answered, so the call counts under provider `none` (as
/// the metric's help says), not under amadeus, the last one tried; a fresh answer counts
/// under the provider that gave it.
#[tokio::test(start_paused = true)]
async fn a_call_no_provider_answered_counts_under_provider_none() {
    let duffel = Scripted::new([fail(ms(50), server_error()), ok(ms(50), flights())]);
    let amadeus = Scripted::new([fail(ms(50), server_error())]);
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(
        &config(),
        &upstreams(&[("duffel", &duffel), ("amadeus", &amadeus)]),
        Arc::clone(&telemetry),
    )
    .map(Arc::new)
    .unwrap_or_else(|e| panic!("{e:?}"));
    let failed = gateway
        .call(request("search_flights", search_args()))
        .await
        .expect("served");
    assert_eq!(failed.status, Status::Unavailable, "{failed:?}");
    assert_eq!(
        failed.provider.as_deref(),
        Some("amadeus"),
        "the envelope names it"
    );
    let date = Gateway::today() + chrono::Duration::days(31);
    let args = json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()});
    let answered = gateway
        .call(request("search_flights", args))
        .await
        .expect("served");
    assert_eq!(answered.status, Status::Ok, "{answered:?}");
    let text = telemetry.metrics().render();
    for (expected, count) in [
        ("provider=\"none\",status=\"unavailable\"", 1),
        ("provider=\"amadeus\",status=\"unavailable\"", 0),
        ("provider=\"duffel\",status=\"ok\"", 1),
    ] {
        let series =
            format!("faregate_tool_calls_total{{{expected},tool=\"search_flights\"}} {count}");
        assert!(
            text.contains(&series) || (count == 0 && !text.contains(&series[..series.len() - 2])),
            "{series} in\n{text}"
        );
    }
}

/// `request` with the caller's `call_id`, for client `acme`.
fn request_of_acme(tool: &str, arguments: Value, call_id: &str) -> CallRequest {
    CallRequest {
        call_id: Some(call_id.into()),
        client: ClientName::configured("acme").unwrap_or_else(|e| panic!("{e}")),
        ..request(tool, arguments)
    }
}

/// Asserts that `lines` are some, and each names `call_id` and client `acme`.
#[track_caller]
fn each_names_the_call(lines: &[String], call_id: &str) {
    assert!(!lines.is_empty(), "no such line");
    for line in lines {
        assert!(
            line.contains(&format!("call_id=\"{call_id}\"")) && line.contains("client=\"acme\""),
            "{line}"
        );
    }
}

/// A provider's failure is logged with the call it failed and the client, so an operator ties
/// the line to the call an agent reported: an interactive read, a read shared by two callers
/// (the call that led it), and a background job's attempt (its call id). (A gateway each, so
/// that no breaker opened by the one before refuses the call.)
#[tokio::test(start_paused = true)]
async fn a_providers_failure_is_logged_with_the_call_id_and_client() {
    let logs = crate::telemetry::captured::capture();
    let failing = || {
        let duffel = Scripted::new([fail(ms(50), server_error())]);
        gateway(&[("duffel", &duffel)])
    };
    let env = failing()
        .call(request_of_acme("search_flights", search_args(), "call-7"))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");
    each_names_the_call(&logs.lines_with("upstream failed"), "call-7");

    let gateway = failing();
    let (first, second) = tokio::join!(
        gateway.call(request_of_acme("search_flights", search_args(), "call-8")),
        gateway.call(request_of_acme("search_flights", search_args(), "call-9")),
    );
    assert_eq!(first.expect("served").status, Status::Unavailable);
    assert_eq!(second.expect("served").status, Status::Unavailable);
    let shared = logs.lines_with("call-8");
    each_names_the_call(&shared, "call-8");
    assert!(shared.iter().any(|l| l.contains("upstream failed")));
    assert!(logs.lines_with("call-9").is_empty(), "one shared call");

    let verdict = failing()
        .run_background(request_of_acme("search_flights", search_args(), "job-1"))
        .await;
    assert!(matches!(verdict, Verdict::Later { .. }), "{verdict:?}");
    let job = logs.lines_with("job-1");
    each_names_the_call(&job, "job-1");
    assert!(job.iter().any(|l| l.contains("upstream failed")));
}

/// A write whose task fails is logged with its call and client: its outcome is unknown until
/// reconciled, and the operator who reconciles it needs to know which call it was.
#[tokio::test(start_paused = true)]
async fn a_write_whose_task_fails_is_logged_with_the_call_id_and_client() {
    let logs = crate::telemetry::captured::capture();
    let duffel = Scripted::new([Step::Panic]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let env = gateway
        .call(request_of_acme("book_flight", booking_args(), "call-b1"))
        .await
        .expect("served");
    assert_eq!(env.status, Status::Unavailable);
    each_names_the_call(&logs.lines_with("a write's task failed"), "call-b1");
}

/// A call without an id gets one no other gateway gives: two replicas (or two starts of one)
/// both numbering from 1 would name unrelated calls alike in the traces and logs an operator
/// searches. A caller's own id is kept as it is.
#[tokio::test(start_paused = true)]
async fn generated_call_ids_differ_across_gateways_and_a_callers_id_is_kept() {
    let duffel = Scripted::new([ok(ms(10), flights())]);
    let (a, b) = (
        gateway(&[("duffel", &duffel)]),
        gateway(&[("duffel", &duffel)]),
    );
    let (a1, a2, b1) = (a.call_id(None), a.call_id(None), b.call_id(None));
    assert_ne!(a1, a2);
    assert_ne!(a1, b1, "two gateways named a call alike");
    assert!(a1.starts_with("fg_") && b1.starts_with("fg_"), "{a1} {b1}");
    assert_eq!(a.call_id(Some("call_7".into())), "call_7");
}
