//! Which due jobs a claim takes, and how a retry and a lapsed lease make a job due again.

use super::*;

conformance!(
    claims_take_due_jobs_once_until_the_lease_expires,
    check_claims
);
async fn check_claims<S: JobStore>(s: Arc<S>) {
    let (a, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (b, _) = s
        .enqueue(new_job("search_hotels", None), T0 + 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (c, _) = s
        .enqueue(new_job("search_flights", None), T0 + 10_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = s
        .claim("w1", T0 + 5, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        [a.id.as_str(), b.id.as_str()],
        "due ones, oldest first; c is not due"
    );
    assert!(
        claimed
            .iter()
            .all(|j| j.status == JobStatus::Running && j.lease_owner.as_deref() == Some("w1"))
    );
    assert!(
        s.claim("w2", T0 + 6, 1000, 10, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "leased"
    );
    // w1 crashed: after the lease, w2 takes the job.
    let again = s
        .claim("w2", T0 + 1006, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, a.id);
    // The old owner can no longer write it.
    assert!(
        !s.finish(&a.id, "w1", succeeded(json!({"x": 1})), T0 + 1007)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert!(
        s.finish(&a.id, "w2", succeeded(json!({"x": 2})), T0 + 1007)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let done = stored(&*s, &a.id).await;
    assert_eq!(done.status, JobStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"x": 2})));
    assert_eq!(done.attempts, 1);
    assert_eq!(
        (done.lease_owner.as_deref(), done.lease_until_ms),
        (Some("w2"), None),
        "no lease held; the lease of the run that ended it is kept"
    );
    let _ = c;
}

conformance!(
    one_clients_backlog_does_not_hold_another_clients_job,
    check_clients_take_turns
);
async fn check_clients_take_turns<S: JobStore>(s: Arc<S>) {
    // A backlog of 10 jobs of one client, then one job of another team, due later.
    let mut backlog = Vec::new();
    for i in 0..10 {
        let (job, _) = s
            .enqueue(new_job("search_flights", None), T0 + i)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        backlog.push(job.id);
    }
    let mut other = new_job("search_flights", None);
    other.client = ClientName::stored("globex");
    let (single, _) = s
        .enqueue(other, T0 + 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ids = |jobs: Vec<Job>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();
    let first = s
        .claim("w1", T0 + 200, 60_000, 2, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ids(first),
        [backlog[0].clone(), single.id.clone()],
        "the other client's job is in the first claim, not after the backlog"
    );
    let next = s
        .claim("w1", T0 + 200, 60_000, 3, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ids(next), backlog[1..4], "then the backlog, oldest first");
}

conformance!(claims_skip_tools_whose_breakers_are_open, check_skip);
async fn check_skip<S: JobStore>(s: Arc<S>) {
    s.enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (h, _) = s
        .enqueue(new_job("search_hotels", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = s
        .claim("w", T0, 1000, 10, &["search_flights".into()])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        claimed.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        [h.id]
    );
    let mut due = s.due_tools(T0).await.unwrap_or_else(|e| panic!("{e}"));
    due.sort();
    assert_eq!(due, ["search_flights"], "running jobs are not due");
}

conformance!(
    a_tool_whose_job_lease_ran_out_is_due,
    check_expired_lease_due
);
async fn check_expired_lease_due<S: JobStore>(s: Arc<S>) {
    s.enqueue(new_job("search_trains", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let claimed = s
        .claim("w1", T0, 1000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(claimed.len(), 1);
    let due = s
        .due_tools(T0 + 1000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(due.is_empty(), "leased until T0 + 1000: {due:?}");
    let due = s
        .due_tools(T0 + 1001)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        due,
        ["search_trains"],
        "its lease ran out: a claim could take it"
    );
}

conformance!(
    a_claim_can_take_only_jobs_created_and_due_before_an_instant,
    check_overdue
);
async fn check_overdue<S: JobStore>(s: Arc<S>) {
    let enqueue = |tool: &'static str, at: i64| {
        let s = Arc::clone(&s);
        async move {
            let (job, _) = s
                .enqueue(new_job(tool, None), at)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            job.id
        }
    };
    let old = enqueue("search_trains", T0).await;
    let hotels = enqueue("search_hotels", T0 + 1).await;
    // Created early, but requeued to be due late.
    let late = enqueue("search_trains", T0 + 2).await;
    // Created early, claimed, and their leases ran out: one early, one late.
    let lapsed = enqueue("search_trains", T0 + 3).await;
    let lapsed_early = enqueue("search_trains", T0 + 4).await;
    let young = enqueue("search_trains", T0 + 10).await;
    let ids = |jobs: Vec<Job>| {
        let mut ids: Vec<String> = jobs.into_iter().map(|j| j.id).collect();
        ids.sort();
        ids
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let claim = |owner: &'static str, now: i64, lease: i64, limit: u32| {
        let s = Arc::clone(&s);
        async move {
            s.claim(owner, now, lease, limit, &[])
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let first = claim("other", T0 + 3, 1000, 3).await;
    assert_eq!(
        ids(first),
        sorted(vec![old.clone(), hotels.clone(), late.clone()]),
        "oldest due first"
    );
    for (id, due) in [(&old, T0 + 16), (&hotels, T0 + 15), (&late, T0 + 18)] {
        let requeued = s
            .finish(id, "other", retry(due, "429", true), T0 + 4)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(requeued);
    }
    let second = claim("other", T0 + 4, 13, 1).await;
    assert_eq!(ids(second), std::slice::from_ref(&lapsed));
    let third = claim("other", T0 + 4, 1, 1).await;
    assert_eq!(ids(third), std::slice::from_ref(&lapsed_early));
    // Now `lapsed_early`'s lease ran out at T0 + 5 and `lapsed`'s at T0 + 17; `hotels` is due
    // from T0 + 15, `old` from T0 + 16, `late` from T0 + 18, `young` from T0 + 10.

    let served = ["search_hotels".to_string()];
    let overdue = Overdue {
        created_before_ms: T0 + 10,
        due_by_ms: T0 + 16,
    };
    let claimed = s
        .claim_which(
            "w",
            T0 + 20,
            1000,
            10,
            Which {
                overdue,
                ..Which::all_but(&served)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ids(claimed),
        sorted(vec![old.clone(), lapsed_early.clone()]),
        "created before T0 + 10, due by T0 + 16 (a lease's end counts), not a skipped tool's"
    );
    let rest = claim("w", T0 + 20, 1000, 10).await;
    assert_eq!(
        ids(rest),
        sorted(vec![hotels, late, lapsed, young]),
        "a plain claim takes any age and due time"
    );
}

conformance!(
    retries_count_only_attempts_that_reached_a_provider,
    check_retry
);
async fn check_retry<S: JobStore>(s: Arc<S>) {
    let (j, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w", T0, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.finish(
            &j.id,
            "w",
            retry(T0 + 30_000, "breaker open", false),
            T0 + 1
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    );
    let r = stored(&*s, &j.id).await;
    assert_eq!(
        (r.status, r.attempts, r.next_attempt_at_ms),
        (JobStatus::RetryScheduled, 0, T0 + 30_000)
    );
    assert_eq!(r.last_error.as_deref(), Some("breaker open"));
    assert!(
        s.claim("w", T0 + 29_999, 1000, 1, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "not due yet"
    );
    s.claim("w", T0 + 30_000, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.finish(&j.id, "w", retry(T0 + 60_000, "503", true), T0 + 30_001)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(
        s.get(&j.id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|j| j.attempts),
        Some(1)
    );
    assert!(
        !s.finish(&j.id, "w", retry(T0, "not leased", true), T0)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        "only a leased job"
    );
}

conformance!(
    concurrent_claims_never_take_a_job_twice,
    check_concurrent_claims
);
async fn check_concurrent_claims<S: JobStore + 'static>(s: Arc<S>) {
    for _ in 0..200 {
        s.enqueue(new_job("search_flights", None), T0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let claimers: Vec<_> = (0..4)
        .map(|w| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let got = s
                        .claim(&format!("w{w}"), T0, 60_000, 7, &[])
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    if got.is_empty() {
                        break mine;
                    }
                    mine.extend(got.into_iter().map(|j| j.id));
                }
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut total = 0;
    for c in claimers {
        for id in c.await.unwrap_or_else(|e| panic!("{e}")) {
            total += 1;
            assert!(seen.insert(id), "a job was claimed twice");
        }
    }
    assert_eq!(total, 200);
}
