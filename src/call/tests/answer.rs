//! The two answer policies as tables: each row a failure and the facts around it, and what the
//! caller is told.

use super::*;
use crate::breaker::{BreakerState, RejectReason, Rejected};
use crate::call::answer::{self, Background, Interactive, RateLimitHit, Verdict};
use crate::call::envelope::{CallInfo, Data, Envelope, Status};
use crate::call::last_good::GoodResult;
use crate::call::outcome::Failure;

const FALLBACK: &str =
    "{tool} is down at {provider}; try again in {retry_after_s} s, or use {available_tools}.";

fn upstream(kind: ErrorKind) -> Failure {
    Failure::Upstream {
        provider: "duffel".into(),
        error: UpstreamError::new(kind, "test"),
        failed: Vec::new(),
    }
}

/// A failure of a write's provider with `kind` and what it may have done.
fn write_failed(kind: ErrorKind, effect: WriteEffect) -> Failure {
    Failure::Upstream {
        provider: "duffel".into(),
        error: UpstreamError {
            effect,
            ..UpstreamError::new(kind, "test")
        },
        failed: Vec::new(),
    }
}

fn open_breaker() -> Failure {
    Failure::Breaker {
        provider: "duffel".into(),
        rejected: Rejected {
            retry_after: ms(24_200),
            state: BreakerState::Open,
            reason: RejectReason::Open,
        },
        failed: Vec::new(),
    }
}

fn refused(message: &str) -> Failure {
    upstream(ErrorKind::Rejected {
        message: message.into(),
    })
}

/// The calling client holds its share of the tool: 2 of its 4 slots.
fn share_full() -> Failure {
    Failure::ClientShareFull(crate::call::outcome::OverShare {
        slots: 2,
        max_concurrent: 4,
        share: crate::clients::ToolShare::HALF,
    })
}

fn entry() -> GoodResult {
    GoodResult {
        data: Data::new(json!({"offers": [], "total_offers": 0})),
        content: "0 offers.".into(),
        provider: "amadeus".into(),
        fetched_at: Instant::now(),
    }
}

/// The facts of a read of `search_flights` whose first breaker was closed when it started,
/// with `duffel`'s breaker now closed and nothing cached.
fn facts<'a>(available: &'a [String]) -> Interactive<'a> {
    Interactive {
        info: CallInfo {
            breaker: "closed".into(),
            ..CallInfo::new("c1", "search_flights")
        },
        write: false,
        priced: true,
        provider: "duffel",
        breaker: Some(BreakerState::Closed),
        failing_run: false,
        remaining_open: None,
        others_back: None,
        held: Vec::new(),
        timeout: secs(8),
        max_concurrent: 64,
        stale: None,
        fallback: FALLBACK,
        available_tools: available,
        quota_exhausted: &[],
    }
}

/// What the envelope says, in one line: status, provider, breaker, retry estimate, and the
/// start of its text.
fn summary(env: &Envelope) -> String {
    let retry = env
        .retry_after_s
        .map_or("-".to_string(), |s| format!("{s} s"));
    let start: String = env.content.chars().take(40).collect();
    format!(
        "{} {} {} {retry}: {start}",
        env.status.as_str(),
        env.provider.as_deref().unwrap_or("-"),
        env.breaker,
    )
}

