//! A background job's lifecycle around its run: cancelled before it starts (never while it
//! runs: a booking may be under way at the provider), deleted once its retention has passed,
//! and `/readyz` saying where jobs are kept and whether that store answers.

use std::time::Duration;

use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{Stack, in_days, one_provider_per_tool, send, wait_until};

fn flights(days: i64) -> Value {
    json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)}})
}

async fn stack(
    tweak: impl FnOnce(faregate::config::Config) -> faregate::config::Config + 'static,
) -> Stack {
    Stack::builder(19)
        .config(one_provider_per_tool)
        .config(tweak)
        .jobs()
        .start()
        .await
}

/// `DELETE /v1/jobs/{id}`: the status and the JSON answer.
async fn cancel(s: &Stack, id: &str) -> (u16, Value) {
    let (status, _, body) = send(s.http.delete(s.url(&format!("/v1/jobs/{id}")))).await;
    (status, body)
}

async fn submit(s: &Stack, days: i64) -> String {
    let (status, env) = s.submit("search_flights", flights(days)).await;
    assert_eq!(status, 202, "{env:#}");
    env["job_id"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_job_is_cancelled_before_it_runs_and_never_while_it_runs() {
    let s = stack(|c| c).await;
    // Held back by a forced breaker, the job waits, and is cancelled.
    let forced = s
        .post(
            "/v1/breakers/search_flights.duffel/force",
            json!({"state": "open"}),
        )
        .await;
    assert_eq!(forced.0, 200, "{forced:?}");
    let waiting = submit(&s, 50).await;
    let (status, job) = cancel(&s, &waiting).await;
    assert_eq!(
        (status, job["status"].as_str()),
        (200, Some("cancelled")),
        "{job:#}"
    );
    let (status, again) = cancel(&s, &waiting).await;
    assert_eq!(status, 409, "{again:#}");
    assert_eq!(
        again["message"],
        format!("job {waiting} has already ended (cancelled); there is nothing to cancel")
    );
    assert_eq!(cancel(&s, "no-such-job").await.0, 404);

    // A job at a provider that does not answer is running: it is not cancelled, and says why.
    s.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            hang: true,
            ..Fault::default()
        },
    );
    s.post(
        "/v1/breakers/search_flights.duffel/force",
        json!({"state": "auto"}),
    )
    .await;
    let running = submit(&s, 51).await;
    s.wait_for_job(&running, Duration::from_secs(10), |j| {
        j["status"] == "running"
    })
    .await;
    let (status, refused) = cancel(&s, &running).await;
    assert_eq!(status, 409, "{refused:#}");
    let text = refused["message"].as_str().unwrap_or_default();
    assert!(
        text.contains(
            "is running at the provider now and is not cancelled (a booking may be under way)"
        ),
        "{text}"
    );
    s.sim.clear_faults();
    // The cancelled job never ran.
    let (_, cancelled) = s.get_json(&format!("/v1/jobs/{waiting}")).await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["attempts"], 0);
}

#[tokio::test]
async fn finished_jobs_are_deleted_once_their_retention_has_passed() {
    let s = stack(|mut c| {
        c.store.job_retention = Duration::from_secs(1);
        c
    })
    .await;
    let id = submit(&s, 52).await;
    s.wait_for_job(&id, Duration::from_secs(10), |j| j["status"] == "succeeded")
        .await;
    // The purge runs with the queue figures, about every 5 s.
    wait_until(
        Duration::from_secs(20),
        "the finished job to be purged",
        || async {
            match s.get_json(&format!("/v1/jobs/{id}")).await {
                (404, _) => Ok(()),
                (status, job) => Err(format!("{status}: {job}")),
            }
        },
    )
    .await;
}

#[tokio::test]
async fn readyz_says_where_jobs_are_kept_and_that_it_answers() {
    let s = stack(|c| c).await;
    let (status, ready) = s.get_json("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(ready["store"], json!({"kind": "sqlite", "answers": true}));
    let without = Stack::start(19).await;
    assert_eq!(without.get_json("/readyz").await.1["store"], Value::Null);
}
