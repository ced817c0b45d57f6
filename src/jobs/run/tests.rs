//! `decide`, table-tested: every outcome, the attempt and age limits, and the delay.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::call::{CallInfo, Data, RateLimitHit, Status};
use crate::jobs::store::{CallbackState, JobStatus};

const NOW: i64 = 1_800_000_000_000;
const HOUR_MS: i64 = 3_600_000;

fn config() -> JobsConfig {
    JobsConfig {
        max_attempts: 3,
        max_age: Duration::from_secs(24 * 3600),
        workers: 4,
        lease_margin: Duration::from_secs(30),
    }
}

fn policy() -> RequeuePolicy {
    RequeuePolicy::standard()
}

/// A job that reached a provider `attempts` times and was accepted `age_ms` ago.
fn job(attempts: u32, age_ms: i64) -> Job {
    Job {
        id: "job-1".into(),
        tool: "search_flights".into(),
        arguments: json!({}),
        call_id: Some("c-1".into()),
        client: crate::clients::ClientName::local(),
        idempotency_key: None,
        callback_url: None,
        status: JobStatus::Running,
        attempts,
        next_attempt_at_ms: NOW - age_ms,
        lease_owner: Some("w".into()),
        lease_until_ms: Some(NOW + 60_000),
        created_at_ms: NOW - age_ms,
        updated_at_ms: NOW,
        result: None,
        last_error: None,
        callback: CallbackState::None,
        callback_attempts: 0,
        next_callback_at_ms: None,
        callback_error: None,
        trace: None,
    }
}

/// A job's result: fresh data, or the provider's refusal.
fn envelope(status: Status, content: &str) -> Envelope {
    let info = CallInfo::new("c-1", "search_flights");
    match status {
        Status::Rejected => Envelope::rejected(info, content.into(), "duffel".into()),
        _ => Envelope::ok(info, content.into(), Data::new(json!({})), "duffel".into()),
    }
}

/// The envelope as stored: its own serialization, naming the job.
fn stored_envelope(status: Status, content: &str) -> Value {
    let mut e = envelope(status, content);
    e.job_id = Some("job-1".into());
    serde_json::to_value(&e).unwrap_or_else(|e| panic!("{e}"))
}

fn later(anchor: Option<Duration>, attempted: bool) -> Verdict {
    Verdict::Later {
        anchor,
        error: "duffel: 503".into(),
        attempted,
        rate_limited: None,
    }
}

fn retry_in(delay_ms: i64, attempted: bool) -> Transition {
    Transition::Retry {
        next_attempt_at_ms: NOW + delay_ms,
        error: "duffel: 503".into(),
        attempted,
    }
}

fn dead(error: &str, result: Option<Value>, attempted: bool) -> Transition {
    Transition::Dead {
        error: error.into(),
        result,
        attempted,
    }
}

#[test]
fn outcomes_become_transitions() {
    let secs = Duration::from_secs;
    let rate_limited = Verdict::Later {
        anchor: Some(secs(60)),
        error: "duffel: 503".into(),
        attempted: true,
        rate_limited: Some(RateLimitHit {
            retry_after: Some(secs(60)),
        }),
    };
    let refused = Verdict::Never {
        envelope: Some(envelope(Status::Rejected, "refused")),
        error: "refused".into(),
        attempted: true,
    };
    let unknown = Verdict::Never {
        envelope: None,
        error: "outcome unknown".into(),
        attempted: true,
    };
    let ok = Verdict::Done(envelope(Status::Ok, "3 flights"));
    let table: Vec<(&str, Verdict, Job, f64, Transition)> = vec![
        (
            "done: the envelope is stored, naming the job",
            ok,
            job(0, 0),
            0.0,
            Transition::Succeeded {
                result: stored_envelope(Status::Ok, "3 flights"),
            },
        ),
        (
            "never, with an envelope: stored and sent",
            refused,
            job(1, 0),
            0.0,
            dead(
                "refused",
                Some(stored_envelope(Status::Rejected, "refused")),
                true,
            ),
        ),
        (
            "never, without an envelope",
            unknown,
            job(0, 0),
            0.0,
            dead("outcome unknown", None, true),
        ),
        (
            "later, refused by an open breaker: back when it half-opens",
            later(Some(secs(30)), false),
            job(0, 0),
            0.0,
            retry_in(30_000, false),
        ),
        (
            "later, after an attempt: the anchor plus one growth step",
            later(Some(secs(30)), true),
            job(0, 0),
            0.0,
            retry_in(31_000, true),
        ),
        (
            "later, the second attempt grows the wait",
            later(None, true),
            job(1, 0),
            0.0,
            retry_in(2_000, true),
        ),
        (
            "later, no anchor and no attempt: still one step",
            later(None, false),
            job(0, 0),
            0.0,
            retry_in(1_000, false),
        ),
        (
            "later, jitter adds its share of the wait",
            later(Some(secs(30)), true),
            job(0, 0),
            0.5,
            retry_in(34_100, true),
        ),
        (
            "later, a 429 is requeued after its Retry-After",
            rate_limited,
            job(0, 0),
            0.0,
            retry_in(61_000, true),
        ),
        (
            "the last allowed attempt failed: given up",
            later(None, true),
            job(2, 0),
            0.0,
            dead(
                "gave up after 3 attempts; last error: duffel: 503",
                None,
                true,
            ),
        ),
        (
            "a refusal without an attempt does not count, and is due at the half-open instant whatever the attempts before",
            later(Some(secs(30)), false),
            job(2, 0),
            0.0,
            retry_in(30_000, false),
        ),
        (
            "a breaker's refusal gets no jitter: due at the half-open instant, not after it",
            later(Some(secs(30)), false),
            job(1, 0),
            0.9,
            retry_in(30_000, false),
        ),
        (
            "too old: given up, whatever the attempts",
            later(None, false),
            job(0, 24 * HOUR_MS),
            0.0,
            dead(
                "gave up after 1day in the queue; last error: duffel: 503",
                None,
                false,
            ),
        ),
        (
            "just young enough: requeued",
            later(None, false),
            job(0, 24 * HOUR_MS - 1),
            0.0,
            retry_in(1_000, false),
        ),
    ];
    for (case, outcome, job, jitter, expected) in table {
        assert_eq!(
            decide(outcome, &job, &config(), &policy(), NOW, jitter),
            expected,
            "{case}"
        );
    }
}