#[test]
fn the_interactive_answer_table() {
    let hotels = ["search_hotels".to_string()];
    let cached = entry();
    let read = || facts(&hotels);
    let write = || Interactive {
        write: true,
        ..read()
    };
    let cached_for = |age| Interactive {
        stale: Some((&cached, age)),
        ..read()
    };
    let fallback = "search_flights is down at duffel; try ag";
    let rows: Vec<(&str, Failure, Interactive<'_>, String)> = vec![
        (
            "a refusal the model can fix is the answer",
            refused("unknown airport XXX"),
            read(),
            "rejected duffel closed -: The provider refused this search_flights".into(),
        ),
        (
            "a refusal wins over a cached result",
            refused("unknown airport XXX"),
            cached_for(secs(60)),
            "rejected duffel closed -: The provider refused this search_flights".into(),
        ),
        (
            "a client at its share of the tool: its own doing, no provider, a second's wait",
            share_full(),
            read(),
            "rejected - closed 1 s: search_flights was not called: this clie".into(),
        ),
        (
            "a client at its share is told so even with a cached result (the tool is not failing)",
            share_full(),
            cached_for(secs(60)),
            "rejected - closed 1 s: search_flights was not called: this clie".into(),
        ),
        (
            "an open breaker: fallback text, its remaining time, its state",
            open_breaker(),
            read(),
            format!("unavailable duffel open 25 s: {fallback}"),
        ),
        (
            "a cached result is served with its age, from its provider",
            open_breaker(),
            cached_for(secs(240)),
            "stale amadeus open 25 s: STALE RESULT, 4 min old: search_flights ".into(),
        ),
        (
            "every provider of the chain failed: the fallback names them all, in chain order",
            Failure::Upstream {
                provider: "amadeus".into(),
                error: UpstreamError::new(server_error(), "test"),
                failed: vec!["duffel".into(), "amadeus".into()],
            },
            Interactive {
                provider: "amadeus",
                ..read()
            },
            "unavailable amadeus closed 10 s: search_flights is down at duffel and ama".into(),
        ),
        (
            "a 5xx that opened the breaker: its remaining open time",
            upstream(server_error()),
            Interactive {
                breaker: Some(BreakerState::Open),
                remaining_open: Some(secs(30)),
                ..read()
            },
            format!("unavailable duffel open 30 s: {fallback}"),
        ),
        (
            "the provider's own wait wins over the breaker's",
            upstream(ErrorKind::RateLimited {
                retry_after: Some(secs(90)),
            }),
            Interactive {
                remaining_open: Some(secs(30)),
                ..read()
            },
            format!("unavailable duffel closed 90 s: {fallback}"),
        ),
        (
            "a transient failure that left the breaker closed: a short estimate",
            upstream(ErrorKind::Timeout),
            read(),
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "a full bulkhead frees a slot within the attempt timeout, names no provider, and \
             says the tool is busy, not down",
            Failure::BulkheadFull,
            Interactive {
                timeout: secs(6),
                ..read()
            },
            "unavailable - closed 6 s: search_flights is busy: this gateway alr".into(),
        ),
        (
            "the caller's deadline passed first, its provider's breaker closed: not said down, \
             no time to wait",
            Failure::DeadlinePassed,
            read(),
            "unavailable duffel closed -: search_flights took longer than this cal".into(),
        ),
        (
            "the same while the provider recovers (ramp, reported closed)",
            Failure::DeadlinePassed,
            Interactive {
                breaker: Some(BreakerState::Ramp),
                ..read()
            },
            "unavailable duffel closed -: search_flights took longer than this cal".into(),
        ),
        (
            "a passed deadline after the provider failed since its last answer (a timeout, \
             its breaker still closed): the fallback",
            Failure::DeadlinePassed,
            Interactive {
                failing_run: true,
                ..read()
            },
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "a passed deadline while the provider's breaker is open: the fallback",
            Failure::DeadlinePassed,
            Interactive {
                breaker: Some(BreakerState::Open),
                remaining_open: Some(secs(30)),
                ..read()
            },
            format!("unavailable duffel open 30 s: {fallback}"),
        ),
        (
            "a passed deadline with a cached result: the cached result",
            Failure::DeadlinePassed,
            cached_for(secs(60)),
            "stale amadeus closed 10 s: STALE RESULT, 1 min old: search_flights ".into(),
        ),
        (
            "a write's passed deadline: the fallback (nothing was sent)",
            Failure::DeadlinePassed,
            write(),
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "without the breaker's state now, the state when the call started, and the fallback",
            Failure::DeadlinePassed,
            Interactive {
                breaker: None,
                ..read()
            },
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "a write that may have reached the provider: the outcome is unknown",
            upstream(ErrorKind::Timeout),
            write(),
            "unavailable duffel closed 10 s: The search_flights request reached the p".into(),
        ),
        (
            "a write that never left: the fallback text",
            upstream(ErrorKind::Connect),
            write(),
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "a write whose read before the order timed out: nothing was booked, the fallback",
            write_failed(ErrorKind::Timeout, WriteEffect::NotSent),
            write(),
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "a write whose read before the order failed with a 5xx: the fallback",
            write_failed(server_error(), WriteEffect::NotSent),
            write(),
            format!("unavailable duffel closed 10 s: {fallback}"),
        ),
        (
            "a write the provider says it did not carry out: not booked",
            write_failed(server_error(), WriteEffect::NotDone),
            write(),
            "unavailable duffel closed 10 s: The search_flights request was not carri".into(),
        ),
        (
            "a write refused because it was already made",
            refused("already booked: order ord_1"),
            write(),
            "rejected duffel closed -: The provider refused this search_flights".into(),
        ),
    ];
    for (name, failure, facts, expected) in rows {
        let limited = matches!(failure, Failure::ClientShareFull(_));
        let env = answer::interactive(&failure, facts);
        assert_eq!(summary(&env), expected, "{name}");
        assert_eq!(env.call_id, "c1", "{name}");
        assert_eq!(
            env.limit.as_deref(),
            limited.then_some("client_share_of_tool"),
            "{name}: only a client's share names its limit"
        );
    }
}

