//! The two answer policies as tables: each row a failure and the facts around it, and what the
//! caller is told.

use super::*;
use crate::breaker::{BreakerState, RejectReason, Rejected};
use crate::call::answer::{self, Background, Interactive, RateLimitHit, Verdict};
use crate::call::envelope::{CallInfo, Data, Envelope, Status};
use crate::call::outcome::Failure;
use crate::call::stale::StaleEntry;

const FALLBACK: &str =
    "{tool} is down at {provider}; try again in {retry_after_s} s, or use {available_tools}.";

fn upstream(kind: ErrorKind) -> Failure {
    Failure::Upstream {
        provider: "duffel".into(),
        error: UpstreamError::new(kind, "test"),
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
    }
}

fn refused(message: &str) -> Failure {
    upstream(ErrorKind::Rejected {
        message: message.into(),
    })
}

fn entry() -> StaleEntry {
    StaleEntry {
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
        provider: "duffel",
        breaker: Some(BreakerState::Closed),
        remaining_open: None,
        timeout: secs(8),
        stale: None,
        fallback: FALLBACK,
        available_tools: available,
        quota_exhausted: &[],
    }
}

/// What the envelope says, in short: status, provider, breaker, retry estimate, text start.
fn summary(env: &Envelope) -> (Status, &str, &str, Option<u64>, &str) {
    let start = env.content.get(..40).unwrap_or(&env.content);
    (
        env.status,
        env.provider.as_deref().unwrap_or("-"),
        env.breaker.as_str(),
        env.retry_after_s,
        start,
    )
}

#[test]
fn the_interactive_answer_table() {
    let hotels = ["search_hotels".to_string()];
    let cached = entry();
    type Row<'a> = (
        &'a str,
        Failure,
        Interactive<'a>,
        (Status, &'a str, &'a str, Option<u64>, &'a str),
    );
    let rows: Vec<Row<'_>> = vec![
        (
            "a refusal the model can fix is the answer",
            refused("unknown airport XXX"),
            facts(&hotels),
            (
                Status::Rejected,
                "duffel",
                "closed",
                None,
                "The provider refused this search_flights",
            ),
        ),
        (
            "a refusal wins over a cached result",
            refused("unknown airport XXX"),
            Interactive {
                stale: Some((&cached, secs(60))),
                ..facts(&hotels)
            },
            (
                Status::Rejected,
                "duffel",
                "closed",
                None,
                "The provider refused this search_flights",
            ),
        ),
        (
            "an open breaker: fallback text, its remaining time, its state",
            open_breaker(),
            facts(&hotels),
            (
                Status::Unavailable,
                "duffel",
                "open",
                Some(25),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "a cached result is served with its age, from its provider",
            open_breaker(),
            Interactive {
                stale: Some((&cached, secs(240))),
                ..facts(&hotels)
            },
            (
                Status::Stale,
                "amadeus",
                "open",
                Some(25),
                "STALE RESULT, 4 min old: search_flights ",
            ),
        ),
        (
            "a 5xx that opened the breaker: its remaining open time",
            upstream(server_error()),
            Interactive {
                breaker: Some(BreakerState::Open),
                remaining_open: Some(secs(30)),
                ..facts(&hotels)
            },
            (
                Status::Unavailable,
                "duffel",
                "open",
                Some(30),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "the provider's own wait wins over the breaker's",
            upstream(ErrorKind::RateLimited {
                retry_after: Some(secs(90)),
            }),
            Interactive {
                remaining_open: Some(secs(30)),
                ..facts(&hotels)
            },
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(90),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "a transient failure that left the breaker closed: a short estimate",
            upstream(ErrorKind::Timeout),
            facts(&hotels),
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(10),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "a full bulkhead frees a slot within the attempt timeout",
            Failure::BulkheadFull,
            Interactive {
                timeout: secs(6),
                ..facts(&hotels)
            },
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(6),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "a passed deadline: a short estimate",
            Failure::DeadlinePassed,
            facts(&hotels),
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(10),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "without the breaker's state now, the state when the call started",
            Failure::DeadlinePassed,
            Interactive {
                breaker: None,
                ..facts(&hotels)
            },
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(10),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "a write that may have reached the provider: the outcome is unknown",
            upstream(ErrorKind::Timeout),
            Interactive {
                write: true,
                ..facts(&hotels)
            },
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(10),
                "The search_flights request reached the p",
            ),
        ),
        (
            "a write that never left: the fallback text",
            upstream(ErrorKind::Connect),
            Interactive {
                write: true,
                ..facts(&hotels)
            },
            (
                Status::Unavailable,
                "duffel",
                "closed",
                Some(10),
                "search_flights is down at duffel; try ag",
            ),
        ),
        (
            "a write refused because it was already made",
            refused("already booked: order ord_1"),
            Interactive {
                write: true,
                ..facts(&hotels)
            },
            (
                Status::Rejected,
                "duffel",
                "closed",
                None,
                "The provider refused this search_flights",
            ),
        ),
    ];
    for (name, failure, facts, expected) in rows {
        let env = answer::interactive(&failure, facts);
        assert_eq!(summary(&env), expected, "{name}");
        assert_eq!(env.call_id, "c1", "{name}");
    }
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
    assert!(
        done.content
            .ends_with("tell the traveller the earlier booking stands.")
    );
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
}