/// A backup that lists nothing for a read while the provider before it in the chain is down is
/// the outage's answer: `unavailable` naming that provider and its time back, never a refusal
/// a model would take as a wrong flight number. Alone (nothing before it failed), it is the
/// refusal it always was.
#[test]
fn a_backup_listing_nothing_behind_an_outage_is_unavailable_not_rejected() {
    let unlisted = |failed: &[&str]| Failure::Upstream {
        provider: "flightaware".into(),
        error: UpstreamError::new(
            ErrorKind::Rejected {
                message: "FlightAware lists no departure of BA117 on that date".into(),
            },
            crate::providers::error::NOT_LISTED,
        ),
        failed: failed.iter().map(|p| (*p).into()).collect(),
    };
    let hotels = ["search_hotels".to_string()];
    let behind = unlisted(&["amadeus", "flightaware"]);
    assert_eq!(behind.unlisted_behind(), Some("amadeus"));
    let env = answer::interactive(
        &behind,
        Interactive {
            provider: "amadeus",
            breaker: Some(BreakerState::Open),
            remaining_open: Some(secs(40)),
            ..facts(&hotels)
        },
    );
    assert_eq!(
        summary(&env),
        "unavailable amadeus open 40 s: search_flights is down at amadeus; try a"
    );
    assert!(!env.content.contains("flightaware"), "{}", env.content);

    // A job waits for the provider that would know, and its last error says it is an outage.
    let waiting = answer::background(
        unlisted(&["amadeus", "flightaware"]),
        job_in_chain(None, secs(40)),
    );
    match waiting {
        Verdict::Later { anchor, error, .. } => {
            assert_eq!(anchor, Some(secs(40)));
            assert!(
                error.contains("amadeus did not answer") && !error.contains("check the"),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }

    // Behind a provider that refused the gateway's own credentials, the job's last error says
    // so: an operator must fix it, and waiting does not.
    let mut behind_misconfigured = unlisted(&["amadeus", "flightaware"]);
    if let Failure::Upstream { failed, .. } = &mut behind_misconfigured {
        failed[0].misconfigured = true;
    }
    match answer::background(behind_misconfigured, job_in_chain(None, secs(40))) {
        Verdict::Later { error, .. } => assert!(
            error.contains("amadeus refused the gateway's credentials or setup")
                && !error.contains("nothing needs to be done"),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }

    let alone = unlisted(&["flightaware"]);
    assert_eq!(alone.unlisted_behind(), None);
    let env = answer::interactive(
        &alone,
        Interactive {
            provider: "flightaware",
            ..facts(&hotels)
        },
    );
    assert_eq!(env.status, Status::Rejected, "{}", env.content);
}

#[test]
fn a_breaker_forced_open_promises_no_time_of_return() {
    let forced = Failure::Breaker {
        provider: "amadeus".into(),
        rejected: Rejected {
            retry_after: ms(30_000),
            state: BreakerState::ForcedOpen,
            reason: RejectReason::ForcedOpen,
        },
        failed: vec!["duffel".into(), "amadeus".into()],
    };
    let hotels = ["search_hotels".to_string()];
    let env = answer::interactive(&forced, facts(&hotels));
    assert_eq!(env.status, Status::Unavailable);
    assert_eq!(env.retry_after_s, None, "no time is known");
    assert_eq!(env.breaker, "forced_open");
    // A stale answer says no time of return either.
    let cached = entry();
    let stale = answer::interactive(
        &forced,
        Interactive {
            stale: Some((&cached, secs(240))),
            ..facts(&hotels)
        },
    );
    assert_eq!(
        (stale.status, stale.retry_after_s),
        (Status::Stale, None),
        "{stale:?}"
    );
    assert_eq!(
        env.content,
        "search_flights has been taken out of service by the gateway's operator: nothing is being asked of duffel and amadeus, and no time has been set for its return. Nothing was fetched, so there are no results to show, and none should be guessed or made up. Tell the traveller search_flights is unavailable for now, without promising when it will be back. Meanwhile, offer to help with the tools that work now: search_hotels."
    );
}

#[test]
fn the_interactive_texts_are_complete() {
    let hotels = ["search_hotels".to_string()];
    let fallback = answer::interactive(&open_breaker(), facts(&hotels));
    assert_eq!(
        fallback.content,
        "search_flights is down at duffel; try again in 25 s, or use search_hotels."
    );
    let quota = [("amadeus".to_string(), secs(3 * 86_400))];
    let noted = answer::interactive(
        &open_breaker(),
        Interactive {
            quota_exhausted: &quota,
            ..facts(&[])
        },
    );
    assert!(
        noted
            .content
            .starts_with("search_flights is down at duffel; try again in 25 s, or use none at the moment.\nThe amadeus account's request quota is used up and resets in about 3 days;"),
        "{}",
        noted.content
    );
    let done = answer::interactive(
        &refused("already booked: order ord_1"),
        Interactive {
            write: true,
            ..facts(&hotels)
        },
    );
    assert!(done.content.ends_with(
        "call again later with the same idempotency key to learn it (or see GET /v1/bookings)."
    ));
    let cached = entry();
    let stale = answer::interactive(
        &open_breaker(),
        Interactive {
            stale: Some((&cached, secs(240))),
            ..facts(&hotels)
        },
    );
    assert_eq!(
        (stale.stale_age_s, stale.data),
        (Some(240), Some(cached.data.clone()))
    );
    assert!(stale.content.ends_with("confirm before booking. 0 offers."));
    // The remembered text is written from its escaped copy, not escaped again.
    assert!(stale.content_tail.split(&stale.content).is_some());
    // A tool whose answers are no prices says nothing of prices or booking.
    let unpriced = answer::interactive(
        &open_breaker(),
        Interactive {
            priced: false,
            stale: Some((&cached, secs(240))),
            ..facts(&hotels)
        },
    );
    assert!(
        unpriced
            .content
            .ends_with("It may have changed since; say how old it is. 0 offers."),
        "{}",
        unpriced.content
    );
}

#[test]
fn the_background_verdict_table() {
    let limited = ErrorKind::RateLimited {
        retry_after: Some(secs(60)),
    };
    type Later = (Option<Duration>, bool, Option<RateLimitHit>);
    let later = |verdict: &Verdict| -> Option<Later> {
        match verdict {
            Verdict::Later {
                anchor,
                attempted,
                rate_limited,
                ..
            } => Some((*anchor, *attempted, *rate_limited)),
            _ => None,
        }
    };
    let hit = |s| {
        Some(RateLimitHit {
            retry_after: Some(secs(s)),
        })
    };
    let rows: Vec<(&str, Failure, Background, Option<Later>)> = vec![
        (
            "a read's transient failure comes back when its breaker closes",
            upstream(ErrorKind::Timeout),
            job(false, Some(secs(20))),
            Some((Some(secs(20)), true, None)),
        ),
        (
            "a 429 anchors on its Retry-After and is reported for pacing",
            upstream(limited.clone()),
            job(false, Some(secs(20))),
            Some((Some(secs(60)), true, hit(60))),
        ),
        (
            "a write that never left may go again",
            upstream(ErrorKind::Connect),
            job(true, None),
            Some((None, true, None)),
        ),
        (
            "a write whose read before the order failed goes again, like a read",
            write_failed(server_error(), WriteEffect::NotSent),
            job(true, Some(secs(20))),
            Some((Some(secs(20)), true, None)),
        ),
        (
            "a write the provider says it did not carry out is final",
            write_failed(server_error(), WriteEffect::NotDone),
            job(true, None),
            None,
        ),
        (
            "an open breaker: its remaining time, and no attempt counted",
            open_breaker(),
            job(false, None),
            Some((Some(ms(24_200)), false, None)),
        ),
        (
            "an open breaker with another provider of the chain back sooner: that one's time",
            open_breaker(),
            job_in_chain(None, secs(10)),
            Some((Some(secs(10)), false, None)),
        ),
        (
            "a 429 with another provider of the chain back sooner: that one's time, still paced",
            upstream(limited.clone()),
            job_in_chain(None, secs(15)),
            Some((Some(secs(15)), true, hit(60))),
        ),
        (
            "another provider back later than the failure's own wait changes nothing",
            upstream(ErrorKind::Timeout),
            job_in_chain(Some(secs(20)), secs(90)),
            Some((Some(secs(20)), true, None)),
        ),
        (
            "a failure that asks for no wait keeps none, whatever the chain: its backoff decides",
            upstream(ErrorKind::Timeout),
            job_in_chain(None, secs(30)),
            Some((None, true, None)),
        ),
        (
            "a full bulkhead: soon, no attempt counted",
            Failure::BulkheadFull,
            job(false, None),
            Some((None, false, None)),
        ),
        (
            "a client at its share of the tool: as a full bulkhead, soon, no attempt counted",
            share_full(),
            job(false, None),
            Some((None, false, None)),
        ),
        (
            "a write of a client at its share: nothing was sent, so it runs later",
            share_full(),
            job(true, None),
            Some((None, false, None)),
        ),
        (
            "a passed deadline: soon, no attempt counted",
            Failure::DeadlinePassed,
            job(false, None),
            Some((None, false, None)),
        ),
        (
            "a write that may have been carried out is never repeated",
            upstream(ErrorKind::Timeout),
            job(true, None),
            None,
        ),
        (
            "a refusal is never retried",
            refused("offer expired"),
            job(false, None),
            None,
        ),
        (
            "a read its provider lists nothing for asks again later (it may list it then)",
            Failure::Upstream {
                provider: "flightaware".into(),
                error: UpstreamError::new(
                    ErrorKind::Rejected {
                        message: "no departure listed on that date".into(),
                    },
                    crate::providers::error::NOT_LISTED,
                ),
                failed: Vec::new(),
            },
            job(false, None),
            Some((None, true, None)),
        ),
    ];
    for (name, failure, facts, expected) in rows {
        let verdict = answer::background(failure, facts);
        assert_eq!(later(&verdict), expected, "{name}: {verdict:?}");
    }
}

/// The facts of a background `book_flight` job (`write`: whether to treat it as a write).
fn job(write: bool, remaining_open: Option<Duration>) -> Background {
    Background {
        info: CallInfo::new("job-call", "book_flight"),
        write,
        remaining_open,
        others_back: None,
    }
}

/// [`job`] for a read, in a chain whose other providers that failed are back in `others_back`.
fn job_in_chain(remaining_open: Option<Duration>, others_back: Duration) -> Background {
    Background {
        others_back: Some(others_back),
        ..job(false, remaining_open)
    }
}

#[test]
fn the_background_never_says_why() {
    let refusal = answer::background(refused("offer expired"), job(true, None));
    let Verdict::Never {
        envelope: Some(env),
        error,
        attempted: true,
    } = refusal
    else {
        panic!("never, with the refusal as the result: {refusal:?}");
    };
    assert_eq!(
        (env.status, env.provider.as_deref(), env.breaker.as_str()),
        (Status::Rejected, Some("duffel"), "")
    );
    assert_eq!(
        error,
        "The provider refused this book_flight request: offer expired."
    );
    assert_eq!(env.content, error);

    let unknown = answer::background(upstream(ErrorKind::Timeout), job(true, None));
    assert!(matches!(
        unknown,
        Verdict::Never { envelope: None, ref error, attempted: true }
            if error.starts_with("The book_flight request reached the provider (duffel)")
    ));
    let not_done = answer::background(
        write_failed(server_error(), WriteEffect::NotDone),
        job(true, None),
    );
    let Verdict::Never {
        envelope: Some(env),
        error,
        attempted: true,
    } = not_done
    else {
        panic!("never, saying nothing was booked: {not_done:?}");
    };
    assert_eq!(env.status, Status::Unavailable);
    assert!(
        error.contains("nothing was booked and nothing was charged"),
        "{error}"
    );
    let later = answer::background(upstream(ErrorKind::Timeout), job(false, None));
    assert!(matches!(
        later,
        Verdict::Later { ref error, .. } if error == "duffel: timeout: test"
    ));
}