#[test]
fn the_background_verdict_table() {
    let facts = |write, remaining_open| Background {
        info: CallInfo::new("job-call", "book_flight"),
        write,
        remaining_open,
    };
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
            facts(false, Some(secs(20))),
            Some((Some(secs(20)), true, None)),
        ),
        (
            "a 429 anchors on its Retry-After and is reported for pacing",
            upstream(limited.clone()),
            facts(false, Some(secs(20))),
            Some((Some(secs(60)), true, hit(60))),
        ),
        (
            "a write that never left may go again",
            upstream(ErrorKind::Connect),
            facts(true, None),
            Some((None, true, None)),
        ),
        (
            "an open breaker: its remaining time, and no attempt counted",
            open_breaker(),
            facts(false, None),
            Some((Some(ms(24_200)), false, None)),
        ),
        (
            "a full bulkhead: soon, no attempt counted",
            Failure::BulkheadFull,
            facts(false, None),
            Some((None, false, None)),
        ),
        (
            "a passed deadline: soon, no attempt counted",
            Failure::DeadlinePassed,
            facts(false, None),
            Some((None, false, None)),
        ),
        (
            "a write that may have been carried out is never repeated",
            upstream(ErrorKind::Timeout),
            facts(true, None),
            None,
        ),
        (
            "a refusal is never retried",
            refused("offer expired"),
            facts(false, None),
            None,
        ),
    ];
    for (name, failure, facts, expected) in rows {
        let verdict = answer::background(failure, facts);
        assert_eq!(later(&verdict), expected, "{name}: {verdict:?}");
    }
}

#[test]
fn the_background_never_says_why() {
    let info = || CallInfo::new("job-call", "book_flight");
    let refusal = answer::background(
        refused("offer expired"),
        Background {
            info: info(),
            write: true,
            remaining_open: None,
        },
    );
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

    let unknown = answer::background(
        upstream(ErrorKind::Timeout),
        Background {
            info: info(),
            write: true,
            remaining_open: None,
        },
    );
    assert!(matches!(
        unknown,
        Verdict::Never { envelope: None, ref error, attempted: true }
            if error.starts_with("The book_flight request reached the provider (duffel)")
    ));
    let later = answer::background(
        upstream(ErrorKind::Timeout),
        Background {
            info: info(),
            write: false,
            remaining_open: None,
        },
    );
    assert!(matches!(
        later,
        Verdict::Later { ref error, .. } if error == "duffel: timeout: test"
    ));
}
